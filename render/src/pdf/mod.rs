//! The display list as PDF pages: real text in the embedded fonts (subset per deck),
//! vector boxes, images as image XObjects.
//!
//! Fonts are subset here with allsorts (printpdf's own dependency) instead of through
//! printpdf's `subset_fonts`, which only works with its `text_layout` feature and so
//! its whole HTML layout engine. printpdf then embeds the small subset program as is.
//!
//! [`render`] lays out and shapes every page first ([`text::Shaper`]), then writes each
//! page as a loop over its display-list items, one [`PageWriter`] method per item kind
//! ([`text`], [`images`], [`links`]), then embeds what the pages use ([`document`]).

mod document;
mod images;
mod links;
mod notes;
mod text;

use std::collections::HashMap;

use printpdf::{
    Color, LinePoint, Mm, Op, PdfDocument, PdfPage, Point, Polygon, PolygonRing, Pt, Rect, Rgb,
    WindingOrder, XObjectId,
};

use crate::fonts::{font_metrics, FontKey};
use crate::image::{natural_sizes, SvgTrees};
use crate::layout::{self, Item, Page};
use crate::{visible, Budget, Images, RenderError, Size};
use plinth_slides::Deck;

#[cfg(test)]
pub(crate) use images::passes_through;
use text::{Bitmap, GlyphMap, Shaped, Shaper};

/// Points per layout unit: a 16:9 page is 720×405 pt (10 × 5.625 in), the usual
/// presentation page size.
const PT_PER_UNIT: f32 = 405.0 / layout::CANVAS_HEIGHT;
/// Images are embedded at up to this many pixels per layout unit (about 2× a 1080p
/// screen), so a 6000-pixel photo does not bloat the file.
const IMAGE_DENSITY: f32 = 2.0;

pub fn render(
    deck: &Deck,
    images: &Images,
    size: Size,
    options: crate::Options,
    budget: &Budget,
    progress: &mut dyn FnMut(usize) -> bool,
) -> Result<Vec<u8>, RenderError> {
    let trees = SvgTrees::default();
    let title = deck.title.as_deref().unwrap_or("Slides");
    let mut doc = PdfDocument::new(title);
    if let Some(at) = options
        .created
        .and_then(|s| printpdf::OffsetDateTime::from_unix_timestamp(s).ok())
    {
        let info = &mut doc.metadata.info;
        (
            info.creation_date,
            info.modification_date,
            info.metadata_date,
        ) = (at, at, at);
    }

    // First every page is laid out and its text shaped, so each font's subset (and so
    // the glyph numbers the pages use) is known before a page is written.
    let mut shaper = Shaper::new();
    let laid = lay_out(
        deck,
        images,
        size,
        options,
        budget,
        progress,
        &trees,
        &mut shaper,
    )?;
    let mut writer = PageWriter::new(shaper);
    let pages: Vec<PdfPage> = laid
        .into_iter()
        .map(|(page, shaped)| writer.page(&page, shaped))
        .collect();

    document::embed_fonts(&mut doc, &writer.shaper.used, budget)?;
    document::embed_emoji(&mut doc, writer.emoji, budget)?;
    images::embed(&mut doc, writer.placed, images, &trees, budget)?;
    document::save(doc, pages, budget)
}

/// A laid-out page and the glyphs shaped for each of its items.
type LaidPage = (Page, Vec<Shaped>);
/// Every visible slide's page (and its notes page, when asked for), each with its text
/// items' glyphs.
#[allow(clippy::too_many_arguments)]
fn lay_out(
    deck: &Deck,
    images: &Images,
    size: Size,
    options: crate::Options,
    budget: &Budget,
    progress: &mut dyn FnMut(usize) -> bool,
    trees: &SvgTrees,
    shaper: &mut Shaper,
) -> Result<Vec<LaidPage>, RenderError> {
    let mut laid = Vec::new();
    let bare = options.notes.then(|| notes::bare_deck(deck));
    for (i, slide) in visible(deck).into_iter().enumerate() {
        if !progress(i) {
            return Err(RenderError::Cancelled);
        }
        let budget = budget.for_slide();
        budget.check()?;
        let naturals = natural_sizes(deck, slide, images, trees, &budget)?;
        budget.check()?;
        let mut pages = vec![layout::page(deck, slide, &naturals, size)];
        if let Some(bare) = &bare {
            pages.extend(notes::page(bare, slide, i, size));
        }
        for page in pages {
            let shaped = shaper.shape_page(&page, images);
            laid.push((page, shaped));
        }
    }
    Ok(laid)
}

/// Writes pages, and keeps what they use that the document must embed.
struct PageWriter {
    shaper: Shaper,
    /// Subset glyph numbers, by font and full-font glyph id.
    renumber: GlyphMap<u16>,
    /// Colour glyphs drawn, each once as an image XObject.
    emoji: GlyphMap<Option<(XObjectId, Bitmap)>>,
    /// Per asset: its XObject name and the largest box it is drawn in.
    placed: HashMap<String, (XObjectId, f32, f32)>,
    /// The page being written: its operations, its height in points, and the text
    /// section and font in effect.
    ops: Vec<Op>,
    page_height: f32,
    text_open: bool,
    current_font: Option<(FontKey, f32)>,
}

impl PageWriter {
    fn new(mut shaper: Shaper) -> Self {
        let renumber = shaper.renumber();
        PageWriter {
            shaper,
            renumber,
            emoji: HashMap::new(),
            placed: HashMap::new(),
            ops: Vec::new(),
            page_height: 0.0,
            text_open: false,
            current_font: None,
        }
    }

    /// The page loop: one method per kind of display-list item.
    fn page(&mut self, page: &Page, shaped: Vec<Shaped>) -> PdfPage {
        let (pw, ph) = (page.width * PT_PER_UNIT, page.height * PT_PER_UNIT);
        self.page_height = ph;
        self.ops = vec![fill(page.background), rect(0.0, 0.0, pw, ph, 0.0)];
        self.text_open = false;
        self.current_font = None;
        for (item, shaped) in page.items.iter().zip(shaped) {
            let bitmap_text = matches!(item, Item::Text { font, .. } if font_metrics(*font).bitmap);
            let is_text = matches!(item, Item::Text { .. } | Item::Link { .. }) && !bitmap_text;
            if self.text_open && !is_text {
                self.ops.push(Op::EndTextSection);
                self.text_open = false;
            }
            match item {
                Item::Rect {
                    x,
                    y,
                    w,
                    h,
                    r,
                    fill: c,
                } => self.rect(*x, *y, *w, *h, *r, *c),
                Item::Text {
                    x,
                    y,
                    size,
                    font,
                    text,
                    ..
                } if bitmap_text => {
                    self.bitmap_text((*x, *y), *size, *font, text, &shaped.glyphs())
                }
                Item::Text {
                    x,
                    y,
                    size,
                    font,
                    fill: c,
                    ..
                } => self.text((*x, *y), *size, *font, *c, &shaped.glyphs()),
                Item::Link { x, y, w, h, url } => self.link(*x, *y, *w, *h, url),
                Item::Image {
                    x,
                    y,
                    w,
                    h,
                    asset_id,
                    clip,
                } => {
                    self.image(*x, *y, *w, *h, asset_id, *clip);
                    if let Shaped::Maths(m) = &shaped {
                        self.maths_text((*x, *y, *w, *h), m);
                    }
                }
                // The parts' markers are the HTML export's (a PDF page has none).
                Item::Begin(_) | Item::End => {}
            }
        }
        if self.text_open {
            self.ops.push(Op::EndTextSection);
        }
        let ops = std::mem::take(&mut self.ops);
        PdfPage::new(Mm::from(Pt(pw)), Mm::from(Pt(ph)), ops)
    }

    /// A layout `y` (down from the top) as PDF points up from the bottom of the page.
    fn y(&self, v: f32) -> f32 {
        self.page_height - v * PT_PER_UNIT
    }

    fn rect(&mut self, x: f32, top: f32, w: f32, h: f32, r: f32, c: layout::Color) {
        self.ops.push(fill(c));
        self.ops.push(rect(
            x * PT_PER_UNIT,
            self.y(top + h),
            w * PT_PER_UNIT,
            h * PT_PER_UNIT,
            r * PT_PER_UNIT,
        ));
    }
}

fn fill(c: layout::Color) -> Op {
    Op::SetFillColor {
        col: Color::Rgb(Rgb {
            r: c.0 as f32 / 255.0,
            g: c.1 as f32 / 255.0,
            b: c.2 as f32 / 255.0,
            icc_profile: None,
        }),
    }
}

/// A filled box from its lower-left corner, with rounded corners when `r > 0`.
fn rect(x: f32, y: f32, w: f32, h: f32, r: f32) -> Op {
    let r = r.min(w / 2.0).min(h / 2.0);
    if r <= 0.0 {
        return Op::DrawRectangle {
            rectangle: Rect {
                x: Pt(x),
                y: Pt(y),
                width: Pt(w),
                height: Pt(h),
                mode: Some(printpdf::PaintMode::Fill),
                winding_order: Some(WindingOrder::NonZero),
            },
        };
    }
    // Cubic Bézier quarter circles: control points at k·r from the corners' ends.
    let k = r * (1.0 - 0.552_284_8);
    let p = |x: f32, y: f32, bezier: bool| LinePoint {
        p: Point { x: Pt(x), y: Pt(y) },
        bezier,
    };
    let (x1, y1) = (x + w, y + h);
    let points = vec![
        p(x + r, y, false),
        p(x1 - r, y, false),
        p(x1 - k, y, true),
        p(x1, y + k, true),
        p(x1, y + r, false),
        p(x1, y1 - r, false),
        p(x1, y1 - k, true),
        p(x1 - k, y1, true),
        p(x1 - r, y1, false),
        p(x + r, y1, false),
        p(x + k, y1, true),
        p(x, y1 - k, true),
        p(x, y1 - r, false),
        p(x, y + r, false),
        p(x, y + k, true),
        p(x + k, y, true),
        p(x + r, y, false),
    ];
    Op::DrawPolygon {
        polygon: Polygon {
            rings: vec![PolygonRing { points }],
            mode: printpdf::PaintMode::Fill,
            winding_order: WindingOrder::NonZero,
        },
    }
}
