//! Inline marks in text: split into styled spans, or removed.

/// A run of text with one style, from the inline marks of a text block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Span {
    pub text: String,
    pub bold: bool,
    pub italic: bool,
    pub code: bool,
    pub strike: bool,
    /// The target of the link this run is part of.
    pub link: Option<String>,
    /// An inline image: its asset id (`text` is the alt text).
    pub image: Option<String>,
    /// Marp's inline HTML: `<sub>`, `<sup>`, `<small>`, `<mark>`, `<u>` (or `<ins>`);
    /// `<kbd>` is drawn as code, `<s>`/`<del>` struck, `<b>`, `<i>`, `<code>` as their marks.
    pub sub: bool,
    pub sup: bool,
    pub small: bool,
    pub mark: bool,
    pub underline: bool,
}

/// The inline HTML elements marked text may hold (Marp's allowlist), each as the flag
/// it sets on a [`Span`].
pub const INLINE_TAGS: &[&str] = &[
    "sub", "sup", "small", "mark", "u", "ins", "kbd", "s", "del", "b", "strong", "i", "em", "code",
];

/// At the start of `chars`: an allowlisted tag `<name>` or `</name>` (any case), as
/// (its name, whether it closes, its length in characters).
pub fn inline_tag(chars: &[char]) -> Option<(&'static str, bool, usize)> {
    if chars.first() != Some(&'<') {
        return None;
    }
    let closes = chars.get(1) == Some(&'/');
    let from = if closes { 2 } else { 1 };
    let end = chars.iter().take(from + 8).position(|&c| c == '>')?;
    let name: String = chars[from..end]
        .iter()
        .collect::<String>()
        .to_ascii_lowercase();
    let tag = INLINE_TAGS.iter().find(|t| **t == name)?;
    Some((tag, closes, end + 1))
}

impl Span {
    fn set_tag(&mut self, tag: &str, on: bool) {
        match tag {
            "sub" => self.sub = on,
            "sup" => self.sup = on,
            "small" => self.small = on,
            "mark" => self.mark = on,
            "u" | "ins" => self.underline = on,
            "s" | "del" => self.strike = on,
            "b" | "strong" => self.bold = on,
            "i" | "em" => self.italic = on,
            _ => self.code = on,
        }
    }
}

/// Characters a backslash escapes in marked text.
pub const ESCAPABLE: &str = "*_`\\~[]<";

/// Splits inline marks: `**bold**`, `*italic*` (or `_italic_`), `~~struck~~`,
/// `` `code` ``, `[text](url)`, `![alt](asset:<id>)` and the tags of [`INLINE_TAGS`]. An unmatched mark is kept as
/// a literal character; a backslash escapes the next mark character. Linear in the
/// text's length.
pub fn spans(text: &str) -> Vec<Span> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    // Whether a mark occurs at or after an index is whether its last occurrence does.
    let last = |mark: &[char]| -> Option<usize> {
        (0..n.saturating_sub(mark.len() - 1))
            .rev()
            .find(|&j| chars[j..j + mark.len()] == *mark)
    };
    let (last_bold, last_star, last_under, last_strike) = (
        last(&['*', '*']),
        last(&['*']),
        last(&['_']),
        last(&['~', '~']),
    );
    let closes = |from: usize, last: Option<usize>| last.is_some_and(|l| l >= from);

    let mut out: Vec<Span> = Vec::new();
    let mut style = Span::default();
    let mut link_end: Option<(usize, usize)> = None; // (index of `]`, index after `)`)
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<Span>, style: &Span| {
        if !cur.is_empty() {
            out.push(Span {
                text: std::mem::take(cur),
                ..style.clone()
            });
        }
    };
    let mut i = 0;
    while i < n {
        let c = chars[i];
        if let Some((end, resume)) = link_end {
            // A code span may have run past the `]`: the link ends where it stopped.
            if i >= end {
                flush(&mut cur, &mut out, &style);
                style.link = None;
                link_end = None;
                i = if i == end { resume } else { i };
                continue;
            }
        }
        if c == '\\' && i + 1 < n && ESCAPABLE.contains(chars[i + 1]) {
            cur.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '`' {
            if let Some(end) = chars[i + 1..].iter().position(|&d| d == '`') {
                flush(&mut cur, &mut out, &style);
                let mut code: String = chars[i + 1..i + 1 + end].iter().collect();
                let code_style = Span {
                    code: true,
                    ..style.clone()
                };
                flush(&mut code, &mut out, &code_style);
                i += end + 2;
                continue;
            }
        }
        if let Some((tag, closes, len)) = inline_tag(&chars[i..]) {
            flush(&mut cur, &mut out, &style);
            style.set_tag(tag, !closes);
            i += len;
            continue;
        }
        if c == '!' && chars.get(i + 1) == Some(&'[') {
            if let Some((close, url, resume)) = target(&chars, i + 1) {
                flush(&mut cur, &mut out, &style);
                let alt: String = unescape(&chars[i + 2..close]);
                let id = url.strip_prefix("asset:").unwrap_or(&url).to_owned();
                out.push(Span {
                    text: alt,
                    image: Some(id),
                    ..style.clone()
                });
                i = resume;
                continue;
            }
        }
        if c == '[' && link_end.is_none() {
            if let Some((close, url, resume)) = target(&chars, i) {
                flush(&mut cur, &mut out, &style);
                style.link = Some(url);
                link_end = Some((close, resume));
                i += 1;
                continue;
            }
        }
        if c == '*' && chars.get(i + 1) == Some(&'*') && (style.bold || closes(i + 2, last_bold)) {
            flush(&mut cur, &mut out, &style);
            style.bold = !style.bold;
            i += 2;
            continue;
        }
        if c == '~'
            && chars.get(i + 1) == Some(&'~')
            && (style.strike || closes(i + 2, last_strike))
        {
            flush(&mut cur, &mut out, &style);
            style.strike = !style.strike;
            i += 2;
            continue;
        }
        let last_same = if c == '*' { last_star } else { last_under };
        if (c == '*' || c == '_') && (style.italic || closes(i + 1, last_same)) {
            flush(&mut cur, &mut out, &style);
            style.italic = !style.italic;
            i += 1;
            continue;
        }
        cur.push(c);
        i += 1;
    }
    flush(&mut cur, &mut out, &style);
    out
}

/// For a `[` at `open`: the index of its `]`, the target inside the `(…)` that must
/// follow at once, and the index after the `)`. Escaped characters and code spans in
/// the text are skipped; a nested `[`, a line break or a target with spaces is no link.
/// Scans only up to the next unescaped `]`, so a text is scanned O(1) times overall.
fn target(chars: &[char], open: usize) -> Option<(usize, String, usize)> {
    let mut j = open + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '`' => match chars[j + 1..]
                .iter()
                .position(|&d| matches!(d, '`' | ']' | '[' | '\n'))
            {
                Some(k) if chars[j + 1 + k] == '`' => j += k + 2,
                _ => j += 1,
            },
            '[' | '\n' => return None,
            ']' => break,
            _ => j += 1,
        }
    }
    let close = j;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let mut url = String::new();
    for (k, &c) in chars.iter().enumerate().skip(close + 2) {
        match c {
            ')' if !url.is_empty() => return Some((close, url, k + 1)),
            c if c.is_whitespace() || c == '(' || c == ')' || c == '[' || c == ']' => return None,
            c => url.push(c),
        }
    }
    None
}

fn unescape(chars: &[char]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' && i + 1 < chars.len() && ESCAPABLE.contains(chars[i + 1]) {
            i += 1;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Text with its inline marks removed (for search, alt text and plain outputs).
pub fn plain(text: &str) -> String {
    spans(text).into_iter().map(|s| s.text).collect()
}
