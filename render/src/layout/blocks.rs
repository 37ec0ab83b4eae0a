//! Blocks stacked in a frame: the title, each block as a piece, columns, and images
//! sharing the room the rest leave.

use super::*;

pub(super) struct Frame {
    pub(super) left: f32,
    pub(super) top: f32,
    pub(super) width: f32,
    pub(super) height: f32,
    pub(super) centered: bool,
    pub(super) fill: Fill,
}

/// Items relative to the frame's top-left corner, and the height they take.
pub(super) struct Stack {
    pub(super) items: Vec<Item>,
    pub(super) height: f32,
}

pub(super) enum Piece {
    Fixed {
        items: Vec<Item>,
        height: f32,
    },
    Image {
        asset_id: String,
        /// What it shows, for its markup.
        alt: String,
        natural: (f32, f32),
        max_scale: f32,
        centred: bool,
    },
}

/// What block layout needs besides the block: colours and image sizes.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub(super) pal: &'a Palette,
    pub(super) look: &'a Look,
    pub(super) sizes: &'a NaturalSizes,
    /// Highlighted code blocks, by the block's address (computed once per slide, not
    /// once per fitting step).
    pub(super) code: &'a HashMap<usize, Vec<highlight::Line>>,
}

pub(super) fn build(slide: &Slide, ctx: &Ctx, frame: &Frame, s: f32) -> Stack {
    let ctx = *ctx;
    let cw = frame.width;
    let centered = frame.centered;
    let mut pieces = Vec::new();
    let mut gaps = Vec::new();
    let mut prev: Option<&Block> = None;
    let title_block;
    if let Some(title) = slide.title.as_deref().filter(|t| !t.trim().is_empty()) {
        pieces.push(title_piece(slide, title, &ctx, frame, s));
        title_block = Block::Heading {
            text: String::new(),
            level: Some(slide.title_level.unwrap_or(1)),
            fit: slide.title_fit,
        };
        prev = Some(&title_block);
    }
    let columns: Vec<&[Block]> = slide
        .blocks
        .split(|b| matches!(b, Block::ColumnBreak))
        .collect();
    if columns.len() > 1 {
        // Side by side under the title; each column shares out its own height.
        if prev.is_some() {
            gaps.push(gap_between(&ctx, prev, columns[0].first(), s));
        }
        let gap = COLUMN_GAP * s;
        let col_w = (cw - gap * (columns.len() - 1) as f32) / columns.len() as f32;
        let above = pieces
            .iter()
            .map(|p| match p {
                Piece::Fixed { height, .. } => *height,
                Piece::Image { .. } => 0.0,
            })
            .sum::<f32>()
            + gaps.iter().sum::<f32>();
        let mut items = Vec::new();
        let mut height: f32 = 0.0;
        for (i, blocks) in columns.iter().enumerate() {
            let (col_items, h) = column(blocks, &ctx, col_w, centered, s, frame.height - above);
            let x = i as f32 * (col_w + gap);
            items.extend(col_items.into_iter().map(|it| translate(it, x, 0.0)));
            height = height.max(h);
        }
        pieces.push(Piece::Fixed { items, height });
    } else {
        for block in &slide.blocks {
            if prev.is_some() {
                gaps.push(gap_between(&ctx, prev, Some(block), s));
            }
            pieces.push(block_piece(block, &ctx, cw, centered, s, 0));
            prev = Some(block);
        }
    }
    let (items, height) = share_out(pieces, &gaps, cw, frame.height, s);
    Stack { items, height }
}

/// The slide's title as its theme draws it: its heading size (filling the width when
/// `fit`), plinth's accent rule under it.
pub(super) fn title_piece(slide: &Slide, title: &str, ctx: &Ctx, frame: &Frame, s: f32) -> Piece {
    let (pal, look) = (ctx.pal, ctx.look);
    let cw = frame.width;
    let centered = frame.centered;
    let level = slide.title_level.unwrap_or(1);
    let mut size = s * match look.title_slide_title {
        Some(big) if centered && slide.layout == Layout::Title => big,
        _ => look.heading_size(level),
    };
    // The markdown front door keeps inline marks (and their escapes) in titles too.
    let face = heading_face(look, level);
    let mut glyphs = marked_glyphs(title, face, size, ctx);
    if slide.title_fit {
        size = fit_size(&glyphs, size, cw, frame.height * 0.8 / look.heading_leading);
        glyphs = marked_glyphs(title, face, size, ctx);
    }
    let leading = look.heading_leading;
    // Marp colours `#` in the title colour and `##` as text; plinth every title.
    let fill = if level > 1 && look.title_rule {
        pal.title
    } else {
        pal.heading(level)
    };
    let text = Paragraph::new(&glyphs, cw, size, leading, align(centered), fill, pal);
    let mut items = part(Role::Title, text.items);
    if !look.title_rule {
        return Piece::Fixed {
            items,
            height: text.height,
        };
    }
    let rule_w = 96.0 * s;
    let rule_x = if centered {
        (cw - rule_w) / 2.0
    } else if text.rtl {
        cw - rule_w
    } else {
        0.0
    };
    let rule_y = text.height + 16.0 * s;
    items.push(Item::Rect {
        x: rule_x,
        y: rule_y,
        w: rule_w,
        h: 6.0 * s,
        r: 3.0 * s,
        fill: pal.accent,
    });
    Piece::Fixed {
        items,
        height: rule_y + 6.0 * s,
    }
}

/// Marp's `fit`: the size at which a one-line text is as wide as the column, at most
/// `max` (so a short word does not fill the slide's height).
pub(super) fn fit_size(glyphs: &[Glyph], size: f32, cw: f32, max: f32) -> f32 {
    let longest = glyphs
        .split(|g| g.c == '\n')
        .map(|line| line.iter().map(|g| g.pre + g.adv + g.post).sum::<f32>())
        .fold(0.0, f32::max);
    if longest <= 0.0 {
        return size;
    }
    // A hair under the column so rounding never wraps the last word.
    (size * cw * 0.995 / longest).min(max)
}

/// Space between two blocks (the title counts as a heading): the theme's gap, or the
/// larger margin a heading has above or below it.
pub(super) fn gap_between(ctx: &Ctx, prev: Option<&Block>, next: Option<&Block>, s: f32) -> f32 {
    let look = ctx.look;
    let below = match prev {
        Some(Block::Heading { .. }) if look.title_rule => 36.0,
        Some(Block::Heading { .. }) => look.heading_below,
        _ => look.gap,
    };
    let above = match next {
        Some(Block::Heading { level, .. }) => {
            look.heading_above * look.heading_size(level.unwrap_or(2))
        }
        _ => 0.0,
    };
    below.max(above) * s
}

/// One column of blocks, `cw` wide, in at most `room` of height (images share it).
pub(super) fn column(
    blocks: &[Block],
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
    room: f32,
) -> (Vec<Item>, f32) {
    let pieces: Vec<Piece> = blocks
        .iter()
        .map(|b| block_piece(b, ctx, cw, centered, s, 0))
        .collect();
    let gaps: Vec<f32> = blocks
        .windows(2)
        .map(|w| gap_between(ctx, Some(&w[0]), Some(&w[1]), s))
        .collect();
    share_out(pieces, &gaps, cw, room, s)
}

/// Stacks pieces; images share what the other pieces leave of `room`.
pub(super) fn share_out(
    pieces: Vec<Piece>,
    gaps: &[f32],
    cw: f32,
    room: f32,
    s: f32,
) -> (Vec<Item>, f32) {
    let fixed: f32 = pieces
        .iter()
        .map(|p| match p {
            Piece::Fixed { height, .. } => *height,
            Piece::Image { .. } => 0.0,
        })
        .sum::<f32>()
        + gaps.iter().sum::<f32>();
    let n_images = pieces
        .iter()
        .filter(|p| matches!(p, Piece::Image { .. }))
        .count();
    let share = if n_images > 0 {
        ((room - fixed) / n_images as f32).max(MIN_IMAGE_HEIGHT * s)
    } else {
        0.0
    };
    stack_pieces(pieces, gaps, cw, share)
}

/// Pieces one below the other, images at most `share` tall.
pub(super) fn stack_pieces(
    pieces: Vec<Piece>,
    gaps: &[f32],
    cw: f32,
    share: f32,
) -> (Vec<Item>, f32) {
    let mut items = Vec::new();
    let mut y = 0.0;
    for (i, piece) in pieces.into_iter().enumerate() {
        let height = match piece {
            Piece::Fixed {
                items: piece_items,
                height,
            } => {
                items.extend(piece_items.into_iter().map(|it| translate(it, 0.0, y)));
                height
            }
            Piece::Image {
                asset_id,
                alt,
                natural: (iw, ih),
                max_scale,
                centred,
            } => {
                let k = (cw / iw).min(share / ih).min(max_scale);
                let (w, h) = (iw * k, ih * k);
                items.push(Item::Begin(Role::Image { alt }));
                items.push(Item::Image {
                    x: if centred { (cw - w) / 2.0 } else { 0.0 },
                    y,
                    w,
                    h,
                    asset_id,
                    clip: None,
                });
                items.push(Item::End);
                h
            }
        };
        y += height + gaps.get(i).copied().unwrap_or(0.0);
    }
    (items, y)
}

pub(super) fn align(centered: bool) -> TextAlign {
    if centered {
        TextAlign::Center
    } else {
        TextAlign::Start
    }
}

/// One block at `depth` (the block quotes it sits in). Validation bounds the depth and
/// the walk checks it again, so the recursion is bounded either way.
pub(super) fn block_piece(
    block: &Block,
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
    depth: usize,
) -> Piece {
    let pal = ctx.pal;
    match block {
        Block::Heading { text, level, fit } => heading(text, *level, *fit, ctx, cw, centered, s),
        Block::Text { text } => paragraph(text, ctx, cw, centered, s),
        Block::Bullets {
            items,
            ordered,
            start,
        } => bullets(items, (*ordered, *start), ctx, cw, centered, (s, depth)),
        Block::Code { code, .. } => {
            let colours = ctx.code.get(&(block as *const Block as usize));
            code_block(code, colours, ctx, cw, centered, s)
        }
        Block::Image {
            asset_id,
            alt,
            width,
            height,
        } => image(
            asset_id,
            alt.as_deref(),
            (*width, *height),
            ctx,
            cw,
            centered,
            s,
        ),
        Block::Quote { blocks } => quote(blocks, ctx, cw, s, depth),
        Block::Table {
            align: aligns,
            header,
            rows,
        } => table(aligns, header, rows, ctx, cw, centered, s),
        Block::Rule => Piece::Fixed {
            items: vec![Item::Rect {
                x: 0.0,
                y: 8.0 * s,
                w: cw,
                h: 3.0 * s,
                r: 1.5 * s,
                fill: pal.muted,
            }],
            height: 19.0 * s,
        },
        // Split off by `build` before blocks are laid out; nowhere else is valid.
        Block::ColumnBreak => Piece::Fixed {
            items: Vec::new(),
            height: 0.0,
        },
    }
}

/// A paragraph in the theme's body text.
fn paragraph(text: &str, ctx: &Ctx, cw: f32, centered: bool, s: f32) -> Piece {
    let size = ctx.look.text * ctx.look.paragraph * s;
    let face = if ctx.look.paragraph_bold {
        Face::Bold
    } else {
        Face::Regular
    };
    let p = Paragraph::new(
        &marked_glyphs(text, face, size, ctx),
        cw,
        size,
        ctx.look.leading,
        align(centered),
        ctx.pal.paragraph,
        ctx.pal,
    );
    Piece::Fixed {
        items: part(Role::Paragraph, p.items),
        height: p.height,
    }
}

/// A list at `depth`; a centred one stays a left-aligned column, centred as a whole.
fn bullets(
    items: &[plinth_slides::ListItem],
    (ordered, start): (bool, Option<u64>),
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    (s, depth): (f32, usize),
) -> Piece {
    let first = start.unwrap_or(1);
    let (mut out, height, widest) = list(items, ordered, first, ctx, cw, s, (1, depth + 1));
    if centered {
        let dx = ((cw - widest) / 2.0).max(0.0);
        out = out.into_iter().map(|it| translate(it, dx, 0.0)).collect();
    }
    Piece::Fixed {
        items: part(Role::List { ordered }, out),
        height,
    }
}

/// A heading in the theme's size for its level (filling the column when `fit`).
fn heading(
    text: &str,
    level: Option<u8>,
    fit: bool,
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
) -> Piece {
    let pal = ctx.pal;
    let level = level.unwrap_or(2);
    let mut size = s * ctx.look.heading_size(level);
    let face = heading_face(ctx.look, level);
    let mut glyphs = marked_glyphs(text, face, size, ctx);
    if fit {
        size = fit_size(&glyphs, size, cw, 600.0 * s);
        glyphs = marked_glyphs(text, face, size, ctx);
    }
    let fill = pal.heading(level);
    let leading = ctx.look.heading_leading;
    let p = Paragraph::new(&glyphs, cw, size, leading, align(centered), fill, pal);
    Piece::Fixed {
        items: part(Role::Heading(level), p.items),
        height: p.height,
    }
}

/// Headings are bold unless the deck's styles say otherwise.
fn heading_face(look: &Look, level: u8) -> Face {
    if look.heading_is_bold(level) {
        Face::Bold
    } else {
        Face::Regular
    }
}

/// An image block: at the size asked for (`w:`/`h:`), a display formula at the size it
/// was typeset at, or any other image sharing the room; a placeholder when missing.
fn image(
    asset_id: &str,
    alt: Option<&str>,
    (width, height): (Option<u32>, Option<u32>),
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
) -> Piece {
    let pal = ctx.pal;
    if width.is_some() || height.is_some() {
        return match ctx
            .sizes
            .get(asset_id)
            .filter(|n| n.width > 0.0 && n.height > 0.0)
        {
            Some(n) => {
                let aspect = n.width / n.height;
                let (w, h) = match (width, height) {
                    (Some(w), Some(h)) => (w as f32, h as f32),
                    (Some(w), None) => (w as f32, w as f32 / aspect),
                    (None, Some(h)) => (h as f32 * aspect, h as f32),
                    (None, None) => (n.width, n.height),
                };
                // At most the size asked for, scaled with the slide; smaller when
                // the slide has less room (rather than shrinking the whole slide).
                Piece::Image {
                    asset_id: asset_id.to_owned(),
                    alt: alt.unwrap_or("").to_owned(),
                    natural: (w, h),
                    max_scale: s,
                    centred: centered,
                }
            }
            None => placeholder(None, pal, cw, s),
        };
    }
    // A display formula: at the size it was typeset at (the body's), centred as
    // KaTeX centres it, smaller only when the slide has no room.
    if asset_id.starts_with(plinth_slides::MATHS) {
        return match ctx.sizes.get(asset_id) {
            Some(n) if n.width > 0.0 && n.height > 0.0 => Piece::Image {
                asset_id: asset_id.to_owned(),
                alt: alt.unwrap_or("").to_owned(),
                natural: (n.width, n.height),
                max_scale: s,
                centred: true,
            },
            _ => placeholder(alt, pal, cw, s),
        };
    }
    match ctx.sizes.get(asset_id) {
        Some(n) if n.width > 0.0 && n.height > 0.0 => Piece::Image {
            asset_id: asset_id.to_owned(),
            alt: alt.unwrap_or("").to_owned(),
            natural: (n.width, n.height),
            // Raster images are not blown up past MAX_UPSCALE of their pixels.
            max_scale: if n.vector { f32::INFINITY } else { MAX_UPSCALE },
            centred: true,
        },
        _ => placeholder(alt, pal, cw, s),
    }
}

/// A block quote: its blocks indented behind an accent bar. Images in it are at most
/// 320 units tall.
pub(super) fn quote(blocks: &[Block], ctx: &Ctx, cw: f32, s: f32, depth: usize) -> Piece {
    let bar = 8.0 * s;
    let indent = bar + 30.0 * s;
    let inner_w = (cw - indent).max(40.0 * s);
    let mut pieces = Vec::new();
    let mut gaps = Vec::new();
    if depth < plinth_slides::MAX_NESTING {
        for block in blocks {
            pieces.push(block_piece(block, ctx, inner_w, false, s, depth + 1));
            gaps.push(18.0 * s);
        }
    }
    gaps.pop();
    let pad = 10.0 * s;
    let (items, height) = stack_pieces(pieces, &gaps, inner_w, 320.0 * s);
    let mut out = vec![Item::Rect {
        x: 0.0,
        y: 0.0,
        w: bar,
        h: height + 2.0 * pad,
        r: bar / 2.0,
        fill: ctx.pal.quote_bar,
    }];
    out.extend(items.into_iter().map(|it| translate(it, indent, pad)));
    Piece::Fixed {
        items: part(Role::Quote, out),
        height: height + 2.0 * pad,
    }
}

pub(super) fn placeholder(alt: Option<&str>, pal: &Palette, cw: f32, s: f32) -> Piece {
    let size = 26.0 * s;
    let label = format!(
        "[image: {}]",
        alt.filter(|a| !a.trim().is_empty())
            .unwrap_or("unavailable")
    );
    let glyphs = plain_glyphs(&label, Face::Italic, size);
    let p = Paragraph::new(
        &glyphs,
        cw - 40.0 * s,
        size,
        1.3,
        TextAlign::Center,
        pal.muted,
        pal,
    );
    let height = (p.height + 60.0 * s).max(MIN_IMAGE_HEIGHT * s);
    let mut items = vec![Item::Rect {
        x: 0.0,
        y: 0.0,
        w: cw,
        h: height,
        r: 12.0 * s,
        fill: pal.code_bg,
    }];
    let dy = (height - p.height) / 2.0;
    items.extend(p.items.into_iter().map(|it| translate(it, 20.0 * s, dy)));
    Piece::Fixed {
        items: part(Role::Paragraph, items),
        height,
    }
}
