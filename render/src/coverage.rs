//! Characters the fonts cannot draw: reported, never silently left as empty boxes.

use std::collections::BTreeSet;

use plinth_slides::{block_texts, plain, walk_blocks, Block, Deck};

use crate::fonts::{ignorable as drawless, registry, Face, Registry};
use crate::visible;

/// One text with characters no font has (embedded, operator's or system's).
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

fn ignorable(c: char) -> bool {
    c.is_whitespace() || drawless(c)
}

/// Every text of the exported slides with characters no font has (code is drawn in
/// the monospace face, everything else in the sans faces).
pub fn missing_glyphs(deck: &Deck) -> Vec<MissingGlyphs> {
    missing_in(deck, registry())
}

fn missing_in(deck: &Deck, fonts: &Registry) -> Vec<MissingGlyphs> {
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
            let mut seen = BTreeSet::new();
            let missing: String = text
                .chars()
                .filter(|&c| !ignorable(c) && fonts.pick(face, c, None).is_none() && seen.insert(c))
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

    fn deck() -> Deck {
        plinth_slides::parse_markdown(
            "# Intl\n\n- 日本語 and 🚀✅\u{fe0f}\n- Ελληνικά, Русский, ไทย\n\n```\nlet x = \"é\";\n```\n",
        )
        .unwrap()
    }

    #[test]
    fn reports_what_the_embedded_fonts_lack() {
        let found = missing_in(&deck(), &Registry::load(None, &[]));
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].slide, 1);
        assert_eq!(found[0].missing, "日本語🚀✅");
        assert!(found[0].text.starts_with("日本語 and"));
        assert_eq!(found[1].missing, "ไทย");
    }

    /// `PLINTH_FONTS_DIR` (here a directory with one Thai face) covers what it has.
    #[test]
    fn an_operator_font_directory_covers_its_scripts() {
        let thai = ["/usr/share/fonts/truetype/noto/NotoSansThai-Regular.ttf"];
        let Some(src) = thai.iter().find(|p| std::path::Path::new(p).is_file()) else {
            eprintln!("skipped: no Noto Sans Thai (apt-get install fonts-noto-core)");
            return;
        };
        let dir = std::env::temp_dir().join(format!("plinth-fonts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(src, dir.join("thai.ttf")).unwrap();
        let fonts = Registry::load(Some(&dir), &[]);
        let found = missing_in(&deck(), &fonts);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].missing, "日本語🚀✅");
        assert_eq!(fonts.family_names(), ["Noto Sans Thai"]);
    }

    /// With the system's Noto fonts, only what no font has is reported.
    #[test]
    fn system_fonts_cover_every_script() {
        if !crate::tests::noto_installed() {
            return;
        }
        let mut deck = deck();
        deck.slides[0].title = Some("Unassigned \u{0378}".into());
        let found = missing_glyphs(&deck);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].missing, "\u{0378}");
    }
}
