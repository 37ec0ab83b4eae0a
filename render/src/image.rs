//! Image formats: sniffing, upload validation, natural sizes for layout, and the usvg
//! options every SVG parse goes through (embedded fonts, no file access).

use std::io::Cursor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use resvg::usvg;

use crate::fonts::{FONT_DB, SANS_FAMILY};
use crate::layout::{Natural, NaturalSizes};
use crate::{Image, Images};
use plinth_slides::{block_texts, spans, walk_blocks, Block, Deck, Slide};

pub const MAX_IMAGE_PIXELS: u64 = 40_000_000;
pub const MAX_IMAGE_SIDE: u32 = 16_384;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
    Webp,
    Svg,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpeg",
            Format::Webp => "webp",
            Format::Svg => "svg",
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Webp => "image/webp",
            Format::Svg => "image/svg+xml",
        }
    }

    fn raster(self) -> Option<image::ImageFormat> {
        match self {
            Format::Png => Some(image::ImageFormat::Png),
            Format::Jpeg => Some(image::ImageFormat::Jpeg),
            Format::Webp => Some(image::ImageFormat::WebP),
            Format::Svg => None,
        }
    }
}

/// The format the bytes really are, whatever anyone declared.
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Format::Png)
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(Format::Jpeg)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(Format::Webp)
    } else if looks_like_xml(bytes) {
        Some(Format::Svg)
    } else {
        None
    }
}

fn looks_like_xml(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'<')
}

/// What [`inspect_image`] found out about an upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// "png", "jpeg", "webp" or "svg".
    pub format: &'static str,
    pub mime: &'static str,
    pub width: u32,
    pub height: u32,
}

/// Validates an upload: the real format from the bytes, dimensions from the header
/// before any pixel is decoded (so a decompression bomb is refused cheaply), then a
/// full decode to prove the file is whole.
pub fn inspect_image(bytes: &[u8]) -> Result<ImageInfo, String> {
    if bytes.is_empty() {
        return Err("the file is empty".into());
    }
    let format = sniff(bytes).ok_or_else(|| unsupported(bytes))?;
    let (width, height) = match format.raster() {
        Some(raster) => {
            let (w, h) = image::ImageReader::with_format(Cursor::new(bytes), raster)
                .into_dimensions()
                .map_err(|e| format!("not a readable {} image: {e}", format.name()))?;
            check_dimensions(w, h)?;
            decode_raster(bytes, raster)
                .map_err(|e| format!("the {} image is truncated or corrupt: {e}", format.name()))?;
            if format == Format::Jpeg && !jpeg_is_complete(bytes) {
                return Err("the jpeg image is truncated (no end-of-image marker)".into());
            }
            (w, h)
        }
        None => {
            let tree = parse_svg_checked(bytes)?;
            let size = tree.size();
            let (w, h) = (size.width().ceil() as u32, size.height().ceil() as u32);
            check_dimensions(w.max(1), h.max(1))?;
            (w.max(1), h.max(1))
        }
    };
    Ok(ImageInfo {
        format: format.name(),
        mime: format.mime(),
        width,
        height,
    })
}

fn unsupported(bytes: &[u8]) -> String {
    let what = if bytes.starts_with(b"GIF8") {
        "a GIF"
    } else if bytes.starts_with(b"BM") {
        "a BMP"
    } else if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
        "a TIFF"
    } else if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        "an AVIF/HEIC"
    } else if bytes.starts_with(&[0x1f, 0x8b]) {
        "a compressed (gzip/svgz)"
    } else {
        return "not a PNG, JPEG, WebP or SVG image".into();
    };
    format!("{what} file is not supported; use PNG, JPEG, WebP or SVG")
}

fn check_dimensions(w: u32, h: u32) -> Result<(), String> {
    if w == 0 || h == 0 {
        return Err(format!("image is {w}x{h} pixels"));
    }
    if u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(format!(
            "image is {w}x{h} pixels; the limit is {MAX_IMAGE_PIXELS} pixels"
        ));
    }
    if w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE {
        return Err(format!(
            "image is {w}x{h} pixels; a side may be at most {MAX_IMAGE_SIDE} pixels"
        ));
    }
    Ok(())
}

/// Decodes a raster image with allocation limits, so even a lying header cannot make
/// the decoder reserve more than a maximal image needs.
pub fn decode_raster(
    bytes: &[u8],
    format: image::ImageFormat,
) -> Result<image::DynamicImage, image::ImageError> {
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    // RGBA16 of the largest allowed image, plus decoder working room.
    limits.max_alloc = Some(MAX_IMAGE_PIXELS * 8 + (64 << 20));
    reader.limits(limits);
    reader.decode()
}

/// zune-jpeg fills a cut-off scan with grey instead of failing; a whole file ends with
/// an EOI marker after its last scan (0xFF in scan data is always stuffed, so the
/// markers cannot be faked there).
fn jpeg_is_complete(bytes: &[u8]) -> bool {
    let last_sos = bytes.windows(2).rposition(|w| w == [0xff, 0xda]);
    let last_eoi = bytes.windows(2).rposition(|w| w == [0xff, 0xd9]);
    matches!((last_sos, last_eoi), (Some(s), Some(e)) if e > s)
}

/// Parses an upload's SVG, refusing documents that point at other files.
fn parse_svg_checked(bytes: &[u8]) -> Result<usvg::Tree, String> {
    let external = Arc::new(AtomicBool::new(false));
    let opts = usvg_options(Some(external.clone()));
    let tree =
        usvg::Tree::from_data(bytes, &opts).map_err(|e| format!("not a valid SVG image: {e}"))?;
    if external.load(Ordering::Relaxed) {
        return Err(
            "the SVG image references external files or embeds unsupported images; \
             embed PNG, JPEG, WebP or SVG as data: URLs"
                .into(),
        );
    }
    Ok(tree)
}

/// Options for every SVG parse: the renderer's fonts ([`crate::fonts`]) and no file access. `<image>`
/// references other than data: URLs resolve to nothing (and are reported through
/// `external` when given); embedded raster images larger than the upload limits are
/// dropped before anything decodes them.
pub fn usvg_options(external: Option<Arc<AtomicBool>>) -> usvg::Options<'static> {
    let mut opts = usvg::Options {
        font_family: SANS_FAMILY.to_owned(),
        fontdb: FONT_DB.clone(),
        resources_dir: None,
        ..usvg::Options::default()
    };
    let default_data = usvg::ImageHrefResolver::default_data_resolver();
    let external_data = external.clone();
    opts.image_href_resolver = usvg::ImageHrefResolver {
        resolve_data: Box::new(move |mime, data, opts| {
            if let Some(format) = sniff(&data).and_then(Format::raster) {
                let dims = image::ImageReader::with_format(Cursor::new(data.as_slice()), format)
                    .into_dimensions();
                if !matches!(dims, Ok((w, h)) if check_dimensions(w, h).is_ok()) {
                    return None;
                }
            }
            let kind = default_data(mime, data, opts);
            if kind.is_none() {
                if let Some(flag) = &external_data {
                    // An undecodable embedded image is as suspect as an external one.
                    flag.store(true, Ordering::Relaxed);
                }
            }
            kind
        }),
        resolve_string: Box::new(move |_href, _opts| {
            if let Some(flag) = &external {
                flag.store(true, Ordering::Relaxed);
            }
            None
        }),
    };
    opts
}

/// Parses an SVG for drawing (already validated at upload).
pub fn parse_svg(bytes: &[u8]) -> Option<usvg::Tree> {
    usvg::Tree::from_data(bytes, &usvg_options(None)).ok()
}

/// The format to treat an image as: its bytes decide, the declared type is a fallback.
pub fn format_of(image: &Image) -> Option<Format> {
    sniff(&image.bytes).or(match image.mime.as_str() {
        "image/png" => Some(Format::Png),
        "image/jpeg" | "image/jpg" => Some(Format::Jpeg),
        "image/webp" => Some(Format::Webp),
        "image/svg+xml" => Some(Format::Svg),
        _ => None,
    })
}

pub fn natural_size(image: &Image) -> Option<Natural> {
    let format = format_of(image)?;
    match format.raster() {
        Some(raster) => {
            let (w, h) = image::ImageReader::with_format(Cursor::new(&image.bytes), raster)
                .into_dimensions()
                .ok()?;
            Some(Natural {
                width: w as f32,
                height: h as f32,
                vector: false,
            })
        }
        None => {
            let size = parse_svg(&image.bytes)?.size();
            Some(Natural {
                width: size.width(),
                height: size.height(),
                vector: true,
            })
        }
    }
}

/// Natural sizes of the images one slide uses, the deck's logo included.
pub fn natural_sizes(deck: &Deck, slide: &Slide, images: &Images) -> NaturalSizes {
    let mut out = NaturalSizes::new();
    let mut add = |id: &str| {
        if !out.contains_key(id) {
            if let Some(n) = images.get(id).and_then(natural_size) {
                out.insert(id.to_owned(), n);
            }
        }
    };
    if let Some(logo) = &deck.logo {
        add(logo);
    }
    for bg in &slide.backgrounds {
        add(&bg.asset_id);
    }
    let mut texts: Vec<&str> = slide.title.as_deref().into_iter().collect();
    texts.extend(slide.header.as_deref());
    texts.extend(slide.footer.as_deref());
    walk_blocks(&slide.blocks, 0, &mut |block| {
        if let Block::Image { asset_id, .. } = block {
            add(asset_id);
        }
        texts.extend(block_texts(block));
    });
    for text in texts {
        if text.contains("](") {
            for span in spans(text) {
                if let Some(id) = &span.image {
                    add(id);
                }
            }
        }
    }
    out
}
