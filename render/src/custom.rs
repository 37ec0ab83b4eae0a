//! The deck's own styles (`Deck.styles`, Marp's `style:` CSS) on one slide: element
//! colours over the palette the theme and the set colours give (the sizes and weights
//! are `look::styled_sizes`). An author's colour is drawn as written (the markdown reader warns when
//! it is hard to read); a fill the author sets without the text on it gets text derived
//! from that fill, so nothing is drawn light on light.

use plinth_slides::{Deck, Slide, StyleElement as E, Styled};

use crate::palette::{luminance, mix, readable, Color, Palette, MIN_CONTRAST};

fn rgb(c: Option<(u8, u8, u8)>) -> Option<Color> {
    c.map(|(r, g, b)| Color(r, g, b))
}

/// Element colours over `pal`, which already has the styles' `section` colours.
pub(crate) fn palette(deck: &Deck, slide: &Slide, pal: &mut Palette) {
    if deck.styles.is_empty() {
        return;
    }
    let st = |e| deck.styled(slide, e);
    // A section colour the set colours left in place is the author's: headings too.
    if let Some(c) = rgb(st(E::Section).color).filter(|c| *c == pal.text) {
        pal.title = c;
        pal.headings[0] = c;
    }
    for (i, e) in [E::H1, E::H2, E::H3].into_iter().enumerate() {
        if let Some(c) = rgb(st(e).color) {
            pal.headings[i] = c;
        }
    }
    pal.title = pal.headings[0];
    if let Some(c) = rgb(st(E::P).color) {
        pal.paragraph = c;
    }
    if let Some(c) = rgb(st(E::Header).color) {
        pal.header = c;
    }
    if let Some(c) = rgb(st(E::Footer).color) {
        pal.footer = c;
    }
    table(pal, st(E::Table), st(E::Th), st(E::Td));
    code(pal, st(E::Code), st(E::Pre));
}

/// `table` sets both the header and the cells; `th` and `td` win over it.
fn table(pal: &mut Palette, table: Styled, th: Styled, td: Styled) {
    let text = rgb(td.color.or(table.color));
    let cells = rgb(td.background.or(table.background));
    if let Some(fill) = cells {
        pal.cells_own = Some(fill);
        pal.cell_text = text.unwrap_or_else(|| readable(pal.cell_text, fill, MIN_CONTRAST));
        pal.stripe = mix(fill, pal.cell_text, 0.06);
    } else if let Some(c) = text {
        pal.cell_text = c;
    }
    let head = rgb(th.background.or(table.background));
    let head_text = rgb(th.color.or(table.color));
    if let Some(fill) = head {
        pal.head_own = Some(fill);
        pal.head_fill = fill;
        pal.head_text = head_text.unwrap_or_else(|| readable(pal.head_text, fill, MIN_CONTRAST));
    } else if let Some(c) = head_text {
        pal.head_text = c;
    }
}

/// `code` is inline code and code blocks; `pre` wins for blocks.
fn code(pal: &mut Palette, code: Styled, pre: Styled) {
    let (inline_bg, inline_text) = own_fill(
        (pal.inline_code_bg, pal.inline_code_text),
        rgb(code.background),
        rgb(code.color),
    );
    (pal.inline_code_bg, pal.inline_code_text) = (inline_bg, inline_text);
    let (bg, text) = own_fill(
        (pal.code_bg, pal.code_text),
        rgb(pre.background.or(code.background)),
        rgb(pre.color.or(code.color)),
    );
    (pal.code_bg, pal.code_text) = (bg, text);
    pal.dark = luminance(bg) < 0.4;
}

/// A fill and the text on it: the author's, and text kept readable on a fill the
/// author set without it.
fn own_fill(
    (fill, text): (Color, Color),
    own_fill: Option<Color>,
    own_text: Option<Color>,
) -> (Color, Color) {
    let fill = own_fill.unwrap_or(fill);
    let text = match (own_text, own_fill) {
        (Some(t), _) => t,
        (None, Some(f)) => readable(text, f, MIN_CONTRAST),
        (None, None) => text,
    };
    (fill, text)
}
