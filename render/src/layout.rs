//! The layout engine shared by the SVG and PDF writers: it turns a slide into a flat
//! display list (boxes, positioned single-style text runs, images) on a canvas 1080
//! units tall, as wide as the output's aspect ratio makes it.
//!
//! Text is measured with the embedded fonts' advances (no kerning; both writers draw
//! without kerning too), wrapped greedily at spaces, and the whole slide is shrunk step
//! by step until it fits.

use std::collections::HashMap;
use std::rc::Rc;

use plinth_slides::{
    spans, walk_blocks, Background, BackgroundFit, BackgroundPosition, Block, Deck, Layout, Slide,
};

use crate::fonts::{self, font_metrics, metrics, Face, FontKey};
use crate::highlight;
use crate::Size;

/// Canvas height in layout units; at 1080p a unit is a pixel.
pub const CANVAS_HEIGHT: f32 = 1080.0;

pub use crate::look::slide_palette;
use crate::look::{readable, Kind, Look, TableStyle, MIN_CONTRAST};
pub use crate::palette::{Color, Palette};

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A filled box; `r` is the corner radius.
    Rect {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        r: f32,
        fill: Color,
    },
    /// One run of text in one font; `y` is the baseline. `face` is the style asked
    /// for, `font` the face that draws it (the style's own, or a fallback).
    Text {
        x: f32,
        y: f32,
        size: f32,
        face: Face,
        font: FontKey,
        fill: Color,
        text: String,
    },
    /// An image stretched to the box (the box already has the image's aspect ratio).
    Image {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        asset_id: String,
        /// Only this box (x, y, w, h) of the image shows.
        clip: Option<[f32; 4]>,
    },
    /// A clickable area (PDF link annotation); draws nothing.
    Link {
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        url: String,
    },
}

pub struct Page {
    pub width: f32,
    pub height: f32,
    pub background: Color,
    pub items: Vec<Item>,
    /// The shrink step the content was drawn at (1.0 when it fit as it was).
    pub scale: f32,
}

/// An image's own size; vector images may be scaled up freely.
#[derive(Debug, Clone, Copy)]
pub struct Natural {
    pub width: f32,
    pub height: f32,
    pub vector: bool,
}

/// Natural sizes of the images a slide uses, by asset id; a missing entry draws a
/// placeholder.
pub type NaturalSizes = HashMap<String, Natural>;

// Type sizes, margins and spacing come from the deck's look (`crate::look`).
/// Between the columns of a slide split by column breaks.
const COLUMN_GAP: f32 = 70.0;
const MIN_IMAGE_HEIGHT: f32 = 160.0;
/// Raster images are not blown up beyond this factor of their pixel size.
const MAX_UPSCALE: f32 = 2.0;
/// Shrink steps tried in order; the last is the floor, where what still overflows is cut.
const SCALES: [f32; 10] = [1.0, 0.92, 0.85, 0.78, 0.72, 0.66, 0.6, 0.55, 0.5, 0.45];
/// Below this a code block's lines are cut with an ellipsis instead of shrinking more.
const MIN_CODE_SIZE: f32 = 13.0;

/// Where a content slide's body goes when it is shorter than the room under the title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Centred in that room: a slide seen across a room.
    Balanced,
    /// At the top: a page read like a document (a PDF's notes pages).
    Top,
}

pub fn page(deck: &Deck, slide: &Slide, sizes: &NaturalSizes, size: Size) -> Page {
    page_with(deck, slide, sizes, size, Fill::Balanced)
}

pub fn page_with(deck: &Deck, slide: &Slide, sizes: &NaturalSizes, size: Size, fill: Fill) -> Page {
    let pal = slide_palette(deck, slide);
    let pal = &pal;
    let look = Look::of(deck);
    let width = CANVAS_HEIGHT * size.width as f32 / size.height as f32;
    let height = CANVAS_HEIGHT;
    // Narrow canvases get narrower margins so text keeps some room.
    let margin_x = look.margin_x.min(width * 0.08);

    // Background images: a split beside the content, or the whole slide behind it.
    let mut items = Vec::new();
    let mut content = (0.0, width);
    for position in [BackgroundPosition::Left, BackgroundPosition::Right] {
        let bgs: Vec<&Background> = slide
            .backgrounds
            .iter()
            .filter(|b| b.position == position)
            .collect();
        let Some(first) = bgs.first() else { continue };
        // The content keeps at least a tenth of the width whatever the splits add up to.
        let share = (width * first.split.unwrap_or(50).clamp(10, 90) as f32 / 100.0)
            .min(content.1 - content.0 - width * 0.1)
            .max(0.0);
        let (x0, x1) = if position == BackgroundPosition::Left {
            let area = (content.0, content.0 + share);
            content.0 += share;
            area
        } else {
            let area = (content.1 - share, content.1);
            content.1 -= share;
            area
        };
        backgrounds(&bgs, (x0, x1), height, sizes, &mut items);
    }
    let full: Vec<&Background> = slide
        .backgrounds
        .iter()
        .filter(|b| b.position == BackgroundPosition::Full)
        .collect();
    if !full.is_empty() {
        let mut behind = Vec::new();
        backgrounds(&full, (0.0, width), height, sizes, &mut behind);
        behind.append(&mut items);
        items = behind;
    }

    let content_w = content.1 - content.0;
    let margin_x = margin_x.min(content_w * 0.08);
    let frame = Frame {
        left: content.0 + margin_x,
        top: look.margin_top,
        width: content_w - 2.0 * margin_x,
        height: height - look.margin_top - look.margin_bottom,
        centered: look.centred(slide),
        // Title slides are centred whatever the fill; gaia starts the others at the top.
        fill: if slide.layout == Layout::Title {
            Fill::Balanced
        } else if look.centred_vertically(slide) {
            fill
        } else {
            Fill::Top
        },
    };

    let mut code = HashMap::new();
    walk_blocks(&slide.blocks, 0, &mut |block| {
        if let Block::Code {
            code: text,
            language,
        } = block
        {
            if let Some(lines) = highlight::highlight(text, language.as_deref(), pal.dark) {
                code.insert(block as *const Block as usize, lines);
            }
        }
    });
    let ctx = Ctx {
        pal,
        look: &look,
        sizes,
        code: &code,
    };
    let mut fitted = None;
    for scale in SCALES {
        let stack = build(slide, &ctx, &frame, scale);
        if stack.height <= frame.height + 0.5 {
            fitted = Some((stack, scale));
            break;
        }
    }
    let overflowed = fitted.is_none();
    let floor = SCALES[SCALES.len() - 1];
    let (stack, scale) = fitted.unwrap_or_else(|| (build(slide, &ctx, &frame, floor), floor));
    // What the fitted stack leaves of the frame: title and body stay together, centred
    // in it as Marp's default and uncover themes centre them, or at its top (gaia, and
    // a PDF's notes pages).
    let spare = ((frame.height - stack.height) / 2.0).max(0.0);
    let top = match frame.fill {
        Fill::Balanced => frame.top + spare,
        Fill::Top => frame.top,
    };
    let mut content_items: Vec<Item> = stack
        .items
        .into_iter()
        .map(|item| translate(item, frame.left, top))
        .collect();
    if overflowed {
        // At the floor scale what still does not fit is cut rather than drawn off the
        // page: boxes are clipped to the page, text lines and images below it dropped.
        content_items = content_items
            .into_iter()
            .filter_map(|item| match item {
                Item::Rect {
                    x,
                    y,
                    w,
                    h,
                    r,
                    fill,
                } if y < height => Some(Item::Rect {
                    x,
                    y,
                    w,
                    h: h.min(height - y),
                    r,
                    fill,
                }),
                item => (bottom(&item) <= height).then_some(item),
            })
            .collect();
    }
    items.extend(content_items);
    let logo_w = logo(deck, sizes, width, margin_x, &mut items);
    chrome(deck, slide, &ctx, content, logo_w, &mut items);
    Page {
        width,
        height,
        background: pal.background,
        items,
        scale,
    }
}

/// Logo box at full scale: at most this tall and wide, in the top-right margin.
const LOGO_HEIGHT: f32 = 56.0;
const LOGO_MAX_WIDTH: f32 = 280.0;
const LOGO_TOP: f32 = 16.0;

/// The deck's logo in the top-right corner; answers the width it takes (0 without one).
fn logo(deck: &Deck, sizes: &NaturalSizes, width: f32, margin: f32, items: &mut Vec<Item>) -> f32 {
    let Some((id, n)) = deck
        .logo
        .as_ref()
        .and_then(|id| Some((id, sizes.get(id)?)))
        .filter(|(_, n)| n.width > 0.0 && n.height > 0.0)
    else {
        return 0.0;
    };
    let k = (LOGO_HEIGHT / n.height).min(LOGO_MAX_WIDTH / n.width);
    let (w, h) = (n.width * k, n.height * k);
    let right = width - margin;
    items.push(Item::Image {
        x: right - w,
        y: LOGO_TOP + (LOGO_HEIGHT - h) / 2.0,
        w,
        h,
        asset_id: id.clone(),
        clip: None,
    });
    w
}

/// Background images side by side in an area, each covering (cropped to) or contained
/// in its share.
fn backgrounds(
    bgs: &[&Background],
    (x0, x1): (f32, f32),
    height: f32,
    sizes: &NaturalSizes,
    items: &mut Vec<Item>,
) {
    let each = (x1 - x0) / bgs.len() as f32;
    for (i, bg) in bgs.iter().enumerate() {
        let Some(n) = sizes
            .get(&bg.asset_id)
            .filter(|n| n.width > 0.0 && n.height > 0.0)
        else {
            continue;
        };
        let area = (x0 + i as f32 * each, 0.0, each, height);
        let k = match bg.fit {
            BackgroundFit::Cover => (area.2 / n.width).max(area.3 / n.height),
            BackgroundFit::Contain => (area.2 / n.width).min(area.3 / n.height),
        };
        let (w, h) = (n.width * k, n.height * k);
        items.push(Item::Image {
            x: area.0 + (area.2 - w) / 2.0,
            y: area.1 + (area.3 - h) / 2.0,
            w,
            h,
            asset_id: bg.asset_id.clone(),
            clip: (bg.fit == BackgroundFit::Cover).then_some([area.0, area.1, area.2, area.3]),
        });
    }
}

/// The page number Marp shows on a slide: visible slides counted in order, except
/// those marked `hold` or `skip` (a held slide shows the number before it).
pub fn page_number(deck: &Deck, slide: &Slide) -> Option<usize> {
    if !slide.paginate.unwrap_or(deck.paginate) {
        return None;
    }
    let mut n = 0;
    for s in deck.slides.iter().filter(|s| !s.hidden) {
        if !s.uncounted {
            n += 1;
        }
        if s.id == slide.id {
            return Some(n.max(1));
        }
    }
    None
}

/// Header, footer and page number, in the margins.
fn chrome(
    deck: &Deck,
    slide: &Slide,
    ctx: &Ctx,
    (x0, x1): (f32, f32),
    logo_w: f32,
    items: &mut Vec<Item>,
) {
    // Beside a split background, in the content's part of the slide.
    let (pal, c) = (ctx.pal, ctx.look.chrome);
    let (left, right) = (x0 + c.left, x1 - c.right);
    let size = c.size;
    let w = (right - left).max(size);
    let header = slide.header.as_ref().or(deck.header.as_ref());
    let footer = slide.footer.as_ref().or(deck.footer.as_ref());
    let number = page_number(deck, slide).map(|n| n.to_string());
    let number_w = number
        .as_ref()
        .map_or(0.0, |n| measure(n, Face::Regular, c.number_size) + size);
    for (text, baseline, max_w) in [
        // The header stops short of the logo.
        (
            header,
            c.header_baseline,
            w - if logo_w > 0.0 { logo_w + size } else { 0.0 },
        ),
        (footer, CANVAS_HEIGHT - c.footer_baseline, w - number_w),
    ] {
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let glyphs = marked_glyphs(text, Face::Regular, size, ctx);
        let align = if c.centred {
            TextAlign::Center
        } else {
            TextAlign::Left
        };
        // One line: what does not fit is cut.
        let p = Paragraph::new(&glyphs, max_w.max(size), size, 1.2, align, pal.muted, pal);
        let first = p.first_baseline;
        items.extend(
            p.items
                .into_iter()
                .filter(|it| match it {
                    Item::Text { y, .. }
                    | Item::Link { y, .. }
                    | Item::Rect { y, .. }
                    | Item::Image { y, .. } => *y < 1.2 * size,
                })
                .map(|it| translate(it, left, baseline - first)),
        );
    }
    if let Some(n) = number {
        let w = measure(&n, Face::Regular, c.number_size);
        let (number, _) = text_items(
            right - w,
            CANVAS_HEIGHT - c.footer_baseline,
            c.number_size,
            Face::Regular,
            pal.muted,
            &n,
        );
        items.extend(number);
    }
}

struct Frame {
    left: f32,
    top: f32,
    width: f32,
    height: f32,
    centered: bool,
    fill: Fill,
}

/// Items relative to the frame's top-left corner, and the height they take.
struct Stack {
    items: Vec<Item>,
    height: f32,
}

enum Piece {
    Fixed {
        items: Vec<Item>,
        height: f32,
    },
    Image {
        asset_id: String,
        natural: (f32, f32),
        max_scale: f32,
        centred: bool,
    },
}

/// What block layout needs besides the block: colours and image sizes.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    pal: &'a Palette,
    look: &'a Look,
    sizes: &'a NaturalSizes,
    /// Highlighted code blocks, by the block's address (computed once per slide, not
    /// once per fitting step).
    code: &'a HashMap<usize, Vec<highlight::Line>>,
}

fn build(slide: &Slide, ctx: &Ctx, frame: &Frame, s: f32) -> Stack {
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
fn title_piece(slide: &Slide, title: &str, ctx: &Ctx, frame: &Frame, s: f32) -> Piece {
    let (pal, look) = (ctx.pal, ctx.look);
    let cw = frame.width;
    let centered = frame.centered;
    let level = slide.title_level.unwrap_or(1);
    let mut size = s * match look.title_slide_title {
        Some(big) if centered && slide.layout == Layout::Title => big,
        _ => look.heading_size(level),
    };
    // The markdown front door keeps inline marks (and their escapes) in titles too.
    let mut glyphs = marked_glyphs(title, Face::Bold, size, ctx);
    if slide.title_fit {
        size = fit_size(&glyphs, size, cw, frame.height * 0.8 / look.heading_leading);
        glyphs = marked_glyphs(title, Face::Bold, size, ctx);
    }
    let leading = look.heading_leading;
    // Marp colours `#` in the title colour and `##` as text; plinth every title.
    let fill = if level <= 1 || look.title_rule {
        pal.title
    } else {
        pal.text
    };
    let mut text = Paragraph::new(&glyphs, cw, size, leading, align(centered), fill, pal);
    if !look.title_rule {
        return Piece::Fixed {
            items: text.items,
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
    text.items.push(Item::Rect {
        x: rule_x,
        y: rule_y,
        w: rule_w,
        h: 6.0 * s,
        r: 3.0 * s,
        fill: pal.accent,
    });
    Piece::Fixed {
        items: text.items,
        height: rule_y + 6.0 * s,
    }
}

/// Marp's `fit`: the size at which a one-line text is as wide as the column, at most
/// `max` (so a short word does not fill the slide's height).
fn fit_size(glyphs: &[Glyph], size: f32, cw: f32, max: f32) -> f32 {
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
fn gap_between(ctx: &Ctx, prev: Option<&Block>, next: Option<&Block>, s: f32) -> f32 {
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
fn column(
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
fn share_out(pieces: Vec<Piece>, gaps: &[f32], cw: f32, room: f32, s: f32) -> (Vec<Item>, f32) {
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
fn stack_pieces(pieces: Vec<Piece>, gaps: &[f32], cw: f32, share: f32) -> (Vec<Item>, f32) {
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
                natural: (iw, ih),
                max_scale,
                centred,
            } => {
                let k = (cw / iw).min(share / ih).min(max_scale);
                let (w, h) = (iw * k, ih * k);
                items.push(Item::Image {
                    x: if centred { (cw - w) / 2.0 } else { 0.0 },
                    y,
                    w,
                    h,
                    asset_id,
                    clip: None,
                });
                h
            }
        };
        y += height + gaps.get(i).copied().unwrap_or(0.0);
    }
    (items, y)
}

fn align(centered: bool) -> TextAlign {
    if centered {
        TextAlign::Center
    } else {
        TextAlign::Start
    }
}

/// One block at `depth` (the block quotes it sits in). Validation bounds the depth and
/// the walk checks it again, so the recursion is bounded either way.
fn block_piece(block: &Block, ctx: &Ctx, cw: f32, centered: bool, s: f32, depth: usize) -> Piece {
    let pal = ctx.pal;
    match block {
        Block::Heading { text, level, fit } => {
            let level = level.unwrap_or(2);
            let mut size = s * ctx.look.heading_size(level);
            let mut glyphs = marked_glyphs(text, Face::Bold, size, ctx);
            if *fit {
                size = fit_size(&glyphs, size, cw, 600.0 * s);
                glyphs = marked_glyphs(text, Face::Bold, size, ctx);
            }
            let fill = if level <= 1 { pal.title } else { pal.text };
            let leading = ctx.look.heading_leading;
            let p = Paragraph::new(&glyphs, cw, size, leading, align(centered), fill, pal);
            Piece::Fixed {
                items: p.items,
                height: p.height,
            }
        }
        Block::Text { text } => {
            let size = ctx.look.text * s;
            let p = Paragraph::new(
                &marked_glyphs(text, Face::Regular, size, ctx),
                cw,
                size,
                ctx.look.leading,
                align(centered),
                pal.text,
                pal,
            );
            Piece::Fixed {
                items: p.items,
                height: p.height,
            }
        }
        Block::Bullets {
            items,
            ordered,
            start,
        } => {
            let (mut out, height, widest) = list(
                items,
                *ordered,
                start.unwrap_or(1),
                ctx,
                cw,
                s,
                (1, depth + 1),
            );
            // A centred list stays a left-aligned column, centred as a whole.
            if centered {
                let dx = ((cw - widest) / 2.0).max(0.0);
                out = out.into_iter().map(|it| translate(it, dx, 0.0)).collect();
            }
            Piece::Fixed { items: out, height }
        }
        Block::Code { code, .. } => {
            let colours = ctx.code.get(&(block as *const Block as usize));
            code_block(code, colours, ctx, cw, centered, s)
        }
        Block::Image {
            asset_id,
            width,
            height,
            ..
        } if width.is_some() || height.is_some() => {
            match ctx
                .sizes
                .get(asset_id)
                .filter(|n| n.width > 0.0 && n.height > 0.0)
            {
                Some(n) => {
                    let aspect = n.width / n.height;
                    let (w, h) = match (width, height) {
                        (Some(w), Some(h)) => (*w as f32, *h as f32),
                        (Some(w), None) => (*w as f32, *w as f32 / aspect),
                        (None, Some(h)) => (*h as f32 * aspect, *h as f32),
                        (None, None) => (n.width, n.height),
                    };
                    // At most the size asked for, scaled with the slide; smaller when
                    // the slide has less room (rather than shrinking the whole slide).
                    Piece::Image {
                        asset_id: asset_id.clone(),
                        natural: (w, h),
                        max_scale: s,
                        centred: centered,
                    }
                }
                None => placeholder(None, pal, cw, s),
            }
        }
        // A display formula: at the size it was typeset at (the body's), centred as
        // KaTeX centres it, smaller only when the slide has no room.
        Block::Image { asset_id, alt, .. } if asset_id.starts_with(plinth_slides::MATHS) => {
            match ctx.sizes.get(asset_id) {
                Some(n) if n.width > 0.0 && n.height > 0.0 => Piece::Image {
                    asset_id: asset_id.clone(),
                    natural: (n.width, n.height),
                    max_scale: s,
                    centred: true,
                },
                _ => placeholder(alt.as_deref(), pal, cw, s),
            }
        }
        Block::Image { asset_id, alt, .. } => match ctx.sizes.get(asset_id) {
            Some(n) if n.width > 0.0 && n.height > 0.0 => Piece::Image {
                asset_id: asset_id.clone(),
                natural: (n.width, n.height),
                // Raster images are not blown up past MAX_UPSCALE of their pixels.
                max_scale: if n.vector { f32::INFINITY } else { MAX_UPSCALE },
                centred: true,
            },
            _ => placeholder(alt.as_deref(), pal, cw, s),
        },
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

/// A block quote: its blocks indented behind an accent bar. Images in it are at most
/// 320 units tall.
fn quote(blocks: &[Block], ctx: &Ctx, cw: f32, s: f32, depth: usize) -> Piece {
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
        items: out,
        height: height + 2.0 * pad,
    }
}

const BULLETS: [&str; 3] = ["•", "◦", "▪"];

/// A list and its nested lists: items, height, and the widest line (for centring).
/// `level` is the list's own nesting (for bullet shapes), `depth` all the quotes and
/// lists it sits in (bounded).
fn list(
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
    let markers: Vec<String> = (0..items.len() as u64)
        .map(|n| {
            if ordered {
                format!("{}.", start.saturating_add(n))
            } else {
                BULLETS[(level - 1) % BULLETS.len()].to_owned()
            }
        })
        .collect();
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
        // A right-to-left item has its marker at the right, its text right-aligned
        // before it.
        let marks_at = out.len();
        if let Some(done) = item.checked {
            // A check box in place of the marker.
            let top = y + p.first_baseline - 0.72 * size;
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
        } else {
            // Numbers right-aligned so the dots line up, half an em before the text.
            let own_w = measure(&marker, Face::Regular, size);
            let marker_x = if ordered || look.kind != Kind::Plinth {
                indent - 0.5 * size - own_w
            } else {
                0.0
            };
            out.extend(
                text_items(
                    marker_x,
                    y + p.first_baseline,
                    size,
                    Face::Regular,
                    pal.markers,
                    &marker,
                )
                .0,
            );
        }
        let text_at = if p.rtl {
            let mark_w = if item.checked.is_some() {
                box_w
            } else {
                marker_w
            };
            let marks: Vec<Item> = out.drain(marks_at..).collect();
            out.extend(marks.into_iter().map(|it| translate(it, cw - mark_w, 0.0)));
            0.0
        } else {
            text_x
        };
        out.extend(p.items.into_iter().map(|it| translate(it, text_at, y)));
        y += p.height;
        let column = (cw - text_x).max(size);
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
                (level + 1, depth + 1),
            );
            y += gap * 0.6;
            out.extend(sub_items.into_iter().map(|it| translate(it, text_x, y)));
            widest = widest.max(text_x + w);
            y += h;
        }
        y += gap;
    }
    (out, (y - gap).max(0.0), widest)
}

/// A table: columns as wide as their text on one line when that fits, else shared out
/// above each column's longest word; a tinted header, a rule under every row.
fn table(
    aligns: &[plinth_slides::Align],
    header: &[String],
    rows: &[Vec<String>],
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
) -> Piece {
    use plinth_slides::Align;
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
    // Natural (one line) and minimum (longest word) width of each column.
    let mut natural = vec![0.0f32; columns];
    let mut minimum = vec![0.0f32; columns];
    for row in &cells {
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
    let pads = 2.0 * pad_x * columns as f32;
    let avail = (cw - pads).max(columns as f32);
    let total: f32 = natural.iter().sum();
    let min_total: f32 = minimum.iter().sum();
    let widths: Vec<f32> = if total <= avail {
        natural.clone()
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
    };
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
        let fill = if r == 0 { pal.head_text } else { pal.text };
        let paragraphs: Vec<Paragraph> = row
            .iter()
            .enumerate()
            .take(columns)
            .map(|(c, glyphs)| {
                let a = match aligns.get(c).copied().unwrap_or_default() {
                    Align::Center => TextAlign::Center,
                    Align::Right => TextAlign::Right,
                    Align::Left => TextAlign::Left,
                    Align::Auto => TextAlign::Start,
                };
                Paragraph::new(glyphs, widths[c].max(1.0) + 0.5, size, 1.3, a, fill, pal)
            })
            .collect();
        let row_h = paragraphs.iter().map(|p| p.height).fold(size, f32::max) + 2.0 * pad_y;
        if let Some(fill) = row_fill(look.table, pal, r) {
            out.push(rect(x0, y, table_w, row_h, fill));
        }
        let mut x = x0;
        for (c, p) in paragraphs.into_iter().enumerate() {
            out.extend(
                p.items
                    .into_iter()
                    .map(|it| translate(it, x + pad_x, y + pad_y)),
            );
            x += widths[c] + 2.0 * pad_x;
        }
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
        items: out,
        height: y,
    }
}

fn rect(x: f32, y: f32, w: f32, h: f32, fill: Color) -> Item {
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
fn row_fill(style: TableStyle, pal: &Palette, r: usize) -> Option<Color> {
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
fn table_lines(style: TableStyle, pal: &Palette, rows: &[f32], edges: &[f32], s: f32) -> Vec<Item> {
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

fn code_block(
    code: &str,
    colours: Option<&Vec<highlight::Line>>,
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
) -> Piece {
    let (pal, look) = (ctx.pal, ctx.look);
    let lines: Vec<String> = code
        .trim_end_matches(['\n', '\r'])
        .split('\n')
        .map(|l| clean(&l.replace('\t', "    ")))
        .collect();
    // Highlighted runs, when they spell the same lines.
    let colours = colours.filter(|c| {
        c.len() == lines.len()
            && c.iter().zip(&lines).all(|(runs, l)| {
                runs.iter().map(|(_, t)| t.chars().count()).sum::<usize>() == l.chars().count()
            })
    });
    let widest = lines
        .iter()
        .map(|l| measure(l, Face::Mono, 1.0))
        .fold(0.0, f32::max);
    // The theme's code size, shrunk to the column when a line is wider (Marp's
    // auto-scaling); padding at the theme's size.
    let mut size = look.code * look.text * s;
    let (pad_y, pad) = (look.code_pad.0 * size, look.code_pad.1 * size);
    let avail = cw - 2.0 * pad;
    if widest * size > avail {
        size = (avail / widest).max(MIN_CODE_SIZE);
    }
    let line_h = look.code_leading * size;
    let box_w = if centered || look.code_centred {
        (widest * size + 2.0 * pad).min(cw)
    } else {
        cw
    };
    let box_x = (cw - box_w) / 2.0;
    let height = lines.len() as f32 * line_h + 2.0 * pad_y;
    let mut items = vec![Item::Rect {
        x: box_x,
        y: 0.0,
        w: box_w,
        h: height,
        r: 9.0 * s,
        fill: pal.code_bg,
    }];
    let baseline = baseline_in_line(Face::Mono, size, line_h);
    for (i, line) in lines.iter().enumerate() {
        let text = truncate(line, avail / size);
        if text.trim().is_empty() {
            continue;
        }
        let y = pad_y + i as f32 * line_h + baseline;
        let runs: Vec<(Color, String)> = match colours {
            Some(c) => {
                // Cut the runs where the truncated line ends.
                let keep = if text.ends_with('…') && text != *line {
                    text.chars().count() - 1
                } else {
                    usize::MAX
                };
                let mut left = keep;
                let mut runs = Vec::new();
                for (colour, t) in &c[i] {
                    if left == 0 {
                        break;
                    }
                    let part: String = t.chars().take(left).collect();
                    left -= part.chars().count();
                    // The highlighting theme's colour, kept readable on this box.
                    runs.push((readable(*colour, pal.code_bg, MIN_CONTRAST), part));
                }
                if keep != usize::MAX {
                    runs.push((pal.code_text, "…".to_owned()));
                }
                runs
            }
            None => vec![(pal.code_text, text)],
        };
        let mut x = box_x + pad;
        for (colour, t) in runs {
            let (run, w) = text_items(x, y, size, Face::Mono, colour, &t);
            if !t.trim().is_empty() {
                items.extend(run);
            }
            x += w;
        }
    }
    Piece::Fixed { items, height }
}

/// Cuts a monospace line to `max_em` with an ellipsis.
fn truncate(line: &str, max_em: f32) -> String {
    if measure(line, Face::Mono, 1.0) <= max_em {
        return line.to_owned();
    }
    let budget = max_em - fonts::advance(Face::Mono, '…');
    let mut out = String::new();
    let mut w = 0.0;
    for c in line.chars() {
        w += fonts::advance(Face::Mono, c);
        if w > budget {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

fn placeholder(alt: Option<&str>, pal: &Palette, cw: f32, s: f32) -> Piece {
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
    Piece::Fixed { items, height }
}

/// One character to lay out, with its face and its advance in layout units.
#[derive(Clone)]
struct Glyph {
    c: char,
    face: Face,
    font: FontKey,
    code: bool,
    strike: bool,
    /// The link the character is part of.
    link: Option<Rc<str>>,
    /// An inline image (`c` is U+FFFC): its asset id, height and how far its top is
    /// above the baseline.
    image: Option<(Rc<str>, f32, f32)>,
    adv: f32,
    /// Extra room before/after: the padding of an inline code background.
    pre: f32,
    post: f32,
    /// `<sub>`, `<sup>`, `<small>`: the size as a share of the line's, and how far the
    /// baseline rises (in the line's size).
    scale: f32,
    rise: f32,
    mark: bool,
    underline: bool,
}

impl Glyph {
    fn new(c: char, face: Face, adv: f32) -> Glyph {
        Glyph {
            c,
            face,
            font: face.font(),
            code: false,
            strike: false,
            link: None,
            image: None,
            adv,
            pre: 0.0,
            post: 0.0,
            scale: 1.0,
            rise: 0.0,
            mark: false,
            underline: false,
        }
    }
}

fn plain_glyphs(text: &str, face: Face, size: f32) -> Vec<Glyph> {
    let mut out = Vec::new();
    let mut prev = None;
    let text = clean(text);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(font_glyph(c, chars.peek().copied(), face, size, &mut prev));
    }
    shape_glyphs(&mut out, size);
    out
}

/// A character in the font that draws it (the style's face, else a fallback; the
/// style's face when no font has it, which draws its "missing" box and is reported by
/// [`crate::missing_glyphs`]).
fn font_glyph(
    c: char,
    next: Option<char>,
    face: Face,
    size: f32,
    prev: &mut Option<FontKey>,
) -> Glyph {
    let font = fonts::registry()
        .pick_in(face, c, *prev, next)
        .unwrap_or(face.font());
    *prev = Some(font);
    let mut g = Glyph::new(c, face, font_metrics(font).advance(c) * size);
    g.font = font;
    g
}

/// Text that shapes (joining scripts, marks, emoji sequences, right-to-left) gets its
/// shaped advances: each cluster's width on its first character.
fn shape_glyphs(glyphs: &mut [Glyph], size: f32) {
    let mut start = 0;
    while start < glyphs.len() {
        let font = glyphs[start].font;
        let mut end = start + 1;
        while end < glyphs.len()
            && glyphs[end].font == font
            && glyphs[end].image.is_none()
            && glyphs[end].c != '\n'
        {
            end += 1;
        }
        let run = &mut glyphs[start..end];
        let text: String = run.iter().map(|g| g.c).collect();
        if run[0].image.is_none() && fonts::needs_shaping(&text) {
            let shaped = font_metrics(font).shape(&text);
            let mut at = Vec::with_capacity(run.len());
            for (i, (b, _)) in text.char_indices().enumerate() {
                at.push((b, i));
            }
            for g in run.iter_mut() {
                g.adv = 0.0;
            }
            for s in shaped {
                let i = match at.binary_search_by_key(&s.byte, |&(b, _)| b) {
                    Ok(k) => at[k].1,
                    Err(k) => at[k.saturating_sub(1)].1,
                };
                run[i].adv += s.advance * size;
            }
        }
        start = end;
    }
}

/// A one-style text cut where its font changes: (font, text, width) for each piece.
fn font_runs(text: &str, face: Face, size: f32) -> Vec<(FontKey, String, f32)> {
    let glyphs = plain_glyphs(text, face, size);
    let mut out: Vec<(FontKey, String, f32)> = Vec::new();
    for g in glyphs {
        match out.last_mut() {
            Some((f, t, w)) if *f == g.font => {
                t.push(g.c);
                *w += g.adv;
            }
            _ => out.push((g.font, g.c.to_string(), g.adv)),
        }
    }
    out
}

/// Width of a one-style text in layout units.
fn measure(text: &str, face: Face, size: f32) -> f32 {
    font_runs(text, face, size).iter().map(|r| r.2).sum()
}

/// A one-style text as items from `x` on its baseline `y`, and its width.
fn text_items(x: f32, y: f32, size: f32, face: Face, fill: Color, text: &str) -> (Vec<Item>, f32) {
    let mut items = Vec::new();
    let mut at = x;
    for (font, text, w) in font_runs(text, face, size) {
        items.push(Item::Text {
            x: at,
            y,
            size,
            face,
            font,
            fill,
            text,
        });
        at += w;
    }
    (items, at - x)
}

/// Glyphs of a text with inline marks: `**bold**`, `*italic*`, `~~struck~~`,
/// `` `code` ``, links and inline images (as tall as the text, or their alt text in
/// brackets when the image is missing).
fn marked_glyphs(text: &str, base: Face, size: f32, ctx: &Ctx) -> Vec<Glyph> {
    let mut out = Vec::new();
    let pad = 0.22 * size;
    let mut prev = None;
    for span in spans(text) {
        let face = if span.code {
            Face::Mono
        } else if span.bold || base == Face::Bold {
            Face::Bold
        } else if span.italic {
            Face::Italic
        } else {
            base
        };
        let link: Option<Rc<str>> = span.link.as_deref().map(Rc::from);
        if let Some(id) = &span.image {
            if let Some(n) = ctx
                .sizes
                .get(id)
                .filter(|n| n.width > 0.0 && n.height > 0.0)
            {
                // A formula keeps its own height (typeset at the body size) and sits
                // on the maths axis; a picture is as tall as the text.
                let (h, top) = if id.starts_with(plinth_slides::MATHS) {
                    let h = n.height * size / ctx.look.text;
                    (h, 0.3 * size + 0.5 * h)
                } else {
                    (size, 0.8 * size)
                };
                let mut g = Glyph::new('\u{fffc}', face, n.width / n.height * h);
                g.image = Some((Rc::from(id.as_str()), h, top));
                g.link = link;
                // Room on both sides, like a character's side bearings.
                g.pre = 0.08 * size;
                g.post = 0.08 * size;
                out.push(g);
                continue;
            }
        }
        let shown = if span.image.is_some() {
            format!("[{}]", span.text)
        } else {
            span.text.clone()
        };
        let text = clean(&shown);
        let n = text.chars().count();
        let chars: Vec<char> = text.chars().collect();
        let (scale, rise) = match (span.sub, span.sup, span.small) {
            (true, _, _) => (0.75, -0.18),
            (_, true, _) => (0.75, 0.36),
            (_, _, true) => (0.85, 0.0),
            _ if span.code => (ctx.look.inline_code, 0.0),
            _ => (1.0, 0.0),
        };
        for (i, &c) in chars.iter().enumerate() {
            let next = chars.get(i + 1).copied();
            let mut g = font_glyph(c, next, face, size * scale, &mut prev);
            g.code = span.code;
            g.strike = span.strike;
            g.link = link.clone();
            (g.scale, g.rise, g.mark, g.underline) = (scale, rise, span.mark, span.underline);
            if span.code {
                g.pre = if i == 0 { pad } else { 0.0 };
                g.post = if i + 1 == n { pad } else { 0.0 };
            }
            out.push(g);
        }
    }
    shape_glyphs(&mut out, size);
    out
}

/// Tabs become spaces; other control characters (which XML cannot carry) are dropped.
fn clean(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\t' => Some(' '),
            '\n' => Some('\n'),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
}

/// Where the baseline sits in a line box of `line_h`, with the font's ascent and
/// descent centred in it.
fn baseline_in_line(face: Face, size: f32, line_h: f32) -> f32 {
    let m = metrics(face);
    (line_h - (m.ascent + m.descent) * size) / 2.0 + m.ascent * size
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextAlign {
    /// Left, or right for a paragraph whose base direction is right to left.
    Start,
    Left,
    Center,
    Right,
}

/// A wrapped paragraph: items relative to its top-left corner.
struct Paragraph {
    items: Vec<Item>,
    height: f32,
    /// Widest line.
    width: f32,
    first_baseline: f32,
    /// Its base direction is right to left.
    rtl: bool,
}

impl Paragraph {
    fn new(
        glyphs: &[Glyph],
        max_w: f32,
        size: f32,
        leading: f32,
        align: TextAlign,
        fill: Color,
        pal: &Palette,
    ) -> Paragraph {
        let lines = wrap(glyphs, max_w);
        let (levels, rtl) = bidi_levels(glyphs);
        // A right-to-left paragraph starts at the right edge.
        let align = match align {
            TextAlign::Start if rtl => TextAlign::Right,
            TextAlign::Start => TextAlign::Left,
            other => other,
        };
        let line_h = leading * size;
        // Regular and Bold share metrics closely enough; one baseline per paragraph.
        let baseline = baseline_in_line(Face::Regular, size, line_h);
        let mut items = Vec::new();
        let mut width: f32 = 0.0;
        for (i, line) in lines.iter().enumerate() {
            let line_w = line
                .last()
                .map(|&(g, x)| x + glyphs[g].adv + glyphs[g].post)
                .unwrap_or(0.0);
            width = width.max(line_w);
            let dx = match align {
                TextAlign::Left | TextAlign::Start => 0.0,
                TextAlign::Center => (max_w - line_w) / 2.0,
                TextAlign::Right => max_w - line_w,
            };
            let y = i as f32 * line_h + baseline;
            // Consecutive glyphs in one font and style (and one bidi level) make one
            // text run.
            let key = |g: usize| {
                let gl = &glyphs[g];
                (
                    (gl.face, gl.font, gl.code, gl.strike),
                    gl.link.as_ref().map(|l| Rc::as_ptr(l) as *const u8),
                    gl.image.is_some(),
                    levels.get(g).copied().unwrap_or(0),
                    (gl.scale.to_bits(), gl.rise.to_bits(), gl.mark, gl.underline),
                )
            };
            let mut runs: Vec<(usize, usize)> = Vec::new();
            let mut start = 0;
            while start < line.len() {
                let k = key(line[start].0);
                let mut end = start + 1;
                while end < line.len() && !k.2 && key(line[end].0) == k {
                    end += 1;
                }
                runs.push((start, end));
                start = end;
            }
            let shifts = visual_shifts(&runs, line, glyphs, &levels);
            for (r, &(start, end)) in runs.iter().enumerate() {
                let (g0, x0) = line[start];
                let first = &glyphs[g0];
                let (gl, xl) = line[end - 1];
                let run_w = xl + glyphs[gl].adv - x0;
                let x = dx + x0 + shifts[r];
                let color = if first.code {
                    pal.inline_code_text
                } else if first.link.is_some() {
                    pal.accent
                } else {
                    fill
                };
                if let Some((asset_id, h, top)) = &first.image {
                    items.push(Item::Image {
                        x,
                        y: y - top,
                        w: first.adv,
                        h: *h,
                        asset_id: asset_id.to_string(),
                        clip: None,
                    });
                } else {
                    let text: String = line[start..end].iter().map(|&(g, _)| glyphs[g].c).collect();
                    let run = Run {
                        x,
                        y,
                        w: run_w,
                        size,
                        fill: color,
                    };
                    text_run(&mut items, first, text, run, pal);
                }
                if let Some(url) = &first.link {
                    items.push(Item::Link {
                        x,
                        y: y - 0.9 * size,
                        w: run_w,
                        h: 1.15 * size,
                        url: url.to_string(),
                    });
                }
            }
        }
        Paragraph {
            items,
            height: lines.len().max(1) as f32 * line_h,
            width,
            first_baseline: baseline,
            rtl,
        }
    }
}

/// Where one run of a line goes: its start, baseline, width, the line's size, colour.
struct Run {
    x: f32,
    y: f32,
    w: f32,
    size: f32,
    fill: Color,
}

/// One run of text in one style, with what its marks draw around it: the inline code
/// chip or `<mark>` highlight behind it, the strike, underline or link line over it.
fn text_run(items: &mut Vec<Item>, first: &Glyph, text: String, run: Run, pal: &Palette) {
    let Run { x, y, w, size, .. } = run;
    let behind = if first.code {
        Some(pal.inline_code_bg)
    } else if first.mark {
        Some(pal.mark_bg)
    } else {
        None
    };
    if let Some(fill) = behind {
        let pad = 0.22 * size;
        items.push(Item::Rect {
            x: x - pad * 0.8,
            y: y - 0.86 * size,
            w: w + pad * 1.6,
            h: 1.12 * size,
            r: 0.15 * size,
            fill,
        });
    }
    let fill = if first.mark && !first.code {
        readable(run.fill, pal.mark_bg, MIN_CONTRAST)
    } else {
        run.fill
    };
    let (size, y) = (size * first.scale, y - first.rise * size);
    items.push(Item::Text {
        x,
        y,
        size,
        face: first.face,
        font: first.font,
        fill,
        text,
    });
    let mut line = |dy: f32, h: f32| items.push(rect(x, y + dy * size, w, h * size, fill));
    if first.strike {
        line(-0.32, 0.06);
    }
    if first.link.is_some() || first.underline {
        line(0.1, 0.05);
    }
}

/// Unicode bidi embedding level of each glyph, when the text has any right-to-left
/// character (empty otherwise: all left to right). Paragraphs are left to right, as
/// in the HTML export.
fn bidi_levels(glyphs: &[Glyph]) -> (Vec<u8>, bool) {
    if !glyphs.iter().any(|g| fonts::rtl(g.c)) {
        return (Vec::new(), false);
    }
    let text: String = glyphs.iter().map(|g| g.c).collect();
    // The base direction comes from the first strong character (rules P2, P3), as
    // with `dir="auto"` in HTML.
    let info = unicode_bidi::BidiInfo::new(&text, None);
    let rtl = info.paragraphs.first().is_some_and(|p| p.level.is_rtl());
    let levels = text
        .char_indices()
        .map(|(b, _)| info.levels[b].number())
        .collect();
    (levels, rtl)
}

/// How far each run of a line moves so the runs stand in visual order (rule L2 of the
/// bidi algorithm, applied to whole runs: the renderers order the characters inside
/// a run themselves). All zero for a line without right-to-left text.
fn visual_shifts(
    runs: &[(usize, usize)],
    line: &[(usize, f32)],
    glyphs: &[Glyph],
    levels: &[u8],
) -> Vec<f32> {
    let mut shifts = vec![0.0; runs.len()];
    let level = |r: &(usize, usize)| levels.get(line[r.0].0).copied().unwrap_or(0);
    let max = runs.iter().map(level).max().unwrap_or(0);
    if max == 0 {
        return shifts;
    }
    // Each run's extent, padding included.
    let extent = |&(start, end): &(usize, usize)| {
        let (g0, x0) = line[start];
        let (gl, xl) = line[end - 1];
        (x0 - glyphs[g0].pre, xl + glyphs[gl].adv + glyphs[gl].post)
    };
    let mut order: Vec<usize> = (0..runs.len()).collect();
    let lowest_odd = runs
        .iter()
        .map(level)
        .filter(|l| l % 2 == 1)
        .min()
        .unwrap_or(1);
    for l in (lowest_odd..=max).rev() {
        let mut i = 0;
        while i < order.len() {
            if level(&runs[order[i]]) >= l {
                let mut j = i;
                while j < order.len() && level(&runs[order[j]]) >= l {
                    j += 1;
                }
                order[i..j].reverse();
                i = j;
            } else {
                i += 1;
            }
        }
    }
    let mut at = extent(&runs[0]).0;
    for r in order {
        let (left, right) = extent(&runs[r]);
        shifts[r] = at - left;
        at += right - left;
    }
    shifts
}

/// Greedy word wrap: each line is a list of (glyph index, x). Spaces at the start or
/// end of a line are dropped; `\n` forces a break; a word wider than the line is broken
/// between characters.
fn wrap(glyphs: &[Glyph], max_w: f32) -> Vec<Vec<(usize, f32)>> {
    let mut lines = Vec::new();
    let mut line: Vec<(usize, f32)> = Vec::new();
    let mut x = 0.0;
    let mut spaces: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < glyphs.len() {
        match glyphs[i].c {
            '\n' => {
                lines.push(std::mem::take(&mut line));
                x = 0.0;
                spaces.clear();
                i += 1;
            }
            ' ' => {
                if !line.is_empty() {
                    spaces.push(i);
                }
                i += 1;
            }
            _ => {
                // A word ends at a space, and around each CJK character (those
                // scripts break between any two characters).
                let end = (i + 1..glyphs.len())
                    .find(|&j| {
                        matches!(glyphs[j].c, ' ' | '\n')
                            || breaks_around(glyphs[j].c)
                            || breaks_around(glyphs[j - 1].c)
                    })
                    .unwrap_or(glyphs.len());
                let word_w: f32 = glyphs[i..end].iter().map(|g| g.pre + g.adv + g.post).sum();
                let space_w: f32 = spaces.iter().map(|&s| glyphs[s].adv).sum();
                if !line.is_empty() && x + space_w + word_w > max_w {
                    lines.push(std::mem::take(&mut line));
                    x = 0.0;
                    spaces.clear();
                }
                for s in spaces.drain(..) {
                    line.push((s, x));
                    x += glyphs[s].adv;
                }
                for (j, g) in glyphs.iter().enumerate().take(end).skip(i) {
                    if !line.is_empty() && x + g.pre + g.adv > max_w && word_w > max_w {
                        lines.push(std::mem::take(&mut line));
                        x = 0.0;
                    }
                    x += g.pre;
                    line.push((j, x));
                    x += g.adv + g.post;
                }
                i = end;
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Ideographs, kana, hangul and fullwidth forms: a line may break before or after any.
fn breaks_around(c: char) -> bool {
    matches!(c as u32, 0x2e80..=0x303f | 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff | 0xff00..=0xffef | 0x20000..=0x3ffff)
}

fn translate(item: Item, dx: f32, dy: f32) -> Item {
    match item {
        Item::Rect {
            x,
            y,
            w,
            h,
            r,
            fill,
        } => Item::Rect {
            x: x + dx,
            y: y + dy,
            w,
            h,
            r,
            fill,
        },
        Item::Text {
            x,
            y,
            size,
            face,
            font,
            fill,
            text,
        } => Item::Text {
            x: x + dx,
            y: y + dy,
            size,
            face,
            font,
            fill,
            text,
        },
        Item::Image {
            x,
            y,
            w,
            h,
            asset_id,
            clip,
        } => Item::Image {
            x: x + dx,
            y: y + dy,
            w,
            h,
            asset_id,
            clip: clip.map(|[cx, cy, cw, ch]| [cx + dx, cy + dy, cw, ch]),
        },
        Item::Link { x, y, w, h, url } => Item::Link {
            x: x + dx,
            y: y + dy,
            w,
            h,
            url,
        },
    }
}

fn bottom(item: &Item) -> f32 {
    match item {
        Item::Rect { y, h, .. } | Item::Image { y, h, .. } | Item::Link { y, h, .. } => y + h,
        Item::Text { y, size, face, .. } => y + metrics(*face).descent * size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_long_words() {
        let g = plain_glyphs("aaa bbb ccc", Face::Mono, 10.0);
        let adv = metrics(Face::Mono).advance('a') * 10.0;
        let lines = wrap(&g, adv * 7.5);
        assert_eq!(lines.len(), 2);
        let text = |l: &Vec<(usize, f32)>| l.iter().map(|&(i, _)| g[i].c).collect::<String>();
        assert_eq!(text(&lines[0]), "aaa bbb");
        assert_eq!(text(&lines[1]), "ccc");
        let long = plain_glyphs("abcdefghij", Face::Mono, 10.0);
        assert_eq!(wrap(&long, adv * 4.5).len(), 3);
    }
}
