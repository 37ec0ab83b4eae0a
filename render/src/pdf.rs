//! The display list as PDF pages: real text in the embedded fonts (subset per deck),
//! vector boxes, images as image XObjects.
//!
//! Fonts are subset here with allsorts (printpdf's own dependency) instead of through
//! printpdf's `subset_fonts`, which only works with its `text_layout` feature and so
//! its whole HTML layout engine. printpdf then embeds the small subset program as is.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use printpdf::{
    Actions, BorderArray, Color, DictItem, ExternalStream, ExternalXObject, FontId,
    ImageCompression, ImageOptimizationOptions, LinePoint, LinkAnnotation, Mm, Op, ParsedFont,
    PdfDocument, PdfFont, PdfFontHandle, PdfPage, PdfSaveOptions, Point, Polygon, PolygonRing, Pt,
    Px, RawImage, RawImageData, RawImageFormat, Rect, Rgb, TextItem, TextMatrix, WindingOrder,
    XObject, XObjectId, XObjectTransform,
};
use resvg::tiny_skia;

use crate::fonts::{metrics, Face};
use crate::image::{decode_raster, format_of, natural_sizes, parse_svg, Format};
use crate::layout::{self, Item};
use crate::{visible, Image, Images, RenderError, Size};
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
    progress: &mut dyn FnMut(usize) -> bool,
) -> Result<Vec<u8>, RenderError> {
    let title = deck.title.as_deref().unwrap_or("Slides");
    let mut doc = PdfDocument::new(title);
    let font_ids: Vec<FontId> = Face::ALL
        .iter()
        .map(|f| FontId(format!("F{}", f.index())))
        .collect();
    let mut used_chars: [BTreeSet<char>; 4] = Default::default();
    // Per asset: its XObject name and the largest box it is drawn in.
    let mut placed: HashMap<String, (XObjectId, f32, f32)> = HashMap::new();
    let mut pages = Vec::new();

    for (i, slide) in visible(deck).into_iter().enumerate() {
        if !progress(i) {
            return Err(RenderError::Cancelled);
        }
        let page = layout::page(deck, slide, &natural_sizes(slide, images), size);
        let (pw, ph) = (page.width * PT_PER_UNIT, page.height * PT_PER_UNIT);
        let y = |v: f32| ph - v * PT_PER_UNIT;
        let mut ops = vec![fill(page.background), rect(0.0, 0.0, pw, ph, 0.0)];
        let mut text_open = false;
        let mut current_font: Option<(Face, f32)> = None;
        for item in &page.items {
            let is_text = matches!(item, Item::Text { .. } | Item::Link { .. });
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
                    face,
                    fill: c,
                    text,
                } => {
                    if !text_open {
                        ops.push(Op::StartTextSection);
                        text_open = true;
                        current_font = None;
                    }
                    let pt = size * PT_PER_UNIT;
                    if current_font != Some((*face, pt)) {
                        ops.push(Op::SetFont {
                            font: PdfFontHandle::External(font_ids[face.index()].clone()),
                            size: Pt(pt),
                        });
                        current_font = Some((*face, pt));
                    }
                    ops.push(fill(*c));
                    ops.push(Op::SetTextMatrix {
                        matrix: TextMatrix::Translate(Pt(x * PT_PER_UNIT), Pt(y(*baseline))),
                    });
                    ops.push(Op::ShowText {
                        items: vec![TextItem::Text(text.clone())],
                    });
                    used_chars[face.index()].extend(text.chars());
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

    for face in Face::ALL {
        let chars = &used_chars[face.index()];
        if chars.is_empty() {
            continue;
        }
        let font = subset_font(face, chars)?;
        doc.resources
            .fonts
            .map
            .insert(font_ids[face.index()].clone(), PdfFont::new(font));
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
        match xobject(image, max_px) {
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
        optimize: true,
        // Already subset above; printpdf would embed the whole font otherwise anyway.
        subset_fonts: false,
        secure: true,
        // Lossless, no resizing: images were sized above.
        image_optimization: Some(ImageOptimizationOptions {
            quality: None,
            max_image_size: None,
            dither_greyscale: Some(false),
            convert_to_greyscale: Some(false),
            auto_optimize: Some(false),
            format: Some(ImageCompression::Flate),
        }),
    };
    let mut warnings = Vec::new();
    let mut pdf = doc.with_pages(pages).save(&opts, &mut warnings);
    stable_file_id(&mut pdf);
    Ok(pdf)
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

/// The face cut down to the glyphs the deck uses, parsed for printpdf. The subset
/// keeps a Unicode cmap, so printpdf maps characters to the renumbered glyphs and
/// writes the /ToUnicode map that makes the text extractable.
fn subset_font(face: Face, chars: &BTreeSet<char>) -> Result<ParsedFont, RenderError> {
    use allsorts::{
        binary::read::ReadScope,
        font_data::FontData,
        subset::{subset, CmapTarget, SubsetProfile},
    };
    let fail = |e: String| RenderError::Failed(format!("font subsetting failed: {e}"));
    let m = metrics(face);
    // Glyph 0 (.notdef) first, as allsorts requires.
    let gids: BTreeSet<u16> = std::iter::once(0)
        .chain(chars.iter().filter_map(|&c| m.glyph(c)))
        .collect();
    let gids: Vec<u16> = gids.into_iter().collect();
    let data = ReadScope::new(face.bytes())
        .read::<FontData<'_>>()
        .map_err(|e| fail(e.to_string()))?;
    let provider = data.table_provider(0).map_err(|e| fail(e.to_string()))?;
    let bytes = subset(&provider, &gids, &SubsetProfile::Pdf, CmapTarget::Unicode)
        .map_err(|e| fail(e.to_string()))?;
    let mut warnings = Vec::new();
    let mut font = ParsedFont::from_bytes(&bytes, 0, &mut warnings)
        .ok_or_else(|| fail(format!("subset does not parse: {warnings:?}")))?;
    // The tag marks a subset font program (ISO 32000-1, 9.6.4).
    let name = match face {
        Face::Regular => "DejaVuSans",
        Face::Bold => "DejaVuSans-Bold",
        Face::Italic => "DejaVuSans-Oblique",
        Face::Mono => "DejaVuSansMono",
    };
    font.font_name = Some(format!(
        "PLNTH{}+{name}",
        (b'A' + face.index() as u8) as char
    ));
    Ok(font)
}

/// An image XObject no larger than `max_px`: JPEG (grey or RGB) passes through as
/// DCT data; other rasters are decoded and resized; SVG is rasterized at the box size.
fn xobject(image: &Image, max_px: (u32, u32)) -> Option<XObject> {
    let format = format_of(image)?;
    match format {
        Format::Jpeg => {
            if let Some((w, h, components)) = jpeg_header(&image.bytes) {
                if matches!(components, 1 | 3) && w <= max_px.0 * 2 && h <= max_px.1 * 2 {
                    return Some(jpeg_passthrough(&image.bytes, w, h, components));
                }
            }
            raster_xobject(image, image::ImageFormat::Jpeg, max_px)
        }
        Format::Png => raster_xobject(image, image::ImageFormat::Png, max_px),
        Format::Webp => raster_xobject(image, image::ImageFormat::WebP, max_px),
        Format::Svg => {
            let tree = parse_svg(&image.bytes)?;
            let (w, h) = (max_px.0.max(1), max_px.1.max(1));
            let mut pixmap = tiny_skia::Pixmap::new(w, h)?;
            let size = tree.size();
            resvg::render(
                &tree,
                tiny_skia::Transform::from_scale(w as f32 / size.width(), h as f32 / size.height()),
                &mut pixmap.as_mut(),
            );
            let rgba: Vec<u8> = pixmap
                .pixels()
                .iter()
                .flat_map(|p| {
                    let c = p.demultiply();
                    [c.red(), c.green(), c.blue(), c.alpha()]
                })
                .collect();
            Some(XObject::Image(RawImage {
                pixels: RawImageData::U8(rgba),
                width: w as usize,
                height: h as usize,
                data_format: RawImageFormat::RGBA8,
                tag: Vec::new(),
            }))
        }
    }
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
    let (w, h) = (img.width() as usize, img.height() as usize);
    let opaque = !img.color().has_alpha() || img.to_rgba8().pixels().all(|p| p.0[3] == 255);
    let (pixels, data_format) = match (img.color().has_color(), opaque) {
        (false, true) => (img.to_luma8().into_raw(), RawImageFormat::R8),
        (_, true) => (img.to_rgb8().into_raw(), RawImageFormat::RGB8),
        (_, false) => (img.to_rgba8().into_raw(), RawImageFormat::RGBA8),
    };
    Some(XObject::Image(RawImage {
        pixels: RawImageData::U8(pixels),
        width: w,
        height: h,
        data_format,
        tag: Vec::new(),
    }))
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
    let name = |s: &str| DictItem::Name(s.as_bytes().to_vec());
    let dict = BTreeMap::from([
        ("Type".to_owned(), name("XObject")),
        ("Subtype".to_owned(), name("Image")),
        ("Width".to_owned(), DictItem::Int(w as i64)),
        ("Height".to_owned(), DictItem::Int(h as i64)),
        (
            "ColorSpace".to_owned(),
            name(if components == 1 {
                "DeviceGray"
            } else {
                "DeviceRGB"
            }),
        ),
        ("BitsPerComponent".to_owned(), DictItem::Int(8)),
        ("Filter".to_owned(), name("DCTDecode")),
    ]);
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
