//! The deck document's types: their JSON shape (serde) and their defaults.

use crate::*;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Deck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    pub title: Option<String>,
    #[serde(default)]
    pub theme: Theme,
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = MAX_SLIDES)))]
    pub slides: Vec<Slide>,
    /// Slide shape: `16:9` (default) or `4:3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aspect: Option<Aspect>,
    /// Page numbers on every slide (a slide's own `paginate` wins).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paginate: bool,
    /// Inline-marked text at the top / bottom of every slide (a slide's own wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    pub footer: Option<String>,
    /// Background and text colours for every slide, as CSS colours (`#rrggbb`, `#rgb`,
    /// `rgb(r, g, b)` or a basic colour name); a slide's own win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub background_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub color: Option<String>,
    /// The deck's brand colour (a CSS colour): the title rule, bullets, links, the table
    /// header line and quote bars are drawn in it instead of the theme's accent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub brand: Option<String>,
    /// An image asset drawn small in the top-right corner of every slide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::schema::asset_or_null")
    )]
    pub logo: Option<String>,
    /// The Marp theme the deck is drawn as (its type scale, placement and colours);
    /// `theme` then picks its light colours or its dark (`invert`) ones. Without it the
    /// deck has plinth's own look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marp_theme: Option<MarpTheme>,
    /// The deck's own styles (Marp's `style:` CSS, in the subset plinth draws): later
    /// rules win, and a rule for a slide's class wins over one for every slide. Set
    /// colours (`background_color`, `color`, a slide's own) win over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_STYLE_RULES)))]
    pub styles: Vec<StyleRule>,
}

/// Marp's three built-in themes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MarpTheme {
    Default,
    Gaia,
    Uncover,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Background {
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::asset"))]
    pub asset_id: String,
    #[serde(default)]
    pub position: BackgroundPosition,
    /// `cover` (default) fills its area and crops; `contain` shows all of it.
    #[serde(default)]
    pub fit: BackgroundFit,
    /// Share of the slide width a `left` or `right` split takes, 10 to 90 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 10, max = 90)))]
    pub split: Option<u8>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BackgroundPosition {
    #[default]
    Full,
    Left,
    Right,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BackgroundFit {
    #[default]
    Cover,
    Contain,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    #[default]
    Light,
    Dark,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Title at the top, blocks below.
    #[default]
    Content,
    /// Title and blocks centred: opening and section slides.
    Title,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Slide {
    /// Stable within the deck; slide operations address slides by it. Filled in
    /// (`s1`, `s2`, …) when a document leaves it out.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::slide_id"))]
    pub id: String,
    #[serde(default)]
    pub layout: Layout,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    pub title: Option<String>,
    /// The title's heading level (1 or 2) where the markdown gave one: Marp themes draw
    /// `#` larger than `##`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_level: Option<u8>,
    /// Marp's `# <!-- fit -->`: the title is scaled to fill the slide's width.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub title_fit: bool,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_BLOCKS_PER_SLIDE)))]
    pub blocks: Vec<Block>,
    /// Speaker notes: never rendered on slides, never shown to an audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
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
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    pub footer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub background_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::color"))]
    pub color: Option<String>,
    /// Background images, side by side when there are several in one area.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(length(max = 8)))]
    pub backgrounds: Vec<Background>,
    /// Marp classes besides `lead` and `invert` (which are `layout` and `theme`), for
    /// the deck's `styles` to pick slides by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_CLASSES), inner(length(min = 1, max = MAX_ID_CHARS))))]
    pub classes: Vec<String>,
}

/// Text in `text`, `heading`, list items, table cells and titles may carry inline marks
/// (`**bold**`, `*italic*`, `~~struck~~`, `` `code` ``, `[link](https://…)`,
/// `![alt](asset:<id>)`); see [`spans`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    Heading {
        #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
        text: String,
        /// 1 to 6, as `#` to `######` (default 2); 3 and below are drawn smaller.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 6)))]
        level: Option<u8>,
        /// Marp's `<!-- fit -->`: scaled to fill the width.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fit: bool,
    },
    Text {
        #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
        text: String,
    },
    Bullets {
        #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
        items: Vec<ListItem>,
        #[serde(default)]
        ordered: bool,
        /// The first number of an ordered list (default 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
    },
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
        language: Option<String>,
        #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
        code: String,
    },
    Image {
        #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::asset"))]
        asset_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
        alt: Option<String>,
        /// Drawn size in pixels of a 1920×1080 slide (one given: the other follows
        /// the image's shape); still scaled down to fit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 8192)))]
        width: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 8192)))]
        height: Option<u32>,
    },
    /// A block quote: any blocks, drawn indented behind an accent bar.
    Quote { blocks: Vec<Block> },
    /// A table: a header row and body rows of inline-marked cells, at most 1,000 cells
    /// (header included); a row with fewer cells than the header is filled with empty
    /// ones, one with more is cut (with a warning).
    Table {
        /// One per column (missing columns are `auto`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        align: Vec<Align>,
        #[cfg_attr(feature = "schema", schemars(length(min = 1, max = MAX_TABLE_COLUMNS), inner(length(max = MAX_TEXT_CHARS))))]
        header: Vec<String>,
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(inner(length(max = MAX_TABLE_COLUMNS))))]
        rows: Vec<Vec<String>>,
    },
    /// A horizontal rule (`***` or `___` in markdown; `---` separates slides).
    Rule,
    /// Starts the next column (`<!-- column -->` in markdown): the slide's blocks are
    /// laid out side by side in equal columns under the title. Top level only, at most
    /// [`MAX_COLUMNS`] columns.
    ColumnBreak,
}

/// Declares [`BLOCK_TYPES`] and [`Block::type_name`] from one list, in the order
/// `capabilities` shows them. The match is exhaustive, so a new block kind does not
/// compile until it has its name here (a test checks the names against serde's tags).
macro_rules! block_types {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// Block types a deck may use (for `capabilities`).
        pub const BLOCK_TYPES: &[&str] = &[$($name),*];

        impl Block {
            /// The block's `type` in JSON.
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(Block::$variant { .. } => $name,)*
                }
            }
        }
    };
}

block_types! {
    Heading => "heading",
    Text => "text",
    Bullets => "bullets",
    Code => "code",
    Image => "image",
    Quote => "quote",
    Table => "table",
    Rule => "rule",
    ColumnBreak => "column_break",
}

/// Columns a slide's blocks can be split into by [`Block::ColumnBreak`].
pub const MAX_COLUMNS: usize = 3;

/// Column alignment of a table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct List {
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "ListItemWithDetails"))]
#[serde(deny_unknown_fields)]
struct FullItem {
    #[cfg_attr(feature = "schema", schemars(length(max = MAX_TEXT_CHARS)))]
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checked: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    blocks: Vec<Block>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    list: Option<List>,
}

/// A list item: a string, or an object with `text` and optional `checked`, `blocks`
/// and `list` (as [`ListItem`]'s serde reads it).
#[cfg(feature = "schema")]
impl schemars::JsonSchema for ListItem {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ListItem")
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let full = generator.subschema_for::<FullItem>();
        schemars::json_schema!({
            "description": "A plain item as a string; an item with a check box, blocks or a nested list as an object.",
            "anyOf": [{"type": "string", "maxLength": MAX_TEXT_CHARS}, full]
        })
    }
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

/// One edit in an `update` batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
