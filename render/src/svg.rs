//! The display list as an SVG document, and the display list → PNG through resvg.

use std::fmt::Write;

use base64::Engine;
use resvg::{tiny_skia, usvg};

use crate::image::{format_of, usvg_options, Format, SvgTrees};
use crate::layout::{Item, NaturalSizes, Page};
use crate::{Budget, Image, Images, RenderError, Size};

/// The href the rasteriser's resolver answers with the one image of a segment.
const SLOT: &str = "plinth:image";

/// The slide as one standalone SVG document: each distinct image once, as a data: URL
/// in `<defs>`, drawn through `<use>` in a viewport of its box.
pub fn render(page: &Page, images: &Images, naturals: &NaturalSizes, size: Size) -> String {
    let mut out = open(page, size, true);
    let mut clips = 0;
    let mut used: Vec<&str> = Vec::new();
    for item in &page.items {
        if let Item::Image { asset_id, .. } = item {
            let (Some(_), Some(n)) = (images.get(asset_id), naturals.get(asset_id)) else {
                continue;
            };
            let k = match used.iter().position(|u| u == asset_id) {
                Some(k) => k,
                None => {
                    used.push(asset_id);
                    used.len() - 1
                }
            };
            image_item(&mut out, item, &mut clips, |out, x, y, w, h| {
                let _ = write!(
                    out,
                    r##"<svg x="{}" y="{}" width="{}" height="{}" viewBox="0 0 {} {}" preserveAspectRatio="xMidYMid meet"><use xlink:href="#img-{k}"/></svg>"##,
                    num(x),
                    num(y),
                    num(w),
                    num(h),
                    num(n.width),
                    num(n.height)
                );
            });
        } else {
            plain_item(&mut out, item);
        }
    }
    if !used.is_empty() {
        out.push_str("<defs>");
        for (k, id) in used.iter().enumerate() {
            let (image, n) = (&images[*id], &naturals[*id]);
            let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
            let _ = write!(
                out,
                r#"<image id="img-{k}" width="{}" height="{}" preserveAspectRatio="none" style="image-rendering:smooth" xlink:href="data:"#,
                num(n.width),
                num(n.height)
            );
            escape_into(&mut out, mime);
            out.push_str(";base64,");
            base64::engine::general_purpose::STANDARD.encode_string(&image.bytes, &mut out);
            out.push_str(r#""/>"#);
        }
        out.push_str("</defs>");
    }
    out.push_str("</svg>");
    out
}

/// The root element (the same for every segment, so they draw alike) and, for the
/// first, the background.
fn open(page: &Page, size: Size, background: bool) -> String {
    let mut out = String::with_capacity(8 * 1024);
    // Kerning off: the layout measured plain advances, and the PDF draws them too.
    // (usvg reads `font-kerning` only from `style`.)
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{}" height="{}" viewBox="0 0 {} {}" xml:space="preserve" style="font-kerning:none">"#,
        size.width,
        size.height,
        num(page.width),
        num(page.height),
    );
    if background {
        let _ = write!(
            out,
            r#"<rect width="{}" height="{}" fill="{}"/>"#,
            num(page.width),
            num(page.height),
            page.background.hex()
        );
    }
    out
}

/// An image item in its clip, if it has one; `draw` writes the image in its box.
fn image_item(
    out: &mut String,
    item: &Item,
    clips: &mut u32,
    draw: impl FnOnce(&mut String, f32, f32, f32, f32),
) {
    let Item::Image {
        x, y, w, h, clip, ..
    } = item
    else {
        return;
    };
    if let Some([cx, cy, cw, ch]) = clip {
        *clips += 1;
        let _ = write!(
            out,
            r#"<clipPath id="c{clips}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath><g clip-path="url(#c{clips})">"#,
            num(*cx),
            num(*cy),
            num(*cw),
            num(*ch)
        );
    }
    draw(out, *x, *y, *w, *h);
    if clip.is_some() {
        out.push_str("</g>");
    }
}

/// Boxes and text.
fn plain_item(out: &mut String, item: &Item) {
    match item {
        Item::Rect {
            x,
            y,
            w,
            h,
            r,
            fill,
        } => {
            let _ = write!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="{}""#,
                num(*x),
                num(*y),
                num(*w),
                num(*h)
            );
            if *r > 0.0 {
                let _ = write!(out, r#" rx="{}""#, num(*r));
            }
            let _ = write!(out, r#" fill="{}"/>"#, fill.hex());
        }
        Item::Text {
            x,
            y,
            size,
            font,
            fill,
            text,
            ..
        } => {
            // The family, weight and style that select exactly this face from the
            // font database (fallback names quoted: some have digits or spaces).
            let f = crate::fonts::registry().font(*font);
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" font-family=""#,
                num(*x),
                num(*y)
            );
            if font.0 < 4 {
                out.push_str(&f.family);
            } else {
                out.push('\'');
                escape_into(out, &f.family.replace('\'', ""));
                out.push('\'');
            }
            let _ = write!(out, r#"" font-size="{}""#, num(*size));
            match f.weight {
                700 => out.push_str(r#" font-weight="bold""#),
                400 => {}
                w => {
                    let _ = write!(out, r#" font-weight="{w}""#);
                }
            }
            if f.italic {
                out.push_str(r#" font-style="oblique""#);
            }
            let _ = write!(out, r#" fill="{}">"#, fill.hex());
            escape_into(out, text);
            out.push_str("</text>");
        }
        // Links matter in PDF and HTML only, the parts' markers in HTML; images are
        // drawn by the callers.
        Item::Link { .. } | Item::Image { .. } | Item::Begin(_) | Item::End => {}
    }
}

/// Renders the page into a PNG of exactly `size`, in segments: each run of boxes and
/// text in one resvg pass, each image in one of its own after its cost is checked
/// ([`crate::MAX_SVG_COST`]), with the budget checked between them. Segments draw onto
/// the same pixmap in order, as one document's top-level elements would.
pub fn rasterize(
    page: &Page,
    images: &Images,
    trees: &SvgTrees,
    size: Size,
    budget: &Budget,
) -> Result<Vec<u8>, RenderError> {
    let filled = canvas(page, size)?;
    let mut doc = open(page, size, filled.is_none());
    let mut pixmap = match filled {
        Some(p) => p,
        None => tiny_skia::Pixmap::new(size.width, size.height).ok_or_else(no_pixmap)?,
    };
    // Plain text is drawn directly (`glyphs`) at the page's one scale; boxes are
    // gathered into a document drawn before the next thing directly drawn over them.
    let scale = uniform_scale(page, size);
    let empty = open(page, size, false).len();
    let mut clips = 0;
    for item in &page.items {
        let Item::Image { asset_id, .. } = item else {
            if !direct_text(item, scale, &mut pixmap, &mut doc, empty)? {
                plain_item(&mut doc, item);
            }
            continue;
        };
        let Some(image) = images.get(asset_id) else {
            continue;
        };
        flush(&mut doc, empty, &mut pixmap)?;
        budget.check()?;
        let Some(kind) = image_kind(asset_id, image, trees)? else {
            continue;
        };
        let mut one = open(page, size, false);
        image_item(&mut one, item, &mut clips, |out, x, y, w, h| {
            let _ = write!(
                out,
                r#"<image x="{}" y="{}" width="{}" height="{}" preserveAspectRatio="xMidYMid meet" style="image-rendering:smooth" xlink:href="{SLOT}"/>"#,
                num(x),
                num(y),
                num(w),
                num(h)
            );
        });
        one.push_str("</svg>");
        draw(&one, Some((asset_id, kind)), &mut pixmap)?;
        budget.check()?;
        doc = open(page, size, false);
    }
    flush(&mut doc, empty, &mut pixmap)?;
    // A filled canvas is filled again row by row as the rows are encoded, while they
    // are in cache: the next slide on this thread usually has the same background.
    let refill = filled_with(page, size);
    let (width, height) = (pixmap.width(), pixmap.height());
    let mut data = pixmap.take();
    let png = crate::png_out::encode(width, height, &mut data, refill);
    SPARE.set((data, refill.filter(|_| png.is_ok())));
    png
}

/// Draws the gathered document, if it has anything beyond its root (`empty` bytes),
/// and leaves the root open for what follows.
fn flush(
    doc: &mut String,
    empty: usize,
    pixmap: &mut tiny_skia::Pixmap,
) -> Result<(), RenderError> {
    if doc.len() > empty {
        doc.push_str("</svg>");
        draw(doc, None, pixmap)?;
    }
    doc.truncate(empty);
    Ok(())
}

/// A text item drawn straight onto the pixmap, after the boxes gathered before it;
/// `false` when it is not text or needs usvg (it is then added to the document).
fn direct_text(
    item: &Item,
    scale: Option<f32>,
    pixmap: &mut tiny_skia::Pixmap,
    doc: &mut String,
    empty: usize,
) -> Result<bool, RenderError> {
    let (
        Some(scale),
        Item::Text {
            x,
            y,
            size,
            font,
            fill,
            text,
            ..
        },
    ) = (scale, item)
    else {
        return Ok(false);
    };
    if !crate::glyphs::can_draw(*font, text) {
        return Ok(false);
    }
    flush(doc, empty, pixmap)?;
    Ok(crate::glyphs::draw_text(
        pixmap,
        scale,
        (*x, *y, *size),
        *font,
        *fill,
        text,
    ))
}

/// Device pixels per layout unit, when the page maps onto the image at one scale.
fn uniform_scale(page: &Page, size: Size) -> Option<f32> {
    let (sx, sy) = (
        size.width as f32 / page.width,
        size.height as f32 / page.height,
    );
    (sx.is_finite() && sy.is_finite() && sx > 0.0 && (sx - sy).abs() <= sx * 1e-6).then_some(sx)
}

thread_local! {
    /// The last slide's pixels on this thread, for the next slide: a fresh 8 MB buffer
    /// per slide costs a page fault per 4 KB (zeroing included), about a tenth of a
    /// slide's time. One buffer per rendering thread stays allocated. With the pixel
    /// it is already filled with, if it is.
    static SPARE: std::cell::Cell<(Vec<u8>, Option<[u8; 4]>)> =
        const { std::cell::Cell::new((Vec::new(), None)) };
}

/// The opaque pixel a page's canvas is filled with, when [`canvas`] fills one.
fn filled_with(page: &Page, size: Size) -> Option<[u8; 4]> {
    let bg = page.background;
    uniform_scale(page, size).map(|_| [bg.0, bg.1, bg.2, 255])
}

/// The slide's pixmap already filled with its opaque background, when the page covers
/// the image exactly (the usual case): one pass over 8 MB instead of zeroing it and then
/// drawing a full-page rect through the anti-aliased path filler, with the same pixels.
/// `None` when the aspect differs (the root's "meet" would leave bands), so the caller
/// zeroes a pixmap and lets the document's rect draw the background as before.
fn canvas(page: &Page, size: Size) -> Result<Option<tiny_skia::Pixmap>, RenderError> {
    let Some(pixel) = filled_with(page, size) else {
        return Ok(None);
    };
    // Every byte is overwritten: the first row pixel by pixel, the others copied from
    // it (the per-pixel loop compiled to byte stores, a tenth of a slide's time).
    let stride = size.width as usize * 4;
    let len = stride * size.height as usize;
    let (mut data, mut filled) = SPARE.take();
    if data.len() != len {
        (data, filled) = (vec![0u8; len], None);
    }
    if filled == Some(pixel) {
        // Refilled while the last slide was encoded.
    } else if let Some((first, rest)) = data.split_at_mut_checked(stride) {
        first
            .chunks_exact_mut(4)
            .for_each(|p| p.copy_from_slice(&pixel));
        rest.chunks_exact_mut(stride)
            .for_each(|row| row.copy_from_slice(first));
    }
    let int = tiny_skia::IntSize::from_wh(size.width, size.height).ok_or_else(no_pixmap)?;
    tiny_skia::Pixmap::from_vec(data, int)
        .map(Some)
        .ok_or_else(no_pixmap)
}

fn no_pixmap() -> RenderError {
    RenderError::Failed("cannot allocate the slide image".into())
}

/// What the segment's `<image>` resolves to: the raster bytes, or the parsed SVG.
fn image_kind(
    id: &str,
    image: &Image,
    trees: &SvgTrees,
) -> Result<Option<usvg::ImageKind>, RenderError> {
    let bytes = || std::sync::Arc::new(image.bytes.clone());
    let checked = |format| check_raster(id, image, format);
    Ok(match format_of(image) {
        Some(Format::Svg) => trees
            .get(id, image)?
            .map(|t| usvg::ImageKind::SVG((*t).clone())),
        Some(Format::Png) => checked(Format::Png)?.then(|| usvg::ImageKind::PNG(bytes())),
        Some(Format::Jpeg) => checked(Format::Jpeg)?.then(|| usvg::ImageKind::JPEG(bytes())),
        Some(Format::Webp) => checked(Format::Webp)?.then(|| usvg::ImageKind::WEBP(bytes())),
        None => None,
    })
}

/// A raster image's header against the upload limits (it was validated, but not
/// necessarily by this release): resvg decodes it whole.
fn check_raster(id: &str, image: &Image, format: Format) -> Result<bool, RenderError> {
    match crate::image::dimensions(&image.bytes, format) {
        Some((w, h)) => crate::image::check_dimensions(w, h)
            .map(|()| true)
            .map_err(|e| RenderError::Rejected(format!("image {id}: {e}"))),
        None => Ok(false),
    }
}

/// Parses one segment and draws it; an image segment is first costed.
fn draw(
    doc: &str,
    image: Option<(&str, usvg::ImageKind)>,
    pixmap: &mut tiny_skia::Pixmap,
) -> Result<(), RenderError> {
    let mut opts = usvg_options(None);
    // Raster images are bounded by the pixel limit; SVG ones by their cost.
    let id = image
        .as_ref()
        .filter(|(_, kind)| matches!(kind, usvg::ImageKind::SVG(_)))
        .map(|(id, _)| id.to_string());
    if let Some((_, kind)) = image {
        let slot = std::sync::Mutex::new(Some(kind));
        opts.image_href_resolver.resolve_string =
            Box::new(move |href, _| (href == SLOT).then(|| slot.lock().ok()?.take()).flatten());
    }
    let tree = usvg::Tree::from_str(doc, &opts)
        .map_err(|e| RenderError::Failed(format!("slide SVG did not parse: {e}")))?;
    let (w, h) = (pixmap.width(), pixmap.height());
    let ts = tiny_skia::Transform::from_scale(
        w as f32 / tree.size().width(),
        h as f32 / tree.size().height(),
    );
    if let Some(id) = id {
        let cost = crate::cost::svg_cost(&tree, ts, w, h);
        crate::image::check_cost(&format!("image {id}"), cost, w, h)?;
    }
    resvg::render(&tree, ts, &mut pixmap.as_mut());
    Ok(())
}

/// Coordinates with at most two decimals, so the same layout always prints the same.
pub fn num(v: f32) -> String {
    let s = format!("{:.2}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// XML text and attribute escaping.
pub fn escape_into<W: Write + ?Sized>(out: &mut W, text: &str) {
    for c in text.chars() {
        let _ = match c {
            '&' => out.write_str("&amp;"),
            '<' => out.write_str("&lt;"),
            '>' => out.write_str("&gt;"),
            '"' => out.write_str("&quot;"),
            '\'' => out.write_str("&#39;"),
            // Not allowed in XML 1.0 at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => Ok(()),
            '\u{fffe}' | '\u{ffff}' => Ok(()),
            c => out.write_char(c),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palette::Color;

    /// The page drawn the plain way: a zeroed pixmap, the background as the document's
    /// first rect, every item through resvg; RGB bytes.
    fn drawn_plainly(page: &Page, size: Size) -> Vec<u8> {
        let mut pixmap = tiny_skia::Pixmap::new(size.width, size.height).unwrap();
        let mut doc = open(page, size, true);
        for item in &page.items {
            plain_item(&mut doc, item);
        }
        doc.push_str("</svg>");
        draw(&doc, None, &mut pixmap).unwrap();
        pixmap
            .data()
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect()
    }

    fn page(background: Color, fill: Color) -> Page {
        let rect = |x, y, w, h, r| Item::Rect {
            x,
            y,
            w,
            h,
            r,
            fill,
        };
        Page {
            width: 1280.0,
            height: 720.0,
            background,
            // Edges on and off the pixel grid, a rounded corner, one box past the page.
            items: vec![
                rect(10.3, 20.7, 300.0, 41.5, 0.0),
                rect(600.0, 300.0, 200.0, 200.0, 24.0),
                rect(1200.5, 650.25, 200.0, 200.0, 0.0),
            ],
            scale: 1.0,
        }
    }

    /// Issue 44: the background filled straight into a reused buffer, and the rows
    /// streamed to the encoder, give the pixels the plain way gives: at the page's own
    /// aspect (the filled canvas) and at another (the zeroed one), twice on one thread
    /// with different colours, so a reused buffer shows nothing of the slide before.
    #[test]
    fn a_filled_reused_canvas_draws_the_pixels_the_plain_way_does() {
        let (images, trees, budget) = (Images::default(), SvgTrees::default(), Budget::unlimited());
        let sizes = [
            Size {
                width: 640,
                height: 360,
            },
            Size {
                width: 300,
                height: 300,
            },
        ];
        for size in sizes {
            for (bg, fill) in [
                (Color(12, 34, 56), Color(250, 200, 10)),
                (Color(240, 240, 235), Color(5, 90, 160)),
            ] {
                let page = page(bg, fill);
                // Twice: the second time on the canvas refilled while encoding.
                let _ = rasterize(&page, &images, &trees, size, &budget).unwrap();
                let png = rasterize(&page, &images, &trees, size, &budget).unwrap();
                let got = ::image::load_from_memory(&png).unwrap().to_rgb8();
                assert_eq!((got.width(), got.height()), (size.width, size.height));
                let want = drawn_plainly(&page, size);
                let differ = got
                    .as_raw()
                    .iter()
                    .zip(&want)
                    .filter(|(a, b)| a != b)
                    .count();
                assert_eq!(differ, 0, "{size:?} on {bg:?}: {differ} bytes differ");
            }
        }
    }

    /// Issue 44: text drawn from the layout's glyphs through cached coverage gives the
    /// pixels usvg's text gives, up to anti-aliasing at glyph edges (a glyph is placed
    /// within an eighth of a pixel): the four faces at several sizes, on and off the
    /// pixel grid, under and over boxes. A glyph a pixel off, or a wrong glyph, fails.
    #[test]
    fn text_drawn_directly_matches_the_usvg_text() {
        use crate::fonts::Face;
        let text = |x, y, size, face: Face, fill, s: &str| Item::Text {
            x,
            y,
            size,
            face,
            font: face.font(),
            fill,
            text: s.into(),
        };
        let (ink, box_) = (Color(20, 30, 40), Color(200, 220, 250));
        let mut items = vec![Item::Rect {
            x: 90.0,
            y: 300.0,
            w: 700.0,
            h: 80.0,
            r: 8.0,
            fill: box_,
        }];
        let line = "Hamburgefonstiv QWXYZ 0123456789 (&@%?!) éßøÆ";
        for (i, face) in Face::ALL.into_iter().enumerate() {
            let f = i as f32;
            items.push(text(
                40.3 + f,
                100.0 + 90.0 * f,
                18.0 + 11.0 * f,
                face,
                ink,
                line,
            ));
            items.push(text(613.77, 141.4 + 90.0 * f, 13.5, face, ink, line));
        }
        items.push(text(
            101.1,
            352.6,
            44.0,
            Face::Bold,
            Color(190, 20, 20),
            "Over a box",
        ));
        items.push(Item::Rect {
            x: 100.0,
            y: 560.0,
            w: 300.0,
            h: 40.0,
            r: 0.0,
            fill: box_,
        });
        items.push(text(20.0, 700.0, 70.0, Face::Italic, ink, "Wg fi ff"));
        let page = Page {
            width: 1280.0,
            height: 720.0,
            background: Color(250, 250, 245),
            items,
            scale: 1.0,
        };
        let size = Size {
            width: 1280,
            height: 720,
        };
        let (images, trees, budget) = (Images::default(), SvgTrees::default(), Budget::unlimited());
        let png = rasterize(&page, &images, &trees, size, &budget).unwrap();
        let got = ::image::load_from_memory(&png).unwrap().to_rgb8();
        let want = drawn_plainly(&page, size);
        let (mut over, mut max, mut sum) = (0usize, 0u8, 0u64);
        for (a, b) in got.as_raw().iter().zip(&want) {
            let d = a.abs_diff(*b);
            max = max.max(d);
            sum += d as u64;
            over += usize::from(d > 64);
        }
        let inked = want.iter().filter(|&&v| v < 128).count();
        // Edges move by at most an eighth of a pixel: a few bytes change by more than
        // a quarter of the range where two glyphs' edges meet, none by most of it.
        assert!(max < 160, "a byte differs by {max}");
        assert!(
            over * 200 < inked,
            "{over} bytes differ by more than 64 of {inked} inked"
        );
        assert!(
            sum < inked as u64 * 12,
            "{sum} in all over {inked} inked bytes"
        );
    }
}
