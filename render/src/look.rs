//! How a deck's theme draws a slide: type scale, spacing, placement and colours. Marp's
//! `default`, `gaia` and `uncover` take their numbers from the themes' CSS (Marp's
//! 1280×720 pixels times 1.5, this canvas being 1080 units tall); plinth's own look
//! shares default's scale and placement with its own colours and title rule.
//!
//! Every fill (code boxes, inline code, table header and stripes) is derived from the
//! slide's actual background and text colours, directives included, and every colour
//! drawn on a fill is pushed to at least [`MIN_CONTRAST`] against it.

use plinth_slides::{parse_color, Deck, Layout, MarpTheme, Slide, StyleElement, Styled, Theme};

pub use crate::palette::{luminance, mix, readable, Color, Palette, MIN_CONTRAST};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Plinth,
    Default,
    Gaia,
    Uncover,
}

/// How a table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableStyle {
    /// A tinted header over an accent line, a rule under each row, every other row tinted.
    Plinth,
    /// Every cell boxed, every other body row tinted (GitHub's tables).
    Grid,
    /// A header in the text colour with the background's colour as its text, boxed cells.
    Gaia,
    /// No fills: a heavy line under the header, a thin one between rows.
    Lines,
}

#[derive(Debug, Clone)]
pub struct Look {
    pub kind: Kind,
    pub margin_x: f32,
    pub margin_top: f32,
    pub margin_bottom: f32,
    /// Body text size and line height (a factor of the size).
    pub text: f32,
    pub leading: f32,
    /// Heading sizes in `em` of the body, for levels 1, 2, 3 and 4 to 6.
    pub headings: [f32; 4],
    pub heading_leading: f32,
    /// Title size on a plinth title slide (Marp themes keep their heading sizes).
    pub title_slide_title: Option<f32>,
    pub title_rule: bool,
    /// Space between blocks, above a heading (in its `em`) and below one.
    pub gap: f32,
    pub heading_above: f32,
    pub heading_below: f32,
    /// Space between list items (in `em`) and a list's indent (in `em`).
    pub item_gap: f32,
    pub list_indent: f32,
    /// Inline code size in `em` of its text.
    pub inline_code: f32,
    /// Code size in `em` of the body, its line height and padding (in code `em`).
    pub code: f32,
    pub code_leading: f32,
    pub code_pad: (f32, f32),
    /// The code box is as wide as its code and centred (uncover), not the column.
    pub code_centred: bool,
    pub table: TableStyle,
    /// Table text in `em` of the body and its cell padding (in table `em`).
    pub table_text: f32,
    pub table_pad: (f32, f32),
    /// Content is centred as a whole from top to bottom (not for gaia, which starts at
    /// the top except on `lead` slides).
    pub centre_vertically: bool,
    /// Every block is centred across (uncover), not only a lead slide's.
    pub centre_all: bool,
    pub chrome: Chrome,
    /// Paragraph size in `em` of the body, and whether paragraphs and headings `#` to
    /// `###` are bold (the deck's styles may change them).
    pub paragraph: f32,
    pub paragraph_bold: bool,
    pub heading_bold: [bool; 3],
}

/// Header, footer and page number.
#[derive(Debug, Clone, Copy)]
pub struct Chrome {
    /// The footer's size (and the header's unless the deck's styles set its own).
    pub size: f32,
    pub header_size: f32,
    /// Header and footer bold.
    pub bold: (bool, bool),
    pub number_size: f32,
    /// From the slide's edges.
    pub left: f32,
    pub right: f32,
    /// Baselines of the header and of the footer and number, from the top and bottom.
    pub header_baseline: f32,
    pub footer_baseline: f32,
    /// Header and footer centred (uncover's follow its text alignment).
    pub centred: bool,
}

impl Look {
    pub fn of(deck: &Deck) -> Look {
        match deck.marp_theme {
            None => Look {
                kind: Kind::Plinth,
                title_slide_title: Some(96.0),
                title_rule: true,
                table: TableStyle::Plinth,
                table_text: 0.9,
                ..default_look()
            },
            Some(MarpTheme::Default) => default_look(),
            Some(MarpTheme::Gaia) => gaia_look(),
            Some(MarpTheme::Uncover) => uncover_look(),
        }
    }

    /// The deck's look for one slide: its theme's, with the sizes and weights the
    /// deck's styles give the slide.
    pub fn for_slide(deck: &Deck, slide: &Slide) -> Look {
        let mut look = Look::of(deck);
        styled_sizes(deck, slide, &mut look);
        look
    }

    /// A heading at `level` (1 is `#`) is bold.
    pub fn heading_is_bold(&self, level: u8) -> bool {
        match level {
            0 | 1 => self.heading_bold[0],
            2 => self.heading_bold[1],
            3 => self.heading_bold[2],
            _ => true,
        }
    }

    /// Headings and paragraphs of this slide are centred across (Marp's default theme
    /// has no `lead` class: its title slides stay left-aligned).
    pub fn centred(&self, slide: &Slide) -> bool {
        self.centre_all || (slide.layout == Layout::Title && self.kind != Kind::Default)
    }

    /// This slide's content is centred from top to bottom.
    pub fn centred_vertically(&self, slide: &Slide) -> bool {
        self.centre_vertically || slide.layout == Layout::Title
    }

    pub fn heading_size(&self, level: u8) -> f32 {
        let em = match level {
            0 | 1 => self.headings[0],
            2 => self.headings[1],
            3 => self.headings[2],
            _ => self.headings[3],
        };
        self.text * em
    }
}

/// Marp's default theme: 29 px text, 78.5 px padding, GitHub's spacing.
fn default_look() -> Look {
    Look {
        kind: Kind::Default,
        margin_x: 117.75,
        margin_top: 117.75,
        margin_bottom: 117.75,
        text: 43.5,
        leading: 1.5,
        headings: [1.6, 1.3, 1.1, 1.05],
        heading_leading: 1.25,
        title_slide_title: None,
        title_rule: false,
        gap: 24.0,
        heading_above: 36.0 / 43.5,
        heading_below: 24.0,
        item_gap: 0.25,
        list_indent: 2.0,
        inline_code: 0.85,
        code: 0.85,
        code_leading: 1.45,
        code_pad: (24.0 / 37.0, 24.0 / 37.0),
        code_centred: false,
        table: TableStyle::Grid,
        table_text: 1.0,
        table_pad: (6.0 / 29.0, 13.0 / 29.0),
        centre_vertically: true,
        centre_all: false,
        chrome: Chrome {
            size: 30.0,
            header_size: 30.0,
            bold: (false, false),
            number_size: 36.0,
            left: 45.0,
            right: 45.0,
            header_baseline: 31.5 + 30.0,
            footer_baseline: 31.5 + 8.0,
            centred: false,
        },
        paragraph: 1.0,
        paragraph_bold: false,
        heading_bold: [true; 3],
    }
}

/// Gaia: 35 px text from the top of a 70 px padding, a lead class that centres.
fn gaia_look() -> Look {
    Look {
        kind: Kind::Gaia,
        margin_x: 105.0,
        margin_top: 105.0,
        margin_bottom: 105.0,
        text: 52.5,
        leading: 1.35,
        headings: [1.8, 1.5, 1.3, 1.1],
        heading_leading: 1.35,
        gap: 52.5,
        heading_above: 0.5,
        heading_below: 52.5,
        item_gap: 0.3,
        list_indent: 1.6,
        inline_code: 0.8,
        code: 0.7,
        code_leading: 1.35,
        code_pad: (0.5, 0.5),
        table: TableStyle::Gaia,
        table_pad: (0.2, 0.4),
        centre_vertically: false,
        chrome: Chrome {
            size: 34.5,
            header_size: 34.5,
            bold: (false, false),
            number_size: 42.0,
            left: 37.5,
            right: 37.5,
            header_baseline: 15.0 + 37.5 + 12.0,
            footer_baseline: 15.0 + 37.5 - 12.0,
            centred: false,
        },
        ..default_look()
    }
}

/// Uncover: 40 px text, everything centred.
fn uncover_look() -> Look {
    Look {
        kind: Kind::Uncover,
        margin_x: 105.0,
        margin_top: 45.0,
        margin_bottom: 45.0,
        text: 60.0,
        leading: 1.4,
        headings: [2.0, 1.7, 1.4, 1.2],
        heading_leading: 1.25,
        gap: 22.5,
        heading_above: 22.5 / 60.0,
        heading_below: 45.0,
        item_gap: 0.0,
        list_indent: 1.6,
        inline_code: 1.0,
        code: 0.7,
        code_leading: 1.15,
        code_pad: (0.4, 0.6),
        code_centred: true,
        table: TableStyle::Lines,
        table_pad: (0.15, 0.5),
        centre_vertically: true,
        centre_all: true,
        chrome: Chrome {
            size: 30.0,
            header_size: 30.0,
            bold: (false, false),
            number_size: 36.0,
            left: 105.0,
            right: 45.0,
            header_baseline: 45.0 + 24.0,
            footer_baseline: 45.0,
            centred: true,
        },
        ..default_look()
    }
}

/// The theme's own colours: (background, text, headings, links and accents).
fn theme_colours(kind: Kind, dark: bool) -> (Color, Color, Color, Color) {
    let c = |hex: u32| Color((hex >> 16) as u8, (hex >> 8) as u8, hex as u8);
    match (kind, dark) {
        (Kind::Plinth, _) => {
            let p = crate::palette::palette(if dark { Theme::Dark } else { Theme::Light });
            (p.background, p.text, p.title, p.accent)
        }
        (Kind::Default, false) => (c(0xffffff), c(0x1f2328), c(0x224466), c(0x0969da)),
        (Kind::Default, true) => (c(0x0d1117), c(0xf0f6fc), c(0xcee7ff), c(0x4493f8)),
        (Kind::Gaia, false) => (c(0xfff8e1), c(0x455a64), c(0x455a64), c(0x0288d1)),
        (Kind::Gaia, true) => (c(0x455a64), c(0xfff8e1), c(0xfff8e1), c(0x81d4fa)),
        (Kind::Uncover, false) => (c(0xfdfcff), c(0x202228), c(0x202228), c(0x009dd5)),
        (Kind::Uncover, true) => (c(0x202228), c(0xffffff), c(0xffffff), c(0x33b1dd)),
    }
}

/// The slide's colours: its theme's light or dark (`invert`) set, the deck's and the
/// slide's own background and text colours, then every fill derived from those two.
pub fn slide_palette(deck: &Deck, slide: &Slide) -> Palette {
    let kind = Look::of(deck).kind;
    let dark = slide.theme.unwrap_or(deck.theme) == Theme::Dark;
    let (mut bg, mut fg, mut title, mut accent) = theme_colours(kind, dark);
    let rgb = |c: Option<&String>| {
        c.and_then(|c| parse_color(c))
            .map(|(r, g, b)| Color(r, g, b))
    };
    // A slide in the other theme (Marp's `invert`) swaps the deck's own colours.
    let inverted = slide.theme.is_some_and(|t| t != deck.theme);
    let (deck_bg, deck_text) = if inverted {
        (deck.color.as_ref(), deck.background_color.as_ref())
    } else {
        (deck.background_color.as_ref(), deck.color.as_ref())
    };
    // The deck's styles are under the set colours (Marp's directives are inline
    // styles, which win over a style sheet).
    let section = deck.styled(slide, StyleElement::Section);
    let styled = |c: Option<(u8, u8, u8)>| c.map(|(r, g, b)| Color(r, g, b));
    if let Some(c) = styled(section.background) {
        bg = c;
    }
    if let Some(c) = styled(section.color) {
        fg = c;
        title = c;
    }
    if let Some(c) = rgb(slide.background_color.as_ref().or(deck_bg)) {
        bg = c;
    }
    if let Some(c) = rgb(slide.color.as_ref().or(deck_text)) {
        // Marp: a set colour is the headings' colour too.
        fg = c;
        title = c;
    }
    if let Some(c) = rgb(deck.brand.as_ref()) {
        accent = c;
    }
    let mut pal = derive(kind, bg, fg, title, accent);
    crate::custom::palette(deck, slide, &mut pal);
    pal
}

/// Fills and secondary colours from the background and the text colour.
fn derive(kind: Kind, bg: Color, fg: Color, title: Color, accent: Color) -> Palette {
    let title = readable(title, bg, 3.0);
    let accent = readable(accent, bg, MIN_CONTRAST);
    let (code_bg, inline_code_bg) = match kind {
        // Gaia draws code boxes in the text colour, inline code in a dimmed one.
        Kind::Gaia => (fg, mix(fg, bg, 0.2)),
        Kind::Uncover => (mix(bg, fg, 0.05), mix(bg, fg, 0.06)),
        _ => (mix(bg, fg, 0.045), mix(bg, fg, 0.1)),
    };
    let code_text = readable(if kind == Kind::Gaia { bg } else { fg }, code_bg, 7.0);
    let (head_fill, head_text) = match kind {
        Kind::Gaia => (fg, bg),
        Kind::Plinth => (mix(bg, fg, 0.06), readable(title, mix(bg, fg, 0.06), 4.5)),
        _ => (bg, fg),
    };
    Palette {
        background: bg,
        text: fg,
        title,
        accent,
        muted: readable(mix(fg, bg, 0.4), bg, MIN_CONTRAST),
        code_bg,
        code_text,
        inline_code_bg,
        inline_code_text: readable(
            if kind == Kind::Gaia { bg } else { fg },
            inline_code_bg,
            MIN_CONTRAST,
        ),
        stripe: mix(bg, fg, if kind == Kind::Gaia { 0.1 } else { 0.04 }),
        rule: mix(bg, fg, 0.2),
        quote_bar: mix(accent, bg, 0.5),
        head_fill,
        head_text: readable(head_text, head_fill, MIN_CONTRAST),
        markers: if kind == Kind::Plinth { accent } else { fg },
        // GitHub's yellow highlight, as strong as the background lets it be.
        mark_bg: mix(
            bg,
            Color(0xff, 0xd3, 0x3d),
            if luminance(bg) < 0.4 { 0.3 } else { 0.4 },
        ),
        dark: luminance(code_bg) < 0.4,
        headings: [title, fg, fg],
        paragraph: fg,
        cell_text: fg,
        header: readable(mix(fg, bg, 0.4), bg, MIN_CONTRAST),
        footer: readable(mix(fg, bg, 0.4), bg, MIN_CONTRAST),
        head_own: None,
        cells_own: None,
    }
}

/// Sizes and weights over the theme's: `section` sets the text size everything else
/// is in `em` of.
fn styled_sizes(deck: &Deck, slide: &Slide, look: &mut Look) {
    if deck.styles.is_empty() {
        return;
    }
    let st = |e| deck.styled(slide, e);
    if let Some(size) = st(StyleElement::Section).font_size {
        look.text = size.px(look.text);
    }
    let text = look.text;
    let em = |s: Styled| s.font_size.map(|f| f.px(text) / text);
    for (i, e) in [StyleElement::H1, StyleElement::H2, StyleElement::H3]
        .into_iter()
        .enumerate()
    {
        let h = st(e);
        if let Some(size) = em(h) {
            look.headings[i] = size;
            if i == 0 {
                // The author's `h1` size is a title slide's too.
                look.title_slide_title = None;
            }
        }
        look.heading_bold[i] = h.bold.unwrap_or(look.heading_bold[i]);
    }
    let p = st(StyleElement::P);
    look.paragraph = em(p).unwrap_or(look.paragraph);
    look.paragraph_bold = p.bold.unwrap_or(look.paragraph_bold);
    look.table_text = em(st(StyleElement::Table)).unwrap_or(look.table_text);
    let code = em(st(StyleElement::Code));
    look.inline_code = code.unwrap_or(look.inline_code);
    look.code = em(st(StyleElement::Pre)).or(code).unwrap_or(look.code);
    let (header, footer) = (st(StyleElement::Header), st(StyleElement::Footer));
    let c = &mut look.chrome;
    c.header_size = header.font_size.map_or(c.header_size, |f| f.px(text));
    c.size = footer.font_size.map_or(c.size, |f| f.px(text));
    c.bold = (
        header.bold.unwrap_or(c.bold.0),
        footer.bold.unwrap_or(c.bold.1),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::palette::contrast;

    /// Light fills under light text were the trap: whatever the two colours, every
    /// text drawn on a fill keeps 4.5:1.
    #[test]
    fn fills_keep_text_readable_whatever_the_colours() {
        let colours = [
            (Color(0x1e, 0x1e, 0x2e), Color(0xf5, 0xe0, 0xdc)),
            (Color(0xff, 0xff, 0xff), Color(0x1f, 0x23, 0x28)),
            (Color(0x45, 0x5a, 0x64), Color(0xff, 0xf8, 0xe1)),
            (Color(0xff, 0xf8, 0xe1), Color(0x45, 0x5a, 0x64)),
            (Color(0x80, 0x80, 0x80), Color(0xff, 0xff, 0xff)),
        ];
        for kind in [Kind::Plinth, Kind::Default, Kind::Gaia, Kind::Uncover] {
            for (bg, fg) in colours {
                let p = derive(kind, bg, fg, fg, Color(0x09, 0x69, 0xda));
                for (what, text, fill) in [
                    ("code", p.code_text, p.code_bg),
                    ("inline code", p.inline_code_text, p.inline_code_bg),
                    ("table header", p.head_text, p.head_fill),
                    ("chrome", p.muted, p.background),
                    ("link", p.accent, p.background),
                ] {
                    assert!(
                        contrast(text, fill) >= MIN_CONTRAST,
                        "{kind:?} {bg:?}/{fg:?}: {what} {:.2}",
                        contrast(text, fill)
                    );
                }
            }
        }
    }
}
