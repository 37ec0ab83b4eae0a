//! Text drawn into the PNG without the SVG round trip (issue 44): usvg parsed each
//! run back out of the slide's SVG, looked its font up again and filled every glyph's
//! outline afresh. Here a run is shaped as usvg shapes it (the same shaper, kerning
//! off) in the face the layout chose, and each glyph's coverage is rasterised once per
//! size and sub-pixel position (a quarter pixel each way) with the rasteriser resvg
//! uses, then blended where the glyph goes.
//!
//! A run in a colour or bitmap font (emoji), with an invisible character (joiners,
//! variation selectors) or with a character its font lacks (usvg would look for
//! another font) goes through usvg as before.

use std::cell::RefCell;
use std::collections::HashMap;

use resvg::tiny_skia;
use skrifa::outline::{DrawSettings, OutlinePen};
use skrifa::{instance::LocationRef, instance::Size, MetadataProvider};

use crate::fonts::{font_metrics, ignorable, with_full_data, FontKey};
use crate::palette::Color;

/// Sub-pixel positions per pixel, each way: a glyph is drawn at most an eighth of a
/// pixel from where it belongs, which changes only its edges' anti-aliasing.
const STEPS: i64 = 4;
/// Coverage kept per thread; past it the masks are dropped and drawn again as needed
/// (a deck's body text at a few sizes needs well under a megabyte).
const MAX_MASK_BYTES: usize = 4 << 20;

/// A glyph's coverage at one size and sub-pixel position: `width` columns, rows of
/// bytes, its top-left corner relative to the pixel the glyph's origin falls in.
struct Mask {
    left: i64,
    top: i64,
    width: usize,
    coverage: Vec<u8>,
}

/// (font, glyph, scale bits, x step, y step).
type MaskKey = (u16, u16, u32, u8, u8);

#[derive(Default)]
struct Cache {
    /// Outlines in font units (y up); `None` for glyphs without one (spaces).
    outlines: HashMap<(u16, u16), Option<tiny_skia::Path>>,
    /// Whether a font's glyphs are plain outlines (no colour or bitmap tables).
    plain: HashMap<u16, bool>,
    masks: HashMap<MaskKey, Mask>,
    bytes: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::default();
}

/// Whether the run can be drawn here: its font is outlines (as far as the layout
/// knows; [`draw_text`] may still find colour tables in the file) and has every
/// character (usvg would look further for one it lacks).
pub(crate) fn can_draw(font: FontKey, text: &str) -> bool {
    let m = font_metrics(font);
    !m.bitmap && text.chars().all(|c| !ignorable(c) && m.glyph(c).is_some())
}

/// A text run as `usvg` draws `<text x y font-size fill>` at `scale` device pixels per
/// layout unit, for a run [`can_draw`] accepted (the caller asks first, so that it
/// draws the boxes before only when the text will be drawn here); `false`, having
/// drawn nothing, when the font file turns out to need usvg.
pub(crate) fn draw_text(
    pixmap: &mut tiny_skia::Pixmap,
    scale: f32,
    (x, y, size): (f32, f32, f32),
    font: FontKey,
    fill: Color,
    text: &str,
) -> bool {
    // Shaped as usvg shapes (the same shaper, kerning off): ligatures and marks are
    // the glyphs usvg would draw.
    let glyphs = font_metrics(font).shape(text);
    let gids: Vec<u16> = glyphs.iter().map(|g| g.gid).collect();
    CACHE.with_borrow_mut(|cache| {
        if !cache.load(font, &gids) {
            return false;
        }
        // Font units to device pixels; the pen moves in layout units, as usvg's does.
        let sc = size * scale / font_metrics(font).upem;
        let mut pen = x;
        for g in glyphs {
            let at = ((pen + g.dx * size) * scale, (y - g.dy * size) * scale);
            cache.draw(pixmap, (font, g.gid, sc), at, fill);
            pen += g.advance * size;
        }
        true
    })
}

impl Cache {
    /// The outlines of `glyphs` not yet read, from the font file (mapped once for all
    /// of them); `false` when the font is not plain outlines or its file went away.
    fn load(&mut self, font: FontKey, glyphs: &[u16]) -> bool {
        let missing: Vec<u16> = glyphs
            .iter()
            .copied()
            .filter(|g| !self.outlines.contains_key(&(font.0, *g)))
            .collect();
        let known = self.plain.get(&font.0).copied();
        if known == Some(false) {
            return false;
        }
        if missing.is_empty() && known.is_some() {
            return true;
        }
        let read = with_full_data(font, |data, index| {
            let f = skrifa::FontRef::from_index(data, index).ok()?;
            let has = |t: &[u8; 4]| f.table_data(skrifa::Tag::new(t)).is_some();
            let plain = (has(b"glyf") || has(b"CFF ") || has(b"CFF2"))
                && !(has(b"COLR") || has(b"SVG ") || has(b"CBDT") || has(b"sbix"));
            let outlines = f.outline_glyphs();
            let read: Vec<(u16, Option<tiny_skia::Path>)> = missing
                .iter()
                .map(|&gid| {
                    let mut pen = Pen(tiny_skia::PathBuilder::new());
                    let drawn = outlines.get(skrifa::GlyphId::new(gid as u32)).map(|o| {
                        o.draw(
                            DrawSettings::unhinted(Size::unscaled(), LocationRef::default()),
                            &mut pen,
                        )
                    });
                    (gid, drawn.and_then(|r| r.ok()).and_then(|_| pen.0.finish()))
                })
                .collect();
            Some((plain, read))
        })
        .flatten();
        let Some((plain, read)) = read else {
            return false;
        };
        self.plain.insert(font.0, plain);
        for (gid, path) in read {
            self.outlines.insert((font.0, gid), path);
        }
        plain
    }

    /// One glyph with its origin at device point `(gx, gy)`, `sc` pixels per font unit.
    fn draw(
        &mut self,
        pixmap: &mut tiny_skia::Pixmap,
        (font, gid, sc): (FontKey, u16, f32),
        (gx, gy): (f32, f32),
        fill: Color,
    ) {
        let (ix, px) = step(gx);
        let (iy, py) = step(gy);
        let key = (font.0, gid, sc.to_bits(), px, py);
        if !self.masks.contains_key(&key) {
            let outline = self.outlines.get(&(font.0, gid)).and_then(Option::as_ref);
            let mask = rasterize(outline, sc, px, py);
            if self.bytes + mask.coverage.len() > MAX_MASK_BYTES {
                self.masks.clear();
                self.bytes = 0;
            }
            self.bytes += mask.coverage.len();
            self.masks.insert(key, mask);
        }
        if let Some(mask) = self.masks.get(&key) {
            blend(pixmap, mask, (ix, iy), fill);
        }
    }
}

/// A device coordinate as its pixel and its sub-pixel step, rounded to the nearest.
fn step(v: f32) -> (i64, u8) {
    let q = (v * STEPS as f32).round() as i64;
    (q.div_euclid(STEPS), q.rem_euclid(STEPS) as u8)
}

/// The glyph's coverage at sub-pixel steps (`px`, `py`), anti-aliased and non-zero
/// filled as resvg fills text; a pixel of margin round the outline's bounds.
fn rasterize(outline: Option<&tiny_skia::Path>, sc: f32, px: u8, py: u8) -> Mask {
    let empty = Mask {
        left: 0,
        top: 0,
        width: 0,
        coverage: Vec::new(),
    };
    let Some(path) = outline else {
        return empty;
    };
    let (ox, oy) = (px as f32 / STEPS as f32, py as f32 / STEPS as f32);
    let b = path.bounds();
    let left = (b.left() * sc + ox).floor() as i64 - 1;
    let top = (-b.bottom() * sc + oy).floor() as i64 - 1;
    let right = (b.right() * sc + ox).ceil() as i64 + 1;
    let bottom = (-b.top() * sc + oy).ceil() as i64 + 1;
    let (w, h) = ((right - left) as u32, (bottom - top) as u32);
    let Some(mut mask) = tiny_skia::Mask::new(w, h) else {
        return empty;
    };
    let ts = tiny_skia::Transform::from_row(sc, 0.0, 0.0, -sc, ox - left as f32, oy - top as f32);
    mask.fill_path(path, tiny_skia::FillRule::Winding, true, ts);
    Mask {
        left,
        top,
        width: w as usize,
        coverage: mask.take(),
    }
}

/// The colour through the mask onto premultiplied pixels, with the arithmetic
/// tiny-skia's pipeline uses for an opaque paint (`lerp` by the coverage, rounding
/// division by 256), so a fully covered or uncovered pixel is exactly what it draws.
fn blend(pixmap: &mut tiny_skia::Pixmap, mask: &Mask, (ix, iy): (i64, i64), fill: Color) {
    if mask.width == 0 {
        return;
    }
    let (pw, ph) = (pixmap.width() as i64, pixmap.height() as i64);
    let (x0, y0) = (ix + mask.left, iy + mask.top);
    let h = (mask.coverage.len() / mask.width) as i64;
    let (cx0, cx1) = (x0.max(0), (x0 + mask.width as i64).min(pw));
    let (cy0, cy1) = (y0.max(0), (y0 + h).min(ph));
    if cx0 >= cx1 || cy0 >= cy1 {
        return;
    }
    let src = [fill.0, fill.1, fill.2, 255];
    let data = pixmap.data_mut();
    for y in cy0..cy1 {
        let m = ((y - y0) * mask.width as i64 + (cx0 - x0)) as usize;
        let row = &mask.coverage[m..m + (cx1 - cx0) as usize];
        let d = ((y * pw + cx0) * 4) as usize;
        let out = &mut data[d..d + row.len() * 4];
        for (&c, px) in row.iter().zip(out.chunks_exact_mut(4)) {
            match c {
                0 => {}
                255 => px.copy_from_slice(&src),
                c => {
                    let (c, inv) = (c as u16, 255 - c as u16);
                    for (p, s) in px.iter_mut().zip(src) {
                        *p = ((*p as u16 * inv + s as u16 * c + 255) >> 8) as u8;
                    }
                }
            }
        }
    }
}

/// Outline segments into a tiny-skia path, in font units.
struct Pen(tiny_skia::PathBuilder);

impl OutlinePen for Pen {
    fn move_to(&mut self, x: f32, y: f32) {
        self.0.move_to(x, y);
    }
    fn line_to(&mut self, x: f32, y: f32) {
        self.0.line_to(x, y);
    }
    fn quad_to(&mut self, cx0: f32, cy0: f32, x: f32, y: f32) {
        self.0.quad_to(cx0, cy0, x, y);
    }
    fn curve_to(&mut self, cx0: f32, cy0: f32, cx1: f32, cy1: f32, x: f32, y: f32) {
        self.0.cubic_to(cx0, cy0, cx1, cy1, x, y);
    }
    fn close(&mut self) {
        self.0.close();
    }
}
