//! Lists: markers, check boxes, nested lists and the blocks inside items.

use super::*;

pub(super) const BULLETS: [&str; 3] = ["•", "◦", "▪"];

/// A list and its nested lists: items, height, and the widest line (for centring).
/// `level` is the list's own nesting (for bullet shapes), `depth` all the quotes and
/// lists it sits in (bounded).
pub(super) fn list(
    items: &[plinth_slides::ListItem],
    ordered: bool,
    start: u64,
    ctx: &Ctx,
    cw: f32,
    s: f32,
    (level, depth): (usize, usize),
) -> (Vec<Item>, f32, f32) {
    let (pal, look) = (ctx.pal, ctx.look);
    // Sub-items at full size, as Marp draws them.
    let size = look.text * s;
    let markers = markers(items.len(), ordered, start, level);
    let marker_w = markers
        .iter()
        .map(|m| measure(m, Face::Regular, size))
        .fold(0.0, f32::max);
    let box_w = 0.8 * size;
    let indent = (marker_w + 0.55 * size).max(look.list_indent * size);
    let gap = look.item_gap * size;
    let mut out = Vec::new();
    let mut y = 0.0;
    let mut widest: f32 = 0.0;
    for (item, marker) in items.iter().zip(markers) {
        let text_x = if item.checked.is_some() {
            box_w + 0.45 * size
        } else {
            indent
        };
        let glyphs = marked_glyphs(&item.text, Face::Regular, size, ctx);
        let p = Paragraph::new(
            &glyphs,
            (cw - text_x).max(size),
            size,
            look.leading,
            TextAlign::Start,
            pal.text,
            pal,
        );
        widest = widest.max(text_x + p.width);
        out.push(Item::Begin(Role::ListItem));
        let baseline = y + p.first_baseline;
        let (marks, mark_w) = match item.checked {
            Some(done) => (check_box(baseline, box_w, size, done, pal), box_w),
            None => (
                bullet(&marker, ordered, baseline, indent, size, ctx),
                marker_w,
            ),
        };
        // A right-to-left item has its marker at the right, its text right-aligned
        // before it.
        let (marks_at, text_at) = if p.rtl {
            (cw - mark_w, 0.0)
        } else {
            (0.0, text_x)
        };
        let marks = part(Role::Marker, marks);
        out.extend(marks.into_iter().map(|it| translate(it, marks_at, 0.0)));
        out.extend(p.items.into_iter().map(|it| translate(it, text_at, y)));
        y += p.height;
        let column = (cw - text_x).max(size);
        let inside = ItemInside::new(ctx, (column, text_x), gap, s, (level, depth));
        let (below, w) = inside.blocks_and_list(&mut out, item, y);
        out.push(Item::End);
        y = below;
        widest = widest.max(w);
        y += gap;
    }
    (out, (y - gap).max(0.0), widest)
}

/// Each item's bullet, or number (from `start`).
fn markers(n: usize, ordered: bool, start: u64, level: usize) -> Vec<String> {
    (0..n as u64)
        .map(|n| {
            if ordered {
                format!("{}.", start.saturating_add(n))
            } else {
                BULLETS[(level - 1) % BULLETS.len()].to_owned()
            }
        })
        .collect()
}

/// An item's bullet or number on its first line's `baseline`.
fn bullet(
    marker: &str,
    ordered: bool,
    baseline: f32,
    indent: f32,
    size: f32,
    ctx: &Ctx,
) -> Vec<Item> {
    // Numbers right-aligned so the dots line up, half an em before the text.
    let own_w = measure(marker, Face::Regular, size);
    let marker_x = if ordered || ctx.look.kind != Kind::Plinth {
        indent - 0.5 * size - own_w
    } else {
        0.0
    };
    let fill = ctx.pal.markers;
    text_items(marker_x, baseline, size, Face::Regular, fill, marker).0
}

/// A check box in place of the marker, ticked when `done`.
fn check_box(baseline: f32, box_w: f32, size: f32, done: bool, pal: &Palette) -> Vec<Item> {
    let mut out = Vec::new();
    let top = baseline - 0.72 * size;
    let line = 0.09 * size;
    out.push(Item::Rect {
        x: 0.0,
        y: top,
        w: box_w,
        h: box_w,
        r: 0.15 * size,
        fill: pal.accent,
    });
    if done {
        out.extend(
            text_items(
                0.1 * size,
                top + 0.66 * size,
                0.75 * size,
                Face::Bold,
                pal.background,
                "✓",
            )
            .0,
        );
    } else {
        out.push(Item::Rect {
            x: line,
            y: top + line,
            w: box_w - 2.0 * line,
            h: box_w - 2.0 * line,
            r: 0.1 * size,
            fill: pal.background,
        });
    }
    out
}

/// What goes under an item's text, in its column: its blocks, then its nested list.
struct ItemInside<'a, 'c> {
    ctx: &'a Ctx<'c>,
    /// The column's width and left edge.
    column: f32,
    text_x: f32,
    gap: f32,
    s: f32,
    level: usize,
    depth: usize,
}

impl<'a, 'c> ItemInside<'a, 'c> {
    fn new(
        ctx: &'a Ctx<'c>,
        (column, text_x): (f32, f32),
        gap: f32,
        s: f32,
        (level, depth): (usize, usize),
    ) -> Self {
        ItemInside {
            ctx,
            column,
            text_x,
            gap,
            s,
            level,
            depth,
        }
    }

    /// Lays out the item's blocks and nested list from `y` down; answers where they
    /// end and the widest right edge among them (0 without any).
    fn blocks_and_list(
        &self,
        out: &mut Vec<Item>,
        item: &plinth_slides::ListItem,
        y: f32,
    ) -> (f32, f32) {
        let (ctx, column, text_x, gap, s, depth) = (
            self.ctx,
            self.column,
            self.text_x,
            self.gap,
            self.s,
            self.depth,
        );
        let mut y = y;
        let mut widest: f32 = 0.0;
        if !item.blocks.is_empty() && depth < plinth_slides::MAX_NESTING {
            // The item's blocks, in its column; images at most 320 units tall.
            let mut pieces = Vec::new();
            let mut gaps = Vec::new();
            for block in &item.blocks {
                pieces.push(block_piece(block, ctx, column, false, s, depth));
                gaps.push(gap);
            }
            gaps.pop();
            let (block_items, h) = stack_pieces(pieces, &gaps, column, 320.0 * s);
            y += gap;
            out.extend(block_items.into_iter().map(|it| translate(it, text_x, y)));
            widest = widest.max(text_x + column);
            y += h;
        }
        if let Some(sub) = item
            .list
            .as_ref()
            .filter(|_| depth < plinth_slides::MAX_NESTING)
        {
            let (sub_items, h, w) = list(
                &sub.items,
                sub.ordered,
                sub.start.unwrap_or(1),
                ctx,
                column,
                s,
                (self.level + 1, depth + 1),
            );
            y += gap * 0.6;
            let sub_items = part(
                Role::List {
                    ordered: sub.ordered,
                },
                sub_items,
            );
            out.extend(sub_items.into_iter().map(|it| translate(it, text_x, y)));
            widest = widest.max(text_x + w);
            y += h;
        }
        (y, widest)
    }
}
