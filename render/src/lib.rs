//! Slide rendering: deck → SVG → PNG (resvg), PDF (printpdf), HTML.
//!
//! One layout engine ([`layout`]) places every glyph run, box and image; the SVG and
//! PDF writers only translate its display list, so both outputs look the same. Fonts
//! are the DejaVu faces embedded in the binary, then fallback faces for other scripts
//! and colour emoji from `PLINTH_FONTS_DIR` and the system's font directories
//! ([`fonts`]); a character no font has is reported by [`missing_glyphs`].

mod budget;
mod chars;
mod cost;
mod coverage;
mod custom;
mod font_index;
mod fonts;
mod glyphs;
mod highlight;
mod html;
mod image;
mod layout;
mod look;
#[cfg(feature = "maths")]
mod maths;
#[cfg(not(feature = "maths"))]
mod maths {
    //! Without the `maths` feature, formulas draw as missing images.
    use std::borrow::Cow;

    use plinth_slides::{Deck, Slide};

    use crate::Images;

    pub fn prepare<'a>(deck: &'a Deck, images: &'a Images) -> (Cow<'a, Deck>, Cow<'a, Images>) {
        (Cow::Borrowed(deck), Cow::Borrowed(images))
    }

    pub fn prepare_slide<'a>(
        deck: &'a Deck,
        _: &Slide,
        images: &'a Images,
    ) -> (Cow<'a, Deck>, Cow<'a, Images>) {
        (Cow::Borrowed(deck), Cow::Borrowed(images))
    }

    pub fn same_slide<'a>(_: &'a Deck, _: &Deck, slide: &'a Slide) -> &'a Slide {
        slide
    }

    pub struct FormulaText {
        pub text: String,
        pub baseline: f32,
        pub size: f32,
    }

    pub fn text_of(_: &[u8]) -> Option<FormulaText> {
        None
    }
}
mod palette;
mod pdf;
mod png_out;
mod svg;
mod svgcheck;

use std::collections::HashMap;

use plinth_slides::{Aspect, Deck, Slide};

pub use crate::budget::Budget;
pub use crate::cost::{CHECK_SIZE as SVG_CHECK_SIZE, MAX_SVG_COST};
pub use crate::coverage::{missing_glyphs, MissingGlyphs};
pub use crate::fonts::{keep_index_in as keep_font_index_in, FONTS_DIR_ENV};
pub use crate::html::{html_size_bound, MAX_HTML_BYTES};
pub use crate::svgcheck::{MAX_SVG_DEPTH, MAX_SVG_ELEMENTS};

/// A font family the renderer draws with, for `capabilities`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FontFamily {
    pub family: String,
    /// `text` or `code` for the embedded families, `fallback` for the others.
    pub role: &'static str,
    /// `bundled`, `operator` (from `PLINTH_FONTS_DIR`) or `system`.
    pub source: &'static str,
    /// `regular`, `bold`, `italic` faces it has (fallbacks: as found).
    pub styles: Vec<&'static str>,
}

/// The families text is drawn in: the embedded ones, then the fallbacks in the order
/// they are tried. Loads the font registry (a scan of the font directories) on first use.
pub fn font_families() -> Vec<FontFamily> {
    fonts::registry().families()
}

/// Scans the font directories and loads the embedded faces' metrics (advance tables,
/// shaping data), as the first render would. A worker calls this once at start, off
/// the request path; fallback faces still load when text first needs them.
pub fn warm_up_fonts() {
    let registry = fonts::registry();
    for face in fonts::Face::ALL {
        registry.metrics(face.font());
    }
}
pub use crate::highlight::{knows as highlights_language, warm_up as warm_up_highlighting};

/// Compiles the highlighting patterns this deck's code blocks need, as its render would
/// (10–60 ms per language, the larger part of a cold render). `plinth slides render`
/// runs it on a second thread while the first loads fonts and images; the render then
/// finds the patterns compiled, or waits for the one being compiled. The last code
/// blocks are compiled first: the render meets them last, so while it compiles the
/// first ones itself the two threads work on different languages.
pub fn warm_up_code(deck: &Deck) {
    let mut blocks = Vec::new();
    for slide in &deck.slides {
        plinth_slides::walk_blocks(&slide.blocks, 0, &mut |block| {
            if let plinth_slides::Block::Code { code, language } = block {
                blocks.push((code.clone(), language.clone()));
            }
        });
    }
    for (code, language) in blocks.iter().rev() {
        let _ = crate::highlight::highlight(code, language.as_deref(), false);
    }
}
pub use crate::image::{inspect_image, ImageInfo, MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE};

/// An uploaded image, already validated by [`inspect_image`].
#[derive(Debug, Clone)]
pub struct Image {
    pub mime: String,
    pub bytes: Vec<u8>,
}

/// Images by the `asset_id` of `Block::Image`.
pub type Images = HashMap<String, Image>;

/// Output size in pixels (PNG) and aspect ratio (every format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

impl Default for Size {
    fn default() -> Self {
        Size {
            width: 1920,
            height: 1080,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The budget's flag was set.
    #[error("cancelled")]
    Cancelled,
    /// A deadline of the budget passed: `what` is "the render" or "one slide".
    #[error("{what} went past its time limit of {:.1} s", limit.as_secs_f64())]
    TimedOut {
        what: &'static str,
        limit: std::time::Duration,
    },
    /// An SVG image that would cost more than [`MAX_SVG_COST`] to draw at this size.
    #[error(
        "{what} is too costly to draw: {cost} cost units at {width}x{height} pixels, over the \
         limit of {limit} (MAX_SVG_COST, about a quarter second of CPU); use fewer or smaller \
         filters, blurs, masks and <use> copies"
    )]
    TooCostly {
        what: String,
        cost: u64,
        limit: u64,
        width: u32,
        height: u32,
    },
    /// Output over its size limit, refused before it is built.
    #[error(
        "{what} would be {size} bytes, over the limit of {limit} bytes ({name}); use fewer or \
         smaller images"
    )]
    TooLarge {
        what: &'static str,
        name: &'static str,
        size: u64,
        limit: u64,
    },
    /// An image that is not acceptable (at upload, or found so at render time); the
    /// text is the reason to show.
    #[error("{0}")]
    Rejected(String),
    #[error("{0}")]
    Failed(String),
}

/// The slides that get exported: hidden ones never are.
pub fn visible(deck: &Deck) -> Vec<&Slide> {
    deck.slides.iter().filter(|s| !s.hidden).collect()
}

/// The output size for a deck: `size`'s height, and its width from the deck's `aspect`
/// when the deck sets one (a `4:3` deck at 1920×1080 renders at 1440×1080).
pub fn deck_size(deck: &Deck, size: Size) -> Size {
    let size = sane(size);
    let width = match deck.aspect {
        None => return size,
        Some(Aspect::Wide) => size.height as u64 * 16 / 9,
        Some(Aspect::Standard) => size.height as u64 * 4 / 3,
    };
    sane(Size {
        width: width as u32,
        height: size.height,
    })
}

/// The slide as a standalone SVG document (each image once, as a data: URL).
pub fn slide_svg(
    deck: &Deck,
    slide: &Slide,
    images: &Images,
    size: Size,
    budget: &Budget,
) -> Result<String, RenderError> {
    let (prepared, images) = maths::prepare_slide(deck, slide, images);
    let (deck, slide) = (&*prepared, maths::same_slide(&prepared, deck, slide));
    let images = &*images;
    let size = deck_size(deck, size);
    let trees = image::SvgTrees::default();
    let naturals = image::natural_sizes(deck, slide, images, &trees, budget)?;
    let page = layout::page(deck, slide, &naturals, size);
    Ok(svg::render(&page, images, &naturals, size))
}

/// The slide as a PNG of `size` (its width from the deck's aspect). Stops with the
/// budget's error when it is cancelled or a deadline (its per-slide one included)
/// passes; an SVG image costlier than [`MAX_SVG_COST`] to draw is refused.
pub fn slide_png(
    deck: &Deck,
    slide: &Slide,
    images: &Images,
    size: Size,
    budget: &Budget,
) -> Result<Vec<u8>, RenderError> {
    let budget = budget.for_slide();
    budget.check()?;
    let (prepared, images) = maths::prepare_slide(deck, slide, images);
    let (deck, slide) = (&*prepared, maths::same_slide(&prepared, deck, slide));
    let images = &*images;
    let size = deck_size(deck, size);
    let trees = image::SvgTrees::default();
    let naturals = image::natural_sizes(deck, slide, images, &trees, &budget)?;
    budget.check()?;
    let page = layout::page(deck, slide, &naturals, size);
    budget.check()?;
    svg::rasterize(&page, images, &trees, size, &budget)
}

/// The visible slides as one PDF. Stops with the budget's error as [`slide_png`] does.
pub fn deck_pdf(
    deck: &Deck,
    images: &Images,
    size: Size,
    budget: &Budget,
) -> Result<Vec<u8>, RenderError> {
    deck_pdf_with(deck, images, size, Options::default(), budget, &mut |_| {
        true
    })
}

/// What an export carries besides the slides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Speaker notes: in a PDF a notes page after each slide that has notes; in HTML a
    /// presenter view (key `p` or `#presenter`: the slide, the next one, the notes and
    /// a timer). Never set for what an audience sees.
    pub notes: bool,
    /// When the document is made (Unix seconds): a PDF's creation and modification
    /// dates. Unset, they stay at the epoch, so the same input gives the same bytes.
    pub created: Option<i64>,
}

/// `progress(i)` is called before slide i (0-based, of the visible slides); returning
/// false stops rendering with `Err(RenderError::Cancelled)`, as the budget's flag does.
pub fn deck_pdf_with(
    deck: &Deck,
    images: &Images,
    size: Size,
    options: Options,
    budget: &Budget,
    progress: &mut dyn FnMut(usize) -> bool,
) -> Result<Vec<u8>, RenderError> {
    let (deck, images) = maths::prepare(deck, images);
    pdf::render(
        &deck,
        &images,
        deck_size(&deck, size),
        options,
        budget,
        progress,
    )
}

/// The deck as one self-contained HTML page, each image in it once. Refused with
/// [`RenderError::TooLarge`] before anything is built when [`html_size_bound`] is over
/// [`MAX_HTML_BYTES`].
pub fn deck_html(deck: &Deck, images: &Images, budget: &Budget) -> Result<String, RenderError> {
    deck_html_with(deck, images, Options::default(), budget)
}

pub fn deck_html_with(
    deck: &Deck,
    images: &Images,
    options: Options,
    budget: &Budget,
) -> Result<String, RenderError> {
    let (deck, images) = maths::prepare(deck, images);
    html::render(&deck, &images, options, budget)
}

/// The page that follows a slide in a PDF with notes: "Notes · N: title" and the
/// notes, one paragraph per blank-line-separated part, in the deck's theme.
fn notes_slide(slide: &Slide, n: usize) -> Option<Slide> {
    let notes = slide.notes.as_deref().filter(|n| !n.trim().is_empty())?;
    let title = match slide.title.as_deref().map(plinth_slides::plain) {
        Some(t) if !t.trim().is_empty() => format!("Notes · {n}: {t}"),
        _ => format!("Notes · {n}"),
    };
    let blocks = notes
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| plinth_slides::Block::Text {
            text: p.replace('\n', " "),
        })
        .collect();
    Some(Slide {
        id: format!("{}#notes", slide.id),
        title: Some(title),
        blocks,
        ..Slide::default()
    })
}

/// A zero or absurd size would make an empty pixmap or a degenerate page.
fn sane(size: Size) -> Size {
    Size {
        width: size.width.clamp(16, 8192),
        height: size.height.clamp(16, 8192),
    }
}

#[cfg(test)]
mod custom_tests;
#[cfg(test)]
mod limit_tests;
#[cfg(test)]
mod tests;
