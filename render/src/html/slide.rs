//! One slide's `<section>`: its colours, backgrounds and logo, the frame with the title
//! and body, the header, footer and page number, and the speaker notes.

use plinth_slides::{Block, Deck, Layout, Slide};

use crate::layout::slide_palette;
use crate::{Budget, RenderError};

use super::blocks::{blocks_html, marked};
use super::custom::style_vars;
use super::out::{escape_into, Out};
use super::pics::{backgrounds_html, pic, Pics};

/// The `i`th visible slide's section.
pub(super) fn section<O: Out>(
    out: &mut O,
    deck: &Deck,
    slide: &Slide,
    i: usize,
    pics: &mut Pics<'_>,
    options: crate::Options,
    budget: &Budget,
) -> Result<(), RenderError> {
    let dark = open_section(out, deck, slide, i);
    let (left, right) = backgrounds_html(out, slide, pics);
    if let Some(logo) = deck.logo.as_deref() {
        if pic(out, pics, logo, "logo", "logo", "xMaxYMid meet") {
            out.push('\n');
        }
    }
    // The frame at the step the layout engine shrank this slide to, so the page
    // never cuts what the PDF and PNG show (a long listing).
    let _ = write!(
        out,
        "<div class=\"frame\" style=\"left: {left}%; right: {right}%; --s: "
    );
    out.number(fit_scale(deck, slide, pics, budget)?);
    out.push_str("\">\n");
    frame(out, slide, pics, dark);
    out.push_str("</div>\n");
    chrome(out, deck, slide, pics, (left, right));
    if options.notes {
        if let Some(notes) = slide.notes.as_deref().filter(|n| !n.trim().is_empty()) {
            out.push_str("<aside class=\"notes\">");
            escape_into(out, notes);
            out.push_str("</aside>\n");
        }
    }
    out.push_str("</section>\n");
    Ok(())
}

/// The section's opening tag, with the slide's own colours (a theme of its own, or set
/// colours) as variables; answers whether its palette is dark.
fn open_section<O: Out>(out: &mut O, deck: &Deck, slide: &Slide, i: usize) -> bool {
    let layout = match slide.layout {
        Layout::Title => "layout-title",
        Layout::Content => "layout-content",
    };
    let _ = write!(
        out,
        "<section class=\"slide {layout}\" id=\"slide-{}\" aria-label=\"Slide {}\"",
        i + 1,
        i + 1
    );
    let own = slide_palette(deck, slide);
    if slide.theme.is_some()
        || slide.background_color.is_some()
        || slide.color.is_some()
        || deck.background_color.is_some()
        || deck.color.is_some()
        || !deck.styles.is_empty()
    {
        let _ = write!(
            out,
            " style=\"--bg: {}; --text: {}; --title: {}; --accent: {}; --code-bg: {}; --code-text: {}; --inline-code-bg: {}; --inline-code-text: {}; --muted: {}; --stripe: {}; --rule: {}; --quote-bar: {};",
            own.background.hex(),
            own.text.hex(),
            own.title.hex(),
            own.accent.hex(),
            own.code_bg.hex(),
            own.code_text.hex(),
            own.inline_code_bg.hex(),
            own.inline_code_text.hex(),
            own.muted.hex(),
            own.stripe.hex(),
            own.rule.hex(),
            own.quote_bar.hex(),
        );
        style_vars(out, deck, slide, &own);
        out.push('"');
    }
    out.push_str(">\n");
    own.dark
}

/// The title and the body (in columns when the slide has column breaks).
fn frame<O: Out>(out: &mut O, slide: &Slide, pics: &mut Pics<'_>, dark: bool) {
    if let Some(title) = slide.title.as_deref().filter(|t| !t.trim().is_empty()) {
        out.push_str("<h1>");
        marked(out, title, pics);
        out.push_str("</h1>\n");
    }
    // The body, centred in the room under the title as the layout engine does it.
    if slide.blocks.is_empty() {
        return;
    }
    out.push_str("<div class=\"body\">\n");
    if slide.blocks.contains(&Block::ColumnBreak) {
        out.push_str("<div class=\"columns\">\n");
        for blocks in slide.blocks.split(|b| *b == Block::ColumnBreak) {
            out.push_str("<div class=\"column\">\n");
            blocks_html(out, blocks, pics, 0, dark);
            out.push_str("</div>\n");
        }
        out.push_str("</div>\n");
    } else {
        blocks_html(out, &slide.blocks, pics, 0, dark);
    }
    out.push_str("</div>\n");
}

/// Header, footer and page number, beside split background images as the content is
/// (`left`, `right`: the backgrounds' shares in percent).
fn chrome<O: Out>(
    out: &mut O,
    deck: &Deck,
    slide: &Slide,
    pics: &mut Pics<'_>,
    (left, right): (u32, u32),
) {
    for (text, tag) in [
        (slide.header.as_ref().or(deck.header.as_ref()), "header"),
        (slide.footer.as_ref().or(deck.footer.as_ref()), "footer"),
    ] {
        if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
            if left > 0 || right > 0 {
                // Beside a split image, as the content is.
                let _ = write!(
                    out,
                    "<{tag} class=\"chrome\" style=\"left: calc({left}% + 110 * var(--u)); right: calc({right}% + 110 * var(--u))\">"
                );
            } else {
                let _ = write!(out, "<{tag} class=\"chrome\">");
            }
            marked(out, text, pics);
            let _ = writeln!(out, "</{tag}>");
        }
    }
    if let Some(n) = crate::layout::page_number(deck, slide) {
        if right > 0 {
            let _ = writeln!(
                out,
                "<span class=\"page-number\" style=\"right: calc({right}% + 110 * var(--u))\">{n}</span>"
            );
        } else {
            let _ = writeln!(out, "<span class=\"page-number\">{n}</span>");
        }
    }
}

/// The layout engine's shrink step for a slide (1 while only measuring the page).
fn fit_scale(
    deck: &Deck,
    slide: &Slide,
    pics: &Pics<'_>,
    budget: &Budget,
) -> Result<f32, RenderError> {
    let Some(trees) = pics.trees else {
        return Ok(1.0);
    };
    let naturals = crate::image::natural_sizes(deck, slide, pics.images, trees, budget)?;
    let size = crate::deck_size(deck, crate::Size::default());
    Ok(crate::layout::page(deck, slide, &naturals, size).scale)
}
