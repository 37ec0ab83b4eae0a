//! Images: each numbered at its first use and embedded once in the page's `<defs>`,
//! then used by number (slide backgrounds, the logo, figures, inline images).

use std::collections::HashMap;

use plinth_slides::{Background, BackgroundFit, BackgroundPosition, Slide};

use crate::image::{format_of, natural_size, SvgTrees};
use crate::{Budget, Images, RenderError};

use super::out::{escape_into, Out};

/// The images a page uses, each numbered at its first use, with its size.
pub(super) struct Pics<'a> {
    pub(super) images: &'a Images,
    /// `None` while measuring: sizes are not needed then.
    pub(super) trees: Option<&'a SvgTrees>,
    index: HashMap<&'a str, usize>,
    used: Vec<(&'a str, f32, f32)>,
}

impl<'a> Pics<'a> {
    pub(super) fn new(images: &'a Images, trees: Option<&'a SvgTrees>) -> Pics<'a> {
        Pics {
            images,
            trees,
            index: HashMap::new(),
            used: Vec::new(),
        }
    }

    /// The image's number and natural size (what a browser would take for an `<img>`;
    /// an SVG image usvg cannot size gets a browser's default of 300×150).
    pub(super) fn get(&mut self, id: &str) -> Option<(usize, f32, f32)> {
        let (key, image) = self.images.get_key_value(id)?;
        if let Some(&k) = self.index.get(id) {
            let (_, w, h) = self.used[k];
            return Some((k, w, h));
        }
        let (w, h) = match self.trees {
            Some(trees) => match natural_size(key, image, trees) {
                Ok(Some(n)) if n.width > 0.0 && n.height > 0.0 => (n.width, n.height),
                _ => (300.0, 150.0),
            },
            None => (0.0, 0.0),
        };
        self.index.insert(key.as_str(), self.used.len());
        self.used.push((key.as_str(), w, h));
        Some((self.used.len() - 1, w, h))
    }

    /// Every image used, once.
    pub(super) fn defs<O: Out>(&self, out: &mut O, budget: &Budget) -> Result<(), RenderError> {
        if self.used.is_empty() {
            return Ok(());
        }
        out.push_str("<svg class=\"pics\" aria-hidden=\"true\"><defs>\n");
        for (k, (id, w, h)) in self.used.iter().enumerate() {
            budget.check()?;
            let image = &self.images[*id];
            let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
            let _ = write!(out, "<image id=\"pic-{k}\" width=\"");
            out.number(*w);
            out.push_str("\" height=\"");
            out.number(*h);
            out.push_str("\" preserveAspectRatio=\"none\" href=\"data:");
            escape_into(out, mime);
            out.push_str(";base64,");
            out.base64(&image.bytes);
            out.push_str("\"/>\n");
        }
        out.push_str("</defs></svg>\n");
        Ok(())
    }
}

/// Background images as absolutely placed boxes; answers the content's left and right
/// insets in percent of the slide width.
pub(super) fn backgrounds_html<O: Out>(
    out: &mut O,
    slide: &Slide,
    pics: &mut Pics<'_>,
) -> (u32, u32) {
    let (mut left, mut right) = (0u32, 0u32);
    let mut boxes: Vec<(u32, u32, &Background)> = Vec::new();
    for position in [BackgroundPosition::Left, BackgroundPosition::Right] {
        let bgs: Vec<&Background> = slide
            .backgrounds
            .iter()
            .filter(|b| b.position == position)
            .collect();
        let Some(first) = bgs.first() else { continue };
        let share = (first.split.unwrap_or(50).clamp(10, 90) as u32)
            .min(90u32.saturating_sub(left + right));
        let start = if position == BackgroundPosition::Left {
            left += share;
            left - share
        } else {
            right += share;
            100 - right
        };
        let n = bgs.len() as u32;
        for (i, bg) in bgs.into_iter().enumerate() {
            boxes.push((start + share * i as u32 / n, share / n, bg));
        }
    }
    let full: Vec<&Background> = slide
        .backgrounds
        .iter()
        .filter(|b| b.position == BackgroundPosition::Full)
        .collect();
    let n = full.len() as u32;
    let mut all: Vec<(u32, u32, &Background)> = full
        .into_iter()
        .enumerate()
        .map(|(i, bg)| (100 * i as u32 / n, 100 / n, bg))
        .collect();
    all.extend(boxes);
    for (x, w, bg) in all {
        let Some((k, nw, nh)) = pics.get(&bg.asset_id) else {
            continue;
        };
        // `slice` covers the box as `background-size: cover` would, `meet` contains.
        let fit = match bg.fit {
            BackgroundFit::Cover => "slice",
            BackgroundFit::Contain => "meet",
        };
        let _ = write!(
            out,
            "<svg class=\"bg\" style=\"left: {x}%; width: {w}%\" aria-hidden=\"true\" viewBox=\"0 0 "
        );
        out.number(nw);
        out.push(' ');
        out.number(nh);
        let _ = writeln!(
            out,
            "\" preserveAspectRatio=\"xMidYMid {fit}\"><use href=\"#pic-{k}\"/></svg>"
        );
    }
    (left, right)
}

/// A use of an image, sized as an `<img>` of it would be; false when there is no
/// such image.
pub(super) fn pic<O: Out>(
    out: &mut O,
    pics: &mut Pics<'_>,
    id: &str,
    alt: &str,
    class: &str,
    align: &str,
) -> bool {
    let Some((k, w, h)) = pics.get(id) else {
        return false;
    };
    out.push_str("<svg class=\"pic");
    if !class.is_empty() {
        out.push(' ');
        out.push_str(class);
    }
    out.push_str("\" role=\"img\" aria-label=\"");
    escape_into(out, alt);
    out.push_str("\" width=\"");
    out.number(w);
    out.push_str("\" height=\"");
    out.number(h);
    out.push_str("\" viewBox=\"0 0 ");
    out.number(w);
    out.push(' ');
    out.number(h);
    let _ = write!(
        out,
        "\" preserveAspectRatio=\"{align}\"><use href=\"#pic-{k}\"/></svg>"
    );
    true
}
