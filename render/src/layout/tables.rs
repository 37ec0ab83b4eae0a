//! Tables: column widths, tinted rows, and each look's lines.

use super::*;

/// A table: columns as wide as their text on one line when that fits, else shared out
/// above each column's longest word; a tinted header, a rule under every row.
pub(super) fn table(
    aligns: &[plinth_slides::Align],
    header: &[String],
    rows: &[Vec<String>],
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
) -> Piece {
    let (pal, look) = (ctx.pal, ctx.look);
    let size = look.text * look.table_text * s;
    let (pad_y, pad_x) = (look.table_pad.0 * size, look.table_pad.1 * size);
    let columns = header.len().max(1);
    let cells: Vec<Vec<Vec<Glyph>>> = std::iter::once(header)
        .chain(rows.iter().map(|r| r.as_slice()))
        .enumerate()
        .map(|(r, row)| {
            let face = if r == 0 { Face::Bold } else { Face::Regular };
            row.iter()
                .map(|c| marked_glyphs(c, face, size, ctx))
                .collect()
        })
        .collect();
    let pads = 2.0 * pad_x * columns as f32;
    let widths = column_widths(&cells, columns, (cw - pads).max(columns as f32));
    let table_w = widths.iter().sum::<f32>() + pads;
    let x0 = if centered {
        ((cw - table_w) / 2.0).max(0.0)
    } else {
        0.0
    };
    let mut out = Vec::new();
    let mut y = 0.0;
    let mut row_tops = Vec::new();
    for (r, row) in cells.iter().enumerate() {
        let fill = if r == 0 { pal.head_text } else { pal.cell_text };
        let paragraphs = cells_text(row, aligns, &widths, size, fill, pal);
        let row_h = paragraphs.iter().map(|p| p.height).fold(size, f32::max) + 2.0 * pad_y;
        out.push(Item::Begin(Role::Row));
        if let Some(fill) = row_fill(look.table, pal, r) {
            out.push(rect(x0, y, table_w, row_h, fill));
        }
        let mut x = x0;
        for (c, p) in paragraphs.into_iter().enumerate() {
            let cell = p
                .items
                .into_iter()
                .map(|it| translate(it, x + pad_x, y + pad_y))
                .collect();
            out.extend(part(Role::Cell { header: r == 0 }, cell));
            x += widths[c] + 2.0 * pad_x;
        }
        out.push(Item::End);
        row_tops.push(y);
        y += row_h;
    }
    row_tops.push(y);
    let mut edges = vec![x0];
    for w in &widths {
        edges.push(edges.last().copied().unwrap_or(x0) + w + 2.0 * pad_x);
    }
    out.extend(table_lines(look.table, pal, &row_tops, &edges, s));
    Piece::Fixed {
        items: part(Role::Table, out),
        height: y,
    }
}

/// A row's cells, each wrapped in its column and aligned as the column says.
fn cells_text(
    row: &[Vec<Glyph>],
    aligns: &[plinth_slides::Align],
    widths: &[f32],
    size: f32,
    fill: Color,
    pal: &Palette,
) -> Vec<Paragraph> {
    use plinth_slides::Align;
    row.iter()
        .enumerate()
        .take(widths.len())
        .map(|(c, glyphs)| {
            let a = match aligns.get(c).copied().unwrap_or_default() {
                Align::Center => TextAlign::Center,
                Align::Right => TextAlign::Right,
                Align::Left => TextAlign::Left,
                Align::Auto => TextAlign::Start,
            };
            Paragraph::new(glyphs, widths[c].max(1.0) + 0.5, size, 1.3, a, fill, pal)
        })
        .collect()
}

/// Each column's width in `avail`: its natural (one line) width when all fit, else
/// shared out above each column's minimum (its longest word).
fn column_widths(cells: &[Vec<Vec<Glyph>>], columns: usize, avail: f32) -> Vec<f32> {
    // Natural (one line) and minimum (longest word) width of each column.
    let mut natural = vec![0.0f32; columns];
    let mut minimum = vec![0.0f32; columns];
    for row in cells {
        for (c, glyphs) in row.iter().enumerate().take(columns) {
            let (mut line, mut word) = (0.0f32, 0.0f32);
            for g in glyphs {
                if g.c == '\n' {
                    natural[c] = natural[c].max(line);
                    (line, word) = (0.0, 0.0);
                    continue;
                }
                let w = g.pre + g.adv + g.post;
                line += w;
                if g.c == ' ' {
                    word = 0.0;
                } else {
                    word += w;
                    minimum[c] = minimum[c].max(word);
                }
            }
            natural[c] = natural[c].max(line);
        }
    }
    let total: f32 = natural.iter().sum();
    let min_total: f32 = minimum.iter().sum();
    if total <= avail {
        natural
    } else if min_total <= avail {
        let stretch = total - min_total;
        let k = if stretch > 0.0 {
            (avail - min_total) / stretch
        } else {
            0.0
        };
        natural
            .iter()
            .zip(&minimum)
            .map(|(n, m)| m + (n - m) * k)
            .collect()
    } else {
        minimum.iter().map(|m| m * avail / min_total).collect()
    }
}

pub(super) fn rect(x: f32, y: f32, w: f32, h: f32, fill: Color) -> Item {
    Item::Rect {
        x,
        y,
        w,
        h,
        r: 0.0,
        fill,
    }
}

/// The fill of row `r` (0 is the header), if it has one.
pub(super) fn row_fill(style: TableStyle, pal: &Palette, r: usize) -> Option<Color> {
    // Fills the deck's styles set are drawn in every look, the body's striped.
    match (r, pal.head_own, pal.cells_own) {
        (0, Some(fill), _) => return Some(fill),
        (1.., _, Some(fill)) => {
            return Some(if r.is_multiple_of(2) {
                pal.stripe
            } else {
                fill
            })
        }
        _ => {}
    }
    match style {
        TableStyle::Plinth | TableStyle::Gaia if r == 0 => Some(pal.head_fill),
        // GitHub tints the even rows of the body, gaia the odd ones.
        TableStyle::Plinth | TableStyle::Grid if r > 0 && r.is_multiple_of(2) => Some(pal.stripe),
        TableStyle::Gaia if r % 2 == 1 => Some(pal.stripe),
        _ => None,
    }
}

/// The table's lines: under each row (plinth, uncover) or round every cell (grid, gaia).
/// `rows` are the rows' top edges and the table's bottom, `edges` the columns' edges.
pub(super) fn table_lines(
    style: TableStyle,
    pal: &Palette,
    rows: &[f32],
    edges: &[f32],
    s: f32,
) -> Vec<Item> {
    let (x0, x1) = (edges[0], edges[edges.len() - 1]);
    let (y0, y1) = (rows[0], rows[rows.len() - 1]);
    let mut out = Vec::new();
    match style {
        TableStyle::Plinth | TableStyle::Lines => {
            let (head, body) = if style == TableStyle::Plinth {
                (pal.accent, pal.rule)
            } else {
                (pal.text, pal.text)
            };
            let last = if style == TableStyle::Lines {
                rows.len() - 2
            } else {
                rows.len() - 1
            };
            for (i, &y) in rows.iter().enumerate().skip(1).take(last) {
                // The header's rule is heavier.
                let line = if i == 1 { 3.0 * s } else { 1.0 * s };
                let fill = if i == 1 { head } else { body };
                out.push(rect(x0, y - line, x1 - x0, line, fill));
            }
        }
        TableStyle::Grid | TableStyle::Gaia => {
            let fill = if style == TableStyle::Gaia {
                pal.text
            } else {
                pal.rule
            };
            let line = 1.5 * s;
            for &y in rows {
                out.push(rect(x0, y - line / 2.0, x1 - x0, line, fill));
            }
            for &x in edges {
                out.push(rect(x - line / 2.0, y0, line, y1 - y0, fill));
            }
        }
    }
    out
}
