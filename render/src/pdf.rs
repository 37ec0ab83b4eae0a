//! The display list as PDF pages: real text in the embedded fonts (subset per deck),
//! vector boxes, images as image XObjects.
//!
//! Fonts are subset here with allsorts (printpdf's own dependency) instead of through
//! printpdf's `subset_fonts`, which only works with its `text_layout` feature and so
//! its whole HTML layout engine. printpdf then embeds the small subset program as is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use printpdf::Codepoint;
use printpdf::{
    Actions, BorderArray, Color, DictItem, ExternalStream, ExternalXObject, FontId, LinePoint,
    LinkAnnotation, Mm, Op, ParsedFont, PdfDocument, PdfFont, PdfFontHandle, PdfPage,
    PdfSaveOptions, Point, Polygon, PolygonRing, Pt, Px, Rect, Rgb, TextItem, TextMatrix,
    TextRenderingMode, WindingOrder, XObject, XObjectId, XObjectTransform,
};
use resvg::tiny_skia;

use crate::fonts::{font_metrics, registry, FontKey, Metrics};
use crate::image::{check_cost, decode_raster, format_of, natural_sizes, Format, SvgTrees};
use crate::layout::{self, Item};
use crate::{visible, Budget, Image, Images, RenderError, Size};
use plinth_slides::Deck;

/// Points per layout unit: a 16:9 page is 720×405 pt (10 × 5.625 in), the usual
/// presentation page size.
const PT_PER_UNIT: f32 = 405.0 / layout::CANVAS_HEIGHT;
/// Images are embedded at up to this many pixels per layout unit (about 2× a 1080p
/// screen), so a 6000-pixel photo does not bloat the file.
const IMAGE_DENSITY: f32 = 2.0;

pub fn render(
    deck: &Deck,
    images: &Images,
    size: Size,
    options: crate::Options,
    budget: &Budget,
    progress: &mut dyn FnMut(usize) -> bool,
) -> Result<Vec<u8>, RenderError> {
    let trees = SvgTrees::default();
    let title = deck.title.as_deref().unwrap_or("Slides");
    let mut doc = PdfDocument::new(title);
    // Per asset: its XObject name and the largest box it is drawn in.
    let mut placed: HashMap<String, (XObjectId, f32, f32)> = HashMap::new();
    let mut pages = Vec::new();

    // First every page is laid out and its text shaped, so each font's subset (and so
    // the glyph numbers the pages use) is known before a page is written.
    let mut laid = Vec::new();
    let mut used: BTreeMap<FontKey, BTreeSet<u16>> = BTreeMap::new();
    let bare = options.notes.then(|| Deck {
        slides: Vec::new(),
        header: None,
        footer: None,
        paginate: false,
        logo: None,
        ..deck.clone()
    });
    let mut unicode: HashMap<(FontKey, u16), String> = HashMap::new();
    let carrier = registry().pick(crate::fonts::Face::Regular, ' ', None);
    for (i, slide) in visible(deck).into_iter().enumerate() {
        if !progress(i) {
            return Err(RenderError::Cancelled);
        }
        let budget = budget.for_slide();
        budget.check()?;
        let naturals = natural_sizes(deck, slide, images, &trees, &budget)?;
        budget.check()?;
        let mut pages = vec![layout::page(deck, slide, &naturals, size)];
        // A notes page after the slide: no header, footer or page number of its own.
        if let Some(bare) = &bare {
            if let Some(notes) = crate::notes_slide(slide, i + 1) {
                pages.push(layout::page_with(
                    bare,
                    &notes,
                    &Default::default(),
                    size,
                    layout::Fill::Top,
                ));
            }
        }
        for page in pages {
            let shaped: Vec<Option<Vec<Glyph>>> = page
                .items
                .iter()
                .map(|item| match item {
                    Item::Text { font, text, .. } => {
                        if font_metrics(*font).bitmap {
                            // Colour emoji are images; an invisible space carries their
                            // text (below), so it needs a place in its font's subset.
                            if let Some(carrier) = carrier {
                                for g in glyphs(font_metrics(carrier), " ") {
                                    used.entry(carrier).or_default().insert(g.gid);
                                    unicode.entry((carrier, g.gid)).or_insert(g.text);
                                }
                            }
                        }
                        let mut glyphs = glyphs(font_metrics(*font), text);
                        used.entry(*font)
                            .or_default()
                            .extend(glyphs.iter().map(|g| g.gid));
                        // One text per glyph in the whole document: the /ToUnicode map
                        // has one entry per glyph.
                        for g in &mut glyphs {
                            let t = unicode.entry((*font, g.gid)).or_default();
                            if t.is_empty() {
                                t.clone_from(&g.text);
                            }
                        }
                        Some(glyphs)
                    }
                    _ => None,
                })
                .collect();
            laid.push((page, shaped));
        }
    }
    // Fonts drawn as images (colour emoji) are not embedded.
    used.retain(|font, _| !font_metrics(*font).bitmap);
    let mut renumber: HashMap<(FontKey, u16), u16> = HashMap::new();
    for (font, gids) in &used {
        // Glyph 0 (.notdef) first, as allsorts requires; then ascending, which is the
        // order of the subset's glyphs.
        let list: BTreeSet<u16> = std::iter::once(0).chain(gids.iter().copied()).collect();
        for (new, old) in list.iter().enumerate() {
            renumber.insert((*font, *old), new as u16);
        }
    }
    let font_id = |f: FontKey| FontId(format!("F{}", f.0));
    let mut emoji: HashMap<(FontKey, u16), Option<(XObjectId, Bitmap)>> = HashMap::new();
    // Whole emoji font files, read once per document.
    let mut files: HashMap<FontKey, Option<crate::fonts::FontFile>> = HashMap::new();

    for (page, shaped) in laid {
        let (pw, ph) = (page.width * PT_PER_UNIT, page.height * PT_PER_UNIT);
        let y = |v: f32| ph - v * PT_PER_UNIT;
        let mut ops = vec![fill(page.background), rect(0.0, 0.0, pw, ph, 0.0)];
        let mut text_open = false;
        let mut current_font: Option<(FontKey, f32)> = None;
        for (item, shaped) in page.items.iter().zip(shaped) {
            let bitmap_text = matches!(item, Item::Text { font, .. } if font_metrics(*font).bitmap);
            let is_text = matches!(item, Item::Text { .. } | Item::Link { .. }) && !bitmap_text;
            if text_open && !is_text {
                ops.push(Op::EndTextSection);
                text_open = false;
            }
            match item {
                Item::Rect {
                    x,
                    y: top,
                    w,
                    h,
                    r,
                    fill: c,
                } => {
                    ops.push(fill(*c));
                    ops.push(rect(
                        x * PT_PER_UNIT,
                        y(top + h),
                        w * PT_PER_UNIT,
                        h * PT_PER_UNIT,
                        r * PT_PER_UNIT,
                    ));
                }
                Item::Text {
                    x,
                    y: baseline,
                    size,
                    font,
                    text,
                    ..
                } if bitmap_text => {
                    // Text extraction reads the run's text from /ActualText around an
                    // invisible space (readers attach it to the glyphs inside the span).
                    if let Some(carrier) = carrier {
                        let actual: Vec<u8> = [0xfe, 0xff]
                            .into_iter()
                            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
                            .collect();
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
                        let space = glyphs(cm, " ");
                        // As wide as the emoji, so extraction sees no gap around them.
                        let run: f32 = shaped.iter().flatten().map(|g| g.advance).sum();
                        let own: f32 = space.iter().map(|g| g.advance).sum();
                        if own > 0.0 {
                            ops.push(Op::SetHorizontalScaling {
                                percent: 100.0 * run / own,
                            });
                        }
                        show(
                            &mut ops,
                            cm,
                            &space,
                            (carrier, &renumber, &unicode),
                            |gx, _| (Pt((x + gx * size) * PT_PER_UNIT), Pt(y(*baseline))),
                        );
                        ops.push(Op::SetHorizontalScaling { percent: 100.0 });
                        ops.push(Op::SetTextRenderingMode {
                            mode: TextRenderingMode::Fill,
                        });
                        ops.push(Op::EndTextSection);
                        ops.push(Op::EndMarkedContent);
                    }
                    // Colour glyphs: each its bitmap, placed as usvg places it in the PNG.
                    let mut pen = *x;
                    for g in shaped.iter().flatten() {
                        let n = emoji.len();
                        let entry = emoji.entry((*font, g.gid)).or_insert_with(|| {
                            let file = files
                                .entry(*font)
                                .or_insert_with(|| crate::fonts::full_data(*font));
                            let (data, index) = file.as_ref()?;
                            bitmap(data, *index, g.gid).map(|b| (XObjectId(format!("Em{n}")), b))
                        });
                        if let Some((id, b)) = entry {
                            let s = size / b.ppem;
                            let (w, h) = (b.width as f32 * s, b.height as f32 * s);
                            let left = pen + g.dx * size + b.x * s;
                            let top = baseline - g.dy * size - b.y * s;
                            ops.push(Op::UseXobject {
                                id: id.clone(),
                                transform: XObjectTransform {
                                    translate_x: Some(Pt(left * PT_PER_UNIT)),
                                    translate_y: Some(Pt(y(top + h))),
                                    rotate: None,
                                    scale_x: Some(w * PT_PER_UNIT),
                                    scale_y: Some(h * PT_PER_UNIT),
                                    dpi: None,
                                    no_auto_scale: true,
                                },
                            });
                        }
                        pen += g.advance * size;
                    }
                }
                Item::Text {
                    x,
                    y: baseline,
                    size,
                    font,
                    fill: c,
                    ..
                } => {
                    if !text_open {
                        ops.push(Op::StartTextSection);
                        text_open = true;
                        current_font = None;
                    }
                    let pt = size * PT_PER_UNIT;
                    if current_font != Some((*font, pt)) {
                        ops.push(Op::SetFont {
                            font: PdfFontHandle::External(font_id(*font)),
                            size: Pt(pt),
                        });
                        current_font = Some((*font, pt));
                    }
                    ops.push(fill(*c));
                    let m = font_metrics(*font);
                    let glyphs = shaped.unwrap_or_default();
                    show(
                        &mut ops,
                        m,
                        &glyphs,
                        (*font, &renumber, &unicode),
                        |gx, dy| {
                            (
                                Pt((x + gx * size) * PT_PER_UNIT),
                                Pt(y(baseline - dy * size)),
                            )
                        },
                    );
                }
                Item::Link {
                    x,
                    y: top,
                    w,
                    h,
                    url,
                } => {
                    ops.push(Op::LinkAnnotation {
                        link: LinkAnnotation::new(
                            Rect {
                                x: Pt(x * PT_PER_UNIT),
                                y: Pt(y(top + h)),
                                width: Pt(w * PT_PER_UNIT),
                                height: Pt(h * PT_PER_UNIT),
                                mode: None,
                                winding_order: None,
                            },
                            Actions::Uri(url.clone()),
                            Some(BorderArray::Solid([0.0, 0.0, 0.0])),
                            None,
                            None,
                        ),
                    });
                }
                Item::Image {
                    x,
                    y: top,
                    w,
                    h,
                    asset_id,
                    clip,
                } => {
                    if let Some([cx, cy, cw, ch]) = clip {
                        ops.push(Op::SaveGraphicsState);
                        ops.push(Op::DrawRectangle {
                            rectangle: Rect {
                                x: Pt(cx * PT_PER_UNIT),
                                y: Pt(y(cy + ch)),
                                width: Pt(cw * PT_PER_UNIT),
                                height: Pt(ch * PT_PER_UNIT),
                                mode: Some(printpdf::PaintMode::Clip),
                                winding_order: Some(WindingOrder::NonZero),
                            },
                        });
                    }
                    let n = placed.len();
                    let entry = placed
                        .entry(asset_id.clone())
                        .or_insert_with(|| (XObjectId(format!("Im{n}")), 0.0, 0.0));
                    entry.1 = entry.1.max(*w);
                    entry.2 = entry.2.max(*h);
                    ops.push(Op::UseXobject {
                        id: entry.0.clone(),
                        transform: XObjectTransform {
                            translate_x: Some(Pt(x * PT_PER_UNIT)),
                            translate_y: Some(Pt(y(top + h))),
                            rotate: None,
                            // Images map to the unit square: scale it to the box.
                            scale_x: Some(w * PT_PER_UNIT),
                            scale_y: Some(h * PT_PER_UNIT),
                            dpi: None,
                            no_auto_scale: true,
                        },
                    });
                    if clip.is_some() {
                        ops.push(Op::RestoreGraphicsState);
                    }
                }
            }
        }
        if text_open {
            ops.push(Op::EndTextSection);
        }
        pages.push(PdfPage::new(Mm::from(Pt(pw)), Mm::from(Pt(ph)), ops));
    }

    for (font, gids) in &used {
        budget.check()?;
        let subset = subset_font(*font, gids)?;
        doc.resources
            .fonts
            .map
            .insert(font_id(*font), PdfFont::new(subset));
    }
    let mut emoji: Vec<_> = emoji.into_values().flatten().collect();
    emoji.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
    for (id, b) in emoji {
        budget.check()?;
        match decode_raster(&b.png, image::ImageFormat::Png) {
            Ok(img) => {
                doc.resources.xobjects.map.insert(id, pixels_xobject(&img));
            }
            Err(e) => {
                return Err(RenderError::Failed(format!(
                    "a colour glyph could not be decoded: {e}"
                )))
            }
        }
    }
    // Sorted so the document comes out the same every time.
    let mut placed: Vec<_> = placed.into_iter().collect();
    placed.sort_by(|a, b| a.1 .0.cmp(&b.1 .0));
    for (asset_id, (id, w, h)) in placed {
        let Some(image) = images.get(&asset_id) else {
            continue;
        };
        let max_px = (
            (w * IMAGE_DENSITY).ceil() as u32,
            (h * IMAGE_DENSITY).ceil() as u32,
        );
        budget.check()?;
        let x = xobject(&asset_id, image, max_px, &trees)?;
        budget.check()?;
        match x {
            Some(x) => {
                doc.resources.xobjects.map.insert(id, x);
            }
            None => {
                return Err(RenderError::Failed(format!(
                    "image {asset_id} could not be decoded"
                )))
            }
        }
    }

    let opts = PdfSaveOptions {
        // Compressed below, faster than printpdf would.
        optimize: false,
        // Already subset above; printpdf would embed the whole font otherwise anyway.
        subset_fonts: false,
        secure: true,
        // Every image is an encoded stream already (above).
        image_optimization: None,
    };
    budget.check()?;
    let mut warnings = Vec::new();
    let mut lo = doc
        .with_pages(pages)
        .to_lopdf_document(&opts, &mut warnings);
    compress_streams(&mut lo);
    let mut pdf = Vec::new();
    lo.save_to(&mut pdf)
        .map_err(|e| RenderError::Failed(format!("the PDF could not be written: {e}")))?;
    stable_file_id(&mut pdf);
    Ok(pdf)
}

/// Compresses every stream that has no filter yet (page contents, font programs) at
/// zlib's default level: printpdf's `optimize` uses the slowest, which took a third of an
/// export for a few percent of the file. A stream that would not shrink stays as it is.
fn compress_streams(doc: &mut lopdf::Document) {
    use std::io::Write;
    for object in doc.objects.values_mut() {
        let lopdf::Object::Stream(stream) = object else {
            continue;
        };
        if stream.dict.get(b"Filter").is_ok() || !stream.allows_compression {
            continue;
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        let Ok(packed) = z.write_all(&stream.content).and_then(|_| z.finish()) else {
            continue;
        };
        if packed.len() + 19 < stream.content.len() {
            stream.dict.set("Filter", "FlateDecode");
            stream.set_content(packed);
        }
    }
}

/// printpdf draws the trailer's file identifiers from a process-wide counter, so the
/// same deck came out different on every call. Both are 32 letters; replacing them
/// with letters from a hash of the document keeps every byte offset valid.
fn stable_file_id(pdf: &mut [u8]) {
    const MARK: &[u8] = b"/ID[(";
    let Some(at) = pdf.windows(MARK.len()).rposition(|w| w == MARK) else {
        return;
    };
    let start = at + MARK.len();
    let fits = pdf.len() > start + 66
        && pdf[start + 32] == b')'
        && pdf[start + 33] == b'('
        && pdf[start + 66] == b')';
    if !fits {
        return;
    }
    // FNV-1a with two seeds: 128 bits, one letter per 4 bits.
    let fnv = |seed: u64| {
        pdf[..at]
            .iter()
            .fold(seed, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
    };
    let (a, b) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4));
    let letters: Vec<u8> = (0..32)
        .map(|i| {
            let h = if i < 16 { a } else { b };
            b'A' + ((h >> ((i % 16) * 4)) & 0xf) as u8
        })
        .collect();
    pdf[start..start + 32].copy_from_slice(&letters);
    pdf[start + 34..start + 66].copy_from_slice(&letters);
}

fn fill(c: layout::Color) -> Op {
    Op::SetFillColor {
        col: Color::Rgb(Rgb {
            r: c.0 as f32 / 255.0,
            g: c.1 as f32 / 255.0,
            b: c.2 as f32 / 255.0,
            icc_profile: None,
        }),
    }
}

/// A filled box from its lower-left corner, with rounded corners when `r > 0`.
fn rect(x: f32, y: f32, w: f32, h: f32, r: f32) -> Op {
    let r = r.min(w / 2.0).min(h / 2.0);
    if r <= 0.0 {
        return Op::DrawRectangle {
            rectangle: Rect {
                x: Pt(x),
                y: Pt(y),
                width: Pt(w),
                height: Pt(h),
                mode: Some(printpdf::PaintMode::Fill),
                winding_order: Some(WindingOrder::NonZero),
            },
        };
    }
    // Cubic Bézier quarter circles: control points at k·r from the corners' ends.
    let k = r * (1.0 - 0.552_284_8);
    let p = |x: f32, y: f32, bezier: bool| LinePoint {
        p: Point { x: Pt(x), y: Pt(y) },
        bezier,
    };
    let (x1, y1) = (x + w, y + h);
    let points = vec![
        p(x + r, y, false),
        p(x1 - r, y, false),
        p(x1 - k, y, true),
        p(x1, y + k, true),
        p(x1, y + r, false),
        p(x1, y1 - r, false),
        p(x1, y1 - k, true),
        p(x1 - k, y1, true),
        p(x1 - r, y1, false),
        p(x + r, y1, false),
        p(x + k, y1, true),
        p(x, y1 - k, true),
        p(x, y1 - r, false),
        p(x, y + r, false),
        p(x, y + k, true),
        p(x + k, y, true),
        p(x + r, y, false),
    ];
    Op::DrawPolygon {
        polygon: Polygon {
            rings: vec![PolygonRing { points }],
            mode: printpdf::PaintMode::Fill,
            winding_order: WindingOrder::NonZero,
        },
    }
}

/// Something per glyph of a font.
type GlyphMap<T> = HashMap<(FontKey, u16), T>;

/// One glyph of a text item: its glyph id in the full font, its cluster's text, its
/// advance and offsets in em.
struct Glyph {
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
struct Bitmap {
    png: Vec<u8>,
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
fn subset_font(font: FontKey, gids: &BTreeSet<u16>) -> Result<ParsedFont, RenderError> {
    use allsorts::{
        binary::read::ReadScope,
        font_data::FontData,
        subset::{subset, CmapTarget, SubsetProfile},
    };
    let fail = |e: String| RenderError::Failed(format!("font subsetting failed: {e}"));
    let (file, index) =
        crate::fonts::full_data(font).ok_or_else(|| fail("the font file went away".into()))?;
    let gids: BTreeSet<u16> = std::iter::once(0).chain(gids.iter().copied()).collect();
    let gids: Vec<u16> = gids.into_iter().collect();
    let data = ReadScope::new(&file)
        .read::<FontData<'_>>()
        .map_err(|e| fail(e.to_string()))?;
    let provider = data
        .table_provider(index as usize)
        .map_err(|e| fail(e.to_string()))?;
    let bytes = subset(&provider, &gids, &SubsetProfile::Pdf, CmapTarget::Unicode)
        .map_err(|e| fail(e.to_string()))?;
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

/// An image XObject no larger than `max_px`: JPEG (grey or RGB) passes through as
/// DCT data and an opaque 8-bit PNG as its own Flate data; other rasters are decoded
/// and resized; SVG is rasterized at the box size once its cost there is checked.
fn xobject(
    id: &str,
    image: &Image,
    max_px: (u32, u32),
    trees: &SvgTrees,
) -> Result<Option<XObject>, RenderError> {
    let Some(format) = format_of(image) else {
        return Ok(None);
    };
    if let Some((w, h)) = crate::image::dimensions(&image.bytes, format) {
        // Validated at upload, but perhaps by an older release.
        crate::image::check_dimensions(w, h)
            .map_err(|e| RenderError::Rejected(format!("image {id}: {e}")))?;
    }
    Ok(match format {
        Format::Jpeg => {
            if let Some((w, h, components)) = jpeg_header(&image.bytes) {
                if matches!(components, 1 | 3) && w <= max_px.0 * 2 && h <= max_px.1 * 2 {
                    return Ok(Some(jpeg_passthrough(&image.bytes, w, h, components)));
                }
            }
            raster_xobject(image, image::ImageFormat::Jpeg, max_px)
        }
        Format::Png => png_passthrough(&image.bytes, max_px)
            .or_else(|| raster_xobject(image, image::ImageFormat::Png, max_px)),
        Format::Webp => raster_xobject(image, image::ImageFormat::WebP, max_px),
        Format::Svg => {
            let Some(tree) = trees.get(id, image)? else {
                return Ok(None);
            };
            // A cover box may reach far past the page: no more pixels than twice a
            // full page's.
            let (w, h) = (max_px.0.max(1) as f64, max_px.1.max(1) as f64);
            let k = (w * h / (2.0 * 3840.0 * 2160.0)).sqrt().max(1.0);
            let (mut w, mut h) = (((w / k) as u32).max(1), ((h / k) as u32).max(1));
            let size = tree.size();
            let at = |w: u32, h: u32| {
                let ts = tiny_skia::Transform::from_scale(
                    w as f32 / size.width(),
                    h as f32 / size.height(),
                );
                (ts, crate::cost::svg_cost(&tree, ts, w, h))
            };
            let (mut ts, mut cost) = at(w, h);
            if cost > crate::MAX_SVG_COST {
                // Fewer pixels (down to the slide's own density) rather than no image:
                // the cost is about proportional to the area.
                let k = (cost as f64 / crate::MAX_SVG_COST as f64)
                    .sqrt()
                    .min(IMAGE_DENSITY as f64);
                let (w2, h2) = (
                    ((w as f64 / k) as u32).max(1),
                    ((h as f64 / k) as u32).max(1),
                );
                (ts, cost) = at(w2, h2);
                (w, h) = (w2, h2);
            }
            check_cost(&format!("image {id}"), cost, w, h)?;
            let Some(mut pixmap) = tiny_skia::Pixmap::new(w, h) else {
                return Ok(None);
            };
            resvg::render(&tree, ts, &mut pixmap.as_mut());
            let rgba: Vec<u8> = pixmap
                .pixels()
                .iter()
                .flat_map(|p| {
                    let c = p.demultiply();
                    [c.red(), c.green(), c.blue(), c.alpha()]
                })
                .collect();
            image::RgbaImage::from_raw(w, h, rgba)
                .map(|img| pixels_xobject(&image::DynamicImage::ImageRgba8(img)))
        }
    })
}

fn raster_xobject(
    image: &Image,
    format: image::ImageFormat,
    max_px: (u32, u32),
) -> Option<XObject> {
    let mut img = decode_raster(&image.bytes, format).ok()?;
    if img.width() > max_px.0 || img.height() > max_px.1 {
        img = img.resize(
            max_px.0.max(1),
            max_px.1.max(1),
            image::imageops::FilterType::Triangle,
        );
    }
    Some(pixels_xobject(&img))
}

/// Decoded pixels as an image XObject: grey or RGB, Flate-compressed here, with a soft
/// mask when some pixel is not opaque. printpdf would compress them at zlib's slowest
/// level, several times the time of the default one for a few per cent of size.
fn pixels_xobject(img: &image::DynamicImage) -> XObject {
    let (w, h) = (img.width(), img.height());
    let grey = !img.color().has_color();
    let mut stream = if grey {
        image_stream(&img.to_luma8(), w, h, 1)
    } else {
        image_stream(&img.to_rgb8(), w, h, 3)
    };
    if img.color().has_alpha() {
        let alpha: Vec<u8> = img.to_rgba8().pixels().map(|p| p.0[3]).collect();
        if alpha.iter().any(|&a| a != 255) {
            stream.dict.insert(
                "SMask".to_owned(),
                DictItem::Stream {
                    stream: image_stream(&alpha, w, h, 1),
                },
            );
        }
    }
    XObject::External(ExternalXObject {
        stream,
        width: Some(Px(w as usize)),
        height: Some(Px(h as usize)),
        dpi: None,
    })
}

/// An 8-bit image stream of `pixels` (`colors` per pixel), Flate-compressed.
fn image_stream(pixels: &[u8], w: u32, h: u32, colors: u8) -> ExternalStream {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(pixels.len() / 4),
        flate2::Compression::default(),
    );
    let content = z
        .write_all(pixels)
        .and_then(|()| z.finish())
        .expect("compressing into memory does not fail");
    let mut dict = image_dict(w, h, colors);
    dict.insert("Filter".to_owned(), DictItem::Name(b"FlateDecode".to_vec()));
    ExternalStream {
        dict,
        content,
        compress: false,
    }
}

fn image_dict(w: u32, h: u32, colors: u8) -> BTreeMap<String, DictItem> {
    let name = |s: &str| DictItem::Name(s.as_bytes().to_vec());
    BTreeMap::from([
        ("Type".to_owned(), name("XObject")),
        ("Subtype".to_owned(), name("Image")),
        ("Width".to_owned(), DictItem::Int(w as i64)),
        ("Height".to_owned(), DictItem::Int(h as i64)),
        (
            "ColorSpace".to_owned(),
            name(if colors == 1 {
                "DeviceGray"
            } else {
                "DeviceRGB"
            }),
        ),
        ("BitsPerComponent".to_owned(), DictItem::Int(8)),
    ])
}

/// An opaque 8-bit grey or RGB PNG, not interlaced and not much larger than `max_px`,
/// as it is: its IDAT data is a zlib stream of scanlines with PNG's row filters, which
/// PDF reads as Flate with the PNG predictors (ISO 32000-1, 7.4.4.4). No decoding and
/// no compressing; the upload was fully decoded once when it was validated.
fn png_passthrough(bytes: &[u8], max_px: (u32, u32)) -> Option<XObject> {
    let mut at = 8;
    let mut header = None;
    let mut data = Vec::new();
    while let Some(len) = bytes.get(at..at + 4) {
        let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
        let kind = bytes.get(at + 4..at + 8)?;
        let body = bytes.get(at + 8..at + 8 + len)?;
        match kind {
            b"IHDR" => header = Some(body),
            b"IDAT" => data.extend_from_slice(body),
            // Transparency by colour key: needs a mask, so decode.
            b"tRNS" => return None,
            b"IEND" => break,
            _ => {}
        }
        at += len + 12;
    }
    let header = header.filter(|h| h.len() == 13)?;
    let w = u32::from_be_bytes(header[0..4].try_into().ok()?);
    let h = u32::from_be_bytes(header[4..8].try_into().ok()?);
    let (depth, color, interlace) = (header[8], header[9], header[12]);
    let colors = match color {
        0 => 1,
        2 => 3,
        _ => return None,
    };
    if depth != 8 || interlace != 0 || w > max_px.0 * 2 || h > max_px.1 * 2 || data.is_empty() {
        return None;
    }
    let mut dict = image_dict(w, h, colors);
    dict.insert("Filter".to_owned(), DictItem::Name(b"FlateDecode".to_vec()));
    dict.insert(
        "DecodeParms".to_owned(),
        DictItem::Dict {
            map: BTreeMap::from([
                ("Predictor".to_owned(), DictItem::Int(15)),
                ("Colors".to_owned(), DictItem::Int(colors as i64)),
                ("BitsPerComponent".to_owned(), DictItem::Int(8)),
                ("Columns".to_owned(), DictItem::Int(w as i64)),
            ]),
        },
    );
    Some(XObject::External(ExternalXObject {
        stream: ExternalStream {
            dict,
            content: data,
            compress: false,
        },
        width: Some(Px(w as usize)),
        height: Some(Px(h as usize)),
        dpi: None,
    }))
}

/// Whether a PNG of any size would be embedded as it is.
#[cfg(test)]
pub(crate) fn passes_through(png: &[u8]) -> bool {
    png_passthrough(png, (1 << 16, 1 << 16)).is_some()
}

/// Width, height and component count from a JPEG's start-of-frame marker.
fn jpeg_header(bytes: &[u8]) -> Option<(u32, u32, u8)> {
    let mut i = 2;
    while i + 4 <= bytes.len() {
        if bytes[i] != 0xff {
            return None;
        }
        let marker = bytes[i + 1];
        if marker == 0xff {
            i += 1;
            continue;
        }
        let len = u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]) as usize;
        // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
        if (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let seg = bytes.get(i + 4..i + 2 + len)?;
            let h = u16::from_be_bytes([*seg.get(1)?, *seg.get(2)?]) as u32;
            let w = u16::from_be_bytes([*seg.get(3)?, *seg.get(4)?]) as u32;
            return Some((w, h, *seg.get(5)?));
        }
        i += 2 + len;
    }
    None
}

fn jpeg_passthrough(bytes: &[u8], w: u32, h: u32, components: u8) -> XObject {
    let mut dict = image_dict(w, h, components);
    dict.insert("Filter".to_owned(), DictItem::Name(b"DCTDecode".to_vec()));
    XObject::External(ExternalXObject {
        stream: ExternalStream {
            dict,
            content: bytes.to_vec(),
            compress: false,
        },
        width: Some(Px(w as usize)),
        height: Some(Px(h as usize)),
        dpi: None,
    })
}
