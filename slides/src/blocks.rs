//! Walking a deck's blocks, and the references their texts carry: formulas, links,
//! inline images.

use crate::*;

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

pub(crate) fn inline_images(text: &str, add: &mut dyn FnMut(&str)) {
    if !text.contains("](") {
        return;
    }
    for span in spans(text) {
        if let Some(id) = &span.image {
            add(id);
        }
    }
}
