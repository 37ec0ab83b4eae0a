//! One slide's `<section>`: its background, the layout's items, the speaker notes.

use plinth_slides::{Deck, Layout, Slide};

use crate::layout::{slide_palette, Page};

use super::items::Items;
use super::out::{escape_into, Out};
use super::pics::Pics;

/// The `i`th visible slide's section, drawn from its laid-out `page`.
pub(super) fn section<O: Out>(
    out: &mut O,
    deck: &Deck,
    slide: &Slide,
    page: &Page,
    i: usize,
    pics: &mut Pics<'_>,
    options: crate::Options,
) {
    let layout = match slide.layout {
        Layout::Title => "layout-title",
        Layout::Content => "layout-content",
    };
    // The slide's text colour on the section: runs in it need not repeat it.
    let text = slide_palette(deck, slide).text;
    let _ = writeln!(
        out,
        "<section class=\"slide {layout}\" id=\"slide-{n}\" aria-label=\"Slide {n}\" style=\"background: {}; color: {}\">",
        page.background.hex(),
        text.hex(),
        n = i + 1,
    );
    Items::new(out, pics, text).write(&page.items);
    if options.notes {
        if let Some(notes) = slide.notes.as_deref().filter(|n| !n.trim().is_empty()) {
            out.push_str("<aside class=\"notes\">");
            escape_into(out, notes);
            out.push_str("</aside>\n");
        }
    }
    out.push_str("</section>\n");
}
