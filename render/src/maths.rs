//! Maths: a formula's TeX (carried in the deck as an image reference, see
//! [`plinth_slides::maths_ref`]) is converted to Typst's maths syntax by mitex, laid out
//! by Typst in its bundled New Computer Modern Math and written as SVG by typst-svg.
//! The renderer then draws that SVG as it draws any SVG image, in PNG, PDF and HTML.
//! The SVG's `<title>` carries the formula's text as Typst laid it out ([`text_of`]),
//! which the PDF writes as invisible text over the formula for its text layer.
//!
//! Before a deck is drawn, [`prepare`] gives every formula of a slide the slide's text
//! colour (a `:rrggbb` suffix of its reference) and typesets each distinct one into the
//! images the writers read.

use std::borrow::Cow;
use std::sync::LazyLock;

use plinth_slides::{Deck, Slide};
use typst::diag::{FileError, FileResult};
use typst::foundations::{Bytes, Datetime, Duration};
use typst::syntax::{FileId, Source};
use typst::text::{Font, FontBook};
use typst::utils::LazyHash;
use typst::{Library, LibraryExt, World};

use crate::palette::Color;
use crate::{Image, Images};

/// Definitions of the names mitex's output uses beyond Typst's own (our own, written
/// for the commands a slide deck uses: roots, font styles, braces, `\text`).
const PRELUDE: &str = r#"
#let mitexsqrt(..a) = if a.pos().len() == 1 { math.sqrt(a.pos().at(0)) } else { math.root(a.pos().at(0), a.pos().at(1)) }
#let mitexmathbf(it) = math.bold(math.upright(it))
#let mitexbold(it) = math.bold(it)
#let mitexitalic(it) = math.italic(it)
#let mitexupright(it) = math.upright(it)
#let mitexsans(it) = math.sans(it)
#let mitexmono(it) = math.mono(it)
#let mitexfrak(it) = math.frak(it)
#let mitexcal(it) = math.cal(it)
#let mitexdisplay(it) = math.display(it)
#let mitexinline(it) = math.inline(it)
#let mitexscript(it) = math.script(it)
#let mitexsscript(it) = math.sscript(it)
#let mitexoverbrace(..a) = math.overbrace(..a)
#let mitexunderbrace(..a) = math.underbrace(..a)
#let mitexoverbracket(..a) = math.overbracket(..a)
#let mitexunderbracket(..a) = math.underbracket(..a)
#let operatornamewithlimits(it) = math.op(it, limits: true)
#let mitexlabel(..a) = none
#let textmath(it) = it
#let textnormal(it) = it
#let textrm(it) = it
#let textup(it) = it
#let textmd(it) = it
#let textsf(it) = it
#let textbf(it) = text(weight: "bold", it)
#let textit(it) = emph(it)
#let texttt(it) = text(font: "DejaVu Sans Mono", it)
#let colortext(c, it) = text(fill: c, it)
"#;

/// KaTeX draws maths at 1.21 times its text's size; Marp decks are written for that.
const KATEX_SCALE: f32 = 1.21;

/// Typst's bundled fonts: the maths fonts and the text faces `\text{…}` uses.
struct Fonts {
    book: LazyHash<FontBook>,
    fonts: Vec<Font>,
}

static FONTS: LazyLock<Fonts> = LazyLock::new(|| {
    let fonts: Vec<Font> = typst_assets::fonts()
        .flat_map(|data| Font::iter(Bytes::new(data)))
        .collect();
    Fonts {
        book: LazyHash::new(FontBook::from_fonts(&fonts)),
        fonts,
    }
});

static LIBRARY: LazyLock<LazyHash<Library>> = LazyLock::new(|| LazyHash::new(Library::default()));

/// One formula's document: no files, no packages, no clock.
struct Formula {
    source: Source,
}

impl World for Formula {
    fn library(&self) -> &LazyHash<Library> {
        &LIBRARY
    }
    fn book(&self) -> &LazyHash<FontBook> {
        &FONTS.book
    }
    fn main(&self) -> FileId {
        self.source.id()
    }
    fn source(&self, id: FileId) -> FileResult<Source> {
        if id == self.source.id() {
            Ok(self.source.clone())
        } else {
            Err(FileError::AccessDenied)
        }
    }
    fn file(&self, id: FileId) -> FileResult<Bytes> {
        if id == self.source.id() {
            Ok(Bytes::from_string(self.source.clone()))
        } else {
            Err(FileError::AccessDenied)
        }
    }
    fn font(&self, index: usize) -> Option<Font> {
        FONTS.fonts.get(index).cloned()
    }
    fn today(&self, _: Option<Duration>) -> Option<Datetime> {
        None
    }
}

/// A Typst string literal of `s`.
fn typst_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Compiles one page of Typst markup to SVG, titled with its text.
fn compile(markup: String) -> Result<String, String> {
    let world = Formula {
        source: Source::detached(markup),
    };
    let doc = typst::compile::<typst_layout::PagedDocument>(&world)
        .output
        .map_err(|errors| {
            errors
                .iter()
                .map(|e| e.message.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        })?;
    let page = doc.pages().first().ok_or("an empty formula")?;
    let svg = typst_svg::svg(page, &typst_svg::SvgOptions::default());
    Ok(titled(svg, &formula_text(&page.frame)))
}

/// What a formula says, for the PDF's text layer.
#[derive(Debug, Clone, PartialEq)]
pub struct FormulaText {
    /// Its characters in the order Typst laid them out, maths letters as plain letters
    /// (`𝐸` is `E`), a space where Typst left a gap (around `=`, `+`) or started a new
    /// row (a fraction's denominator).
    pub text: String,
    /// The baseline most of its characters sit on, and their size, as fractions of the
    /// formula's height.
    pub baseline: f32,
    pub size: f32,
}

/// One run of text in the laid-out formula, in points: where it starts and ends, its
/// baseline and size.
struct Piece {
    x0: f64,
    x1: f64,
    y: f64,
    size: f64,
    text: String,
}

fn pieces(frame: &typst::layout::Frame, ts: typst::layout::Transform, out: &mut Vec<Piece>) {
    use typst::layout::{FrameItem, Point, Transform};
    for (pos, item) in frame.items() {
        let ts = ts.pre_concat(Transform::translate(pos.x, pos.y));
        match item {
            FrameItem::Group(g) => pieces(&g.frame, ts.pre_concat(g.transform), out),
            FrameItem::Text(t) => {
                let start = Point::zero().transform(ts);
                let end = Point::new(t.width(), typst::layout::Abs::zero()).transform(ts);
                out.push(Piece {
                    x0: start.x.to_pt(),
                    x1: end.x.to_pt(),
                    y: start.y.to_pt(),
                    size: t.size.to_pt() * ts.sy.get(),
                    text: t.text.chars().map(plain).collect(),
                });
            }
            _ => {}
        }
    }
}

/// A maths alphanumeric (`𝐸`, `𝛼`, `ℎ`) as the letter it styles; anything else as is.
fn plain(c: char) -> char {
    if !(('\u{1D400}'..='\u{1D7FF}').contains(&c) || c == '\u{210E}') {
        return c;
    }
    let mut out = Vec::new();
    unicode_normalization::char::decompose_compatible(c, |d| out.push(d));
    match out[..] {
        [one] => one,
        _ => c,
    }
}

fn formula_text(frame: &typst::layout::Frame) -> FormulaText {
    let mut found = Vec::new();
    pieces(frame, typst::layout::Transform::identity(), &mut found);
    let mut text = String::new();
    for (i, p) in found.iter().enumerate() {
        if let Some(q) = i.checked_sub(1).map(|i| &found[i]) {
            let em = q.size.max(p.size);
            // Maths spacing around relations and operators is 4/18 to 5/18 em; a
            // piece that starts well left of the last one's end is on another row.
            if p.x0 - q.x1 > 0.15 * em || p.x0 < q.x1 - 0.1 * em {
                text.push(' ');
            }
        }
        text.push_str(&p.text);
    }
    // The main baseline: the one carrying the most characters (ties: the lower).
    let mut rows: Vec<(f64, usize, f64)> = Vec::new();
    for p in &found {
        let n = p.text.chars().count();
        match rows.iter_mut().find(|r| (r.0 - p.y).abs() < 0.5) {
            Some(r) => (r.1, r.2) = (r.1 + n, r.2.max(p.size)),
            None => rows.push((p.y, n, p.size)),
        }
    }
    let height = frame.height().to_pt().max(1e-3);
    let main = rows
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(a.0.total_cmp(&b.0)))
        .map_or((height * 0.8, height), |r| (r.0, r.2));
    FormulaText {
        text: text.trim().to_owned(),
        baseline: (main.0 / height) as f32,
        size: (main.1 / height) as f32,
    }
}

/// The SVG with `<title data-baseline data-size>text</title>` as its first child.
fn titled(svg: String, t: &FormulaText) -> String {
    let Some(open) = svg
        .find("<svg")
        .and_then(|s| svg[s..].find('>').map(|e| s + e + 1))
    else {
        return svg;
    };
    let escaped = t
        .text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let title = format!(
        "<title data-baseline=\"{:.4}\" data-size=\"{:.4}\">{escaped}</title>",
        t.baseline, t.size
    );
    let mut out = String::with_capacity(svg.len() + title.len());
    out.push_str(&svg[..open]);
    out.push_str(&title);
    out.push_str(&svg[open..]);
    out
}

/// The text a typeset formula's SVG carries (see [`titled`]).
pub fn text_of(svg: &[u8]) -> Option<FormulaText> {
    let svg = std::str::from_utf8(svg).ok()?;
    let doc = resvg::usvg::roxmltree::Document::parse(svg).ok()?;
    let title = doc
        .root_element()
        .children()
        .find(|n| n.has_tag_name((SVG_NS, "title")))?;
    let number = |name: &str| title.attribute(name)?.parse::<f32>().ok();
    Some(FormulaText {
        text: title.text().unwrap_or_default().to_owned(),
        baseline: number("data-baseline")?,
        size: number("data-size")?,
    })
}

const SVG_NS: &str = "http://www.w3.org/2000/svg";

/// The formula as SVG, its text at `size` layout units in `colour`. TeX that mitex or
/// Typst cannot read is drawn as its source, so nothing the author wrote is lost.
pub fn typeset(tex: &str, display: bool, size: f32, colour: Color) -> Result<String, String> {
    // typst-svg sizes the document in points; SVG readers count 4/3 pixels to the point.
    let head = format!(
        "#set page(width: auto, height: auto, margin: 0pt, fill: none)\n\
         #set text(size: {:.3}pt, fill: rgb(\"{}\"))\n{PRELUDE}\n",
        size * 0.75,
        colour.hex()
    );
    let maths = mitex::convert_math(tex, None).ok().and_then(|typst| {
        let body = if display {
            format!("$ {typst} $")
        } else {
            format!("${typst}$")
        };
        compile(format!("{head}{body}")).ok()
    });
    match maths {
        Some(svg) => Ok(svg),
        None => compile(format!("{head}#text({})", typst_string(tex))),
    }
}

/// The reference with the colour it is drawn in: `maths:i:<hex>:<rrggbb>`.
fn coloured(reference: &str, colour: Color) -> String {
    let base = reference
        .splitn(4, ':')
        .take(3)
        .collect::<Vec<_>>()
        .join(":");
    format!("{base}:{}", &colour.hex()[1..])
}

/// The colour a coloured reference asks for (black when it names none).
fn colour_of(reference: &str) -> Color {
    let hex = reference.splitn(4, ':').nth(3).unwrap_or("000000");
    let byte = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0)
    };
    Color(byte(0), byte(2), byte(4))
}

/// Every formula reference in a serialized slide: (start, end) byte ranges.
fn references(json: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = json[from..].find(plinth_slides::MATHS) {
        let start = from + at;
        let end = json[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == ':'))
            .map_or(json.len(), |e| start + e);
        // Only a reference: an image target `(maths:` or an asset id `"maths:`.
        if start > 0 && matches!(json.as_bytes()[start - 1], b'(' | b'"') {
            out.push((start, end));
        }
        from = end.max(start + 1);
    }
    out
}

/// The deck with each formula in its slide's text colour, and the images with every
/// formula typeset; the deck and images as they are when there is no maths.
pub fn prepare<'a>(deck: &'a Deck, images: &'a Images) -> (Cow<'a, Deck>, Cow<'a, Images>) {
    prepare_only(deck, images, None)
}

/// [`prepare`] for one slide of the deck (the others are left as they are).
pub fn prepare_slide<'a>(
    deck: &'a Deck,
    slide: &Slide,
    images: &'a Images,
) -> (Cow<'a, Deck>, Cow<'a, Images>) {
    match deck.slides.iter().position(|s| std::ptr::eq(s, slide)) {
        Some(i) => prepare_only(deck, images, Some(i)),
        None => (Cow::Borrowed(deck), Cow::Borrowed(images)),
    }
}

fn prepare_only<'a>(
    deck: &'a Deck,
    images: &'a Images,
    only: Option<usize>,
) -> (Cow<'a, Deck>, Cow<'a, Images>) {
    let look = crate::look::Look::of(deck);
    let mut out_deck: Option<Deck> = None;
    let mut out_images: Option<Images> = None;
    for (i, slide) in deck.slides.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let Ok(json) = serde_json::to_string(slide) else {
            continue;
        };
        let refs = references(&json);
        if refs.is_empty() {
            continue;
        }
        let colour = crate::look::slide_palette(deck, slide).text;
        let mut rewritten = String::with_capacity(json.len() + 8 * refs.len());
        let mut last = 0;
        for &(start, end) in &refs {
            rewritten.push_str(&json[last..start]);
            let reference = coloured(&json[start..end], colour);
            let new = out_images.get_or_insert_with(|| images.clone());
            if !new.contains_key(&reference) {
                if let Some((tex, display)) = plinth_slides::maths_of(&reference) {
                    if let Ok(svg) = typeset(
                        &tex,
                        display,
                        look.text * KATEX_SCALE,
                        colour_of(&reference),
                    ) {
                        new.insert(
                            reference.clone(),
                            Image {
                                mime: "image/svg+xml".to_owned(),
                                bytes: svg.into_bytes(),
                            },
                        );
                    }
                }
            }
            rewritten.push_str(&reference);
            last = end;
        }
        rewritten.push_str(&json[last..]);
        if let Ok(new_slide) = serde_json::from_str::<Slide>(&rewritten) {
            out_deck.get_or_insert_with(|| deck.clone()).slides[i] = new_slide;
        }
    }
    match (out_deck, out_images) {
        (Some(d), Some(im)) => (Cow::Owned(d), Cow::Owned(im)),
        _ => (Cow::Borrowed(deck), Cow::Borrowed(images)),
    }
}

/// The slide of a prepared deck that stands for `slide` of the original one.
pub fn same_slide<'a>(prepared: &'a Deck, original: &Deck, slide: &'a Slide) -> &'a Slide {
    original
        .slides
        .iter()
        .position(|s| std::ptr::eq(s, slide))
        .and_then(|i| prepared.slides.get(i))
        .unwrap_or(slide)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formula_is_typeset_in_its_colour() {
        let svg = typeset(
            r"\frac{a}{b} + \sqrt{x^2}",
            true,
            48.0,
            Color(0x12, 0x34, 0x56),
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("#123456"), "{svg}");
        // Unreadable TeX is drawn as its source rather than lost.
        let raw = typeset(r"\frac{", false, 48.0, Color(0, 0, 0)).unwrap();
        assert!(raw.starts_with("<svg"), "{raw}");
    }

    #[test]
    fn a_formula_carries_its_text() {
        let of = |tex: &str| {
            let svg = typeset(tex, false, 48.0, Color(0, 0, 0)).unwrap();
            text_of(svg.as_bytes()).unwrap()
        };
        let t = of("E = mc^2");
        assert_eq!(t.text, "E = mc2", "{t:?}");
        assert!(t.baseline > 0.5 && t.baseline <= 1.0, "{t:?}");
        assert!(t.size > 0.4 && t.size <= 1.5, "{t:?}");
        assert_eq!(of(r"\alpha + \beta").text, "α + β");
        assert_eq!(of("a < b").text, "a < b");
        // Unreadable TeX is drawn, and so read, as its source.
        assert_eq!(of(r"\frac{").text, r"\frac{");
        assert_eq!(of(r"\frac{a+b}{2} \geq \sqrt{ab}").text, "a+b 2 ≥ √ab");
    }

    #[test]
    fn references_are_found_and_coloured() {
        let r = plinth_slides::maths_ref("x^2", false);
        let json = format!(r#"{{"text":"a ![]({r}) maths: b","asset_id":"{r}"}}"#);
        let found = references(&json);
        assert_eq!(found.len(), 2);
        let c = coloured(&json[found[0].0..found[0].1], Color(1, 2, 255));
        assert!(c.ends_with(":0102ff"), "{c}");
        assert_eq!(colour_of(&c), Color(1, 2, 255));
        assert_eq!(plinth_slides::maths_of(&c), Some(("x^2".to_owned(), false)));
    }
}
