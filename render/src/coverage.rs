//! Characters the fonts cannot draw: reported, never silently left as empty boxes.

use std::collections::BTreeSet;

use plinth_slides::{block_texts, plain, walk_blocks, Block, Deck};

use crate::fonts::{metrics, Face};
use crate::visible;

/// One text with characters no embedded font has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingGlyphs {
    /// 1-based position among the exported (visible) slides.
    pub slide: usize,
    pub slide_id: String,
    /// The text (marks removed), cut to 80 characters.
    pub text: String,
    /// Each missing character once, in order of first appearance.
    pub missing: String,
}

/// Characters that draw nothing and need no glyph: joiners, variation selectors and
/// other default-ignorable code points.
fn ignorable(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(c as u32, 0x200b..=0x200f | 0x2060..=0x206f | 0xfe00..=0xfe0f | 0xfeff | 0xe0100..=0xe01ef)
}

/// Every text of the exported slides with characters its font lacks (code is drawn in
/// the monospace face, everything else in the sans faces).
pub fn missing_glyphs(deck: &Deck) -> Vec<MissingGlyphs> {
    let mut out = Vec::new();
    for (i, slide) in visible(deck).into_iter().enumerate() {
        let mut texts: Vec<(String, Face)> = Vec::new();
        for t in [
            &slide.title,
            &slide.header,
            &slide.footer,
            &deck.header,
            &deck.footer,
        ]
        .into_iter()
        .flatten()
        {
            texts.push((plain(t), Face::Regular));
        }
        walk_blocks(&slide.blocks, 0, &mut |block| {
            match block {
                Block::Code { code, .. } => texts.push((code.clone(), Face::Mono)),
                Block::Image { alt: Some(alt), .. } => texts.push((alt.clone(), Face::Regular)),
                _ => {}
            }
            for t in block_texts(block) {
                texts.push((plain(t), Face::Regular));
            }
        });
        for (text, face) in texts {
            let m = metrics(face);
            let mut seen = BTreeSet::new();
            let missing: String = text
                .chars()
                .filter(|&c| !ignorable(c) && m.glyph(c).is_none() && seen.insert(c))
                .collect();
            if !missing.is_empty() {
                out.push(MissingGlyphs {
                    slide: i + 1,
                    slide_id: slide.id.clone(),
                    text: text.chars().take(80).collect(),
                    missing,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_what_the_fonts_lack() {
        let deck = plinth_slides::parse_markdown(
            "# Intl\n\n- 日本語 and 🚀✅\u{fe0f}\n- Ελληνικά, Русский\n\n```\nlet x = \"é\";\n```\n",
        )
        .unwrap();
        let found = missing_glyphs(&deck);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].slide, 1);
        assert_eq!(found[0].missing, "日本語🚀✅");
        assert!(found[0].text.starts_with("日本語 and"));
    }
}
