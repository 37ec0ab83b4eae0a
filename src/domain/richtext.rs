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

/// The TipTap/ProseMirror JSON document of `markdown`.
pub fn markdown_to_doc(markdown: &str) -> Value {
    let mut stack = vec![Open::new("doc", None)];
    let mut marks: Vec<Value> = Vec::new();
    // Image alt text is collected while inside an image tag.
    let mut image: Option<(String, String, String)> = None;

    fn push(stack: &mut [Open], node: Value) {
        stack.last_mut().expect("the doc").content.push(node);
    }
    // Inline content directly under a list item or the doc gets a paragraph around it.
    fn ensure_inline_parent(stack: &mut Vec<Open>) {
        let kind = stack.last().expect("the doc").node["type"].clone();
        if kind == "listItem" || kind == "doc" || kind == "blockquote" {
            stack.push(Open::new("paragraph", None));
        }
    }
    fn text(stack: &mut Vec<Open>, marks: &[Value], t: &str) {
        if t.is_empty() {
            return;
        }
        ensure_inline_parent(stack);
        let mut node = json!({"type": "text", "text": t});
        if !marks.is_empty() {
            node["marks"] = Value::Array(marks.to_vec());
        }
        push(stack, node);
    }
    fn close_top(stack: &mut Vec<Open>) {
        if stack.len() > 1 {
            let done = stack.pop().expect("checked").close();
            push(stack, done);
        }
    }
    // Closes an implicit paragraph left open inside a list item or quote.
    fn close_implicit(stack: &mut Vec<Open>, until: &str) {
        while stack.len() > 1 && stack.last().expect("checked").node["type"] != until {
            close_top(stack);
        }
    }

    let options = Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(markdown, options) {
        if let Some((_, _, alt)) = image.as_mut() {
            match event {
                Event::Text(t) | Event::Code(t) => {
                    alt.push_str(&t);
                    continue;
                }
                Event::End(TagEnd::Image) => {
                    let (src, title, alt) = image.take().expect("inside an image");
                    let mut attrs = json!({"src": src, "alt": alt});
                    if !title.is_empty() {
                        attrs["title"] = json!(title);
                    }
                    // Images are block nodes in TipTap's default schema.
                    if stack.last().expect("the doc").node["type"] == "paragraph" {
                        close_top(&mut stack);
                    }
                    push(&mut stack, json!({"type": "image", "attrs": attrs}));
                    continue;
                }
                _ => continue,
            }
        }
        match event {
            Event::Start(tag) => match tag {
                Tag::Paragraph => stack.push(Open::new("paragraph", None)),
                Tag::Heading { level, .. } => {
                    let level = if level == HeadingLevel::H1 { 1 } else { 2 };
                    stack.push(Open::new("heading", Some(json!({"level": level}))));
                }
                Tag::BlockQuote(_) => stack.push(Open::new("blockquote", None)),
                Tag::CodeBlock(kind) => {
                    let language = match kind {
                        pulldown_cmark::CodeBlockKind::Fenced(l) if !l.is_empty() => {
                            json!(l.to_string())
                        }
                        _ => Value::Null,
                    };
                    stack.push(Open::new("codeBlock", Some(json!({"language": language}))));
                }
                Tag::List(None) => stack.push(Open::new("bulletList", None)),
                Tag::List(Some(start)) => {
                    stack.push(Open::new("orderedList", Some(json!({"start": start}))))
                }
                Tag::Item => stack.push(Open::new("listItem", None)),
                Tag::Emphasis => marks.push(json!({"type": "italic"})),
                Tag::Strong => marks.push(json!({"type": "bold"})),
                Tag::Strikethrough => marks.push(json!({"type": "strike"})),
                Tag::Link {
                    dest_url, title, ..
                } => {
                    let mut attrs = json!({"href": dest_url.to_string()});
                    if !title.is_empty() {
                        attrs["title"] = json!(title.to_string());
                    }
                    marks.push(json!({"type": "link", "attrs": attrs}));
                }
                Tag::Image {
                    dest_url, title, ..
                } => image = Some((dest_url.to_string(), title.to_string(), String::new())),
                _ => {}
            },
            Event::End(end) => match end {
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::CodeBlock
                | TagEnd::BlockQuote(_)
                | TagEnd::List(_)
                | TagEnd::Item => {
                    let kind = match end {
                        TagEnd::Paragraph => "paragraph",
                        TagEnd::Heading(_) => "heading",
                        TagEnd::CodeBlock => "codeBlock",
                        TagEnd::BlockQuote(_) => "blockquote",
                        TagEnd::List(true) => "orderedList",
                        TagEnd::List(false) => "bulletList",
                        _ => "listItem",
                    };
                    close_implicit(&mut stack, kind);
                    close_top(&mut stack);
                }
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                    marks.pop();
                }
                _ => {}
            },
            Event::Text(t) => {
                if stack.last().expect("the doc").node["type"] == "codeBlock" {
                    push(&mut stack, json!({"type": "text", "text": t.to_string()}));
                } else {
                    text(&mut stack, &marks, &t);
                }
            }
            Event::Code(t) => {
                let mut with_code = marks.clone();
                with_code.push(json!({"type": "code"}));
                text(&mut stack, &with_code, &t);
            }
            Event::SoftBreak => text(&mut stack, &marks, " "),
            Event::HardBreak => {
                ensure_inline_parent(&mut stack);
                push(&mut stack, json!({"type": "hardBreak"}));
            }
            Event::Rule => {
                close_implicit(&mut stack, "doc");
                push(&mut stack, json!({"type": "horizontalRule"}));
            }
            Event::Html(t) | Event::InlineHtml(t) => text(&mut stack, &marks, &t),
            _ => {}
        }
    }
    while stack.len() > 1 {
        close_top(&mut stack);
    }
    stack.pop().expect("the doc").close()
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
    fn empty_and_odd_input_gives_a_valid_doc() {
        assert_eq!(markdown_to_doc(""), empty_doc());
        for odd in ["**", "> - > 1. `", "[x](", "![", "***\n---\n", "<b>hi</b>"] {
            let doc = markdown_to_doc(odd);
            assert_eq!(doc["type"], "doc", "{odd}");
        }
    }
}
