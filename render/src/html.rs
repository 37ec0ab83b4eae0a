//! The deck as one self-contained HTML file: inline CSS, images as data: URLs, one
//! `<section>` per visible slide. Sizes follow the layout engine's (in units of
//! 1/1920 of the slide width via container query units), so slides look alike.

use std::fmt::Write;

use base64::Engine;
use plinth_slides::{
    link_allowed, spans, Align, Aspect, Background, BackgroundFit, BackgroundPosition, Block, Deck,
    Layout, ListItem, Slide, Theme, MAX_NESTING,
};

use crate::image::format_of;
use crate::layout::slide_palette;
use crate::{visible, Image, Images};

pub fn render(deck: &Deck, images: &Images, options: crate::Options) -> String {
    // The deck's own colours and brand; slides with their own get them inline below.
    let pal = slide_palette(deck, &Slide::default());
    let title = deck.title.as_deref().unwrap_or("Slides");
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
    );
    escape_into(&mut out, title);
    out.push_str("</title>\n<style>\n");
    let _ = write!(
        out,
        r#":root {{ color-scheme: {scheme}; --bg: {bg}; --text: {text}; --title: {title}; --accent: {accent}; --code-bg: {code_bg}; --code-text: {code_text}; --inline-code-bg: {inline}; --muted: {muted}; --stripe: {stripe}; --rule: {rule}; --quote-bar: {quote_bar}; }}
html {{ scroll-snap-type: y mandatory; background: #0b0d10; }}
body {{ margin: 0; }}
main {{ display: flex; flex-direction: column; align-items: center; gap: 2vh; padding: 2vh 0; }}
section.slide {{ position: relative; scroll-snap-align: center; width: min(96vw, calc(96vh * {aw} / {ah})); aspect-ratio: {aw} / {ah}; container-type: inline-size; background: var(--bg); color: var(--text); overflow: hidden; box-shadow: 0 2px 12px rgba(0,0,0,.4); }}
section.slide > * {{ --u: calc(100cqw / {units}); }}
.bg {{ position: absolute; top: 0; bottom: 0; background-position: center; background-repeat: no-repeat; }}
.chrome {{ position: absolute; left: calc(110 * var(--u)); right: calc(110 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(24 * var(--u)); line-height: 1.2; color: var(--muted); white-space: nowrap; overflow: hidden; }}
header.chrome {{ top: calc(26 * var(--u)); }}
footer.chrome {{ bottom: calc(26 * var(--u)); }}
.page-number {{ position: absolute; right: calc(110 * var(--u)); bottom: calc(26 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(24 * var(--u)); color: var(--muted); }}
figure.sized {{ flex: 0 0 auto; align-self: flex-start; max-width: 100%; }}
.layout-title figure.sized {{ align-self: center; }}
figure.sized img {{ width: 100%; height: 100%; }}
.frame {{ position: absolute; top: 0; bottom: 0; box-sizing: border-box; padding: calc(80 * var(--u)) calc(110 * var(--u)); display: flex; flex-direction: column; gap: calc(30 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(40 * var(--u)); line-height: 1.35; }}
.layout-title .frame {{ justify-content: center; text-align: center; }}
.body {{ flex: 1 1 auto; min-height: 0; display: flex; flex-direction: column; gap: calc(30 * var(--u)); justify-content: safe center; }}
.layout-title .body {{ display: contents; }}
img.logo {{ position: absolute; top: calc(16 * var(--u)); right: calc(110 * var(--u)); height: calc(56 * var(--u)); max-width: calc(280 * var(--u)); object-fit: contain; object-position: right; }}
.columns {{ display: flex; gap: calc(70 * var(--u)); flex: 0 1 auto; min-height: 0; }}
.columns:has(> .column > figure:not(.sized)) {{ flex: 1 1 0; }}
.column {{ flex: 1 1 0; min-width: 0; display: flex; flex-direction: column; gap: calc(30 * var(--u)); }}
h1 {{ margin: 0 0 calc(16 * var(--u)); font-size: calc(68 * var(--u)); line-height: 1.2; color: var(--title); }}
.layout-title h1 {{ font-size: calc(96 * var(--u)); }}
h1::after {{ content: ""; display: block; width: calc(96 * var(--u)); height: calc(6 * var(--u)); margin-top: calc(16 * var(--u)); border-radius: calc(3 * var(--u)); background: var(--accent); }}
.layout-title h1::after {{ margin-left: auto; margin-right: auto; }}
h2, h3, h4, h5, h6 {{ margin: 0; font-size: calc(52 * var(--u)); line-height: 1.2; }}
h3 {{ font-size: calc(46 * var(--u)); }}
h4, h5, h6 {{ font-size: calc(42 * var(--u)); }}
p {{ margin: 0; white-space: pre-line; }}
p, h1, h2, h3, h4, h5, h6, li, td, th, header, footer {{ unicode-bidi: plaintext; }}
ul, ol {{ margin: 0; padding-left: calc(60 * var(--u)); display: flex; flex-direction: column; gap: calc(12 * var(--u)); }}
.layout-title ul, .layout-title ol {{ align-self: center; text-align: left; }}
li::marker {{ color: var(--accent); }}
code {{ font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; background: var(--inline-code-bg); color: var(--code-text); padding: 0 .18em; border-radius: .15em; }}
pre {{ margin: 0; padding: calc(26 * var(--u)); background: var(--code-bg); border-radius: calc(12 * var(--u)); font-size: calc(28 * var(--u)); line-height: 1.4; overflow: hidden; text-align: left; }}
pre code {{ background: none; padding: 0; }}
figure {{ margin: 0; flex: 1 1 0; min-height: calc(160 * var(--u)); display: flex; justify-content: center; }}
figure img {{ max-width: 100%; max-height: 100%; object-fit: contain; }}
li > ul, li > ol {{ margin-top: calc(10 * var(--u)); font-size: 0.9em; }}
.item-blocks {{ display: flex; flex-direction: column; gap: calc(10 * var(--u)); margin-top: calc(10 * var(--u)); font-size: 0.9em; }}
li.task {{ list-style: none; margin-left: -1.2em; }}
li.task input {{ width: .8em; height: .8em; margin: 0 .35em 0 0; accent-color: var(--accent); vertical-align: -0.05em; }}
blockquote {{ margin: 0; padding: calc(10 * var(--u)) 0 calc(10 * var(--u)) calc(38 * var(--u)); border-left: calc(8 * var(--u)) solid var(--quote-bar); display: flex; flex-direction: column; gap: calc(18 * var(--u)); text-align: left; }}
table {{ border-collapse: collapse; font-size: calc(36 * var(--u)); line-height: 1.3; align-self: flex-start; }}
.layout-title table {{ align-self: center; }}
th, td {{ padding: calc(9 * var(--u)) calc(17 * var(--u)); text-align: left; border-bottom: calc(1 * var(--u)) solid var(--rule); }}
th {{ background: var(--code-bg); color: var(--title); border-bottom: calc(3 * var(--u)) solid var(--accent); }}
tbody tr:nth-child(even) {{ background: var(--stripe); }}
hr {{ width: 100%; border: 0; height: calc(3 * var(--u)); background: var(--muted); margin: calc(8 * var(--u)) 0; }}
a {{ color: var(--accent); }}
img.inline {{ height: 1em; vertical-align: -0.15em; margin: 0 .08em; }}
.missing {{ flex: 0 0 auto; padding: calc(30 * var(--u)); background: var(--code-bg); color: var(--muted); font-style: italic; border-radius: calc(12 * var(--u)); }}
aside.notes {{ display: none; }}
body.presenter {{ background: #0b0d10; color: #e8ebef; font-family: "DejaVu Sans", Verdana, sans-serif; }}
body.presenter main {{ display: grid; grid-template-columns: 60vw 36vw; grid-template-rows: auto 1fr; gap: 2vh 2vw; padding: 2vh 1vw; height: 96vh; box-sizing: border-box; align-items: start; }}
body.presenter section.slide {{ display: none; }}
body.presenter section.slide.current {{ display: block; grid-column: 1; grid-row: 1 / span 2; width: 60vw; }}
body.presenter section.slide.next {{ display: block; grid-column: 2; grid-row: 1; width: 36vw; opacity: .85; }}
#presenter {{ display: none; }}
body.presenter #presenter {{ display: flex; flex-direction: column; gap: 1.5vh; grid-column: 2; grid-row: 2; min-height: 0; }}
#presenter .bar {{ display: flex; justify-content: space-between; font-size: 3vh; font-variant-numeric: tabular-nums; }}
#presenter .timer {{ cursor: pointer; }}
#presenter .notes-text {{ flex: 1; overflow: auto; font-size: 2.6vh; line-height: 1.45; white-space: pre-wrap; }}
@media print {{ html {{ background: none; }} main {{ padding: 0; gap: 0; }} section.slide {{ width: 100vw; box-shadow: none; break-after: page; }} }}
</style>
</head>
<body class="theme-{theme}">
<main>
"#,
        scheme = if deck.theme == Theme::Dark {
            "dark"
        } else {
            "light"
        },
        theme = if deck.theme == Theme::Dark {
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

    for (i, slide) in visible(deck).into_iter().enumerate() {
        let layout = match slide.layout {
            Layout::Title => "layout-title",
            Layout::Content => "layout-content",
        };
        let _ = write!(
            out,
            "<section class=\"slide {layout}\" id=\"slide-{}\" aria-label=\"Slide {}\"",
            i + 1,
            i + 1
        );
        // The slide's own colours (a theme of its own, or set colours) as variables.
        let own = slide_palette(deck, slide);
        if slide.theme.is_some()
            || slide.background_color.is_some()
            || slide.color.is_some()
            || deck.background_color.is_some()
            || deck.color.is_some()
        {
            let _ = write!(
                out,
                " style=\"--bg: {}; --text: {}; --title: {}; --accent: {}; --code-bg: {}; --code-text: {}; --inline-code-bg: {}; --muted: {}; --stripe: {}; --rule: {}; --quote-bar: {};\"",
                own.background.hex(),
                own.text.hex(),
                own.title.hex(),
                own.accent.hex(),
                own.code_bg.hex(),
                own.code_text.hex(),
                own.inline_code_bg.hex(),
                own.muted.hex(),
                own.stripe.hex(),
                own.rule.hex(),
                own.quote_bar.hex(),
            );
        }
        out.push_str(">\n");
        let (left, right) = backgrounds_html(&mut out, slide, images);
        if let Some(logo) = deck.logo.as_ref().and_then(|id| images.get(id)) {
            img(&mut out, logo, "logo", Some("logo"));
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "<div class=\"frame\" style=\"left: {left}%; right: {right}%\">"
        );
        if let Some(title) = slide.title.as_deref().filter(|t| !t.trim().is_empty()) {
            out.push_str("<h1>");
            marked(&mut out, title, images);
            out.push_str("</h1>\n");
        }
        // The body, centred in the room under the title as the layout engine does it.
        if !slide.blocks.is_empty() {
            out.push_str("<div class=\"body\">\n");
            if slide.blocks.contains(&Block::ColumnBreak) {
                out.push_str("<div class=\"columns\">\n");
                for blocks in slide.blocks.split(|b| *b == Block::ColumnBreak) {
                    out.push_str("<div class=\"column\">\n");
                    blocks_html(&mut out, blocks, images, 0, own.dark);
                    out.push_str("</div>\n");
                }
                out.push_str("</div>\n");
            } else {
                blocks_html(&mut out, &slide.blocks, images, 0, own.dark);
            }
            out.push_str("</div>\n");
        }
        out.push_str("</div>\n");
        for (text, tag) in [
            (slide.header.as_ref().or(deck.header.as_ref()), "header"),
            (slide.footer.as_ref().or(deck.footer.as_ref()), "footer"),
        ] {
            if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
                if left > 0 || right > 0 {
                    // Beside a split image, as the content is.
                    let _ = write!(
                        out,
                        "<{tag} class=\"chrome\" style=\"left: calc({left}% + 110 * var(--u)); right: calc({right}% + 110 * var(--u))\">"
                    );
                } else {
                    let _ = write!(out, "<{tag} class=\"chrome\">");
                }
                marked(&mut out, text, images);
                let _ = writeln!(out, "</{tag}>");
            }
        }
        if slide.paginate.unwrap_or(deck.paginate) {
            if right > 0 {
                let _ = writeln!(
                    out,
                    "<span class=\"page-number\" style=\"right: calc({right}% + 110 * var(--u))\">{}</span>",
                    i + 1
                );
            } else {
                let _ = writeln!(out, "<span class=\"page-number\">{}</span>", i + 1);
            }
        }
        if options.notes {
            if let Some(notes) = slide.notes.as_deref().filter(|n| !n.trim().is_empty()) {
                out.push_str("<aside class=\"notes\">");
                escape_into(&mut out, notes);
                out.push_str("</aside>\n");
            }
        }
        out.push_str("</section>\n");
    }
    if options.notes {
        // The presenter view: this slide, the next, its notes, a timer (click resets).
        out.push_str(
            "<div id=\"presenter\" aria-label=\"Presenter view\"><div class=\"bar\">\
             <span class=\"position\"></span><span class=\"timer\" title=\"Click to restart\">00:00</span>\
             </div><div class=\"notes-text\"></div></div>\n",
        );
    }

    // Arrow keys, Page Up/Down and space move a slide at a time; scrolling snaps too.
    out.push_str(
        r##"</main>
<script>
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll("section.slide"));
  function current() {
    var mid = window.innerHeight / 2, best = 0, dist = Infinity;
    slides.forEach(function (s, i) {
      var r = s.getBoundingClientRect(), d = Math.abs(r.top + r.height / 2 - mid);
      if (d < dist) { dist = d; best = i; }
    });
    return best;
  }
  var panel = document.getElementById("presenter"), at = 0, started = Date.now();
  function presenting() { return document.body.classList.contains("presenter"); }
  function show(i) {
    at = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach(function (s, k) {
      s.classList.toggle("current", k === at);
      s.classList.toggle("next", k === at + 1);
    });
    var notes = slides[at].querySelector("aside.notes");
    panel.querySelector(".notes-text").textContent = notes ? notes.textContent : "";
    panel.querySelector(".position").textContent = "Slide " + (at + 1) + " of " + slides.length;
  }
  function present(on) {
    if (!panel) return;
    document.body.classList.toggle("presenter", on);
    if (on) { started = Date.now(); show(current()); }
    else slides[at].scrollIntoView({ block: "center" });
  }
  if (panel) {
    setInterval(function () {
      var s = Math.floor((Date.now() - started) / 1000);
      panel.querySelector(".timer").textContent =
        String(Math.floor(s / 60)).padStart(2, "0") + ":" + String(s % 60).padStart(2, "0");
    }, 500);
    panel.querySelector(".timer").addEventListener("click", function () { started = Date.now(); });
    if (location.hash === "#presenter") present(true);
  }
  document.addEventListener("keydown", function (e) {
    if (panel && (e.key === "p" || e.key === "P")) { present(!presenting()); return; }
    var step = { ArrowDown: 1, ArrowRight: 1, PageDown: 1, " ": 1, ArrowUp: -1, ArrowLeft: -1, PageUp: -1 }[e.key];
    if (e.key === "Home") step = -slides.length;
    if (e.key === "End") step = slides.length;
    if (!step) return;
    e.preventDefault();
    if (presenting()) { show(at + step); return; }
    var next = Math.max(0, Math.min(slides.length - 1, current() + step));
    slides[next].scrollIntoView({ behavior: "smooth", block: "center" });
  });
})();
</script>
</body>
</html>
"##,
    );
    out
}

fn blocks_html(out: &mut String, blocks: &[Block], images: &Images, depth: usize, dark: bool) {
    for block in blocks {
        match block {
            Block::Heading { text, level } => {
                // h1 is the slide title; headings in the body are h2 to h6.
                let h = level.unwrap_or(2).clamp(2, 6);
                let _ = write!(out, "<h{h}>");
                marked(out, text, images);
                let _ = writeln!(out, "</h{h}>");
            }
            Block::Text { text } => {
                out.push_str("<p>");
                marked(out, text, images);
                out.push_str("</p>\n");
            }
            Block::Bullets {
                items,
                ordered,
                start,
            } => list_html(out, items, (*ordered, *start), images, depth + 1, dark),
            Block::Code { code, language } => {
                out.push_str("<pre><code");
                if let Some(lang) = language.as_deref().filter(|l| !l.is_empty()) {
                    out.push_str(" class=\"language-");
                    escape_into(out, lang);
                    out.push('"');
                }
                out.push('>');
                match crate::highlight::highlight(code, language.as_deref(), dark) {
                    Some(lines) => {
                        for (i, line) in lines.iter().enumerate() {
                            if i > 0 {
                                out.push('\n');
                            }
                            for (colour, text) in line {
                                let _ = write!(out, "<span style=\"color:{}\">", colour.hex());
                                escape_into(out, text);
                                out.push_str("</span>");
                            }
                        }
                    }
                    None => escape_into(out, code.trim_end_matches('\n')),
                }
                out.push_str("</code></pre>\n");
            }
            Block::Image {
                asset_id,
                alt,
                width,
                height,
            } => {
                let alt = alt.as_deref().unwrap_or("");
                match images.get(asset_id) {
                    Some(image) if width.is_some() || height.is_some() => {
                        // Sized like the layout: slide pixels in units of the slide.
                        out.push_str("<figure class=\"sized\" style=\"");
                        if let Some(w) = width {
                            let _ = write!(out, "width:calc({w} * var(--u));");
                        }
                        if let Some(h) = height {
                            let _ = write!(out, "height:calc({h} * var(--u));");
                        }
                        out.push_str("\">");
                        img(out, image, alt, None);
                        out.push_str("</figure>\n");
                    }
                    Some(image) => {
                        out.push_str("<figure>");
                        img(out, image, alt, None);
                        out.push_str("</figure>\n");
                    }
                    None => {
                        out.push_str("<div class=\"missing\">[image: ");
                        escape_into(out, if alt.is_empty() { "unavailable" } else { alt });
                        out.push_str("]</div>\n");
                    }
                }
            }
            Block::Quote { blocks } => {
                out.push_str("<blockquote>\n");
                if depth < MAX_NESTING {
                    blocks_html(out, blocks, images, depth + 1, dark);
                }
                out.push_str("</blockquote>\n");
            }
            Block::Table {
                align,
                header,
                rows,
            } => {
                let style = |c: usize| match align.get(c).copied().unwrap_or_default() {
                    Align::Center => " style=\"text-align:center\"",
                    Align::Right => " style=\"text-align:right\"",
                    Align::Left | Align::Auto => "",
                };
                out.push_str("<table>\n<thead><tr>");
                for (c, cell) in header.iter().enumerate() {
                    let _ = write!(out, "<th{}>", style(c));
                    marked(out, cell, images);
                    out.push_str("</th>");
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in rows {
                    out.push_str("<tr>");
                    for (c, cell) in row.iter().enumerate() {
                        let _ = write!(out, "<td{}>", style(c));
                        marked(out, cell, images);
                        out.push_str("</td>");
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Block::Rule => out.push_str("<hr>\n"),
            // `render` splits a slide's blocks at these into `.columns`.
            Block::ColumnBreak => {}
        }
    }
}

/// Background images as absolutely placed boxes; answers the content's left and right
/// insets in percent of the slide width.
fn backgrounds_html(out: &mut String, slide: &Slide, images: &Images) -> (u32, u32) {
    let (mut left, mut right) = (0u32, 0u32);
    let mut boxes: Vec<(u32, u32, &Background)> = Vec::new();
    for position in [BackgroundPosition::Left, BackgroundPosition::Right] {
        let bgs: Vec<&Background> = slide
            .backgrounds
            .iter()
            .filter(|b| b.position == position)
            .collect();
        let Some(first) = bgs.first() else { continue };
        let share = (first.split.unwrap_or(50).clamp(10, 90) as u32)
            .min(90u32.saturating_sub(left + right));
        let start = if position == BackgroundPosition::Left {
            left += share;
            left - share
        } else {
            right += share;
            100 - right
        };
        let n = bgs.len() as u32;
        for (i, bg) in bgs.into_iter().enumerate() {
            boxes.push((start + share * i as u32 / n, share / n, bg));
        }
    }
    let full: Vec<&Background> = slide
        .backgrounds
        .iter()
        .filter(|b| b.position == BackgroundPosition::Full)
        .collect();
    let n = full.len() as u32;
    let mut all: Vec<(u32, u32, &Background)> = full
        .into_iter()
        .enumerate()
        .map(|(i, bg)| (100 * i as u32 / n, 100 / n, bg))
        .collect();
    all.extend(boxes);
    for (x, w, bg) in all {
        let Some(image) = images.get(&bg.asset_id) else {
            continue;
        };
        let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
        let fit = match bg.fit {
            BackgroundFit::Cover => "cover",
            BackgroundFit::Contain => "contain",
        };
        let _ = write!(
            out,
            "<div class=\"bg\" style=\"left: {x}%; width: {w}%; background-size: {fit}; background-image: url(data:"
        );
        escape_into(out, mime);
        out.push_str(";base64,");
        base64::engine::general_purpose::STANDARD.encode_string(&image.bytes, out);
        out.push_str(")\"></div>\n");
    }
    (left, right)
}

/// A list at `depth` (the quotes and lists it sits in, itself included; bounded).
fn list_html(
    out: &mut String,
    items: &[ListItem],
    (ordered, start): (bool, Option<u64>),
    images: &Images,
    depth: usize,
    dark: bool,
) {
    let tag = if ordered { "ol" } else { "ul" };
    let _ = write!(out, "<{tag}");
    if let Some(n) = start.filter(|_| ordered) {
        let _ = write!(out, " start=\"{n}\"");
    }
    out.push('>');
    for item in items {
        // A right-to-left item puts its marker on the right, as PNG and PDF do.
        let rtl = unicode_bidi::get_base_direction(plinth_slides::plain(&item.text).as_str())
            == unicode_bidi::Direction::Rtl;
        out.push_str(if rtl { "<li dir=\"rtl\"" } else { "<li" });
        match item.checked {
            Some(done) => {
                out.push_str(" class=\"task\"><input type=\"checkbox\" disabled");
                if done {
                    out.push_str(" checked");
                }
                out.push_str("> ");
            }
            None => out.push('>'),
        }
        marked(out, &item.text, images);
        if !item.blocks.is_empty() && depth < MAX_NESTING {
            out.push_str("<div class=\"item-blocks\">");
            blocks_html(out, &item.blocks, images, depth, dark);
            out.push_str("</div>");
        }
        if let Some(sub) = item.list.as_ref().filter(|_| depth < MAX_NESTING) {
            list_html(
                out,
                &sub.items,
                (sub.ordered, sub.start),
                images,
                depth + 1,
                dark,
            );
        }
        out.push_str("</li>");
    }
    let _ = writeln!(out, "</{tag}>");
}

fn img(out: &mut String, image: &Image, alt: &str, class: Option<&str>) {
    let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
    out.push_str("<img");
    if let Some(c) = class {
        let _ = write!(out, " class=\"{c}\"");
    }
    out.push_str(" alt=\"");
    escape_into(out, alt);
    out.push_str("\" src=\"data:");
    escape_into(out, mime);
    out.push_str(";base64,");
    base64::engine::general_purpose::STANDARD.encode_string(&image.bytes, out);
    out.push_str("\">");
}

/// Inline marks as `<strong>`, `<em>`, `<s>`, `<code>`, `<a>` and inline `<img>`; line
/// breaks in the text stay line breaks (`white-space: pre-line`).
fn marked(out: &mut String, text: &str, images: &Images) {
    let mut open_link: Option<String> = None;
    for span in spans(text) {
        if open_link != span.link {
            if open_link.take().is_some() {
                out.push_str("</a>");
            }
            // Only allowed schemes reach here (validation), checked again anyway.
            if let Some(url) = span.link.as_deref().filter(|u| link_allowed(u)) {
                out.push_str("<a href=\"");
                escape_into(out, url);
                out.push_str("\">");
                open_link = Some(url.to_owned());
            }
        }
        if let Some(id) = &span.image {
            match images.get(id) {
                Some(image) => img(out, image, &span.text, Some("inline")),
                None => {
                    out.push('[');
                    escape_into(out, &span.text);
                    out.push(']');
                }
            }
            continue;
        }
        let tags: Vec<&str> = [
            (span.bold, "strong"),
            (span.italic, "em"),
            (span.strike, "s"),
            (span.code, "code"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, t)| *t)
        .collect();
        for t in &tags {
            let _ = write!(out, "<{t}>");
        }
        escape_into(out, &span.text);
        for t in tags.iter().rev() {
            let _ = write!(out, "</{t}>");
        }
    }
    if open_link.is_some() {
        out.push_str("</a>");
    }
}

fn escape_into(out: &mut String, text: &str) {
    crate::svg::escape_into(out, text);
}
