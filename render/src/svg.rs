//! The display list as an SVG document, and SVG → PNG through resvg.

use std::fmt::Write;

use base64::Engine;
use resvg::{tiny_skia, usvg};

use crate::image::{format_of, usvg_options};
use crate::layout::{Item, Page};
use crate::{Images, RenderError, Size};

pub fn render(page: &Page, images: &Images, size: Size) -> String {
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
    let _ = write!(
        out,
        r#"<rect width="{}" height="{}" fill="{}"/>"#,
        num(page.width),
        num(page.height),
        page.background.hex()
    );
    let mut clips = 0;
    for item in &page.items {
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
                    escape_into(&mut out, &f.family.replace('\'', ""));
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
                escape_into(&mut out, text);
                out.push_str("</text>");
            }
            Item::Image {
                x,
                y,
                w,
                h,
                asset_id,
                clip,
            } => {
                let Some(image) = images.get(asset_id) else {
                    continue;
                };
                let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
                // Bilinear ("smooth", which usvg reads only from `style`) rather than the
                // default bicubic: about three times faster on large photos, and neither
                // filter is better at downscaling.
                if let Some([cx, cy, cw, ch]) = clip {
                    clips += 1;
                    let _ = write!(
                        out,
                        r#"<clipPath id="c{clips}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath><g clip-path="url(#c{clips})">"#,
                        num(*cx),
                        num(*cy),
                        num(*cw),
                        num(*ch)
                    );
                }
                let _ = write!(
                    out,
                    r#"<image x="{}" y="{}" width="{}" height="{}" preserveAspectRatio="xMidYMid meet" style="image-rendering:smooth" xlink:href="data:"#,
                    num(*x),
                    num(*y),
                    num(*w),
                    num(*h)
                );
                escape_into(&mut out, mime);
                out.push_str(";base64,");
                base64::engine::general_purpose::STANDARD.encode_string(&image.bytes, &mut out);
                out.push_str(r#""/>"#);
                if clip.is_some() {
                    out.push_str("</g>");
                }
            }
            // Links matter in PDF and HTML only.
            Item::Link { .. } => {}
        }
    }
    out.push_str("</svg>");
    out
}

/// Renders an SVG document into a PNG of exactly `size`.
pub fn rasterize(svg: &str, size: Size) -> Result<Vec<u8>, RenderError> {
    let tree = usvg::Tree::from_str(svg, &usvg_options(None))
        .map_err(|e| RenderError::Failed(format!("slide SVG did not parse: {e}")))?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width, size.height)
        .ok_or_else(|| RenderError::Failed("cannot allocate the slide image".into()))?;
    let ts = tiny_skia::Transform::from_scale(
        size.width as f32 / tree.size().width(),
        size.height as f32 / tree.size().height(),
    );
    resvg::render(&tree, ts, &mut pixmap.as_mut());
    encode_png(&pixmap)
}

/// PNG at the fast deflate level. Slides have an opaque background, so alpha is
/// dropped (premultiplied equals straight colour when alpha is 255).
pub fn encode_png(pixmap: &tiny_skia::Pixmap) -> Result<Vec<u8>, RenderError> {
    let rgb: Vec<u8> = pixmap
        .data()
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    let mut out = Vec::with_capacity(rgb.len() / 8);
    let mut encoder = png::Encoder::new(&mut out, pixmap.width(), pixmap.height());
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let fail = |e: png::EncodingError| RenderError::Failed(format!("PNG encoding failed: {e}"));
    let mut writer = encoder.write_header().map_err(fail)?;
    writer.write_image_data(&rgb).map_err(fail)?;
    writer.finish().map_err(fail)?;
    Ok(out)
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
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Not allowed in XML 1.0 at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            '\u{fffe}' | '\u{ffff}' => {}
            c => out.push(c),
        }
    }
}
