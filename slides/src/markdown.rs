//! Markdown decks (syntax in `docs/slides.md`): `---` lines separate slides, an optional
//! front matter sets the deck title and theme, HTML comments carry notes and directives.
//! Each slide's body is CommonMark, parsed with pulldown-cmark.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

use crate::{Block, Deck, Invalid, Layout, Slide, Theme, MAX_MARKDOWN_BYTES};

pub fn parse_markdown(source: &str) -> Result<Deck, Invalid> {
    if source.len() > MAX_MARKDOWN_BYTES {
        return Err(Invalid(format!(
            "markdown is larger than {MAX_MARKDOWN_BYTES} bytes"
        )));
    }
    let lines: Vec<&str> = source.lines().collect();
    let mut deck = Deck {
        title: None,
        theme: Theme::Light,
        slides: Vec::new(),
    };
    let mut start = 0;
    if let Some(end) = front_matter_end(&lines) {
        for line in &lines[1..end] {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().trim_matches('"').to_owned();
            match key.trim() {
                "title" => deck.title = Some(value),
                "theme" => {
                    deck.theme = match value.as_str() {
                        "light" => Theme::Light,
                        "dark" => Theme::Dark,
                        other => {
                            return Err(Invalid(format!(
                                "front matter line {}: unknown theme `{other}` (light or dark)",
                                1 + lines.iter().position(|l| l == line).unwrap_or(0)
                            )))
                        }
                    }
                }
                _ => {}
            }
        }
        start = end + 1;
    }

    // Split on `---` lines outside fenced code.
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
                } else if line.trim_end() == "---" {
                    chunks.push((n + 2, Vec::new()));
                    continue;
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
    if chunks.len() > crate::MAX_SLIDES {
        return Err(Invalid(format!(
            "a deck has at most {} slides ({} in the markdown)",
            crate::MAX_SLIDES,
            chunks.len()
        )));
    }
    for (first_line, chunk) in chunks {
        let text = chunk.join("\n");
        deck.slides.push(parse_slide(&text, first_line)?);
    }
    if deck
        .slides
        .iter()
        .all(|s| s.title.is_none() && s.blocks.is_empty())
    {
        return Err(Invalid("invalid markdown: no slide has any content".into()));
    }
    deck.fill_ids();
    deck.validate()?;
    Ok(deck)
}

/// Front matter: the first line is `---`, a later `---` closes it, and every line in
/// between is `key: value` or blank.
fn front_matter_end(lines: &[&str]) -> Option<usize> {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return None;
    }
    let end = lines.iter().skip(1).position(|l| l.trim_end() == "---")? + 1;
    let all_pairs = lines[1..end].iter().all(|l| {
        l.trim().is_empty()
            || l.split_once(':').is_some_and(|(k, _)| {
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            })
    });
    (all_pairs && end > 1).then_some(end)
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

/// Inline text being collected, with marks re-encoded for [`crate::spans`].
#[derive(Default)]
struct Inline {
    text: String,
}

impl Inline {
    fn push_text(&mut self, t: &str) {
        for c in t.chars() {
            if "*_`\\".contains(c) {
                self.text.push('\\');
            }
            self.text.push(c);
        }
    }
    fn take(&mut self) -> String {
        std::mem::take(&mut self.text).trim().to_owned()
    }
}

fn parse_slide(text: &str, first_line: usize) -> Result<Slide, Invalid> {
    let mut slide = Slide {
        id: String::new(),
        layout: Layout::Content,
        title: None,
        blocks: Vec::new(),
        notes: None,
        hidden: false,
    };
    let mut inline = Inline::default();
    let mut list: Option<(bool, Vec<String>)> = None;
    let mut depth = 0usize;
    let mut code: Option<(Option<String>, String)> = None;
    let mut image: Option<(String, String)> = None; // (asset id, alt being collected)
    let mut html = String::new();
    // Byte offset of each line start, so an event's line number is a binary search
    // rather than a rescan of the text before it.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();

    for (event, range) in Parser::new(text).into_offset_iter() {
        let line = first_line + line_starts.partition_point(|&s| s <= range.start) - 1;
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(l) if !l.trim().is_empty() => {
                        Some(l.split_whitespace().next().unwrap_or_default().to_owned())
                    }
                    _ => None,
                };
                code = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((language, mut body)) = code.take() {
                    if body.ends_with('\n') {
                        body.pop();
                    }
                    slide.blocks.push(Block::Code {
                        language,
                        code: body,
                    });
                }
            }
            Event::Text(t) if code.is_some() => code.as_mut().expect("in code").1.push_str(&t),
            Event::Text(t) if image.is_some() => image.as_mut().expect("in image").1.push_str(&t),
            Event::Text(t) => inline.push_text(&t),
            Event::Code(t) => {
                inline.text.push('`');
                inline.text.push_str(&t.replace('`', "'"));
                inline.text.push('`');
            }
            Event::Start(Tag::Strong) | Event::End(TagEnd::Strong) => inline.text.push_str("**"),
            Event::Start(Tag::Emphasis) | Event::End(TagEnd::Emphasis) => inline.text.push('*'),
            Event::SoftBreak => inline.text.push(' '),
            Event::HardBreak => inline.text.push('\n'),
            Event::End(TagEnd::Heading(level)) => {
                let t = inline.take();
                if slide.title.is_none() && slide.blocks.is_empty() && level <= HeadingLevel::H2 {
                    slide.title = Some(t);
                } else {
                    slide.blocks.push(Block::Heading { text: t });
                }
            }
            Event::End(TagEnd::Paragraph) | Event::End(TagEnd::BlockQuote(_)) => {
                let t = inline.take();
                if !t.is_empty() {
                    match &mut list {
                        // A loose list item wraps its text in a paragraph.
                        Some(_) => inline.text = t,
                        None => slide.blocks.push(Block::Text { text: t }),
                    }
                }
            }
            Event::Start(Tag::List(first)) => {
                depth += 1;
                match &mut list {
                    None => list = Some((first.is_some(), Vec::new())),
                    Some((_, items)) => {
                        // Nested list: close the parent item's text first.
                        let t = inline.take();
                        if !t.is_empty() {
                            items.push(t);
                        }
                    }
                }
            }
            Event::End(TagEnd::Item) => {
                let t = inline.take();
                if !t.is_empty() {
                    list.as_mut().expect("item in list").1.push(t);
                }
            }
            Event::End(TagEnd::List(_)) => {
                // Only the outermost list ends the block (nested ones are flattened).
                depth -= 1;
                if depth == 0 {
                    if let Some((ordered, items)) = list.take() {
                        if !items.is_empty() {
                            slide.blocks.push(Block::Bullets { items, ordered });
                        }
                    }
                }
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                // Text collected before the image stays a paragraph of its own.
                let before = inline.take();
                if !before.is_empty() && list.is_none() {
                    slide.blocks.push(Block::Text { text: before });
                }
                let url = dest_url.trim();
                let id = url.strip_prefix("asset:").unwrap_or(url);
                if uuid::Uuid::parse_str(id).is_err() {
                    return Err(Invalid(format!(
                        "invalid markdown on line {line}: images must reference an uploaded asset as `asset:<asset id>`, not `{url}`"
                    )));
                }
                image = Some((id.to_owned(), String::new()));
            }
            Event::End(TagEnd::Image) => {
                if let Some((asset_id, alt)) = image.take() {
                    let alt = alt.trim().to_owned();
                    slide.blocks.push(Block::Image {
                        asset_id,
                        alt: (!alt.is_empty()).then_some(alt),
                    });
                }
            }
            Event::Html(h) | Event::InlineHtml(h) => {
                html.push_str(&h);
                let t = html.trim();
                if !t.starts_with("<!--") {
                    return Err(Invalid(format!(
                        "invalid markdown on line {line}: raw HTML is not supported (only `<!-- … -->` comments)"
                    )));
                }
                if let Some(body) = comment_body(t) {
                    let body = body.trim().to_owned();
                    html.clear();
                    directive(&mut slide, &body, line)?;
                }
            }
            _ => {}
        }
    }
    Ok(slide)
}

/// The text of a complete `<!-- … -->` comment, or `None` while it is still open.
/// `<!-->` and `<!--->` are empty comments (as in HTML); the markers never overlap.
fn comment_body(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("<!--")?;
    if rest == ">" || rest == "->" {
        return Some("");
    }
    rest.strip_suffix("-->")
}

/// `hidden`, `layout: title|content`, `notes: …`; any other comment is speaker notes.
fn directive(slide: &mut Slide, body: &str, line: usize) -> Result<(), Invalid> {
    if body == "hidden" || body == "hidden: true" {
        slide.hidden = true;
        return Ok(());
    }
    if let Some(layout) = body.strip_prefix("layout:") {
        slide.layout = match layout.trim() {
            "title" => Layout::Title,
            "content" => Layout::Content,
            other => {
                return Err(Invalid(format!(
                    "invalid markdown on line {line}: unknown layout `{other}` (title or content)"
                )))
            }
        };
        return Ok(());
    }
    let note = body.strip_prefix("notes:").unwrap_or(body).trim();
    if !note.is_empty() {
        let notes = slide.notes.get_or_insert_with(String::new);
        if !notes.is_empty() {
            notes.push('\n');
        }
        notes.push_str(note);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "---\ntitle: Demo\ntheme: dark\n---\n\n<!-- layout: title -->\n# Hello\n\nA *small* **deck**\n\n<!-- notes: say hi -->\n\n---\n\n## List\n\n- one\n- two\n  - nested\n1. ignored? no\n\n```rust\nlet x = 1;\n---\n```\n\n---\n<!-- hidden -->\n## Secret\n\n![logo](asset:0b6f5e2a-7f44-4c1e-9a55-3f2d6f1b9a10)\n";

    #[test]
    fn parses_slides_notes_and_directives() {
        let deck = parse_markdown(SAMPLE).unwrap();
        assert_eq!(deck.title.as_deref(), Some("Demo"));
        assert_eq!(deck.theme, Theme::Dark);
        assert_eq!(deck.slides.len(), 3, "{deck:#?}");
        let s = &deck.slides[0];
        assert_eq!(s.layout, Layout::Title);
        assert_eq!(s.title.as_deref(), Some("Hello"));
        assert_eq!(s.notes.as_deref(), Some("say hi"));
        assert_eq!(
            s.blocks,
            vec![Block::Text {
                text: "A *small* **deck**".into()
            }]
        );
        let s = &deck.slides[1];
        assert_eq!(
            s.blocks[0],
            Block::Bullets {
                items: vec!["one".into(), "two".into(), "nested".into()],
                ordered: false
            }
        );
        assert!(matches!(&s.blocks[2], Block::Code { code, .. } if code == "let x = 1;\n---"));
        let s = &deck.slides[2];
        assert!(s.hidden);
        assert!(matches!(&s.blocks[0], Block::Image { alt: Some(a), .. } if a == "logo"));
        assert_eq!(deck.asset_ids().len(), 1);
    }

    #[test]
    fn rejects_what_it_cannot_show() {
        assert!(parse_markdown("# a\n```\nopen")
            .unwrap_err()
            .0
            .contains("never closed"));
        assert!(parse_markdown("![x](https://example.com/a.png)")
            .unwrap_err()
            .0
            .contains("asset:"));
        assert!(parse_markdown("<div>x</div>")
            .unwrap_err()
            .0
            .contains("HTML"));
        assert!(parse_markdown("   \n---\n").is_err());
        assert!(parse_markdown("<!-- layout: wide -->\n# x").is_err());
    }

    #[test]
    fn m6_comment_markers_never_overlap() {
        for src in [
            "# t\n\n<!-->",
            "# t\n\nsome <!--> x",
            "# t\n<!--->",
            "# t\n<!--",
        ] {
            let _ = parse_markdown(src);
        }
        let deck = parse_markdown("# t\n\n<!-->\n\n<!-- notes: n -->").unwrap();
        assert_eq!(deck.slides[0].notes.as_deref(), Some("n"));
        assert_eq!(comment_body("<!---->"), Some(""));
        assert_eq!(comment_body("<!-- a"), None);
    }
}
