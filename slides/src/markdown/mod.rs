//! Markdown decks (syntax in `docs/slides.md`): `---` lines separate slides, an optional
//! front matter sets the deck title and theme, HTML comments carry notes and directives.
//! Each slide's body is CommonMark, parsed with pulldown-cmark.
//!
//! The deck is read in three passes: the front matter ([`front_matter`]), the split into
//! slides ([`split`]), then each slide's events ([`builder`], with one method per tag
//! family in [`blocks`], [`inline`] and [`html`]).

mod blocks;
mod builder;
mod css;
mod directives;
mod frame;
mod front_matter;
mod html;
mod inline;
mod split;
mod values;

use crate::{Deck, Invalid, Slide, MAX_MARKDOWN_BYTES};

use builder::parse_slide;
use front_matter::FrontMatter;

/// Maps an image reference to an asset id.
pub type ResolveImage<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// How a markdown deck is read.
#[derive(Default, Clone, Copy)]
pub struct ParseOptions<'a> {
    /// Maps an image reference that is not `asset:<asset id>` (a file name such as
    /// `chart.png`) to an asset id; without it, or when it answers `None`, the image is
    /// refused with its line.
    pub resolve_image: Option<&'a ResolveImage<'a>>,
    /// What an image may name where the deck is read (the CLI: files next to the
    /// deck), said when one is refused; empty: uploaded assets.
    pub images_are: &'a str,
}

/// Why an image (or the logo) `url` was refused, in the words of where the deck is
/// read: a CLI user needs to hear about files, an API caller about assets.
pub(crate) fn image_refusal(opts: &ParseOptions, what: &str, url: &str) -> String {
    let wanted = if opts.images_are.is_empty() {
        "an uploaded asset as `asset:<asset id>`"
    } else {
        opts.images_are
    };
    if url.starts_with("http://") || url.starts_with("https://") {
        format!("{what} `{url}` is remote and is not fetched: use {wanted}")
    } else {
        format!("{what} must be {wanted}, not `{url}`")
    }
}

pub fn parse_markdown(source: &str) -> Result<Deck, Invalid> {
    parse_markdown_with(source, &ParseOptions::default())
}

pub fn parse_markdown_with(source: &str, opts: &ParseOptions) -> Result<Deck, Invalid> {
    parse_markdown_report(source, opts).map(|(deck, _)| deck)
}

/// Like [`parse_markdown_with`], and also what was read but has no effect (Marp
/// settings plinth does not draw), one line each, for the caller to show.
pub fn parse_markdown_report(
    source: &str,
    opts: &ParseOptions,
) -> Result<(Deck, Vec<String>), Invalid> {
    if source.len() > MAX_MARKDOWN_BYTES {
        return Err(Invalid(format!(
            "markdown is larger than {MAX_MARKDOWN_BYTES} bytes"
        )));
    }
    let lines: Vec<&str> = source.lines().collect();
    let mut deck = Deck::default();
    let mut warnings = Vec::new();
    let FrontMatter {
        start,
        mut inherited,
        heading_divider,
        mut first_local,
        is_marp,
        mut style_places,
    } = front_matter::read(&lines, &mut deck, opts, &mut warnings)?;
    let chunks = split::slides(&lines, start, is_marp, heading_divider)?;
    let mut first_lines = Vec::new();
    for (first_line, chunk) in chunks {
        let text = chunk.join("\n");
        let read = parse_slide(&text, first_line, opts, &mut warnings)?;
        let (mut slide, mut global) = (read.slide, read.global);
        global.layout_set = false;
        inherited.merge(global);
        let mut applied = inherited.clone();
        applied.merge(std::mem::take(&mut first_local));
        applied.merge(read.local);
        applied.apply(&mut slide, &deck, first_line, &mut warnings);
        deck.slides.push(slide);
        first_lines.push(first_line);
        let place = |l: usize| format!("line {l}");
        for (line, css) in read.styles {
            css::Sheet {
                rules: &mut deck.styles,
                places: &mut style_places,
                warnings: &mut warnings,
                place: &place,
            }
            .read(&css, line);
        }
    }
    styles_said(&deck, &first_lines, &style_places, &mut warnings);
    // As Marp does, a deck with nothing on it is blank slides (at least one), not an
    // error: an author's new, empty file renders, and says so.
    if deck.slides.is_empty() {
        deck.slides.push(Slide::default());
    }
    if deck
        .slides
        .iter()
        .all(|s| s.title.is_none() && s.blocks.is_empty())
    {
        warnings.push("no slide has any content yet: the deck is blank".into());
    }
    deck.fill_ids();
    deck.validate()?;
    Ok((deck, warnings))
}

/// What the deck's styles leave unsaid: classes no rule picks slides by, and author
/// colours hard to read on the background the rules give them.
fn styles_said(deck: &Deck, first_lines: &[usize], places: &[String], warnings: &mut Vec<String>) {
    for (slide, line) in deck.slides.iter().zip(first_lines) {
        for class in &slide.classes {
            if !deck.styles.iter().any(|r| r.class.as_ref() == Some(class)) {
                warnings.push(format!(
                    "slide at line {line}: class `{class}` is not supported and has no effect"
                ));
            }
        }
    }
    for (i, why) in crate::style_contrast_warnings(&deck.styles) {
        let place = places.get(i).map_or("front matter", String::as_str);
        warnings.push(format!("{place}: style: {why}"));
    }
}

#[cfg(test)]
mod css_tests;
#[cfg(test)]
mod tests;
