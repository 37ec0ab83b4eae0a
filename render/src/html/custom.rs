//! The deck's own styles (`Deck.styles`) on a section: CSS variables the style sheet's
//! rules read with the page's own values as fallbacks. Only values plinth computed are
//! written (colours as hex, sizes as numbers), never the author's CSS text.

use plinth_slides::{Deck, Slide, StyleElement as E};

use crate::look::Look;
use crate::palette::Palette;

use super::out::Out;

/// `--name: value;` for each colour, size and weight the deck's styles set on `slide`.
pub(super) fn style_vars<O: Out>(out: &mut O, deck: &Deck, slide: &Slide, pal: &Palette) {
    if deck.styles.is_empty() {
        return;
    }
    let look = Look::for_slide(deck, slide);
    let set = |e| deck.styled(slide, e);
    let mut var = |name: &str, value: String| {
        let _ = write!(out, " --{name}: {value};");
    };
    for (i, e) in [E::H1, E::H2, E::H3].into_iter().enumerate() {
        var(&format!("h{}", i + 1), pal.headings[i].hex());
        let h = set(e);
        if h.font_size.is_some() {
            var(
                &format!("h{}-size", i + 1),
                units(look.text * look.headings[i]),
            );
        }
        if let Some(bold) = h.bold {
            var(&format!("h{}-weight", i + 1), weight(bold));
        }
    }
    var("p", pal.paragraph.hex());
    var("cell-text", pal.cell_text.hex());
    var("head-text", pal.head_text.hex());
    var("header", pal.header.hex());
    var("footer", pal.footer.hex());
    if let Some(fill) = pal.head_own {
        var("head-fill", fill.hex());
    }
    if let Some(fill) = pal.cells_own {
        var("cells", fill.hex());
    }
    let sizes = [
        (E::Section, "text-size", look.text),
        (E::P, "p-size", look.text * look.paragraph),
        (E::Table, "table-size", look.text * look.table_text),
        (E::Pre, "pre-size", look.text * look.code),
        (E::Header, "header-size", look.chrome.header_size),
        (E::Footer, "footer-size", look.chrome.size),
    ];
    for (e, name, px) in sizes {
        if set(e).font_size.is_some() {
            var(name, units(px));
        }
    }
    for (e, name) in [
        (E::P, "p-weight"),
        (E::Header, "header-weight"),
        (E::Footer, "footer-weight"),
    ] {
        if let Some(bold) = set(e).bold {
            var(name, weight(bold));
        }
    }
}

/// Canvas pixels in the page's units (1/1920 of the slide's width).
fn units(px: f32) -> String {
    format!("calc({:.1} * var(--u))", px)
}

fn weight(bold: bool) -> String {
    (if bold { "bold" } else { "normal" }).to_owned()
}
