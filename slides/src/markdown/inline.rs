//! Inline events: text, marks, code spans, links, images and maths, collected as the
//! marked-up text [`crate::spans`] reads.

use std::ops::Range;

use pulldown_cmark::LinkType;

use crate::{Background, BackgroundFit, BackgroundPosition, Invalid};

use super::builder::SlideBuilder;
use super::frame::escape_into;

impl SlideBuilder<'_, '_> {
    pub(super) fn text(&mut self, t: &str) {
        let t = marp_text(t, self.line, self.warnings);
        self.inline.push_text(&t);
    }

    pub(super) fn footnote_reference(&mut self, label: &str) {
        let n = self.notes.number(label);
        self.inline.text.push_str(&crate::inline::superscript(n));
    }

    pub(super) fn maths(&mut self, tex: &str, range: Range<usize>) -> Result<(), Invalid> {
        // Display maths is written `$$…$$` (pulldown-cmark's DisplayMath).
        let display = self
            .source
            .get(range)
            .is_some_and(|src| src.starts_with("$$"));
        if tex.len() > crate::MAX_MATHS_BYTES {
            return Err(Invalid(format!(
                "invalid markdown on line {}: a formula is at most {} bytes of TeX",
                self.line,
                crate::MAX_MATHS_BYTES
            )));
        }
        let id = crate::maths_ref(tex, display);
        self.inline.text.push_str("![](");
        self.inline.text.push_str(&id);
        self.inline.text.push(')');
        if display {
            // Alone in its paragraph, a display formula is a block of its own.
            self.inline.images.push((id, String::new(), None, None));
        } else {
            self.inline.other = true;
        }
        Ok(())
    }

    pub(super) fn code_span(&mut self, t: &str) {
        self.inline.other = true;
        self.inline.text.push('`');
        self.inline.text.push_str(&t.replace('`', "'"));
        self.inline.text.push('`');
    }

    pub(super) fn start_link(
        &mut self,
        link_type: LinkType,
        dest_url: &str,
    ) -> Result<(), Invalid> {
        let mut url = encode_url(dest_url);
        if link_type == LinkType::Email && !url.starts_with("mailto:") {
            url.insert_str(0, "mailto:");
        }
        if !crate::link_allowed(&url) {
            return Err(Invalid(format!(
                "invalid markdown on line {}: link `{dest_url}` is not supported (links go to http, https or mailto addresses)",
                self.line
            )));
        }
        self.inline.other = true;
        self.inline.text.push('[');
        self.link = Some(url);
        Ok(())
    }

    pub(super) fn end_link(&mut self) {
        if let Some(url) = self.link.take() {
            self.inline.text.push_str("](");
            self.inline.text.push_str(&url);
            self.inline.text.push(')');
        }
    }

    /// An image's asset: `asset:<asset id>`, or what the caller resolves its name to.
    pub(super) fn start_image(&mut self, dest_url: &str) -> Result<(), Invalid> {
        let line = self.line;
        if self.link.is_some() {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: an image inside a link is not supported"
            )));
        }
        let url = dest_url.trim();
        let id = url.strip_prefix("asset:").unwrap_or(url);
        let id = if uuid::Uuid::parse_str(id).is_ok() {
            id.to_owned()
        } else {
            match self.opts.resolve_image.and_then(|r| r(url)) {
                Some(id) => id,
                None => {
                    let why = super::image_refusal(self.opts, "an image", url);
                    return Err(Invalid(format!("invalid markdown on line {line}: {why}")));
                }
            }
        };
        self.image = Some((id, String::new()));
        Ok(())
    }

    /// A finished image: a background of the slide (Marp's `bg`), or an image of the
    /// text being collected.
    pub(super) fn end_image(&mut self) {
        let Some((asset_id, alt)) = self.image.take() else {
            return;
        };
        let keys = image_keys(&alt);
        for t in &keys.ignored {
            self.warnings.push(format!(
                "line {}: image keyword `{t}` is not supported and has no effect",
                self.line
            ));
        }
        if keys.bg {
            self.slide.backgrounds.push(Background {
                asset_id,
                position: keys.position,
                fit: keys.fit,
                split: keys.split,
            });
            return;
        }
        let inline = &mut self.inline;
        inline.text.push_str("![");
        escape_into(&mut inline.text, keys.alt.trim());
        inline.text.push_str("](asset:");
        inline.text.push_str(&asset_id);
        inline.text.push(')');
        inline
            .images
            .push((asset_id, keys.alt, keys.width, keys.height));
    }
}

/// A link or image target as the inline marks carry it: no spaces or brackets.
fn encode_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.trim().chars() {
        match c {
            ' ' => out.push_str("%20"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '[' => out.push_str("%5B"),
            ']' => out.push_str("%5D"),
            '"' => out.push_str("%22"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '\\' => out.push_str("%5C"),
            c => out.push(c),
        }
    }
    out
}

/// A text event of a Marp deck: emoji shortcodes replaced, unknown shortcodes and TeX
/// maths (drawn as their source) warned about, once per line.
fn marp_text(t: &str, line: usize, warnings: &mut Vec<String>) -> String {
    let (text, unknown) = crate::inline::shortcodes(t);
    let mut warn = |w: String| {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    };
    for code in unknown {
        warn(format!(
            "line {line}: `{code}` is not an emoji shortcode and is drawn as written"
        ));
    }
    if crate::inline::has_maths(&text) {
        warn(format!(
            "line {line}: a `$` that opens no formula is drawn as written (maths is `$…$` with no space inside the dollars, or `$$…$$`)"
        ));
    }
    text
}

/// Marp's image keywords in the alt text: `bg` (with `left`, `right`, `left:40%`,
/// `fit`/`contain`, `cover`), `w:300`, `h:200`, `width:300px`, `height:200px`. What is
/// left is the alt text.
#[derive(Default)]
struct ImageKeys {
    bg: bool,
    position: BackgroundPosition,
    split: Option<u8>,
    fit: BackgroundFit,
    width: Option<u32>,
    height: Option<u32>,
    alt: String,
    ignored: Vec<String>,
}

const MARP_FILTERS: &[&str] = &[
    "blur",
    "brightness",
    "contrast",
    "drop-shadow",
    "grayscale",
    "hue-rotate",
    "invert",
    "opacity",
    "saturate",
    "sepia",
];

fn image_keys(alt: &str) -> ImageKeys {
    let mut k = ImageKeys::default();
    let tokens: Vec<&str> = alt.split_whitespace().collect();
    k.bg = tokens.contains(&"bg");
    // Marp sizes are CSS pixels of a 1280×720 slide; plinth's are of 1920×1080.
    let px = |v: &str| -> Option<u32> {
        let n: f32 = v.strip_suffix("px").unwrap_or(v).parse().ok()?;
        (n > 0.0 && n < 10_000.0).then(|| (n * 1.5).round() as u32)
    };
    let mut alt_words = Vec::new();
    for t in tokens {
        let (key, value) = t.split_once(':').unwrap_or((t, ""));
        match key {
            "bg" => {}
            "w" | "width" if px(value).is_some() => k.width = px(value),
            "h" | "height" if px(value).is_some() => k.height = px(value),
            "left" | "right" if k.bg => {
                k.position = if key == "left" {
                    BackgroundPosition::Left
                } else {
                    BackgroundPosition::Right
                };
                k.split = value
                    .strip_suffix('%')
                    .and_then(|p| p.parse::<f32>().ok())
                    .map(|p| p.round().clamp(10.0, 90.0) as u8);
            }
            "fit" | "contain" if k.bg => k.fit = BackgroundFit::Contain,
            "cover" if k.bg => k.fit = BackgroundFit::Cover,
            "auto" | "vertical" if k.bg => k.ignored.push(t.to_owned()),
            f if MARP_FILTERS.contains(&f) => k.ignored.push(t.to_owned()),
            _ if k.bg && t.ends_with('%') && t[..t.len() - 1].parse::<f32>().is_ok() => {
                k.ignored.push(t.to_owned())
            }
            _ => alt_words.push(t),
        }
    }
    k.alt = alt_words.join(" ");
    k
}
