//! Text: each run shaped into glyphs before any page is written (so every font's subset
//! is known), then shown by subset glyph number; colour emoji as images; a formula's
//! text invisible over its image.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use printpdf::{
    Codepoint, DictItem, FontId, Op, ParsedFont, PdfFontHandle, Pt, TextItem, TextMatrix,
    TextRenderingMode, XObjectId, XObjectTransform,
};

use crate::fonts::{font_metrics, registry, Face, FontKey, Metrics};
use crate::layout::{self, Item, Page};
use crate::{Images, RenderError};

use super::{fill, PageWriter, PT_PER_UNIT};

/// The glyphs the pages use, gathered while their text is shaped.
pub(super) struct Shaper {
    /// Full-font glyph ids used, per font.
    pub(super) used: BTreeMap<FontKey, BTreeSet<u16>>,
    /// One text per glyph in the whole document: the /ToUnicode map has one entry per
    /// glyph.
    pub(super) unicode: GlyphMap<String>,
    /// The font whose invisible space carries the text of colour emoji.
    pub(super) carrier: Option<FontKey>,
}

impl Shaper {
    pub(super) fn new() -> Self {
        Shaper {
            used: BTreeMap::new(),
            unicode: HashMap::new(),
            carrier: registry().pick(crate::fonts::Face::Regular, ' ', None),
        }
    }

    /// The glyphs of each of the page's items: its text's, a formula's text's.
    pub(super) fn shape_page(&mut self, page: &Page, images: &Images) -> Vec<Shaped> {
        page.items
            .iter()
            .map(|item| match item {
                Item::Text { font, text, .. } => Shaped::Text(self.shape(*font, text)),
                Item::Image { asset_id, .. } if asset_id.starts_with(plinth_slides::MATHS) => {
                    images
                        .get(asset_id)
                        .and_then(|i| crate::maths::text_of(&i.bytes))
                        .and_then(|t| self.shape_maths(asset_id, t))
                        .map_or(Shaped::Nothing, Shaped::Maths)
                }
                _ => Shaped::Nothing,
            })
            .collect()
    }

    /// A formula's text in the fonts that have its characters; its TeX source when no
    /// font has one of them (docs/slides.md, "Maths").
    fn shape_maths(&mut self, asset_id: &str, t: crate::maths::FormulaText) -> Option<MathsText> {
        let runs = runs_of(&t.text).or_else(|| runs_of(&plinth_slides::maths_of(asset_id)?.0))?;
        let runs = runs
            .into_iter()
            .map(|(font, text)| (font, self.shape(font, &text)))
            .collect();
        Some(MathsText {
            runs,
            baseline: t.baseline,
            size: t.size,
        })
    }

    fn shape(&mut self, font: FontKey, text: &str) -> Vec<Glyph> {
        if font_metrics(font).bitmap {
            // Colour emoji are images; an invisible space carries their
            // text (below), so it needs a place in its font's subset.
            if let Some(carrier) = self.carrier {
                for g in glyphs(font_metrics(carrier), " ") {
                    self.used.entry(carrier).or_default().insert(g.gid);
                    self.unicode.entry((carrier, g.gid)).or_insert(g.text);
                }
            }
        }
        let mut glyphs = glyphs(font_metrics(font), text);
        self.used
            .entry(font)
            .or_default()
            .extend(glyphs.iter().map(|g| g.gid));
        // One text per glyph in the whole document: the /ToUnicode map
        // has one entry per glyph.
        for g in &mut glyphs {
            let t = self.unicode.entry((font, g.gid)).or_default();
            if t.is_empty() {
                t.clone_from(&g.text);
            }
        }
        glyphs
    }

    /// Drops fonts drawn as images (colour emoji), which are not embedded, and numbers
    /// the rest's glyphs as their subsets will.
    pub(super) fn renumber(&mut self) -> GlyphMap<u16> {
        self.used.retain(|font, _| !font_metrics(*font).bitmap);
        let mut renumber: HashMap<(FontKey, u16), u16> = HashMap::new();
        for (font, gids) in &self.used {
            // Glyph 0 (.notdef) first, as allsorts requires; then ascending, which is the
            // order of the subset's glyphs.
            let list: BTreeSet<u16> = std::iter::once(0).chain(gids.iter().copied()).collect();
            for (new, old) in list.iter().enumerate() {
                renumber.insert((*font, *old), new as u16);
            }
        }
        renumber
    }
}

/// What an item of a page needs drawn as text.
pub(super) enum Shaped {
    Nothing,
    /// A text item's glyphs.
    Text(Vec<Glyph>),
    /// The text of a formula (an image).
    Maths(MathsText),
}

impl Shaped {
    pub(super) fn glyphs(self) -> Vec<Glyph> {
        match self {
            Shaped::Text(g) => g,
            _ => Vec::new(),
        }
    }
}

/// A formula's text, shaped: runs of one font each, and where its baseline and size sit
/// in its box (fractions of the box's height).
pub(super) struct MathsText {
    runs: Vec<(FontKey, Vec<Glyph>)>,
    baseline: f32,
    size: f32,
}

/// The text cut into runs of one outline font each; `None` when a character has none.
fn runs_of(text: &str) -> Option<Vec<(FontKey, String)>> {
    let mut runs: Vec<(FontKey, String)> = Vec::new();
    let mut prev = None;
    for c in text.chars() {
        let font = registry()
            .pick(Face::Regular, c, prev)
            .filter(|f| !font_metrics(*f).bitmap)?;
        match runs.last_mut() {
            Some((k, run)) if *k == font => run.push(c),
            _ => runs.push((font, c.to_string())),
        }
        prev = Some(font);
    }
    Some(runs)
}

/// The PDF name of a font's subset.
pub(super) fn font_id(f: FontKey) -> FontId {
    FontId(format!("F{}", f.0))
}

impl PageWriter {
    /// A run in an outline font, in the page's open text section.
    pub(super) fn text(
        &mut self,
        (x, baseline): (f32, f32),
        size: f32,
        font: FontKey,
        c: layout::Color,
        glyphs: &[Glyph],
    ) {
        if !self.text_open {
            self.ops.push(Op::StartTextSection);
            self.text_open = true;
            self.current_font = None;
        }
        let pt = size * PT_PER_UNIT;
        if self.current_font != Some((font, pt)) {
            self.ops.push(Op::SetFont {
                font: PdfFontHandle::External(font_id(font)),
                size: Pt(pt),
            });
            self.current_font = Some((font, pt));
        }
        self.ops.push(fill(c));
        let m = font_metrics(font);
        let h = self.page_height;
        show(
            &mut self.ops,
            m,
            glyphs,
            (font, &self.renumber, &self.shaper.unicode),
            |gx, dy| {
                (
                    Pt((x + gx * size) * PT_PER_UNIT),
                    Pt(h - (baseline - dy * size) * PT_PER_UNIT),
                )
            },
        );
    }

    /// A run of colour emoji: its text for extraction, then each glyph's bitmap.
    pub(super) fn bitmap_text(
        &mut self,
        (x, baseline): (f32, f32),
        size: f32,
        font: FontKey,
        text: &str,
        glyphs: &[Glyph],
    ) {
        self.actual_text((x, baseline), size, text, glyphs);
        // Colour glyphs: each its bitmap, placed as usvg places it in the PNG.
        let mut pen = x;
        for g in glyphs {
            let n = self.emoji.len();
            let entry = self.emoji.entry((font, g.gid)).or_insert_with(|| {
                // The glyph's bitmap from the mapped file: only its pages are read.
                crate::fonts::with_full_data(font, |data, index| bitmap(data, index, g.gid))
                    .flatten()
                    .map(|b| (XObjectId(format!("Em{n}")), b))
            });
            if let Some((id, b)) = entry {
                let s = size / b.ppem;
                let (w, h) = (b.width as f32 * s, b.height as f32 * s);
                let left = pen + g.dx * size + b.x * s;
                let top = baseline - g.dy * size - b.y * s;
                let op = Op::UseXobject {
                    id: id.clone(),
                    transform: XObjectTransform {
                        translate_x: Some(Pt(left * PT_PER_UNIT)),
                        translate_y: Some(Pt(self.page_height - (top + h) * PT_PER_UNIT)),
                        rotate: None,
                        scale_x: Some(w * PT_PER_UNIT),
                        scale_y: Some(h * PT_PER_UNIT),
                        dpi: None,
                        no_auto_scale: true,
                    },
                };
                self.ops.push(op);
            }
            pen += g.advance * size;
        }
    }

    /// A formula's text, invisible (render mode 3) over its image and stretched to its
    /// width, on its main baseline: text extraction and search find what the formula
    /// says, the image shows it.
    pub(super) fn maths_text(&mut self, (x, top, w, h): (f32, f32, f32, f32), m: &MathsText) {
        let size = (m.size * h).max(1.0);
        let em: f32 = m.runs.iter().flat_map(|(_, g)| g).map(|g| g.advance).sum();
        if em <= 0.0 {
            return;
        }
        let scale = w / (em * size);
        let (baseline, page_height) = (top + m.baseline * h, self.page_height);
        let ops = &mut self.ops;
        ops.push(Op::StartTextSection);
        ops.push(Op::SetTextRenderingMode {
            mode: TextRenderingMode::Invisible,
        });
        ops.push(Op::SetHorizontalScaling {
            percent: 100.0 * scale,
        });
        let mut pen = x;
        for (font, glyphs) in &m.runs {
            ops.push(Op::SetFont {
                font: PdfFontHandle::External(font_id(*font)),
                size: Pt(size * PT_PER_UNIT),
            });
            let map = (*font, &self.renumber, &self.shaper.unicode);
            show(ops, font_metrics(*font), glyphs, map, |gx, dy| {
                (
                    Pt((pen + gx * size * scale) * PT_PER_UNIT),
                    Pt(page_height - (baseline - dy * size) * PT_PER_UNIT),
                )
            });
            pen += glyphs.iter().map(|g| g.advance).sum::<f32>() * size * scale;
        }
        ops.push(Op::SetHorizontalScaling { percent: 100.0 });
        ops.push(Op::SetTextRenderingMode {
            mode: TextRenderingMode::Fill,
        });
        ops.push(Op::EndTextSection);
    }

    /// Text extraction reads the run's text from /ActualText around an invisible space
    /// (readers attach it to the glyphs inside the span).
    fn actual_text(&mut self, (x, baseline): (f32, f32), size: f32, text: &str, glyphs: &[Glyph]) {
        let Some(carrier) = self.shaper.carrier else {
            return;
        };
        let actual: Vec<u8> = [0xfe, 0xff]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        let ops = &mut self.ops;
        ops.push(Op::BeginMarkedContentWithProperties {
            tag: "Span".into(),
            properties: DictItem::Dict {
                map: [(
                    "ActualText".to_owned(),
                    DictItem::String {
                        data: actual,
                        literal: false,
                    },
                )]
                .into(),
            },
        });
        ops.push(Op::StartTextSection);
        ops.push(Op::SetFont {
            font: PdfFontHandle::External(font_id(carrier)),
            size: Pt(size * PT_PER_UNIT),
        });
        ops.push(Op::SetTextRenderingMode {
            mode: TextRenderingMode::Invisible,
        });
        let cm = font_metrics(carrier);
        let space = self::glyphs(cm, " ");
        // As wide as the emoji, so extraction sees no gap around them.
        let run: f32 = glyphs.iter().map(|g| g.advance).sum();
        let own: f32 = space.iter().map(|g| g.advance).sum();
        if own > 0.0 {
            ops.push(Op::SetHorizontalScaling {
                percent: 100.0 * run / own,
            });
        }
        let y = self.page_height - baseline * PT_PER_UNIT;
        show(
            ops,
            cm,
            &space,
            (carrier, &self.renumber, &self.shaper.unicode),
            |gx, _| (Pt((x + gx * size) * PT_PER_UNIT), Pt(y)),
        );
        ops.push(Op::SetHorizontalScaling { percent: 100.0 });
        ops.push(Op::SetTextRenderingMode {
            mode: TextRenderingMode::Fill,
        });
        ops.push(Op::EndTextSection);
        ops.push(Op::EndMarkedContent);
    }
}

/// Something per glyph of a font.
pub(super) type GlyphMap<T> = HashMap<(FontKey, u16), T>;

/// One glyph of a text item: its glyph id in the full font, its cluster's text, its
/// advance and offsets in em.
pub(super) struct Glyph {
    gid: u16,
    text: String,
    advance: f32,
    dx: f32,
    dy: f32,
}

/// A text item's glyphs: shaped when its script needs it (the same shaping the layout
/// measured with), else one glyph per character.
fn glyphs(m: &Metrics, text: &str) -> Vec<Glyph> {
    if crate::fonts::needs_shaping(text) {
        let shaped = m.shape(text);
        // Each cluster's characters go to its glyphs: a glyph that is a character's
        // own glyph maps back to that character (a Devanagari vowel sign drawn before
        // its consonant, a Thai tone mark), the rest to the cluster's first glyph
        // without one (ligatures, joined forms, emoji sequences).
        let mut starts: Vec<usize> = shaped.iter().map(|s| s.byte).collect();
        starts.sort_unstable();
        starts.dedup();
        let mut texts = vec![String::new(); shaped.len()];
        for (n, &b) in starts.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(text.len());
            let mut chars: Vec<char> = text.get(b..end).unwrap_or("").chars().collect();
            let members: Vec<usize> = (0..shaped.len()).filter(|&k| shaped[k].byte == b).collect();
            for &k in &members {
                if let Some(p) = chars
                    .iter()
                    .position(|&c| m.glyph(c) == Some(shaped[k].gid))
                {
                    texts[k].push(chars.remove(p));
                }
            }
            if !chars.is_empty() {
                let k = members
                    .iter()
                    .copied()
                    .find(|&k| texts[k].is_empty())
                    .or(members.first().copied());
                if let Some(k) = k {
                    texts[k].extend(chars);
                }
            }
        }
        return shaped
            .into_iter()
            .zip(texts)
            .map(|(s, text)| Glyph {
                gid: s.gid,
                text,
                advance: s.advance,
                dx: s.dx,
                dy: s.dy,
            })
            .collect();
    }
    text.chars()
        .filter(|c| !crate::fonts::ignorable(*c))
        .map(|c| Glyph {
            gid: m.glyph(c).unwrap_or(0),
            text: c.to_string(),
            advance: m.advance(c),
            dx: 0.0,
            dy: 0.0,
        })
        .collect()
}

/// Shows glyphs by their subset glyph numbers: one text-matrix move per stretch of
/// glyphs on one baseline offset, `TJ` adjustments where shaping moved a glyph off
/// its font advance. Each glyph carries its cluster's text for the `/ToUnicode` map,
/// so the PDF's text extracts (and searches) as written.
fn show(
    ops: &mut Vec<Op>,
    m: &Metrics,
    glyphs: &[Glyph],
    (font, renumber, unicode): (FontKey, &GlyphMap<u16>, &GlyphMap<String>),
    at: impl Fn(f32, f32) -> (Pt, Pt),
) {
    let mut pen = 0.0;
    let mut i = 0;
    while i < glyphs.len() {
        let dy = glyphs[i].dy;
        let mut j = i;
        let mut run = Vec::new();
        let start = pen + glyphs[i].dx;
        while j < glyphs.len() && glyphs[j].dy == dy {
            let g = &glyphs[j];
            let drawn = m.glyph_advance(g.gid);
            let next_dx = glyphs
                .get(j + 1)
                .filter(|n| n.dy == dy)
                .map_or(0.0, |n| n.dx);
            // Where the next glyph should start, against where the font's advance
            // would put it (TJ numbers are thousandths of an em, positive = left).
            let correction = g.advance + next_dx - g.dx - drawn;
            run.push(Codepoint {
                gid: renumber.get(&(font, g.gid)).copied().unwrap_or(0),
                offset: if correction.abs() > 1e-4 {
                    -correction * 1000.0
                } else {
                    0.0
                },
                cid: Some(unicode.get(&(font, g.gid)).unwrap_or(&g.text).clone()),
            });
            pen += g.advance;
            j += 1;
        }
        let (x, y) = at(start, dy);
        ops.push(Op::SetTextMatrix {
            matrix: TextMatrix::Translate(x, y),
        });
        ops.push(Op::ShowText {
            items: vec![TextItem::GlyphIds(run)],
        });
        i = j;
    }
}

/// A colour glyph's PNG and where it sits: `x`, `y` are its inner bearings in pixels
/// of its strike (`ppem` pixels per em).
pub(super) struct Bitmap {
    pub(super) png: Vec<u8>,
    x: f32,
    y: f32,
    width: u32,
    height: u32,
    ppem: f32,
}

fn bitmap(data: &[u8], index: u32, gid: u16) -> Option<Bitmap> {
    use skrifa::bitmap::BitmapData;
    use skrifa::MetadataProvider;
    let font = skrifa::FontRef::from_index(data, index).ok()?;
    let strikes = font.bitmap_strikes();
    let g = strikes.glyph_for_size(
        skrifa::instance::Size::unscaled(),
        skrifa::GlyphId::new(gid as u32),
    )?;
    match g.data {
        BitmapData::Png(png) if g.ppem_x > 0.0 => Some(Bitmap {
            png: png.to_vec(),
            x: g.inner_bearing_x,
            y: g.inner_bearing_y,
            width: g.width,
            height: g.height,
            ppem: g.ppem_x,
        }),
        _ => None,
    }
}

/// The face cut down to the glyphs the deck uses (renumbered in ascending order after
/// .notdef), parsed for printpdf. The pages show glyphs by number with their text
/// attached, so printpdf writes the `/ToUnicode` map that makes the text extractable.
pub(super) fn subset_font(font: FontKey, gids: &BTreeSet<u16>) -> Result<ParsedFont, RenderError> {
    use allsorts::{
        binary::read::ReadScope,
        font_data::FontData,
        subset::{subset, CmapTarget, SubsetProfile},
    };
    let fail = |e: String| RenderError::Failed(format!("font subsetting failed: {e}"));
    let gids: BTreeSet<u16> = std::iter::once(0).chain(gids.iter().copied()).collect();
    let gids: Vec<u16> = gids.into_iter().collect();
    // From the mapped file: only the tables and glyphs the subset needs are read.
    let bytes = crate::fonts::with_full_data(font, |file, index| {
        let data = ReadScope::new(file)
            .read::<FontData<'_>>()
            .map_err(|e| fail(e.to_string()))?;
        let provider = data
            .table_provider(index as usize)
            .map_err(|e| fail(e.to_string()))?;
        subset(&provider, &gids, &SubsetProfile::Pdf, CmapTarget::Unicode)
            .map_err(|e| fail(e.to_string()))
    })
    .ok_or_else(|| fail("the font file went away".into()))??;
    let mut warnings = Vec::new();
    let mut parsed = ParsedFont::from_bytes(&bytes, 0, &mut warnings)
        .ok_or_else(|| fail(format!("subset does not parse: {warnings:?}")))?;
    // The tag marks a subset font program (ISO 32000-1, 9.6.4); six capitals.
    let name: String = registry()
        .font(font)
        .family
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let style = match (registry().font(font).weight, registry().font(font).italic) {
        (700.., true) => "-BoldOblique",
        (700.., false) => "-Bold",
        (_, true) => "-Oblique",
        _ => "",
    };
    let tag: String = (0..6)
        .map(|i| (b'A' + ((font.0 as u32 / 26u32.pow(i)) % 26) as u8) as char)
        .collect();
    parsed.font_name = Some(format!("{tag}+{name}{style}"));
    Ok(parsed)
}
