//! Paragraphs: greedy wrapping, alignment, bidi reordering of runs, and the items
//! each run draws.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextAlign {
    /// Left, or right for a paragraph whose base direction is right to left.
    Start,
    Left,
    Center,
    Right,
}

/// A wrapped paragraph: items relative to its top-left corner.
pub(super) struct Paragraph {
    pub(super) items: Vec<Item>,
    pub(super) height: f32,
    /// Widest line.
    pub(super) width: f32,
    pub(super) first_baseline: f32,
    /// Its base direction is right to left.
    pub(super) rtl: bool,
}

impl Paragraph {
    pub(super) fn new(
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
            let runs = line_runs(line, glyphs, &levels);
            let shifts = visual_shifts(&runs, line, glyphs, &levels);
            let at = Run {
                x: dx,
                y,
                w: 0.0,
                size,
                fill,
            };
            place_runs(&mut items, (line, glyphs), (&runs, &shifts), at, pal);
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

/// A line's runs in visual order (each shifted by `shifts`), from `at.x` on the
/// baseline `at.y`: their text, images, marks and links.
fn place_runs(
    items: &mut Vec<Item>,
    (line, glyphs): (&[(usize, f32)], &[Glyph]),
    (runs, shifts): (&[(usize, usize)], &[f32]),
    at: Run,
    pal: &Palette,
) {
    let Run {
        x: dx,
        y,
        size,
        fill,
        ..
    } = at;
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
        if let Some(image) = &first.image {
            inline_image(items, image, (x, y), first.adv);
        } else {
            let text: String = line[start..end].iter().map(|&(g, _)| glyphs[g].c).collect();
            let run = Run {
                x,
                y,
                w: run_w,
                size,
                fill: color,
            };
            text_run(items, first, text, run, pal);
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

/// A line cut into runs (start and end in `line`): consecutive glyphs in one font and
/// style (and one bidi level) make one; an inline image is a run of its own.
fn line_runs(line: &[(usize, f32)], glyphs: &[Glyph], levels: &[u8]) -> Vec<(usize, usize)> {
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
    runs
}

/// An inline image (asset id, height, top above the baseline, alt text) at `x` on the
/// baseline `y`, `w` wide.
fn inline_image(
    items: &mut Vec<Item>,
    (asset_id, h, top, alt): &(Rc<str>, f32, f32, Rc<str>),
    (x, y): (f32, f32),
    w: f32,
) {
    items.push(Item::Begin(Role::Image {
        alt: alt.to_string(),
    }));
    items.push(Item::Image {
        x,
        y: y - top,
        w,
        h: *h,
        asset_id: asset_id.to_string(),
        clip: None,
    });
    items.push(Item::End);
}

/// Where one run of a line goes: its start, baseline, width, the line's size, colour.
pub(super) struct Run {
    pub(super) x: f32,
    pub(super) y: f32,
    pub(super) w: f32,
    pub(super) size: f32,
    pub(super) fill: Color,
}

/// One run of text in one style, with what its marks draw around it: the inline code
/// chip or `<mark>` highlight behind it, the strike, underline or link line over it.
pub(super) fn text_run(
    items: &mut Vec<Item>,
    first: &Glyph,
    text: String,
    run: Run,
    pal: &Palette,
) {
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
pub(super) fn bidi_levels(glyphs: &[Glyph]) -> (Vec<u8>, bool) {
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
pub(super) fn visual_shifts(
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
pub(super) fn wrap(glyphs: &[Glyph], max_w: f32) -> Vec<Vec<(usize, f32)>> {
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
pub(super) fn breaks_around(c: char) -> bool {
    matches!(c as u32, 0x2e80..=0x303f | 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff | 0xff00..=0xffef | 0x20000..=0x3ffff)
}
