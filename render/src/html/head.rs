//! The page's head: its title and the style sheet. Every colour, size and position is
//! on the elements (from the layout), so the sheet only says how they are placed.

use plinth_slides::{Aspect, Deck, Theme};

use crate::fonts::{font_metrics, Face, FontKey, MONO_FAMILY, SANS_FAMILY};

use super::out::{escape_into, Out};

/// From the doctype to `<main>`: the title and the style sheet.
pub(super) fn head<O: Out>(out: &mut O, deck: &Deck, units: f32) {
    let title = deck.title.as_deref().unwrap_or("Slides");
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
    );
    escape_into(out, title);
    out.push_str("</title>\n<style>\n");
    let (aw, ah) = if deck.aspect == Some(Aspect::Standard) {
        (4, 3)
    } else {
        (16, 9)
    };
    let scheme = if deck.theme == Theme::Dark {
        "dark"
    } else {
        "light"
    };
    let _ = writeln!(
        out,
        ":root {{ color-scheme: {scheme}; }}\n\
         section.slide {{ position: relative; scroll-snap-align: center; width: min(96vw, calc(96vh * {aw} / {ah})); aspect-ratio: {aw} / {ah}; container-type: inline-size; overflow: hidden; box-shadow: 0 2px 12px rgba(0,0,0,.4); --u: calc(100cqw / {units}); }}"
    );
    for face in Face::ALL {
        let (family, style) = match face {
            Face::Regular => (SANS_FAMILY, ""),
            Face::Bold => (SANS_FAMILY, " font-weight: bold;"),
            Face::Italic => (SANS_FAMILY, " font-style: oblique;"),
            Face::Mono => (MONO_FAMILY, ""),
        };
        let generic = if face == Face::Mono {
            "Menlo, Consolas, monospace"
        } else {
            "Verdana, sans-serif"
        };
        let _ = write!(
            out,
            ".f{} {{ font-family: \"{family}\", {generic};{style} --k: ",
            face.index()
        );
        out.number(baseline_drop(face.font()));
        out.push_str("; }\n");
    }
    out.push_str(STYLE_RULES);
    let _ = write!(
        out,
        "</style>\n</head>\n<body class=\"theme-{scheme}\">\n<main>\n"
    );
}

/// How far (in em) a text's baseline is below the top of its box at `line-height: 0`:
/// half its ascent less half its descent, in the metrics the layout measured with.
pub(super) fn baseline_drop(font: FontKey) -> f32 {
    let m = font_metrics(font);
    (m.ascent - m.descent) / 2.0
}

/// The style sheet's rules that do not depend on the deck.
const STYLE_RULES: &str = r#"html { scroll-snap-type: y mandatory; background: #0b0d10; }
body { margin: 0; }
main { display: flex; flex-direction: column; align-items: center; gap: 2vh; padding: 2vh 0; }
section.slide :is(h1, h2, h3, h4, h5, h6, p, ul, ol, li, pre, blockquote, header, footer, div) { margin: 0; padding: 0; border: 0; font: inherit; line-height: 0; list-style: none; white-space: pre; }
.t, .r, .a, .i, .c { position: absolute; left: calc(var(--x) * var(--u)); top: calc(var(--y) * var(--u)); }
.r, .a, .i, .c { width: calc(var(--w) * var(--u)); height: calc(var(--h) * var(--u)); }
.t { top: calc((var(--y) - var(--s) * var(--k)) * var(--u)); font-size: calc(var(--s) * var(--u)); line-height: 0; white-space: pre; font-kerning: none; font-variant-ligatures: none; unicode-bidi: plaintext; }
.r { border-radius: calc(var(--r, 0) * var(--u)); }
.c { overflow: hidden; }
svg.pics { position: absolute; width: 0; height: 0; overflow: hidden; }
aside.notes { display: none; }
body.presenter { background: #0b0d10; color: #e8ebef; font-family: "DejaVu Sans", Verdana, sans-serif; }
body.presenter main { display: grid; grid-template-columns: 60vw 36vw; grid-template-rows: auto 1fr; gap: 2vh 2vw; padding: 2vh 1vw; height: 96vh; box-sizing: border-box; align-items: start; }
body.presenter section.slide { display: none; }
body.presenter section.slide.current { display: block; grid-column: 1; grid-row: 1 / span 2; width: 60vw; }
body.presenter section.slide.next { display: block; grid-column: 2; grid-row: 1; width: 36vw; opacity: .85; }
#presenter { display: none; }
body.presenter #presenter { display: flex; flex-direction: column; gap: 1.5vh; grid-column: 2; grid-row: 2; min-height: 0; }
#presenter .bar { display: flex; justify-content: space-between; font-size: 3vh; font-variant-numeric: tabular-nums; }
#presenter .timer { cursor: pointer; }
#presenter .notes-text { flex: 1; overflow: auto; font-size: 2.6vh; line-height: 1.45; white-space: pre-wrap; }
@media print { html { background: none; } main { padding: 0; gap: 0; } section.slide { width: 100vw; box-shadow: none; break-after: page; } }
"#;
