//! Colours of plinth's two themes (the base of its look in [`crate::look`]), shared by
//! every writer.

use plinth_slides::Theme;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Color(pub u8, pub u8, pub u8);

impl Color {
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

#[derive(Debug, Clone)]
pub struct Palette {
    pub background: Color,
    pub text: Color,
    pub title: Color,
    pub accent: Color,
    pub muted: Color,
    pub code_bg: Color,
    pub code_text: Color,
    pub inline_code_bg: Color,
    pub inline_code_text: Color,
    /// Every other table row.
    pub stripe: Color,
    /// Lines between table rows.
    pub rule: Color,
    pub quote_bar: Color,
    /// The table header's fill and text.
    pub head_fill: Color,
    pub head_text: Color,
    /// `<mark>`'s highlight.
    pub mark_bg: Color,
    /// List bullets and numbers (plinth's look draws them in the accent instead).
    pub markers: Color,
    /// Code boxes are dark: code is highlighted with a dark theme.
    pub dark: bool,
    /// Headings `#` to `###` (deeper ones are `text`), paragraphs, table cells, and the
    /// header and footer: the theme's colours unless the deck's styles set them.
    pub headings: [Color; 3],
    pub paragraph: Color,
    pub cell_text: Color,
    pub header: Color,
    pub footer: Color,
    /// Fills the deck's styles give the table header and body rows (`th`, `td`,
    /// `table` backgrounds), drawn whatever the theme's table look.
    pub head_own: Option<Color>,
    pub cells_own: Option<Color>,
}

impl Palette {
    /// The text colour of a heading at `level` (1 is `#`).
    pub fn heading(&self, level: u8) -> Color {
        match level {
            0 | 1 => self.headings[0],
            2 => self.headings[1],
            3 => self.headings[2],
            _ => self.text,
        }
    }
}

/// The colours only the deck's styles set, before [`crate::look`] derives them.
fn base() -> Palette {
    let black = Color(0, 0, 0);
    Palette {
        background: black,
        text: black,
        title: black,
        accent: black,
        muted: black,
        code_bg: black,
        code_text: black,
        inline_code_bg: black,
        inline_code_text: black,
        stripe: black,
        rule: black,
        quote_bar: black,
        head_fill: black,
        head_text: black,
        mark_bg: black,
        markers: black,
        dark: false,
        headings: [black; 3],
        paragraph: black,
        cell_text: black,
        header: black,
        footer: black,
        head_own: None,
        cells_own: None,
    }
}

pub fn palette(theme: Theme) -> Palette {
    match theme {
        Theme::Light => Palette {
            background: Color(0xff, 0xff, 0xff),
            text: Color(0x1f, 0x23, 0x28),
            title: Color(0x10, 0x2a, 0x43),
            accent: Color(0x2f, 0x6f, 0xeb),
            muted: Color(0x8c, 0x95, 0x9f),
            code_bg: Color(0xf2, 0xf4, 0xf7),
            code_text: Color(0x24, 0x29, 0x2f),
            inline_code_bg: Color(0xe8, 0xeb, 0xef),
            stripe: Color(0xf6, 0xf8, 0xfa),
            rule: Color(0xd0, 0xd7, 0xde),
            quote_bar: Color(0xa8, 0xc5, 0xf7),
            inline_code_text: Color(0x24, 0x29, 0x2f),
            head_fill: Color(0xf2, 0xf4, 0xf7),
            head_text: Color(0x10, 0x2a, 0x43),
            markers: Color(0x2f, 0x6f, 0xeb),
            mark_bg: Color(0xff, 0xf8, 0xc5),
            dark: false,
            ..base()
        },
        Theme::Dark => Palette {
            background: Color(0x16, 0x1b, 0x22),
            text: Color(0xe6, 0xed, 0xf3),
            title: Color(0xff, 0xff, 0xff),
            accent: Color(0x58, 0xa6, 0xff),
            muted: Color(0x7d, 0x85, 0x90),
            code_bg: Color(0x22, 0x29, 0x33),
            code_text: Color(0xe6, 0xed, 0xf3),
            inline_code_bg: Color(0x2d, 0x35, 0x40),
            stripe: Color(0x1c, 0x22, 0x2b),
            rule: Color(0x30, 0x36, 0x3d),
            quote_bar: Color(0x2f, 0x6f, 0xeb),
            inline_code_text: Color(0xe6, 0xed, 0xf3),
            head_fill: Color(0x22, 0x29, 0x33),
            head_text: Color(0xff, 0xff, 0xff),
            markers: Color(0x58, 0xa6, 0xff),
            mark_bg: Color(0x4b, 0x3f, 0x1a),
            dark: true,
            ..base()
        },
    }
}

/// WCAG's ratio for body text.
pub const MIN_CONTRAST: f32 = 4.5;

/// `a` moved `t` of the way to `b`.
pub fn mix(a: Color, b: Color, t: f32) -> Color {
    let m = |x: u8, y: u8| (x as f32 + (y as f32 - x as f32) * t).round() as u8;
    Color(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// WCAG relative luminance.
pub fn luminance(c: Color) -> f32 {
    plinth_slides::relative_luminance((c.0, c.1, c.2))
}

pub fn contrast(a: Color, b: Color) -> f32 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// `c`, or the nearest colour towards black or white (whichever the background lets
/// reach the ratio) that has `ratio` against `bg`.
pub fn readable(c: Color, bg: Color, ratio: f32) -> Color {
    if contrast(c, bg) >= ratio {
        return c;
    }
    let black = Color(0, 0, 0);
    let white = Color(255, 255, 255);
    let target = if contrast(black, bg) >= contrast(white, bg) {
        black
    } else {
        white
    };
    (1..=20)
        .map(|i| mix(c, target, i as f32 / 20.0))
        .find(|m| contrast(*m, bg) >= ratio)
        .unwrap_or(target)
}
