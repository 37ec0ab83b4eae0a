//! The split of a deck's lines into slides.

use crate::{Invalid, MAX_SLIDES};

/// Splits on `---` lines outside fenced code (and, in a Marp deck, on every thematic
/// break: elsewhere `***` and `___` are a rule on the slide): each slide's first line
/// number and its lines.
pub(super) fn slides<'s>(
    lines: &[&'s str],
    start: usize,
    is_marp: bool,
    heading_divider: Option<usize>,
) -> Result<Vec<(usize, Vec<&'s str>)>, Invalid> {
    let mut chunks: Vec<(usize, Vec<&str>)> = vec![(start + 1, Vec::new())];
    let mut fence: Option<(String, usize)> = None;
    for (n, line) in lines.iter().enumerate().skip(start) {
        let trimmed = line.trim_start();
        match &fence {
            Some((marker, _)) => {
                if trimmed.starts_with(marker.as_str())
                    && trimmed
                        .trim_end()
                        .chars()
                        .all(|c| c == marker.chars().next().unwrap())
                {
                    fence = None;
                }
            }
            None => {
                if let Some(marker) = fence_marker(trimmed) {
                    fence = Some((marker, n + 1));
                } else if line.trim_end() == "---" || (is_marp && thematic_break(line)) {
                    chunks.push((n + 2, Vec::new()));
                    continue;
                } else if heading_divider.is_some_and(|d| {
                    let level = line.chars().take_while(|&c| c == '#').count();
                    (1..=d).contains(&level) && line[level..].starts_with([' ', '\t'])
                }) && chunks
                    .last()
                    .is_some_and(|c| c.1.iter().any(|l| !l.trim().is_empty()))
                {
                    // Marp's headingDivider: a new slide before each such heading.
                    chunks.push((n + 1, Vec::new()));
                }
            }
        }
        chunks.last_mut().expect("one chunk at least").1.push(line);
    }
    if let Some((_, line)) = fence {
        return Err(Invalid(format!(
            "invalid markdown: the code fence opened on line {line} is never closed"
        )));
    }
    // A separator right at the start (or after the front matter) does not make an
    // empty first slide.
    if chunks.len() > 1 && chunks[0].1.iter().all(|l| l.trim().is_empty()) {
        chunks.remove(0);
    }
    if chunks.len() > MAX_SLIDES {
        return Err(Invalid(format!(
            "a deck has at most {} slides ({} in the markdown)",
            MAX_SLIDES,
            chunks.len()
        )));
    }
    Ok(chunks)
}

/// A CommonMark thematic break: up to three spaces, then three or more of one of `-`,
/// `*`, `_`, with only spaces or tabs between them.
pub(super) fn thematic_break(line: &str) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = line.trim();
    let Some(mark) = rest.chars().next().filter(|c| "-*_".contains(*c)) else {
        return false;
    };
    indent <= 3
        && rest.chars().all(|c| c == mark || c == ' ' || c == '\t')
        && rest.chars().filter(|&c| c == mark).count() >= 3
}

fn fence_marker(trimmed: &str) -> Option<String> {
    for c in ['`', '~'] {
        let n = trimmed.chars().take_while(|&d| d == c).count();
        if n >= 3 {
            return Some(std::iter::repeat_n(c, n).collect());
        }
    }
    None
}
