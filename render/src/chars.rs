//! What a character needs from the fonts and the shaper: its direction, whether it
//! shows as emoji, draws nothing, or belongs with the character before it.

/// Right-to-left scripts: Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation
/// forms.
pub fn rtl(c: char) -> bool {
    matches!(c as u32, 0x0590..=0x08ff | 0xfb1d..=0xfdff | 0xfe70..=0xfefe | 0x10800..=0x10fff | 0x1e800..=0x1efff)
}

/// Characters shown as colour emoji by default (Unicode's Emoji_Presentation, in
/// ranges), and the regional indicators that make flags.
pub fn emoji_presentation(c: char) -> bool {
    matches!(
        c as u32,
        0x1f000..=0x1faff
            | 0x231a..=0x231b
            | 0x23e9..=0x23ec
            | 0x23f0
            | 0x23f3
            | 0x25fd..=0x25fe
            | 0x2614..=0x2615
            | 0x2648..=0x2653
            | 0x267f
            | 0x2693
            | 0x26a1
            | 0x26aa..=0x26ab
            | 0x26bd..=0x26be
            | 0x26c4..=0x26c5
            | 0x26ce
            | 0x26d4
            | 0x26ea
            | 0x26f2..=0x26f3
            | 0x26f5
            | 0x26fa
            | 0x26fd
            | 0x2705
            | 0x270a..=0x270b
            | 0x2728
            | 0x274c
            | 0x274e
            | 0x2753..=0x2755
            | 0x2757
            | 0x2795..=0x2797
            | 0x27b0
            | 0x27bf
            | 0x2b1b..=0x2b1c
            | 0x2b50
            | 0x2b55
    )
}

/// Characters that draw nothing and need no glyph of their own: joiners, variation
/// selectors and other default-ignorable code points.
pub fn ignorable(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c as u32, 0x200b..=0x200f | 0x2060..=0x206f | 0xfe00..=0xfe0f | 0xfeff | 0xe0000..=0xe0fff)
}

/// Combining marks of the scripts that use them most (they belong with their base).
pub(crate) fn is_mark(c: char) -> bool {
    matches!(
        c as u32,
        0x0300..=0x036f
            | 0x0591..=0x05c7
            | 0x0610..=0x061a
            | 0x064b..=0x065f
            | 0x0670
            | 0x06d6..=0x06ed
            | 0x0900..=0x0903
            | 0x093a..=0x094f
            | 0x0951..=0x0957
            | 0x0962..=0x0963
            | 0x0e31
            | 0x0e34..=0x0e3a
            | 0x0e47..=0x0e4e
            | 0x1f3fb..=0x1f3ff
    )
}
