//! Images: each numbered at its first use and embedded once in the page's `<defs>`,
//! then used by number wherever the layout puts one (slide backgrounds, the logo,
//! figures, inline images).

use std::collections::HashMap;

use crate::image::{format_of, natural_size, SvgTrees};
use crate::{Budget, Images, RenderError};

use super::out::{escape_into, Out};

/// The images a page uses, each numbered at its first use, with its size.
pub(super) struct Pics<'a> {
    images: &'a Images,
    trees: &'a SvgTrees,
    index: HashMap<&'a str, usize>,
    used: Vec<(&'a str, f32, f32)>,
}

impl<'a> Pics<'a> {
    pub(super) fn new(images: &'a Images, trees: &'a SvgTrees) -> Pics<'a> {
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
        let (w, h) = match natural_size(key, image, self.trees) {
            Ok(Some(n)) if n.width > 0.0 && n.height > 0.0 => (n.width, n.height),
            _ => (300.0, 150.0),
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
