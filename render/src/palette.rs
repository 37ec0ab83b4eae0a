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
        },
    }
}
