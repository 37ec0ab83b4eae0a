//! Text as glyphs: each character in the font that draws it, shaped where its script
//! needs it, with inline marks and images.

use super::*;

/// One character to lay out, with its face and its advance in layout units.
#[derive(Clone)]
pub(super) struct Glyph {
    pub(super) c: char,
    pub(super) face: Face,
    pub(super) font: FontKey,
    pub(super) code: bool,
    pub(super) strike: bool,
    /// The link the character is part of.
    pub(super) link: Option<Rc<str>>,
    /// An inline image (`c` is U+FFFC): its asset id, height, how far its top is
    /// above the baseline, and its alt text.
    pub(super) image: Option<(Rc<str>, f32, f32, Rc<str>)>,
    pub(super) adv: f32,
    /// Extra room before/after: the padding of an inline code background.
    pub(super) pre: f32,
    pub(super) post: f32,
    /// `<sub>`, `<sup>`, `<small>`: the size as a share of the line's, and how far the
    /// baseline rises (in the line's size).
    pub(super) scale: f32,
    pub(super) rise: f32,
    pub(super) mark: bool,
    pub(super) underline: bool,
}

impl Glyph {
    pub(super) fn new(c: char, face: Face, adv: f32) -> Glyph {
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

pub(super) fn plain_glyphs(text: &str, face: Face, size: f32) -> Vec<Glyph> {
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
pub(super) fn font_glyph(
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
pub(super) fn shape_glyphs(glyphs: &mut [Glyph], size: f32) {
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
pub(super) fn font_runs(text: &str, face: Face, size: f32) -> Vec<(FontKey, String, f32)> {
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
pub(super) fn measure(text: &str, face: Face, size: f32) -> f32 {
    font_runs(text, face, size).iter().map(|r| r.2).sum()
}

/// A one-style text as items from `x` on its baseline `y`, and its width.
pub(super) fn text_items(
    x: f32,
    y: f32,
    size: f32,
    face: Face,
    fill: Color,
    text: &str,
) -> (Vec<Item>, f32) {
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
pub(super) fn marked_glyphs(text: &str, base: Face, size: f32, ctx: &Ctx) -> Vec<Glyph> {
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
                g.image = Some((Rc::from(id.as_str()), h, top, Rc::from(span.text.as_str())));
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
pub(super) fn clean(text: &str) -> String {
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
pub(super) fn baseline_in_line(face: Face, size: f32, line_h: f32) -> f32 {
    let m = metrics(face);
    (line_h - (m.ascent + m.descent) * size) / 2.0 + m.ascent * size
}
