//! The page's head: its title and the style sheet, in the deck's colours.

use plinth_slides::{Aspect, Deck, Slide, Theme};

use crate::layout::slide_palette;

use super::out::{escape_into, Out};

/// From the doctype to `<main>`: the title, and the style sheet in the deck's own
/// colours and brand (slides with their own get them inline).
pub(super) fn head<O: Out>(out: &mut O, deck: &Deck) {
    let pal = slide_palette(deck, &Slide::default());
    let title = deck.title.as_deref().unwrap_or("Slides");
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
    );
    escape_into(out, title);
    out.push_str("</title>\n<style>\n");
    let _ = write!(
        out,
        r#":root {{ color-scheme: {scheme}; --bg: {bg}; --text: {text}; --title: {title}; --accent: {accent}; --code-bg: {code_bg}; --code-text: {code_text}; --inline-code-bg: {inline}; --inline-code-text: {inline_text}; --muted: {muted}; --stripe: {stripe}; --rule: {rule}; --quote-bar: {quote_bar}; }}
html {{ scroll-snap-type: y mandatory; background: #0b0d10; }}
body {{ margin: 0; }}
main {{ display: flex; flex-direction: column; align-items: center; gap: 2vh; padding: 2vh 0; }}
section.slide {{ position: relative; scroll-snap-align: center; width: min(96vw, calc(96vh * {aw} / {ah})); aspect-ratio: {aw} / {ah}; container-type: inline-size; background: var(--bg); color: var(--text); overflow: hidden; box-shadow: 0 2px 12px rgba(0,0,0,.4); }}
section.slide > * {{ --u: calc(100cqw / {units}); }}
section.slide > .frame {{ --u: calc(100cqw / {units} * var(--s, 1)); }}
"#,
        scheme = if deck.theme == Theme::Dark {
            "dark"
        } else {
            "light"
        },
        bg = pal.background.hex(),
        text = pal.text.hex(),
        title = pal.title.hex(),
        accent = pal.accent.hex(),
        code_bg = pal.code_bg.hex(),
        code_text = pal.code_text.hex(),
        inline = pal.inline_code_bg.hex(),
        inline_text = pal.inline_code_text.hex(),
        muted = pal.muted.hex(),
        stripe = pal.stripe.hex(),
        rule = pal.rule.hex(),
        quote_bar = pal.quote_bar.hex(),
        aw = if deck.aspect == Some(Aspect::Standard) {
            4
        } else {
            16
        },
        ah = if deck.aspect == Some(Aspect::Standard) {
            3
        } else {
            9
        },
        units = if deck.aspect == Some(Aspect::Standard) {
            1440
        } else {
            1920
        },
    );
    out.push_str(STYLE_RULES);
    let theme = if deck.theme == Theme::Dark {
        "dark"
    } else {
        "light"
    };
    let _ = write!(
        out,
        "</style>\n</head>\n<body class=\"theme-{theme}\">\n<main>\n"
    );
}

/// The style sheet's rules that do not depend on the deck.
const STYLE_RULES: &str = r#"svg.pic { width: auto; height: auto; }
svg.pics { position: absolute; width: 0; height: 0; overflow: hidden; }
svg.bg { position: absolute; top: 0; height: 100%; }
.chrome { position: absolute; left: calc(110 * var(--u)); right: calc(110 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(24 * var(--u)); line-height: 1.2; color: var(--muted); white-space: nowrap; overflow: hidden; }
header.chrome { top: calc(26 * var(--u)); color: var(--header, var(--muted)); font-size: var(--header-size, calc(24 * var(--u))); font-weight: var(--header-weight, normal); }
footer.chrome { bottom: calc(26 * var(--u)); color: var(--footer, var(--muted)); font-size: var(--footer-size, calc(24 * var(--u))); font-weight: var(--footer-weight, normal); }
.page-number { position: absolute; right: calc(110 * var(--u)); bottom: calc(26 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(24 * var(--u)); color: var(--muted); }
figure.sized { flex: 0 0 auto; align-self: flex-start; max-width: 100%; }
.layout-title figure.sized { align-self: center; }
figure.sized svg.pic { width: 100%; height: 100%; }
.frame { position: absolute; top: 0; bottom: 0; box-sizing: border-box; padding: calc(80 * var(--u)) calc(110 * var(--u)); display: flex; flex-direction: column; gap: calc(30 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: var(--text-size, calc(40 * var(--u))); line-height: 1.35; }
.layout-title .frame { justify-content: center; text-align: center; }
.body { flex: 1 1 auto; min-height: 0; display: flex; flex-direction: column; gap: calc(30 * var(--u)); justify-content: safe center; }
.layout-title .body { display: contents; }
svg.logo { position: absolute; top: calc(16 * var(--u)); right: calc(110 * var(--u)); height: calc(56 * var(--u)); max-width: calc(280 * var(--u)); }
.columns { display: flex; gap: calc(70 * var(--u)); flex: 0 1 auto; min-height: 0; }
.columns:has(> .column > figure:not(.sized)) { flex: 1 1 0; }
.column { flex: 1 1 0; min-width: 0; display: flex; flex-direction: column; gap: calc(30 * var(--u)); }
h1 { margin: 0 0 calc(16 * var(--u)); font-size: var(--h1-size, calc(68 * var(--u))); font-weight: var(--h1-weight, bold); line-height: 1.2; color: var(--title); }
.layout-title h1 { font-size: var(--h1-size, calc(96 * var(--u))); }
h1::after { content: ""; display: block; width: calc(96 * var(--u)); height: calc(6 * var(--u)); margin-top: calc(16 * var(--u)); border-radius: calc(3 * var(--u)); background: var(--accent); }
.layout-title h1::after { margin-left: auto; margin-right: auto; }
h2, h3, h4, h5, h6 { margin: 0; font-size: calc(52 * var(--u)); line-height: 1.2; }
h2 { font-size: var(--h2-size, calc(52 * var(--u))); font-weight: var(--h2-weight, bold); color: var(--h2, inherit); }
h3 { font-size: var(--h3-size, calc(46 * var(--u))); font-weight: var(--h3-weight, bold); color: var(--h3, inherit); }
h4, h5, h6 { font-size: calc(42 * var(--u)); }
p { margin: 0; white-space: pre-line; color: var(--p, inherit); font-size: var(--p-size, inherit); font-weight: var(--p-weight, normal); }
p, h1, h2, h3, h4, h5, h6, li, td, th, header, footer { unicode-bidi: plaintext; }
ul, ol { margin: 0; padding-left: calc(60 * var(--u)); display: flex; flex-direction: column; gap: calc(12 * var(--u)); }
.layout-title ul, .layout-title ol { align-self: center; text-align: left; }
li::marker { color: var(--accent); }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; background: var(--inline-code-bg); color: var(--inline-code-text, var(--code-text)); padding: 0 .18em; border-radius: .15em; }
pre { margin: 0; padding: calc(26 * var(--u)); background: var(--code-bg); border-radius: calc(12 * var(--u)); font-size: var(--pre-size, calc(28 * var(--u))); color: var(--code-text); line-height: 1.4; overflow: hidden; text-align: left; }
pre code { background: none; padding: 0; color: inherit; }
figure { margin: 0; flex: 1 1 0; min-height: calc(160 * var(--u)); display: flex; justify-content: center; }
figure svg.pic { max-width: 100%; max-height: 100%; }
li > ul, li > ol { margin-top: calc(10 * var(--u)); font-size: 0.9em; }
.item-blocks { display: flex; flex-direction: column; gap: calc(10 * var(--u)); margin-top: calc(10 * var(--u)); font-size: 0.9em; }
li.task { list-style: none; margin-left: -1.2em; }
li.task input { width: .8em; height: .8em; margin: 0 .35em 0 0; accent-color: var(--accent); vertical-align: -0.05em; }
blockquote { margin: 0; padding: calc(10 * var(--u)) 0 calc(10 * var(--u)) calc(38 * var(--u)); border-left: calc(8 * var(--u)) solid var(--quote-bar); display: flex; flex-direction: column; gap: calc(18 * var(--u)); text-align: left; }
table { border-collapse: collapse; font-size: var(--table-size, calc(36 * var(--u))); line-height: 1.3; align-self: flex-start; }
.layout-title table { align-self: center; }
th, td { padding: calc(9 * var(--u)) calc(17 * var(--u)); text-align: left; border-bottom: calc(1 * var(--u)) solid var(--rule); }
th { background: var(--head-fill, var(--code-bg)); color: var(--head-text, var(--title)); border-bottom: calc(3 * var(--u)) solid var(--accent); }
td { color: var(--cell-text, inherit); }
tbody tr { background: var(--cells, none); }
tbody tr:nth-child(even) { background: var(--stripe); }
hr { width: 100%; border: 0; height: calc(3 * var(--u)); background: var(--muted); margin: calc(8 * var(--u)) 0; }
a { color: var(--accent); }
svg.inline { height: 1em; vertical-align: -0.15em; margin: 0 .08em; }
.missing { flex: 0 0 auto; padding: calc(30 * var(--u)); background: var(--code-bg); color: var(--muted); font-style: italic; border-radius: calc(12 * var(--u)); }
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
