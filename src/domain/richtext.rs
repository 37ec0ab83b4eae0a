//! Markdown to rich-text editor nodes: the JSON document format of ProseMirror as TipTap
//! names its nodes (`doc`, `paragraph`, `heading`, `blockquote`, `bulletList`,
//! `orderedList`, `listItem`, `codeBlock`, `image`, `hardBreak`, `horizontalRule`,
//! `text` with the marks `bold`, `italic`, `code`, `link`), which TipTap's
//! `editor.commands.setContent(json)` and ProseMirror's `Node.fromJSON` load as they are
//! (docs/api.md). Parsing is pulldown-cmark's (CommonMark); headings are level 1 for `#`
//! and 2 for `##` and deeper, as the spec's post rules say.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde_json::{json, Map, Value};

/// The empty document a new post's `editorContent` starts as.
pub fn empty_doc() -> Value {
    json!({"type": "doc", "content": []})
}

/// An open node being filled, with the marks in force for its text.
struct Open {
    node: Map<String, Value>,
    content: Vec<Value>,
}

impl Open {
    fn new(kind: &str, attrs: Option<Value>) -> Open {
        let mut node = Map::new();
        node.insert("type".into(), json!(kind));
        if let Some(a) = attrs {
            node.insert("attrs".into(), a);
        }
        Open {
            node,
            content: Vec::new(),
        }
    }

    fn close(mut self) -> Value {
        if !self.content.is_empty() || self.node["type"] != "paragraph" {
            self.node
                .insert("content".into(), Value::Array(self.content));
        }
        Value::Object(self.node)
    }
}

/// Most nodes open at once (the doc included). Deeper block quotes and lists are not
/// opened: their content goes into the deepest open node, so the document stays within
/// `json_depth::MAX_DEPTH` (two JSON levels per node) however the markdown nests
/// (security round 2, H1: 20,000 `>` once made a document that overflowed the stack).
pub const MAX_NESTING: usize = 32;

/// Longest link `href` or `title` made a mark, in bytes (longer ones leave the text
/// unlinked): each text node inside a link carries a copy.
pub const MAX_ATTR: usize = 2048;

/// Whether a link or image target may be written into the document: relative, or
/// `http`, `https` (and for links `mailto`). Editors render `href` as it is, so
/// `javascript:` and `data:` never get there (security round 2, L4).
pub fn safe_url(url: &str, allow_mailto: bool) -> bool {
    // Browsers skip whitespace and control characters inside a scheme (`java\tscript:`).
    let cleaned: String = url
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .collect();
    let scheme_end = cleaned.find([':', '/', '?', '#']);
    match scheme_end {
        Some(at) if cleaned[at..].starts_with(':') => {
            let scheme = cleaned[..at].to_ascii_lowercase();
            scheme == "http" || scheme == "https" || (allow_mailto && scheme == "mailto")
        }
        _ => true,
    }
}

/// The TipTap/ProseMirror JSON document of `markdown`.
pub fn markdown_to_doc(markdown: &str) -> Value {
    let mut b = Builder {
        stack: vec![Open::new("doc", None)],
        not_opened: 0,
        marks: Vec::new(),
        mark_added: Vec::new(),
        image: None,
    };
    for event in Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH) {
        if b.image.is_some() {
            b.in_image(event);
        } else {
            b.event(event);
        }
    }
    while b.stack.len() > 1 {
        b.close_top();
    }
    b.stack.pop().expect("the doc").close()
}

/// The document being built from the parser's events.
struct Builder {
    stack: Vec<Open>,
    /// Block quotes, lists and items not opened because [`MAX_NESTING`] was reached:
    /// their ends are skipped too (they are always the innermost, so a count suffices).
    not_opened: usize,
    /// Marks in force, at most one of each type (so a text node carries at most a
    /// handful, however deep emphasis nests), and for each mark tag seen whether it
    /// added one.
    marks: Vec<Value>,
    mark_added: Vec<bool>,
    /// Image `(src, title, alt)`; the alt text is collected while inside an image tag.
    image: Option<(String, String, String)>,
}

impl Builder {
    fn push(&mut self, node: Value) {
        self.stack.last_mut().expect("the doc").content.push(node);
    }

    fn top_is(&self, kind: &str) -> bool {
        self.stack.last().expect("the doc").node["type"] == kind
    }

    /// Inline content directly under a list item, a quote or the doc gets a paragraph
    /// around it.
    fn ensure_inline_parent(&mut self) {
        if self.top_is("listItem") || self.top_is("doc") || self.top_is("blockquote") {
            self.stack.push(Open::new("paragraph", None));
        }
    }

    fn text(&mut self, marks: &[Value], t: &str) {
        if t.is_empty() {
            return;
        }
        self.ensure_inline_parent();
        let mut node = json!({"type": "text", "text": t});
        if !marks.is_empty() {
            node["marks"] = Value::Array(marks.to_vec());
        }
        self.push(node);
    }

    /// Text with the marks in force.
    fn marked_text(&mut self, t: &str) {
        let marks = std::mem::take(&mut self.marks);
        self.text(&marks, t);
        self.marks = marks;
    }

    fn close_top(&mut self) {
        if self.stack.len() > 1 {
            let done = self.stack.pop().expect("checked").close();
            self.push(done);
        }
    }

    /// Closes an implicit paragraph left open inside a list item or quote.
    fn close_implicit(&mut self, until: &str) {
        while self.stack.len() > 1 && !self.top_is(until) {
            self.close_top();
        }
    }

    /// Opens a block quote, list or item unless the nesting bound is reached.
    fn open(&mut self, node: Open) {
        if self.stack.len() >= MAX_NESTING {
            self.not_opened += 1;
        } else {
            self.stack.push(node);
        }
    }

    fn add_mark(&mut self, mark: Option<Value>) {
        let added = mark.is_some_and(|m| {
            let fresh = !self.marks.iter().any(|old| old["type"] == m["type"]);
            if fresh {
                self.marks.push(m);
            }
            fresh
        });
        self.mark_added.push(added);
    }

    /// An event inside an image tag: its text is the alt text; its end writes the
    /// image (or, with an unsafe target, the alt text).
    fn in_image(&mut self, event: Event<'_>) {
        let Some((_, _, alt)) = self.image.as_mut() else {
            return;
        };
        match event {
            Event::Text(t) | Event::Code(t) => alt.push_str(&t),
            Event::End(TagEnd::Image) => {
                let (src, title, alt) = self.image.take().expect("inside an image");
                if !safe_url(&src, false) {
                    self.marked_text(&alt);
                    return;
                }
                let mut attrs = json!({"src": src, "alt": alt});
                if !title.is_empty() {
                    attrs["title"] = json!(title);
                }
                // Images are block nodes in TipTap's default schema.
                if self.top_is("paragraph") {
                    self.close_top();
                }
                self.push(json!({"type": "image", "attrs": attrs}));
            }
            _ => {}
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::Item)
                if self.not_opened > 0 =>
            {
                self.not_opened -= 1;
            }
            Event::End(end) => self.end(end),
            Event::Text(t) => {
                if self.top_is("codeBlock") {
                    self.push(json!({"type": "text", "text": t.to_string()}));
                } else {
                    self.marked_text(&t);
                }
            }
            Event::Code(t) => {
                let mut with_code = self.marks.clone();
                if !self.marks.iter().any(|m| m["type"] == "code") {
                    with_code.push(json!({"type": "code"}));
                }
                self.text(&with_code, &t);
            }
            Event::SoftBreak => self.marked_text(" "),
            Event::HardBreak => {
                self.ensure_inline_parent();
                self.push(json!({"type": "hardBreak"}));
            }
            Event::Rule => {
                self.close_implicit("doc");
                self.push(json!({"type": "horizontalRule"}));
            }
            Event::Html(t) | Event::InlineHtml(t) => self.marked_text(&t),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.stack.push(Open::new("paragraph", None)),
            Tag::Heading { level, .. } => {
                let level = if level == HeadingLevel::H1 { 1 } else { 2 };
                self.stack
                    .push(Open::new("heading", Some(json!({"level": level}))));
            }
            Tag::BlockQuote(_) => self.open(Open::new("blockquote", None)),
            Tag::CodeBlock(kind) => {
                let language = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(l) if !l.is_empty() => {
                        json!(l.to_string())
                    }
                    _ => Value::Null,
                };
                self.stack
                    .push(Open::new("codeBlock", Some(json!({"language": language}))));
            }
            Tag::List(None) => self.open(Open::new("bulletList", None)),
            Tag::List(Some(start)) => {
                self.open(Open::new("orderedList", Some(json!({"start": start}))))
            }
            Tag::Item => self.open(Open::new("listItem", None)),
            Tag::Emphasis => self.add_mark(Some(json!({"type": "italic"}))),
            Tag::Strong => self.add_mark(Some(json!({"type": "bold"}))),
            Tag::Strikethrough => self.add_mark(Some(json!({"type": "strike"}))),
            Tag::Link {
                dest_url, title, ..
            } => {
                // An unsafe target leaves the text unlinked, and so does one past
                // MAX_ATTR: the mark is copied onto every text node of the link.
                let fits = dest_url.len() <= MAX_ATTR && title.len() <= MAX_ATTR;
                let mark = (fits && safe_url(&dest_url, true)).then(|| {
                    let mut attrs = json!({"href": dest_url.to_string()});
                    if !title.is_empty() {
                        attrs["title"] = json!(title.to_string());
                    }
                    json!({"type": "link", "attrs": attrs})
                });
                self.add_mark(mark);
            }
            Tag::Image {
                dest_url, title, ..
            } => self.image = Some((dest_url.to_string(), title.to_string(), String::new())),
            _ => {}
        }
    }

    fn end(&mut self, end: TagEnd) {
        let kind = match end {
            TagEnd::Paragraph => "paragraph",
            TagEnd::Heading(_) => "heading",
            TagEnd::CodeBlock => "codeBlock",
            TagEnd::BlockQuote(_) => "blockquote",
            TagEnd::List(true) => "orderedList",
            TagEnd::List(false) => "bulletList",
            TagEnd::Item => "listItem",
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                if self.mark_added.pop() == Some(true) {
                    self.marks.pop();
                }
                return;
            }
            _ => return,
        };
        self.close_implicit(kind);
        self.close_top();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_syntax_becomes_tiptap_nodes() {
        let doc = markdown_to_doc(
            "# Title\n\n## Part\n\n### Deeper\n\nSome **bold**, __bold__, *it*, _it_ and `code` \
             with [a link](https://example.com).\n\n> quoted\n\n- one\n* two\n\n1. first\n2. second\n\n\
             ![a cat](https://example.com/cat.png)\n",
        );
        let c = doc["content"].as_array().unwrap();
        assert_eq!(doc["type"], "doc");
        assert_eq!(
            c[0],
            json!({"type": "heading", "attrs": {"level": 1}, "content": [{"type": "text", "text": "Title"}]})
        );
        assert_eq!(c[1]["attrs"]["level"], 2);
        assert_eq!(c[2]["attrs"]["level"], 2, "### is a heading 2");
        let p = c[3]["content"].as_array().unwrap();
        let marked = |text: &str| {
            p.iter()
                .find(|n| n["text"] == text)
                .map(|n| n["marks"].clone())
                .unwrap()
        };
        assert_eq!(marked("bold"), json!([{"type": "bold"}]));
        assert_eq!(marked("it"), json!([{"type": "italic"}]));
        assert_eq!(marked("code"), json!([{"type": "code"}]));
        assert_eq!(
            marked("a link"),
            json!([{"type": "link", "attrs": {"href": "https://example.com"}}])
        );
        assert_eq!(c[4]["type"], "blockquote");
        assert_eq!(c[4]["content"][0]["type"], "paragraph");
        // `-` and `*` are separate lists in CommonMark; both are bullet lists.
        let kinds: Vec<&str> = c.iter().map(|n| n["type"].as_str().unwrap()).collect();
        assert!(
            kinds.contains(&"bulletList") && kinds.contains(&"orderedList"),
            "{kinds:?}"
        );
        let ordered = c.iter().find(|n| n["type"] == "orderedList").unwrap();
        assert_eq!(ordered["attrs"]["start"], 1);
        assert_eq!(ordered["content"][1]["type"], "listItem");
        assert_eq!(
            ordered["content"][1]["content"][0],
            json!({"type": "paragraph", "content": [{"type": "text", "text": "second"}]})
        );
        let image = c.last().unwrap();
        assert_eq!(
            image,
            &json!({"type": "image", "attrs": {"src": "https://example.com/cat.png", "alt": "a cat"}})
        );
    }

    #[test]
    fn nesting_is_bounded_and_marks_do_not_pile_up() {
        use crate::json_depth::{depth_of, MAX_DEPTH};
        for markdown in [
            format!("{} x", ">".repeat(20_000)),
            format!("{}x", "- ".repeat(5_000)),
            format!("{}x", "1. ".repeat(5_000)),
            (0..300)
                .map(|i| format!("{}- item\n", "  ".repeat(i)))
                .collect(),
            (0..300)
                .map(|i| format!("{}> - 1. x\n", "    ".repeat(i % 3)))
                .collect(),
        ] {
            let doc = markdown_to_doc(&markdown);
            // Two levels per node, a text node with its marks, and `data.editorContent`
            // around it must stay inside the bound of a stored `data`.
            assert!(depth_of(&doc) + 2 <= MAX_DEPTH, "{}", depth_of(&doc));
            assert!(doc.to_string().contains('x'), "the text survives");
        }
        // Emphasis nested 2,000 deep: each text node carries at most one mark per type.
        let markdown = format!("{}x{}", "*a _".repeat(2_000), "_ b*".repeat(2_000));
        let text = markdown_to_doc(&markdown).to_string();
        assert!(
            text.matches("\"italic\"").count() < 4 * 2_000,
            "marks piled up"
        );
        assert!(text.len() < 100 * markdown.len(), "{} bytes", text.len());
        let doc = markdown_to_doc(&format!("{}x{}", "[".repeat(3_000), "](/a)".repeat(3_000)));
        assert!(depth_of(&doc) < 16);
    }

    #[test]
    fn only_safe_link_and_image_targets_are_kept() {
        for (url, link, image) in [
            ("https://example.com/x", true, true),
            ("HTTP://example.com", true, true),
            ("/relative/path?q=1", true, true),
            ("page#part", true, true),
            ("mailto:me@example.com", true, false),
            ("javascript:alert(1)", false, false),
            ("JavaScript:alert(1)", false, false),
            (" java\tscript:alert(1)", false, false),
            ("data:text/html,<b>", false, false),
            ("vbscript:x", false, false),
        ] {
            assert_eq!(safe_url(url, true), link, "{url}");
            assert_eq!(safe_url(url, false), image, "{url}");
        }
        let doc = markdown_to_doc("[click](javascript:alert(1)) ![cat](javascript:x)");
        let text = doc.to_string();
        assert!(!text.contains("javascript"), "{text}");
        assert!(text.contains("click") && text.contains("cat"), "{text}");
    }

    #[test]
    fn empty_and_odd_input_gives_a_valid_doc() {
        assert_eq!(markdown_to_doc(""), empty_doc());
        for odd in ["**", "> - > 1. `", "[x](", "![", "***\n---\n", "<b>hi</b>"] {
            let doc = markdown_to_doc(odd);
            assert_eq!(doc["type"], "doc", "{odd}");
        }
    }

    /// Markdown nested any way a caller likes: block quotes, bullet and numbered lists,
    /// emphasis, strong, strikethrough, links and images, to depths far past the bound.
    fn nested_markdown() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let block = prop::sample::select(vec!["> ", "- ", "* ", "1. ", "  - ", "    ", ">- "]);
        let inline = prop::sample::select(vec![
            ("*", "*"),
            ("_", "_"),
            ("**", "**"),
            ("~~", "~~"),
            ("[", "](/a)"),
            ("[", "](javascript:x)"),
            ("![", "](https://e.x/i.png)"),
            ("`", "`"),
        ]);
        (
            prop::collection::vec(block, 0..3_000),
            prop::collection::vec(inline, 0..600),
            1usize..4,
        )
            .prop_map(|(blocks, inlines, lines)| {
                let mut text = String::new();
                for _ in 0..lines {
                    text.push_str(&blocks.concat());
                    inlines.iter().for_each(|(open, _)| text.push_str(open));
                    text.push('x');
                    inlines
                        .iter()
                        .rev()
                        .for_each(|(_, close)| text.push_str(close));
                    text.push('\n');
                }
                text
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Whatever the nesting, the document stays within the stored-data bound, its text
        /// survives, it serialises and serde_json reads it back (it never could past 128).
        #[test]
        fn any_nesting_gives_a_bounded_readable_document(markdown in nested_markdown()) {
            use crate::json_depth::{depth_of, MAX_DEPTH};
            let doc = markdown_to_doc(&markdown);
            proptest::prop_assert!(depth_of(&doc) + 2 <= MAX_DEPTH);
            let text = serde_json::to_string(&doc).unwrap();
            proptest::prop_assert!(text.contains('x'));
            proptest::prop_assert!(!text.contains("\"href\":\"javascript"));
            proptest::prop_assert!(!text.contains("\"src\":\"javascript"));
            let back: Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(back, doc);
        }
    }
}
