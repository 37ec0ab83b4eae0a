//! The slide deck document: its JSON shape, the markdown and template front doors,
//! validation, slide operations and the audience view. Pure data; no I/O.
//!
//! The format is described for clients in `docs/slides.md` (with a JSON Schema).

mod inline;
mod markdown;
mod templates;

use std::collections::HashSet;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

pub use markdown::{
    parse_markdown, parse_markdown_report, parse_markdown_with, ParseOptions, ResolveImage,
};
pub use templates::{template, TemplateInfo, TEMPLATES};

/// Block types a deck may use (for `capabilities`).
pub const BLOCK_TYPES: &[&str] = &[
    "heading",
    "text",
    "bullets",
    "code",
    "image",
    "quote",
    "table",
    "rule",
    "column_break",
];

/// Limits enforced on every saved deck (also listed by `capabilities`).
pub const MAX_SLIDES: usize = 200;
pub const MAX_BLOCKS_PER_SLIDE: usize = 40;
pub const MAX_TEXT_CHARS: usize = 10_000;
pub const MAX_MARKDOWN_BYTES: usize = 512 * 1024;
pub const MAX_ID_CHARS: usize = 64;
/// Operations in one `slides/update` batch. With [`MAX_SLIDES`] checked after every
/// insert, a batch costs at most `MAX_OPERATIONS × MAX_SLIDES` steps (H4).
pub const MAX_OPERATIONS: usize = 500;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub theme: Theme,
    pub slides: Vec<Slide>,
    /// Slide shape: `16:9` (default) or `4:3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aspect: Option<Aspect>,
    /// Page numbers on every slide (a slide's own `paginate` wins).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paginate: bool,
    /// Inline-marked text at the top / bottom of every slide (a slide's own wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<String>,
    /// Background and text colours for every slide, as CSS colours (`#rrggbb`, `#rgb`,
    /// `rgb(r, g, b)` or a basic colour name); a slide's own win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// The deck's brand colour (a CSS colour): the title rule, bullets, links, the table
    /// header line and quote bars are drawn in it instead of the theme's accent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
    /// An image asset drawn small in the top-right corner of every slide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logo: Option<String>,
    /// The Marp theme the deck is drawn as (its type scale, placement and colours);
    /// `theme` then picks its light colours or its dark (`invert`) ones. Without it the
    /// deck has plinth's own look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marp_theme: Option<MarpTheme>,
}

/// Marp's three built-in themes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarpTheme {
    Default,
    Gaia,
    Uncover,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aspect {
    #[default]
    #[serde(rename = "16:9")]
    Wide,
    #[serde(rename = "4:3")]
    Standard,
}

/// A slide background image (Marp's `![bg]`): the whole slide, or a split beside the
/// content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Background {
    pub asset_id: String,
    #[serde(default)]
    pub position: BackgroundPosition,
    /// `cover` (default) fills its area and crops; `contain` shows all of it.
    #[serde(default)]
    pub fit: BackgroundFit,
    /// Share of the slide width a `left` or `right` split takes, 10 to 90 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<u8>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundPosition {
    #[default]
    Full,
    Left,
    Right,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundFit {
    #[default]
    Cover,
    Contain,
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

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// The title's heading level (1 or 2) where the markdown gave one: Marp themes draw
    /// `#` larger than `##`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_level: Option<u8>,
    /// Marp's `# <!-- fit -->`: the title is scaled to fill the slide's width.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub title_fit: bool,
    #[serde(default)]
    pub blocks: Vec<Block>,
    /// Speaker notes: never rendered on slides, never shown to an audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default)]
    pub hidden: bool,
    /// This slide in the other theme (Marp's `invert` class) or a set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<Theme>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paginate: Option<bool>,
    /// Marp's `paginate: hold` and `skip`: the slide does not advance the page number
    /// (hold shows the previous one, skip none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncounted: bool,
    /// Overrides the deck's; an empty string removes it on this slide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// Background images, side by side when there are several in one area.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backgrounds: Vec<Background>,
}

/// Text in `text`, `heading`, list items, table cells and titles may carry inline marks
/// (`**bold**`, `*italic*`, `~~struck~~`, `` `code` ``, `[link](https://…)`,
/// `![alt](asset:<id>)`); see [`spans`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    Heading {
        text: String,
        /// 1 to 6, as `#` to `######` (default 2); 3 and below are drawn smaller.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<u8>,
        /// Marp's `<!-- fit -->`: scaled to fill the width.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fit: bool,
    },
    Text {
        text: String,
    },
    Bullets {
        items: Vec<ListItem>,
        #[serde(default)]
        ordered: bool,
        /// The first number of an ordered list (default 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
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
        /// Drawn size in pixels of a 1920×1080 slide (one given: the other follows
        /// the image's shape); still scaled down to fit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        width: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        height: Option<u32>,
    },
    /// A block quote: any blocks, drawn indented behind an accent bar.
    Quote {
        blocks: Vec<Block>,
    },
    /// A table: a header row and body rows of inline-marked cells.
    Table {
        /// One per column (missing columns are `auto`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        align: Vec<Align>,
        header: Vec<String>,
        #[serde(default)]
        rows: Vec<Vec<String>>,
    },
    /// A horizontal rule (`***` or `___` in markdown; `---` separates slides).
    Rule,
    /// Starts the next column (`<!-- column -->` in markdown): the slide's blocks are
    /// laid out side by side in equal columns under the title. Top level only, at most
    /// [`MAX_COLUMNS`] columns.
    ColumnBreak,
}

/// Columns a slide's blocks can be split into by [`Block::ColumnBreak`].
pub const MAX_COLUMNS: usize = 3;

/// Column alignment of a table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    #[default]
    Auto,
    Left,
    Center,
    Right,
}

/// A list (the nested list of a [`ListItem`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct List {
    pub items: Vec<ListItem>,
    #[serde(default)]
    pub ordered: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
}

/// One list item. In JSON a plain item is a string; an item with a check box, blocks
/// or a nested list is an object `{"text", "checked"?, "blocks"?, "list"?}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListItem {
    pub text: String,
    /// A task-list item: `Some(true)` is ticked.
    pub checked: Option<bool>,
    /// Blocks after the text (code, quotes, tables, images, more paragraphs), drawn in
    /// the item's column.
    pub blocks: Vec<Block>,
    pub list: Option<List>,
}

impl From<&str> for ListItem {
    fn from(text: &str) -> Self {
        ListItem {
            text: text.to_owned(),
            ..ListItem::default()
        }
    }
}

impl From<String> for ListItem {
    fn from(text: String) -> Self {
        ListItem {
            text,
            ..ListItem::default()
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FullItem {
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checked: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    blocks: Vec<Block>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    list: Option<List>,
}

impl Serialize for ListItem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.checked.is_none() && self.list.is_none() && self.blocks.is_empty() {
            return s.serialize_str(&self.text);
        }
        FullItem {
            text: self.text.clone(),
            checked: self.checked,
            blocks: self.blocks.clone(),
            list: self.list.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ListItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ListItem;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an object with `text`, `checked` and `list`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ListItem, E> {
                Ok(ListItem::from(v))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<ListItem, E> {
                Ok(ListItem::from(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ListItem, A::Error> {
                let full =
                    FullItem::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(ListItem {
                    text: full.text,
                    checked: full.checked,
                    blocks: full.blocks,
                    list: full.list,
                })
            }
        }
        d.deserialize_any(V)
    }
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
        for (what, text) in [("header", &self.header), ("footer", &self.footer)] {
            if let Some(t) = text {
                check_marked(what, t)?;
            }
        }
        for (what, c) in [
            ("background_color", &self.background_color),
            ("color", &self.color),
            ("brand", &self.brand),
        ] {
            check_color(what, c.as_deref())?;
        }
        if let Some(logo) = &self.logo {
            if uuid::Uuid::parse_str(logo).is_err() {
                return invalid(format!("logo `{logo}` is not an asset id"));
            }
        }
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
            let mut count = 0;
            check_blocks(&at, &slide.blocks, 0, &mut count)?;
            for (what, text) in [("header", &slide.header), ("footer", &slide.footer)] {
                if let Some(t) = text {
                    check_marked(&format!("{at} {what}"), t)?;
                }
            }
            for (what, c) in [
                ("background_color", &slide.background_color),
                ("color", &slide.color),
            ] {
                check_color(&format!("{at} {what}"), c.as_deref())?;
            }
            if slide.backgrounds.len() > 8 {
                return invalid(format!("{at}: at most 8 background images"));
            }
            for bg in &slide.backgrounds {
                if uuid::Uuid::parse_str(&bg.asset_id).is_err() {
                    return invalid(format!(
                        "{at}: background asset_id `{}` is not an asset id",
                        bg.asset_id
                    ));
                }
                if bg.split.is_some_and(|p| !(10..=90).contains(&p)) {
                    return invalid(format!("{at}: a background split is 10 to 90 (percent)"));
                }
            }
            if let Some(title) = slide.title.as_deref() {
                check_marks(&format!("{at} title"), title)?;
            }
            let breaks = slide
                .blocks
                .iter()
                .filter(|b| matches!(b, Block::ColumnBreak))
                .count();
            if breaks >= MAX_COLUMNS {
                return invalid(format!(
                    "{at}: at most {MAX_COLUMNS} columns ({} column breaks)",
                    MAX_COLUMNS - 1
                ));
            }
        }
        Ok(())
    }

    /// Every asset the deck's images reference (image blocks, inline images in any
    /// text), each once, in order of appearance.
    pub fn asset_ids(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut add = |id: &str| {
            if !id.starts_with(MATHS) && seen.insert(id.to_owned()) {
                out.push(id.to_owned());
            }
        };
        if let Some(logo) = &self.logo {
            add(logo);
        }
        for slide in &self.slides {
            for bg in &slide.backgrounds {
                add(&bg.asset_id);
            }
            let mut texts: Vec<&str> = Vec::new();
            if let Some(t) = slide.title.as_deref() {
                texts.push(t);
            }
            walk_blocks(&slide.blocks, 0, &mut |block| match block {
                Block::Image { asset_id, .. } => {
                    for t in texts.drain(..) {
                        inline_images(t, &mut add);
                    }
                    add(asset_id)
                }
                other => {
                    for t in texts.drain(..) {
                        inline_images(t, &mut add);
                    }
                    for t in block_texts(other) {
                        inline_images(t, &mut add);
                    }
                }
            });
            for t in texts {
                inline_images(t, &mut add);
            }
        }
        for t in [&self.header, &self.footer].into_iter().flatten() {
            inline_images(t, &mut add);
        }
        for slide in &self.slides {
            for t in [&slide.header, &slide.footer].into_iter().flatten() {
                inline_images(t, &mut add);
            }
        }
        out
    }

    /// The deck without its slides.
    fn clone_settings(&self) -> Deck {
        Deck {
            title: self.title.clone(),
            theme: self.theme,
            slides: Vec::new(),
            aspect: self.aspect,
            paginate: self.paginate,
            header: self.header.clone(),
            footer: self.footer.clone(),
            background_color: self.background_color.clone(),
            color: self.color.clone(),
            brand: self.brand.clone(),
            logo: self.logo.clone(),
            marp_theme: self.marp_theme,
        }
    }

    /// What an audience may see: hidden slides and speaker notes removed.
    pub fn audience(&self) -> Deck {
        Deck {
            slides: self
                .slides
                .iter()
                .filter(|s| !s.hidden)
                .map(|s| Slide {
                    notes: None,
                    ..s.clone()
                })
                .collect(),
            ..self.clone_settings()
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

fn check_color(at: &str, c: Option<&str>) -> Result<(), Invalid> {
    match c {
        Some(c) if parse_color(c).is_none() => invalid(format!(
            "{at}: `{c}` is not a colour (#rrggbb, #rgb, rgb(r, g, b) or a basic name such as white)"
        )),
        _ => Ok(()),
    }
}

/// A CSS colour plinth can draw: `#rrggbb`, `#rgb`, `rgb(r, g, b)` or a basic name.
pub fn parse_color(c: &str) -> Option<(u8, u8, u8)> {
    let c = c.trim().to_ascii_lowercase();
    if let Some(hex) = c.strip_prefix('#') {
        if !hex.chars().all(|d| d.is_ascii_hexdigit()) {
            return None;
        }
        let v = |s: &str| u8::from_str_radix(s, 16).ok();
        return match hex.len() {
            3 => {
                let d: Vec<u8> = hex.chars().filter_map(|d| v(&d.to_string())).collect();
                Some((d[0] * 17, d[1] * 17, d[2] * 17))
            }
            6 => Some((v(&hex[0..2])?, v(&hex[2..4])?, v(&hex[4..6])?)),
            _ => None,
        };
    }
    if let Some(args) = c.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) {
        let parts: Vec<u8> = args
            .split(',')
            .map(|p| p.trim().parse::<u8>())
            .collect::<Result<_, _>>()
            .ok()?;
        return (parts.len() == 3).then(|| (parts[0], parts[1], parts[2]));
    }
    Some(match c.as_str() {
        "white" => (255, 255, 255),
        "black" => (0, 0, 0),
        "red" => (255, 0, 0),
        "green" => (0, 128, 0),
        "blue" => (0, 0, 255),
        "yellow" => (255, 255, 0),
        "orange" => (255, 165, 0),
        "purple" => (128, 0, 128),
        "gray" | "grey" => (128, 128, 128),
        "silver" => (192, 192, 192),
        "navy" => (0, 0, 128),
        "teal" => (0, 128, 128),
        "maroon" => (128, 0, 0),
        "olive" => (128, 128, 0),
        "lime" => (0, 255, 0),
        "aqua" | "cyan" => (0, 255, 255),
        "fuchsia" | "magenta" => (255, 0, 255),
        "pink" => (255, 192, 203),
        "brown" => (165, 42, 42),
        "beige" => (245, 245, 220),
        "whitesmoke" => (245, 245, 245),
        "lightgray" | "lightgrey" => (211, 211, 211),
        "darkgray" | "darkgrey" => (169, 169, 169),
        "dimgray" | "dimgrey" => (105, 105, 105),
        "skyblue" => (135, 206, 235),
        "gold" => (255, 215, 0),
        _ => return None,
    })
}

/// How deep block quotes and lists may nest inside one another (a top-level list is
/// level 1). Every walk over blocks is bounded by it, so no document can exhaust the
/// stack.
pub const MAX_NESTING: usize = 8;
/// Columns of one table, and cells of one table (header included).
pub const MAX_TABLE_COLUMNS: usize = 30;
pub const MAX_TABLE_CELLS: usize = 1_000;
/// Link targets an export may carry: nothing that runs script in a viewer.
pub const LINK_SCHEMES: &[&str] = &["http://", "https://", "mailto:"];

fn check_blocks(
    at: &str,
    blocks: &[Block],
    depth: usize,
    count: &mut usize,
) -> Result<(), Invalid> {
    for block in blocks {
        *count += 1;
        if *count > MAX_BLOCKS_PER_SLIDE {
            return invalid(format!(
                "{at}: at most {MAX_BLOCKS_PER_SLIDE} blocks (block quotes' blocks included)"
            ));
        }
        match block {
            Block::Heading { text, level, .. } => {
                if level.is_some_and(|l| !(1..=6).contains(&l)) {
                    return invalid(format!("{at}: a heading level is 1 to 6"));
                }
                check_marked(at, text)?
            }
            Block::Text { text } => check_marked(at, text)?,
            Block::Bullets { items, .. } => check_list(at, items, depth + 1, count)?,
            Block::Code { code, language } => {
                check_text(at, Some(code))?;
                check_text(at, language.as_deref())?;
            }
            Block::Image {
                asset_id,
                alt,
                width,
                height,
            } => {
                if [width, height]
                    .into_iter()
                    .flatten()
                    .any(|&v| v == 0 || v > 8192)
                {
                    return invalid(format!("{at}: image width and height are 1 to 8192"));
                }
                if uuid::Uuid::parse_str(asset_id).is_err() && maths_of(asset_id).is_none() {
                    return invalid(format!(
                        "{at}: image asset_id `{asset_id}` is not an asset id"
                    ));
                }
                check_text(at, alt.as_deref())?;
            }
            Block::Quote { blocks } => {
                if depth + 1 > MAX_NESTING {
                    return too_deep(at);
                }
                check_blocks(at, blocks, depth + 1, count)?;
            }
            Block::Table {
                align,
                header,
                rows,
            } => {
                let columns = header.len();
                if columns == 0 || columns > MAX_TABLE_COLUMNS {
                    return invalid(format!(
                        "{at}: a table has 1 to {MAX_TABLE_COLUMNS} columns"
                    ));
                }
                if align.len() > columns {
                    return invalid(format!("{at}: a table has more alignments than columns"));
                }
                if rows.iter().any(|r| r.len() != columns) {
                    return invalid(format!(
                        "{at}: every table row has as many cells as the header ({columns})"
                    ));
                }
                if columns * (rows.len() + 1) > MAX_TABLE_CELLS {
                    return invalid(format!("{at}: a table has at most {MAX_TABLE_CELLS} cells"));
                }
                for cell in header.iter().chain(rows.iter().flatten()) {
                    check_marked(at, cell)?;
                }
            }
            Block::Rule => {}
            // Only a slide's own blocks are split into columns.
            Block::ColumnBreak if depth > 0 => {
                return invalid(format!(
                    "{at}: a column break belongs to the slide, not inside a list or quote"
                ))
            }
            Block::ColumnBreak => {}
        }
    }
    Ok(())
}

/// A list at `level` (the quotes and lists it sits in, itself included).
fn check_list(
    at: &str,
    items: &[ListItem],
    level: usize,
    count: &mut usize,
) -> Result<(), Invalid> {
    if level > MAX_NESTING {
        return too_deep(at);
    }
    if items.is_empty() {
        return invalid(format!("{at}: a list needs at least one item"));
    }
    for item in items {
        check_marked(at, &item.text)?;
        check_blocks(at, &item.blocks, level, count)?;
        if let Some(list) = &item.list {
            check_list(at, &list.items, level + 1, count)?;
        }
    }
    Ok(())
}

fn too_deep<T>(at: &str) -> Result<T, Invalid> {
    invalid(format!(
        "{at}: block quotes and lists nest at most {MAX_NESTING} levels deep"
    ))
}

/// Length, then the inline marks: links only to [`LINK_SCHEMES`], inline images only
/// to assets.
fn check_marked(at: &str, text: &str) -> Result<(), Invalid> {
    check_text(at, Some(text))?;
    check_marks(at, text)
}

fn check_marks(at: &str, text: &str) -> Result<(), Invalid> {
    for span in spans(text) {
        if let Some(url) = &span.link {
            if !link_allowed(url) {
                return invalid(format!(
                    "{at}: link `{url}` is not allowed (http, https or mailto only)"
                ));
            }
        }
        if let Some(id) = &span.image {
            if uuid::Uuid::parse_str(id).is_err() && maths_of(id).is_none() {
                return invalid(format!("{at}: inline image `{id}` is not an asset id"));
            }
        }
    }
    Ok(())
}

/// How maths travels in a deck: as an image whose reference carries the TeX source
/// (`maths:i:<hex>` inline, `maths:d:<hex>` a display formula), typeset when the deck
/// is rendered. It names no asset, so [`Deck::asset_ids`] leaves it out.
pub const MATHS: &str = "maths:";

/// The longest TeX source of one formula, in bytes.
pub const MAX_MATHS_BYTES: usize = 2000;

/// The image reference of a formula.
pub fn maths_ref(tex: &str, display: bool) -> String {
    let mut out = String::with_capacity(8 + 2 * tex.len());
    out.push_str(MATHS);
    out.push_str(if display { "d:" } else { "i:" });
    for b in tex.trim().bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The TeX source of a formula's reference and whether it is a display formula; what
/// follows the source (`:…`, a renderer's colour) is left out. `None` for anything else.
pub fn maths_of(id: &str) -> Option<(String, bool)> {
    let rest = id.strip_prefix(MATHS)?;
    let (display, hex) = match rest.split_at_checked(2)? {
        ("d:", hex) => (true, hex),
        ("i:", hex) => (false, hex),
        _ => return None,
    };
    let hex = hex.split(':').next()?;
    if hex.is_empty() || !hex.len().is_multiple_of(2) || hex.len() > 2 * MAX_MATHS_BYTES {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    Some((String::from_utf8(bytes?).ok()?, display))
}

/// Whether a link target is one an export may carry.
pub fn link_allowed(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    LINK_SCHEMES.iter().any(|s| lower.starts_with(s))
        && !url
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '\\' | '"' | '<' | '>'))
}

/// Calls `f` on every block, nested ones included, in document order; stops
/// descending past [`MAX_NESTING`] (deeper documents never validate).
pub fn walk_blocks<'a>(blocks: &'a [Block], depth: usize, f: &mut dyn FnMut(&'a Block)) {
    fn items<'a>(list: &'a [ListItem], level: usize, f: &mut dyn FnMut(&'a Block)) {
        for item in list {
            walk_blocks(&item.blocks, level, f);
            if let Some(l) = item.list.as_ref().filter(|_| level < MAX_NESTING) {
                items(&l.items, level + 1, f);
            }
        }
    }
    if depth > MAX_NESTING {
        return;
    }
    for block in blocks {
        f(block);
        match block {
            Block::Quote { blocks } if depth < MAX_NESTING => walk_blocks(blocks, depth + 1, f),
            Block::Bullets { items: list, .. } if depth < MAX_NESTING => items(list, depth + 1, f),
            _ => {}
        }
    }
}

/// The inline-marked texts of one block (not of its nested blocks), list items at
/// every level included.
pub fn block_texts(block: &Block) -> Vec<&str> {
    fn items<'a>(list: &'a [ListItem], level: usize, out: &mut Vec<&'a str>) {
        for item in list {
            out.push(&item.text);
            if let Some(l) = &item.list {
                if level < MAX_NESTING {
                    items(&l.items, level + 1, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    match block {
        Block::Heading { text, .. } | Block::Text { text } => out.push(text.as_str()),
        Block::Bullets { items: list, .. } => items(list, 1, &mut out),
        Block::Table { header, rows, .. } => {
            out.extend(header.iter().map(String::as_str));
            out.extend(rows.iter().flatten().map(String::as_str));
        }
        Block::Code { .. }
        | Block::Image { .. }
        | Block::Quote { .. }
        | Block::Rule
        | Block::ColumnBreak => {}
    }
    out
}

fn inline_images(text: &str, add: &mut dyn FnMut(&str)) {
    if !text.contains("](") {
        return;
    }
    for span in spans(text) {
        if let Some(id) = &span.image {
            add(id);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Column breaks split only a slide's own blocks, into at most three columns; the
    /// brand is a colour and the logo an asset, which the deck's assets include.
    #[test]
    fn column_breaks_brand_and_logo_are_checked() {
        let logo = "6f1c2a3e-0000-4000-8000-000000000001";
        let ok = Deck::from_json(json!({"brand": "#0a84ff", "logo": logo, "slides": [{"blocks": [
            {"type": "text", "text": "a"}, {"type": "column_break"}, {"type": "text", "text": "b"}]}]}))
        .unwrap();
        assert_eq!(ok.slides[0].blocks[1], Block::ColumnBreak);
        assert_eq!(ok.asset_ids(), vec![logo.to_owned()]);
        for (doc, want) in [
            (
                json!({"slides": [{"blocks": [{"type": "quote", "blocks": [{"type": "column_break"}]}]}]}),
                "not inside a list or quote",
            ),
            (
                json!({"slides": [{"blocks": [{"type": "column_break"}, {"type": "column_break"}, {"type": "column_break"}]}]}),
                "at most 3 columns",
            ),
            (json!({"brand": "blurple", "slides": [{}]}), "brand"),
            (
                json!({"logo": "logo.png", "slides": [{}]}),
                "logo `logo.png` is not an asset id",
            ),
        ] {
            let err = Deck::from_json(doc).unwrap_err();
            assert!(err.0.contains(want), "{err}");
        }
    }

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

    #[test]
    fn list_items_stay_strings_in_json_unless_rich() {
        let doc = json!({"theme":"light","slides":[{"id":"s1","layout":"content","hidden":false,"blocks":[{"type":"bullets","ordered":false,"items":[
            "plain",
            {"text":"task","checked":true},
            {"text":"parent","list":{"ordered":true,"start":3,"items":["child"]}}
        ]}]}]});
        let deck = Deck::from_json(doc.clone()).unwrap();
        assert_eq!(serde_json::to_value(&deck).unwrap(), doc);
        let e = Deck::from_json(
            json!({"slides":[{"blocks":[{"type":"bullets","items":[{"text":"x","bogus":1}]}]}]}),
        )
        .unwrap_err();
        assert!(e.0.contains("bogus"), "{e}");
    }

    #[test]
    fn json_decks_are_checked_like_markdown() {
        let deep = (0..12).fold(
            json!({"type":"text","text":"x"}),
            |b, _| json!({"type":"quote","blocks":[b]}),
        );
        let e = Deck::from_json(json!({"slides":[{"blocks":[deep]}]})).unwrap_err();
        assert!(e.0.contains("nest at most 8"), "{e}");
        let e = Deck::from_json(
            json!({"slides":[{"blocks":[{"type":"text","text":"[x](javascript:alert%281%29)"}]}]}),
        )
        .unwrap_err();
        assert!(e.0.contains("not allowed"), "{e}");
        for url in ["https://a\\", "https://a\"b", "https://a<b"] {
            assert!(!link_allowed(url), "{url}");
        }
        assert!(link_allowed("HTTPS://example.com/a_%28b%29?q=1#x"));
        let e = Deck::from_json(
            json!({"slides":[{"blocks":[{"type":"table","header":["a","b"],"rows":[["1"]]}]}]}),
        )
        .unwrap_err();
        assert!(e.0.contains("as many cells"), "{e}");
        let e = Deck::from_json(
            json!({"slides":[{"blocks":[{"type":"text","text":"![i](asset:nope)"}]}]}),
        )
        .unwrap_err();
        assert!(e.0.contains("inline image"), "{e}");
        let ok = Deck::from_json(json!({"slides":[{"blocks":[
            {"type":"table","align":["right"],"header":["a","b"],"rows":[["1","~~2~~"]]},
            {"type":"rule"},
            {"type":"quote","blocks":[{"type":"text","text":"[x](https://a.example)"}]}
        ]}]}));
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn spans_links_images_strike() {
        let s = spans("a [b **c**](https://x.y/z) ~~d~~ ![e](asset:1) \\[f](g) [h] (i)");
        let got: Vec<_> = s
            .iter()
            .map(|s| {
                (
                    s.text.as_str(),
                    s.bold,
                    s.strike,
                    s.link.as_deref(),
                    s.image.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a ", false, false, None, None),
                ("b ", false, false, Some("https://x.y/z"), None),
                ("c", true, false, Some("https://x.y/z"), None),
                (" ", false, false, None, None),
                ("d", false, true, None, None),
                (" ", false, false, None, None),
                ("e", false, false, None, Some("1")),
                (" [f](g) [h] (i)", false, false, None, None),
            ]
        );
        // Linear on hostile input.
        let t = std::time::Instant::now();
        for s in [
            "[".repeat(10_000),
            "*".repeat(10_000),
            "[`".repeat(5_000),
            "[a](".repeat(2_500),
        ] {
            let _ = spans(&s);
        }
        assert!(t.elapsed().as_secs_f64() < 1.0, "{:?}", t.elapsed());
    }
}
