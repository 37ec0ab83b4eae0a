//! What a slide's walk builds into: the open containers (block quotes, lists, items,
//! tables) and the inline text being collected, and where a finished block goes. The
//! walk's steps (`builder`, `blocks`, `inline`) all use these; they sit apart so that the
//! steps import them, not each other.

use crate::{Align, Block, Invalid, ListItem, Slide};

/// An open container while a slide's events are walked.
pub(super) enum Frame {
    Quote(Vec<Block>),
    List {
        ordered: bool,
        start: Option<u64>,
        items: Vec<ListItem>,
    },
    Item(ListItem),
    Table {
        align: Vec<Align>,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
        row: Vec<String>,
    },
}

fn kind(block: &Block) -> &'static str {
    match block {
        Block::Heading { .. } => "a heading",
        Block::Text { .. } => "text",
        Block::Bullets { .. } => "a list",
        Block::Code { .. } => "a code block",
        Block::Image { .. } => "an image",
        Block::Quote { .. } => "a block quote",
        Block::Table { .. } => "a table",
        Block::Rule => "a rule",
        Block::ColumnBreak => "a column break",
    }
}

/// Puts a finished block where it belongs: the slide, the open block quote, or the
/// open list item (which takes text only).
pub(super) fn emit(
    slide: &mut Slide,
    stack: &mut [Frame],
    block: Block,
    line: usize,
) -> Result<(), Invalid> {
    match stack.last_mut() {
        None => slide.blocks.push(block),
        Some(Frame::Quote(blocks)) => blocks.push(block),
        Some(Frame::Item(item)) => match block {
            _ if item.list.is_some() => {
                return Err(Invalid(format!(
                    "invalid markdown on line {line}: {} after a nested list in the same list item is not supported",
                    kind(&block)
                )))
            }
            Block::Text { text } if item.blocks.is_empty() => {
                if !item.text.is_empty() {
                    item.text.push('\n');
                }
                item.text.push_str(&text);
            }
            other => item.blocks.push(other),
        },
        Some(Frame::List { .. }) | Some(Frame::Table { .. }) => {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: {} is not supported here",
                kind(&block)
            )))
        }
    }
    Ok(())
}

/// Text collected so far belongs to the open list item (tight lists have no
/// paragraphs): its text, or a text block after its blocks.
pub(super) fn flush_item(
    stack: &mut [Frame],
    inline: &mut Inline,
    line: usize,
) -> Result<(), Invalid> {
    if let Some(Frame::Item(item)) = stack.last_mut() {
        if !inline.other && !inline.images.is_empty() && item.list.is_none() {
            // An item that is only images (`- ![w:200](a.png)`): image blocks in it.
            for (asset_id, alt, width, height) in std::mem::take(&mut inline.images) {
                let alt = alt.trim().to_owned();
                item.blocks.push(Block::Image {
                    asset_id,
                    alt: (!alt.is_empty()).then_some(alt),
                    width,
                    height,
                });
            }
            inline.take();
            return Ok(());
        }
        let t = inline.take();
        if t.is_empty() {
            return Ok(());
        }
        if item.list.is_some() {
            return Err(Invalid(format!(
                "invalid markdown on line {line}: text after a nested list in the same list item is not supported"
            )));
        }
        if item.blocks.is_empty() {
            if !item.text.is_empty() {
                item.text.push('\n');
            }
            item.text.push_str(&t);
        } else {
            item.blocks.push(Block::Text { text: t });
        }
    }
    Ok(())
}

/// The text gathered from a `<div>` block's lines, as a paragraph.
pub(super) fn flush_div_text(
    slide: &mut Slide,
    stack: &mut [Frame],
    text: &mut String,
    line: usize,
) -> Result<(), Invalid> {
    let t = std::mem::take(text);
    let t = t.trim_end_matches('\n').trim();
    if t.is_empty() {
        return Ok(());
    }
    emit(slide, stack, Block::Text { text: t.to_owned() }, line)
}

/// Inline text being collected, with marks re-encoded for [`crate::spans`].
#[derive(Default)]
pub(super) struct Inline {
    pub(super) text: String,
    /// Images of the paragraph, as (asset id, alt, width, height).
    pub(super) images: Vec<(String, String, Option<u32>, Option<u32>)>,
    /// Whether anything but images (and white space) was collected.
    pub(super) other: bool,
}

impl Inline {
    pub(super) fn push_text(&mut self, t: &str) {
        if !t.trim().is_empty() {
            self.other = true;
        }
        escape_into(&mut self.text, t);
    }
    pub(super) fn take(&mut self) -> String {
        self.images.clear();
        self.other = false;
        std::mem::take(&mut self.text).trim().to_owned()
    }
}

pub(super) fn escape_into(out: &mut String, t: &str) {
    // Every `<` too: text events come in pieces, so `\<sub>` cannot be told from a tag
    // by looking at one of them.
    for c in t.chars() {
        if crate::ESCAPABLE.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
}
