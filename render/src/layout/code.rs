//! Code blocks: highlighted monospace lines, cut with an ellipsis rather than shrunk
//! below a floor.

use super::*;

pub(super) fn code_block(
    code: &str,
    colours: Option<&Vec<highlight::Line>>,
    ctx: &Ctx,
    cw: f32,
    centered: bool,
    s: f32,
) -> Piece {
    let (pal, look) = (ctx.pal, ctx.look);
    let (lines, colours) = code_lines(code, colours);
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
        let runs = match colours {
            Some(c) => coloured_runs(&c[i], line, &text, pal),
            None => vec![(pal.code_text, text)],
        };
        let mut x = box_x + pad;
        for (colour, t) in runs {
            // Spaces too (they draw nothing): a copy of the code keeps its indentation.
            let (run, w) = text_items(x, y, size, Face::Mono, colour, &t);
            items.extend(run);
            x += w;
        }
    }
    Piece::Fixed {
        items: part(Role::Code { line_h }, items),
        height,
    }
}

/// The code's lines (tabs as four spaces), and their highlighted runs when those
/// spell the same lines.
fn code_lines<'c>(
    code: &str,
    colours: Option<&'c Vec<highlight::Line>>,
) -> (Vec<String>, Option<&'c Vec<highlight::Line>>) {
    let lines: Vec<String> = code
        .trim_end_matches(['\n', '\r'])
        .split('\n')
        .map(|l| clean(&l.replace('\t', "    ")))
        .collect();
    let colours = colours.filter(|c| {
        c.len() == lines.len()
            && c.iter().zip(&lines).all(|(runs, l)| {
                runs.iter().map(|(_, t)| t.chars().count()).sum::<usize>() == l.chars().count()
            })
    });
    (lines, colours)
}

/// A highlighted line's runs, cut where its `text` (the line, perhaps truncated with
/// an ellipsis) ends; each colour kept readable on the code's box.
fn coloured_runs(
    runs: &[(Color, String)],
    line: &str,
    text: &str,
    pal: &Palette,
) -> Vec<(Color, String)> {
    let keep = if text.ends_with('…') && text != line {
        text.chars().count() - 1
    } else {
        usize::MAX
    };
    let mut left = keep;
    let mut out = Vec::new();
    for (colour, t) in runs {
        if left == 0 {
            break;
        }
        let part: String = t.chars().take(left).collect();
        left -= part.chars().count();
        out.push((readable(*colour, pal.code_bg, MIN_CONTRAST), part));
    }
    if keep != usize::MAX {
        out.push((pal.code_text, "…".to_owned()));
    }
    out
}

/// Cuts a monospace line to `max_em` with an ellipsis.
pub(super) fn truncate(line: &str, max_em: f32) -> String {
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
