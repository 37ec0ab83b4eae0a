//! What a Marp deck's text carries besides markdown: emoji shortcodes (GitHub's set, as
//! Marp's markdown-it-emoji has it), footnote numbers, and maths that is not drawn.

/// `:rocket:` and its kind replaced by their emoji; the shortcodes no emoji has, for a
/// warning. A shortcode is letters, digits, `_`, `+` and `-` between colons, with a
/// letter in it or a sign first (`:+1:`), so `10:30:00` stays as it is.
pub fn shortcodes(text: &str) -> (String, Vec<String>) {
    if !text.contains(':') {
        return (text.to_owned(), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut unknown = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(':') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_+-".contains(c)))
            .unwrap_or(after.len());
        let name = &after[..len];
        let closed = after[len..].starts_with(':');
        let wordy = name.chars().any(|c| c.is_ascii_alphabetic());
        if closed && (wordy || name.starts_with(['+', '-']) && name.len() > 1) {
            if let Some(e) = emojis::get_by_shortcode(name) {
                out.push_str(e.as_str());
                rest = &after[len + 1..];
                continue;
            }
            if !name.starts_with(['-', '+']) {
                unknown.push(format!(":{name}:"));
            }
        }
        out.push(':');
        rest = after;
    }
    out.push_str(rest);
    (out, unknown)
}

/// Whether a text has TeX maths as Marp reads it: `$…$` with no space inside the
/// dollars, or `$$…$$`.
pub fn has_maths(text: &str) -> bool {
    if text.contains("$$") {
        return true;
    }
    let b = text.as_bytes();
    let mut open: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        if c != b'$' || (i > 0 && b[i - 1] == b'\\') {
            continue;
        }
        match open {
            None if b.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) => open = Some(i),
            Some(o) if i > o + 1 && !b[i - 1].is_ascii_whitespace() => {
                // `$5 and $10` is money: Marp wants no digit right after the closing `$`.
                if !b.get(i + 1).is_some_and(|n| n.is_ascii_digit()) {
                    return true;
                }
                open = None;
            }
            _ => {}
        }
    }
    false
}

/// A footnote number as superscript digits.
pub fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .chars()
        .map(|d| DIGITS[d.to_digit(10).unwrap_or(0) as usize])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcodes_become_emoji() {
        let (t, unknown) = shortcodes("Ship :rocket: at 10:30:00 :tada::wave: :nope_not_one:");
        assert_eq!(t, "Ship 🚀 at 10:30:00 🎉👋 :nope_not_one:");
        assert_eq!(unknown, vec![":nope_not_one:"]);
        assert_eq!(shortcodes("a: b: c").0, "a: b: c");
        assert_eq!(shortcodes(":+1:").0, "👍");
    }

    #[test]
    fn maths_is_found_and_money_is_not() {
        assert!(has_maths("when $A v = \\lambda v$ holds"));
        assert!(has_maths("$$"));
        assert!(!has_maths("from $5 to $10"));
        assert!(!has_maths("costs $ 5 and $ 6"));
        assert!(!has_maths("no dollars"));
    }

    #[test]
    fn footnote_numbers_are_superscript() {
        assert_eq!(superscript(12), "¹²");
    }
}
