//! Image formats: sniffing, upload validation, natural sizes for layout, and the usvg
//! options every SVG parse goes through (embedded fonts, no file access).

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use resvg::usvg::{self, roxmltree};

use crate::fonts::{FONT_DB, SANS_FAMILY};
use crate::layout::{Natural, NaturalSizes};
use crate::{cost, svgcheck, Budget, Image, Images, RenderError};
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
/// full decode to prove the file is whole. An SVG is checked for its structure
/// ([`crate::MAX_SVG_ELEMENTS`], [`crate::MAX_SVG_DEPTH`]) before it is parsed and for
/// what drawing it would cost ([`crate::MAX_SVG_COST`]) after. A refusal is
/// [`RenderError::Rejected`] or [`RenderError::TooCostly`], with the reason to show.
pub fn inspect_image(bytes: &[u8], budget: &Budget) -> Result<ImageInfo, RenderError> {
    budget.check()?;
    if bytes.is_empty() {
        return Err(RenderError::Rejected("the file is empty".into()));
    }
    let format = sniff(bytes).ok_or_else(|| RenderError::Rejected(unsupported(bytes)))?;
    let rejected = RenderError::Rejected;
    let (width, height) = match format.raster() {
        Some(raster) => {
            let (w, h) = image::ImageReader::with_format(Cursor::new(bytes), raster)
                .into_dimensions()
                .map_err(|e| rejected(format!("not a readable {} image: {e}", format.name())))?;
            check_dimensions(w, h).map_err(rejected)?;
            decode_raster(bytes, raster).map_err(|e| {
                rejected(format!(
                    "the {} image is truncated or corrupt: {e}",
                    format.name()
                ))
            })?;
            if format == Format::Jpeg && !jpeg_is_complete(bytes) {
                return Err(rejected(
                    "the jpeg image is truncated (no end-of-image marker)".into(),
                ));
            }
            (w, h)
        }
        None => {
            let tree = parse_svg_checked(bytes).map_err(rejected)?;
            let size = tree.size();
            let (w, h) = (size.width().ceil() as u32, size.height().ceil() as u32);
            check_dimensions(w.max(1), h.max(1)).map_err(rejected)?;
            budget.check()?;
            let (ts, cw, ch) = cost::fit(size, cost::CHECK_SIZE.0, cost::CHECK_SIZE.1);
            check_cost("the SVG image", cost::svg_cost(&tree, ts, cw, ch), cw, ch)?;
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

/// `Err` when drawing `what` at `width`×`height` would cost more than the limit.
pub fn check_cost(what: &str, cost: u64, width: u32, height: u32) -> Result<(), RenderError> {
    if cost > cost::MAX_SVG_COST {
        return Err(RenderError::TooCostly {
            what: what.to_owned(),
            cost,
            limit: cost::MAX_SVG_COST,
            width,
            height,
        });
    }
    Ok(())
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

/// A raster image's size from its header.
pub fn dimensions(bytes: &[u8], format: Format) -> Option<(u32, u32)> {
    image::ImageReader::with_format(Cursor::new(bytes), format.raster()?)
        .into_dimensions()
        .ok()
}

pub fn check_dimensions(w: u32, h: u32) -> Result<(), String> {
    if w == 0 || h == 0 {
        return Err(format!("image is {w}x{h} pixels"));
    }
    if u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(format!(
            "image is {w}x{h} pixels; the limit is {MAX_IMAGE_PIXELS} pixels in all \
             (MAX_IMAGE_PIXELS), whatever the file's size"
        ));
    }
    if w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE {
        return Err(format!(
            "image is {w}x{h} pixels; a side may be at most {MAX_IMAGE_SIDE} pixels \
             (MAX_IMAGE_SIDE)"
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
    let tree = parse_limited(bytes, &opts)?;
    if external.load(Ordering::Relaxed) {
        return Err(
            "the SVG image references external files, embeds unsupported images, or embeds \
             SVG images over the limits; embed PNG, JPEG, WebP or SVG as data: URLs"
                .into(),
        );
    }
    Ok(tree)
}

/// The XML, its structure checked ([`svgcheck`]), then converted by usvg.
pub fn parse_limited(bytes: &[u8], opts: &usvg::Options) -> Result<usvg::Tree, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not a valid SVG image: not UTF-8")?;
    let xml = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, xml)
        .map_err(|e| format!("not a valid SVG image: {e}"))?;
    svgcheck::check(&doc)?;
    usvg::Tree::from_xmltree(&doc, opts).map_err(|e| format!("not a valid SVG image: {e}"))
}

/// How deep SVG images embedded in SVG images may nest.
const MAX_NESTED_SVG: usize = 3;

/// Options for every SVG parse: the renderer's fonts ([`crate::fonts`]) and no file
/// access. `<image>` references other than data: URLs resolve to nothing (and are
/// reported through `external` when given); embedded raster images larger than the
/// upload limits, other formats than PNG, JPEG, WebP and SVG, and embedded SVG over
/// the structure limits or nested too deep are dropped before anything decodes them.
pub fn usvg_options<'a>(external: Option<Arc<AtomicBool>>) -> usvg::Options<'a> {
    let mut opts = usvg::Options {
        font_family: SANS_FAMILY.to_owned(),
        fontdb: FONT_DB.clone(),
        resources_dir: None,
        ..usvg::Options::default()
    };
    let default_data = usvg::ImageHrefResolver::default_data_resolver();
    let external_data = external.clone();
    let nesting = Arc::new(AtomicUsize::new(0));
    opts.image_href_resolver = usvg::ImageHrefResolver {
        resolve_data: Box::new(move |mime, data, opts| {
            let kind = match sniff(&data) {
                Some(Format::Svg) => {
                    let depth = nesting.fetch_add(1, Ordering::Relaxed);
                    let ok = depth < MAX_NESTED_SVG && svg_structure_ok(&data);
                    let kind = ok.then(|| default_data(mime, data, opts)).flatten();
                    nesting.fetch_sub(1, Ordering::Relaxed);
                    kind
                }
                Some(format) => {
                    let raster = format.raster().expect("not SVG");
                    let dims =
                        image::ImageReader::with_format(Cursor::new(data.as_slice()), raster)
                            .into_dimensions();
                    if matches!(dims, Ok((w, h)) if check_dimensions(w, h).is_ok()) {
                        default_data(mime, data, opts)
                    } else {
                        None
                    }
                }
                None => None,
            };
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

fn svg_structure_ok(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let xml = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, xml)
        .is_ok_and(|doc| svgcheck::check(&doc).is_ok())
}

/// Parsed SVG images of one render, each parsed once: `Ok(None)` for one usvg cannot
/// read (drawn as nothing, as before), `Err` for one over the structure limits.
#[derive(Default)]
pub struct SvgTrees(Mutex<HashMap<String, Parsed>>);

type Parsed = Result<Option<Arc<usvg::Tree>>, String>;

impl SvgTrees {
    pub fn get(&self, id: &str, image: &Image) -> Result<Option<Arc<usvg::Tree>>, RenderError> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.entry(id.to_owned()).or_insert_with(|| {
            match parse_limited(&image.bytes, &usvg_options(None)) {
                Ok(tree) => Ok(Some(Arc::new(tree))),
                Err(e) if e.starts_with("not a valid SVG image") => Ok(None),
                Err(e) => Err(e),
            }
        });
        entry
            .clone()
            .map_err(|e| RenderError::Rejected(format!("image {id}: {e}")))
    }
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

pub fn natural_size(
    id: &str,
    image: &Image,
    trees: &SvgTrees,
) -> Result<Option<Natural>, RenderError> {
    let Some(format) = format_of(image) else {
        return Ok(None);
    };
    Ok(match format.raster() {
        Some(raster) => image::ImageReader::with_format(Cursor::new(&image.bytes), raster)
            .into_dimensions()
            .ok()
            .map(|(w, h)| Natural {
                width: w as f32,
                height: h as f32,
                vector: false,
            }),
        None => trees.get(id, image)?.map(|tree| Natural {
            width: tree.size().width(),
            height: tree.size().height(),
            vector: true,
        }),
    })
}

/// Natural sizes of the images one slide uses, the deck's logo included.
pub fn natural_sizes(
    deck: &Deck,
    slide: &Slide,
    images: &Images,
    trees: &SvgTrees,
    budget: &Budget,
) -> Result<NaturalSizes, RenderError> {
    let mut out = NaturalSizes::new();
    let mut failed = None;
    let mut add = |id: &str| {
        if !out.contains_key(id) && failed.is_none() {
            if let Some(image) = images.get(id) {
                // Each first parse of an SVG is a step of its own.
                match budget.check().and_then(|()| natural_size(id, image, trees)) {
                    Ok(Some(n)) => {
                        out.insert(id.to_owned(), n);
                    }
                    Ok(None) => {}
                    Err(e) => failed = Some(e),
                }
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
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
