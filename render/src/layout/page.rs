//! A slide as a page: its backgrounds, the content fitted into its frame, the logo and
//! the header, footer and page number.

use super::*;

pub fn page(deck: &Deck, slide: &Slide, sizes: &NaturalSizes, size: Size) -> Page {
    page_with(deck, slide, sizes, size, Fill::Balanced)
}

pub fn page_with(deck: &Deck, slide: &Slide, sizes: &NaturalSizes, size: Size, fill: Fill) -> Page {
    let mut page = marked_page(deck, slide, sizes, size, fill);
    page.items
        .retain(|item| !matches!(item, Item::Begin(_) | Item::End));
    page
}

/// [`page`] with the parts of the slide marked ([`Item::Begin`], [`Item::End`]): what
/// the HTML export writes its markup from.
pub fn page_marked(deck: &Deck, slide: &Slide, sizes: &NaturalSizes, size: Size) -> Page {
    marked_page(deck, slide, sizes, size, Fill::Balanced)
}

fn marked_page(deck: &Deck, slide: &Slide, sizes: &NaturalSizes, size: Size, fill: Fill) -> Page {
    let pal = slide_palette(deck, slide);
    let pal = &pal;
    let look = Look::for_slide(deck, slide);
    let width = CANVAS_HEIGHT * size.width as f32 / size.height as f32;
    let height = CANVAS_HEIGHT;
    // Narrow canvases get narrower margins so text keeps some room.
    let margin_x = look.margin_x.min(width * 0.08);

    let (mut items, content) = background_items(slide, sizes, width, height);
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

    let code = highlighted_code(slide, pal);
    let ctx = Ctx {
        pal,
        look: &look,
        sizes,
        code: &code,
    };
    let (content_items, scale) = fitted(slide, &ctx, &frame, height);
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

/// Background images: a split beside the content, or the whole slide behind it. Also
/// answers the span of the width the content keeps.
fn background_items(
    slide: &Slide,
    sizes: &NaturalSizes,
    width: f32,
    height: f32,
) -> (Vec<Item>, (f32, f32)) {
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
    (items, content)
}

/// Each code block's highlighted lines, by the block's address.
fn highlighted_code(slide: &Slide, pal: &Palette) -> HashMap<usize, Vec<highlight::Line>> {
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
    code
}

/// The content at the first shrink step it fits at, placed in the frame (at the floor
/// step, cut to the page); and that step.
fn fitted(slide: &Slide, ctx: &Ctx, frame: &Frame, height: f32) -> (Vec<Item>, f32) {
    let mut fitted = None;
    for scale in SCALES {
        let stack = build(slide, ctx, frame, scale);
        if stack.height <= frame.height + 0.5 {
            fitted = Some((stack, scale));
            break;
        }
    }
    let overflowed = fitted.is_none();
    let floor = SCALES[SCALES.len() - 1];
    let (stack, scale) = fitted.unwrap_or_else(|| (build(slide, ctx, frame, floor), floor));
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
    (content_items, scale)
}

/// Logo box at full scale: at most this tall and wide, in the top-right margin.
pub(super) const LOGO_HEIGHT: f32 = 56.0;
pub(super) const LOGO_MAX_WIDTH: f32 = 280.0;
pub(super) const LOGO_TOP: f32 = 16.0;

/// The deck's logo in the top-right corner; answers the width it takes (0 without one).
pub(super) fn logo(
    deck: &Deck,
    sizes: &NaturalSizes,
    width: f32,
    margin: f32,
    items: &mut Vec<Item>,
) -> f32 {
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
    items.push(Item::Begin(Role::Image { alt: "logo".into() }));
    items.push(Item::Image {
        x: right - w,
        y: LOGO_TOP + (LOGO_HEIGHT - h) / 2.0,
        w,
        h,
        asset_id: id.clone(),
        clip: None,
    });
    items.push(Item::End);
    w
}

/// Background images side by side in an area, each covering (cropped to) or contained
/// in its share.
pub(super) fn backgrounds(
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
pub(super) fn chrome(
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
    let w = (right - left).max(c.size);
    let header = slide.header.as_ref().or(deck.header.as_ref());
    let footer = slide.footer.as_ref().or(deck.footer.as_ref());
    let number = page_number(deck, slide).map(|n| n.to_string());
    let number_w = number
        .as_ref()
        .map_or(0.0, |n| measure(n, Face::Regular, c.number_size) + c.size);
    let face = |bold| if bold { Face::Bold } else { Face::Regular };
    for (role, text, baseline, max_w, size, fill, face) in [
        // The header stops short of the logo.
        (
            Role::Header,
            header,
            c.header_baseline,
            w - if logo_w > 0.0 { logo_w + c.size } else { 0.0 },
            c.header_size,
            pal.header,
            face(c.bold.0),
        ),
        (
            Role::Footer,
            footer,
            CANVAS_HEIGHT - c.footer_baseline,
            w - number_w,
            c.size,
            pal.footer,
            face(c.bold.1),
        ),
    ] {
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let (line, first) = chrome_line(text, face, size, max_w, fill, ctx);
        items.extend(part(
            role,
            line.into_iter()
                .map(|it| translate(it, left, baseline - first))
                .collect(),
        ));
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
        items.extend(part(Role::PageNumber, number));
    }
}

/// A header's or footer's one line (what does not fit is cut), and its baseline.
fn chrome_line(
    text: &str,
    face: Face,
    size: f32,
    max_w: f32,
    fill: Color,
    ctx: &Ctx,
) -> (Vec<Item>, f32) {
    let glyphs = marked_glyphs(text, face, size, ctx);
    let align = if ctx.look.chrome.centred {
        TextAlign::Center
    } else {
        TextAlign::Left
    };
    let p = Paragraph::new(&glyphs, max_w.max(size), size, 1.2, align, fill, ctx.pal);
    let line = p
        .items
        .into_iter()
        .filter(|it| match it {
            Item::Text { y, .. }
            | Item::Link { y, .. }
            | Item::Rect { y, .. }
            | Item::Image { y, .. } => *y < 1.2 * size,
            Item::Begin(_) | Item::End => true,
        })
        .collect();
    (line, p.first_baseline)
}
