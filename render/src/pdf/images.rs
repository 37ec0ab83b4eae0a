//! Images: placed on the pages by name, then embedded once each as an image XObject at
//! the size of the largest box it is drawn in.

use std::collections::{BTreeMap, HashMap};

use printpdf::{
    DictItem, ExternalStream, ExternalXObject, Op, PdfDocument, Pt, Px, Rect, WindingOrder,
    XObject, XObjectId, XObjectTransform,
};
use resvg::tiny_skia;

use crate::image::{check_cost, decode_raster, format_of, Format, SvgTrees};
use crate::{Budget, Image, Images, RenderError};

use super::{PageWriter, IMAGE_DENSITY, PT_PER_UNIT};

impl PageWriter {
    /// An image in its box, clipped to `clip` when only part of it shows.
    pub(super) fn image(
        &mut self,
        x: f32,
        top: f32,
        w: f32,
        h: f32,
        asset_id: &str,
        clip: Option<[f32; 4]>,
    ) {
        if let Some([cx, cy, cw, ch]) = clip {
            self.ops.push(Op::SaveGraphicsState);
            self.ops.push(Op::DrawRectangle {
                rectangle: Rect {
                    x: Pt(cx * PT_PER_UNIT),
                    y: Pt(self.y(cy + ch)),
                    width: Pt(cw * PT_PER_UNIT),
                    height: Pt(ch * PT_PER_UNIT),
                    mode: Some(printpdf::PaintMode::Clip),
                    winding_order: Some(WindingOrder::NonZero),
                },
            });
        }
        let n = self.placed.len();
        let entry = self
            .placed
            .entry(asset_id.to_owned())
            .or_insert_with(|| (XObjectId(format!("Im{n}")), 0.0, 0.0));
        entry.1 = entry.1.max(w);
        entry.2 = entry.2.max(h);
        let id = entry.0.clone();
        let bottom = self.y(top + h);
        self.ops.push(Op::UseXobject {
            id,
            transform: XObjectTransform {
                translate_x: Some(Pt(x * PT_PER_UNIT)),
                translate_y: Some(Pt(bottom)),
                rotate: None,
                // Images map to the unit square: scale it to the box.
                scale_x: Some(w * PT_PER_UNIT),
                scale_y: Some(h * PT_PER_UNIT),
                dpi: None,
                no_auto_scale: true,
            },
        });
        if clip.is_some() {
            self.ops.push(Op::RestoreGraphicsState);
        }
    }
}

/// Embeds each placed image, at the size of the largest box it is drawn in.
pub(super) fn embed(
    doc: &mut PdfDocument,
    placed: HashMap<String, (XObjectId, f32, f32)>,
    images: &Images,
    trees: &SvgTrees,
    budget: &Budget,
) -> Result<(), RenderError> {
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
        let x = xobject(&asset_id, image, max_px, trees)?;
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
    Ok(())
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
pub(super) fn pixels_xobject(img: &image::DynamicImage) -> XObject {
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
