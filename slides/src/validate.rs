//! Checks every saved deck passes: lengths, colours, nesting, tables, inline marks.

use crate::*;

pub(crate) fn check_text(at: &str, text: Option<&str>) -> Result<(), Invalid> {
    match text {
        Some(t) if t.chars().count() > MAX_TEXT_CHARS => invalid(format!(
            "{at}: text longer than {MAX_TEXT_CHARS} characters"
        )),
        _ => Ok(()),
    }
}

pub(crate) fn check_color(at: &str, c: Option<&str>) -> Result<(), Invalid> {
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
    COLOR_NAMES
        .iter()
        .find(|(name, _)| *name == c)
        .map(|(_, rgb)| *rgb)
}

/// The colour names [`parse_color`] knows (lower case; matched case-insensitively).
pub const COLOR_NAMES: &[(&str, (u8, u8, u8))] = &[
    ("white", (255, 255, 255)),
    ("black", (0, 0, 0)),
    ("red", (255, 0, 0)),
    ("green", (0, 128, 0)),
    ("blue", (0, 0, 255)),
    ("yellow", (255, 255, 0)),
    ("orange", (255, 165, 0)),
    ("purple", (128, 0, 128)),
    ("gray", (128, 128, 128)),
    ("grey", (128, 128, 128)),
    ("silver", (192, 192, 192)),
    ("navy", (0, 0, 128)),
    ("teal", (0, 128, 128)),
    ("maroon", (128, 0, 0)),
    ("olive", (128, 128, 0)),
    ("lime", (0, 255, 0)),
    ("aqua", (0, 255, 255)),
    ("cyan", (0, 255, 255)),
    ("fuchsia", (255, 0, 255)),
    ("magenta", (255, 0, 255)),
    ("pink", (255, 192, 203)),
    ("brown", (165, 42, 42)),
    ("beige", (245, 245, 220)),
    ("whitesmoke", (245, 245, 245)),
    ("lightgray", (211, 211, 211)),
    ("lightgrey", (211, 211, 211)),
    ("darkgray", (169, 169, 169)),
    ("darkgrey", (169, 169, 169)),
    ("dimgray", (105, 105, 105)),
    ("dimgrey", (105, 105, 105)),
    ("skyblue", (135, 206, 235)),
    ("gold", (255, 215, 0)),
];

/// How deep block quotes and lists may nest inside one another (a top-level list is
/// level 1). Every walk over blocks is bounded by it, so no document can exhaust the
/// stack.
pub const MAX_NESTING: usize = 8;
/// Columns of one table, and cells of one table (header included).
pub const MAX_TABLE_COLUMNS: usize = 30;
pub const MAX_TABLE_CELLS: usize = 1_000;
/// Link targets an export may carry: nothing that runs script in a viewer.
pub const LINK_SCHEMES: &[&str] = &["http://", "https://", "mailto:"];

pub(crate) fn check_blocks(
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
                if rows.iter().any(|r| r.len() > MAX_TABLE_COLUMNS) {
                    return invalid(format!(
                        "{at}: a table row has at most {MAX_TABLE_COLUMNS} cells"
                    ));
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
pub(crate) fn check_marked(at: &str, text: &str) -> Result<(), Invalid> {
    check_text(at, Some(text))?;
    check_marks(at, text)
}

pub(crate) fn check_marks(at: &str, text: &str) -> Result<(), Invalid> {
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
