//! The slide deck document: its JSON shape, the markdown and template front doors,
//! validation, slide operations and the audience view. Pure data; no I/O.
//!
//! The format is described for clients in `docs/slides.md` (with a JSON Schema).

mod markdown;
mod templates;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

pub use markdown::parse_markdown;
pub use templates::{template, TemplateInfo, TEMPLATES};

/// Limits enforced on every saved deck (also listed by `capabilities`).
pub const MAX_SLIDES: usize = 200;
pub const MAX_BLOCKS_PER_SLIDE: usize = 40;
pub const MAX_TEXT_CHARS: usize = 10_000;
pub const MAX_MARKDOWN_BYTES: usize = 512 * 1024;
pub const MAX_ID_CHARS: usize = 64;
/// Operations in one `slides/update` batch. With [`MAX_SLIDES`] checked after every
/// insert, a batch costs at most `MAX_OPERATIONS × MAX_SLIDES` steps (H4).
pub const MAX_OPERATIONS: usize = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub theme: Theme,
    pub slides: Vec<Slide>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    #[default]
    Light,
    Dark,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Title at the top, blocks below.
    #[default]
    Content,
    /// Title and blocks centred: opening and section slides.
    Title,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slide {
    /// Stable within the deck; slide operations address slides by it. Filled in
    /// (`s1`, `s2`, …) when a document leaves it out.
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub layout: Layout,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub blocks: Vec<Block>,
    /// Speaker notes: never rendered on slides, never shown to an audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default)]
    pub hidden: bool,
}

/// Text in `text`, `heading` and list items may carry inline `**bold**`, `*italic*` and
/// `` `code` `` marks; see [`spans`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    Heading {
        text: String,
    },
    Text {
        text: String,
    },
    Bullets {
        items: Vec<String>,
        #[serde(default)]
        ordered: bool,
    },
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        code: String,
    },
    Image {
        asset_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alt: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

fn invalid<T>(msg: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(msg.into()))
}

impl Deck {
    /// Parses and checks a JSON deck document, filling in missing slide ids.
    pub fn from_json(value: serde_json::Value) -> Result<Deck, Invalid> {
        let mut deck: Deck = serde_path_to_error::deserialize(value)
            .map_err(|e| Invalid(format!("invalid document at `{}`: {}", e.path(), e.inner())))?;
        deck.fill_ids();
        deck.validate()?;
        Ok(deck)
    }

    /// Gives every slide without an id the first free `s<n>`.
    pub fn fill_ids(&mut self) {
        let mut used: HashSet<String> = self.slides.iter().map(|s| s.id.clone()).collect();
        let mut n = 1;
        for slide in self.slides.iter_mut().filter(|s| s.id.is_empty()) {
            while used.contains(&format!("s{n}")) {
                n += 1;
            }
            slide.id = format!("s{n}");
            used.insert(slide.id.clone());
        }
    }

    pub fn validate(&self) -> Result<(), Invalid> {
        if self.slides.is_empty() {
            return invalid("a deck needs at least one slide");
        }
        if self.slides.len() > MAX_SLIDES {
            return invalid(format!("a deck has at most {MAX_SLIDES} slides"));
        }
        check_text("title", self.title.as_deref())?;
        let mut ids = HashSet::new();
        for (i, slide) in self.slides.iter().enumerate() {
            let at = format!("slide {} ({})", i + 1, slide.id);
            if slide.id.is_empty()
                || slide.id.chars().count() > MAX_ID_CHARS
                || !slide
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return invalid(format!(
                    "{at}: slide ids are 1 to {MAX_ID_CHARS} letters, digits, '-' or '_'"
                ));
            }
            if !ids.insert(slide.id.as_str()) {
                return invalid(format!("{at}: duplicate slide id"));
            }
            if slide.blocks.len() > MAX_BLOCKS_PER_SLIDE {
                return invalid(format!("{at}: at most {MAX_BLOCKS_PER_SLIDE} blocks"));
            }
            check_text(&format!("{at} title"), slide.title.as_deref())?;
            check_text(&format!("{at} notes"), slide.notes.as_deref())?;
            for block in &slide.blocks {
                match block {
                    Block::Heading { text } | Block::Text { text } => check_text(&at, Some(text))?,
                    Block::Bullets { items, .. } => {
                        if items.is_empty() {
                            return invalid(format!("{at}: a list needs at least one item"));
                        }
                        for item in items {
                            check_text(&at, Some(item))?;
                        }
                    }
                    Block::Code { code, language } => {
                        check_text(&at, Some(code))?;
                        check_text(&at, language.as_deref())?;
                    }
                    Block::Image { asset_id, alt } => {
                        if uuid::Uuid::parse_str(asset_id).is_err() {
                            return invalid(format!(
                                "{at}: image asset_id `{asset_id}` is not an asset id"
                            ));
                        }
                        check_text(&at, alt.as_deref())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Every asset the deck's images reference, each once, in order of appearance.
    pub fn asset_ids(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for slide in &self.slides {
            for block in &slide.blocks {
                if let Block::Image { asset_id, .. } = block {
                    if seen.insert(asset_id.clone()) {
                        out.push(asset_id.clone());
                    }
                }
            }
        }
        out
    }

    /// What an audience may see: hidden slides and speaker notes removed.
    pub fn audience(&self) -> Deck {
        Deck {
            title: self.title.clone(),
            theme: self.theme,
            slides: self
                .slides
                .iter()
                .filter(|s| !s.hidden)
                .map(|s| Slide {
                    notes: None,
                    ..s.clone()
                })
                .collect(),
        }
    }

    /// Applies a batch of operations; all or nothing. Bounded before any work: at most
    /// [`MAX_OPERATIONS`] operations, and the slide cap holds after every insert, so a
    /// hostile batch fails fast instead of growing the deck first (H4).
    pub fn apply(&self, ops: &[Operation]) -> Result<Deck, Invalid> {
        if ops.len() > MAX_OPERATIONS {
            return invalid(format!(
                "at most {MAX_OPERATIONS} operations per update ({} sent)",
                ops.len()
            ));
        }
        let mut deck = self.clone();
        let mut ids: HashSet<String> = deck.slides.iter().map(|s| s.id.clone()).collect();
        let mut next_id = deck.slides.len() + 1;
        for (n, op) in ops.iter().enumerate() {
            deck.apply_one(op, &mut ids, &mut next_id)
                .map_err(|e| Invalid(format!("operation {}: {}", n + 1, e.0)))?;
        }
        deck.fill_ids();
        deck.validate()?;
        Ok(deck)
    }

    fn position(&self, id: &str) -> Result<usize, Invalid> {
        self.slides
            .iter()
            .position(|s| s.id == id)
            .ok_or_else(|| Invalid(format!("no slide with id `{id}`")))
    }

    /// One operation. `ids` mirrors the deck's slide ids; `next_id` is where the search
    /// for a free `s<n>` resumes, so filling ids stays linear over a batch.
    fn apply_one(
        &mut self,
        op: &Operation,
        ids: &mut HashSet<String>,
        next_id: &mut usize,
    ) -> Result<(), Invalid> {
        match op {
            Operation::Insert { index, slide } => {
                if self.slides.len() >= MAX_SLIDES {
                    return invalid(format!("a deck has at most {MAX_SLIDES} slides"));
                }
                let at = index.unwrap_or(self.slides.len());
                if at > self.slides.len() {
                    return invalid(format!(
                        "index {at} is past the end ({} slides)",
                        self.slides.len()
                    ));
                }
                if !slide.id.is_empty() && ids.contains(&slide.id) {
                    return invalid(format!("slide id `{}` is already used", slide.id));
                }
                let mut slide = slide.clone();
                if slide.id.is_empty() {
                    // fill_ids runs after the batch; give it a unique id now so later
                    // operations in the same batch cannot collide with it.
                    while ids.contains(&format!("s{next_id}")) {
                        *next_id += 1;
                    }
                    slide.id = format!("s{next_id}");
                }
                ids.insert(slide.id.clone());
                self.slides.insert(at, slide);
            }
            Operation::Delete { slide_id } => {
                let at = self.position(slide_id)?;
                self.slides.remove(at);
                ids.remove(slide_id);
            }
            Operation::Move { slide_id, index } => {
                let from = self.position(slide_id)?;
                if *index >= self.slides.len() {
                    return invalid(format!(
                        "index {index} is past the end ({} slides)",
                        self.slides.len()
                    ));
                }
                let slide = self.slides.remove(from);
                self.slides.insert(*index, slide);
            }
            Operation::Update { slide_id, slide } => {
                let at = self.position(slide_id)?;
                let mut slide = slide.clone();
                slide.id = slide_id.clone();
                self.slides[at] = slide;
            }
            Operation::SetNotes { slide_id, notes } => {
                let at = self.position(slide_id)?;
                self.slides[at].notes = notes.clone().filter(|n| !n.is_empty());
            }
            Operation::Hide { slide_id } => {
                let at = self.position(slide_id)?;
                self.slides[at].hidden = true;
            }
            Operation::Show { slide_id } => {
                let at = self.position(slide_id)?;
                self.slides[at].hidden = false;
            }
        }
        Ok(())
    }
}

fn check_text(at: &str, text: Option<&str>) -> Result<(), Invalid> {
    match text {
        Some(t) if t.chars().count() > MAX_TEXT_CHARS => invalid(format!(
            "{at}: text longer than {MAX_TEXT_CHARS} characters"
        )),
        _ => Ok(()),
    }
}

/// One edit in an `update` batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Operation {
    /// At `index` (0-based; default: at the end).
    Insert {
        #[serde(default)]
        index: Option<usize>,
        slide: Slide,
    },
    Delete {
        slide_id: String,
    },
    /// To `index` (0-based) in the resulting order.
    Move {
        slide_id: String,
        index: usize,
    },
    /// Replaces the slide's content; it keeps its id.
    Update {
        slide_id: String,
        slide: Slide,
    },
    SetNotes {
        slide_id: String,
        notes: Option<String>,
    },
    Hide {
        slide_id: String,
    },
    Show {
        slide_id: String,
    },
}

/// A run of text with one style, from the inline marks of a text block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub bold: bool,
    pub italic: bool,
    pub code: bool,
}

/// Splits inline marks: `**bold**`, `*italic*` (or `_italic_`), `` `code` ``. An
/// unmatched mark is kept as a literal character; a backslash escapes the next one.
pub fn spans(text: &str) -> Vec<Span> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<Span> = Vec::new();
    let (mut bold, mut italic) = (false, false);
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<Span>, bold: bool, italic: bool, code: bool| {
        if !cur.is_empty() {
            out.push(Span {
                text: std::mem::take(cur),
                bold,
                italic,
                code,
            });
        }
    };
    let closes = |from: usize, mark: &[char]| -> bool {
        let mut j = from;
        while j + mark.len() <= chars.len() {
            if chars[j..j + mark.len()] == *mark {
                return true;
            }
            j += 1;
        }
        false
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() && "*_`\\".contains(chars[i + 1]) {
            cur.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '`' {
            if let Some(end) = chars[i + 1..].iter().position(|&d| d == '`') {
                flush(&mut cur, &mut out, bold, italic, false);
                let code: String = chars[i + 1..i + 1 + end].iter().collect();
                let mut code_run = code;
                flush(&mut code_run, &mut out, bold, italic, true);
                i += end + 2;
                continue;
            }
        }
        if c == '*' && chars.get(i + 1) == Some(&'*') && (bold || closes(i + 2, &['*', '*'])) {
            flush(&mut cur, &mut out, bold, italic, false);
            bold = !bold;
            i += 2;
            continue;
        }
        if (c == '*' || c == '_') && (italic || closes(i + 1, &[c])) {
            flush(&mut cur, &mut out, bold, italic, false);
            italic = !italic;
            i += 1;
            continue;
        }
        cur.push(c);
        i += 1;
    }
    flush(&mut cur, &mut out, bold, italic, false);
    out
}

/// Text with its inline marks removed (for search, alt text and plain outputs).
pub fn plain(text: &str) -> String {
    spans(text).into_iter().map(|s| s.text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spans_split_marks() {
        let s = spans("a **b** *c* `d*e` \\*f");
        let texts: Vec<_> = s
            .iter()
            .map(|s| (s.text.as_str(), s.bold, s.italic, s.code))
            .collect();
        assert_eq!(
            texts,
            vec![
                ("a ", false, false, false),
                ("b", true, false, false),
                (" ", false, false, false),
                ("c", false, true, false),
                (" ", false, false, false),
                ("d*e", false, false, true),
                (" *f", false, false, false),
            ]
        );
        assert_eq!(plain("2 * 3 = 6"), "2 * 3 = 6");
    }

    #[test]
    fn documents_get_ids_and_are_checked() {
        let deck =
            Deck::from_json(json!({"slides":[{"title":"A"},{"id":"s1","title":"B"}]})).unwrap();
        assert_eq!(deck.slides[0].id, "s2");
        assert!(Deck::from_json(json!({"slides":[]})).is_err());
        let e = Deck::from_json(json!({"slides":[{"blocks":[{"type":"video"}]}]})).unwrap_err();
        assert!(e.0.contains("slides[0].blocks[0]"), "{e}");
        let e = Deck::from_json(json!({"slides":[{"blocks":[{"type":"image","asset_id":"x"}]}]}))
            .unwrap_err();
        assert!(e.0.contains("asset id"), "{e}");
    }

    #[test]
    fn operations_are_all_or_nothing() {
        let deck = Deck::from_json(json!({"slides":[{"title":"A"},{"title":"B"}]})).unwrap();
        let ops: Vec<Operation> = serde_json::from_value(json!([
            {"op":"insert","index":0,"slide":{"title":"Z"}},
            {"op":"move","slide_id":"s1","index":2},
            {"op":"hide","slide_id":"s2"},
            {"op":"set_notes","slide_id":"s2","notes":"psst"}
        ]))
        .unwrap();
        let next = deck.apply(&ops).unwrap();
        let titles: Vec<_> = next
            .slides
            .iter()
            .map(|s| s.title.clone().unwrap())
            .collect();
        assert_eq!(titles, ["Z", "B", "A"]);
        assert!(next.slides[1].hidden);
        assert_eq!(next.audience().slides.len(), 2);
        assert!(next.audience().slides.iter().all(|s| s.notes.is_none()));
        let bad: Vec<Operation> = serde_json::from_value(
            json!([{"op":"delete","slide_id":"s1"},{"op":"delete","slide_id":"s2"}]),
        )
        .unwrap();
        assert!(
            deck.apply(&bad).is_err(),
            "a deck may not lose its last slide"
        );
    }
}
