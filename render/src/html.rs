//! The deck as one self-contained HTML file: inline CSS, images as data: URLs, one
//! `<section>` per visible slide. Sizes follow the layout engine's (in units of
//! 1/1920 of the slide width via container query units), so slides look alike.

use std::fmt::Write;

use base64::Engine;
use plinth_slides::{spans, Block, Deck, Layout, Theme};

use crate::image::format_of;
use crate::layout::palette;
use crate::{visible, Images};

pub fn render(deck: &Deck, images: &Images) -> String {
    let pal = palette(deck.theme);
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
        r#":root {{ color-scheme: {scheme}; --bg: {bg}; --text: {text}; --title: {title}; --accent: {accent}; --code-bg: {code_bg}; --code-text: {code_text}; --inline-code-bg: {inline}; --muted: {muted}; }}
html {{ scroll-snap-type: y mandatory; background: #0b0d10; }}
body {{ margin: 0; }}
main {{ display: flex; flex-direction: column; align-items: center; gap: 2vh; padding: 2vh 0; }}
section.slide {{ scroll-snap-align: center; width: min(96vw, calc(96vh * 16 / 9)); aspect-ratio: 16 / 9; container-type: inline-size; background: var(--bg); color: var(--text); overflow: hidden; box-shadow: 0 2px 12px rgba(0,0,0,.4); }}
.frame {{ --u: calc(100cqw / 1920); box-sizing: border-box; height: 100%; padding: calc(80 * var(--u)) calc(110 * var(--u)); display: flex; flex-direction: column; gap: calc(30 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(34 * var(--u)); line-height: 1.35; }}
.layout-title .frame {{ justify-content: center; text-align: center; }}
h1 {{ margin: 0 0 calc(16 * var(--u)); font-size: calc(60 * var(--u)); line-height: 1.2; color: var(--title); }}
.layout-title h1 {{ font-size: calc(84 * var(--u)); }}
h1::after {{ content: ""; display: block; width: calc(96 * var(--u)); height: calc(6 * var(--u)); margin-top: calc(16 * var(--u)); border-radius: calc(3 * var(--u)); background: var(--accent); }}
.layout-title h1::after {{ margin-left: auto; margin-right: auto; }}
h2 {{ margin: 0; font-size: calc(46 * var(--u)); line-height: 1.2; }}
p {{ margin: 0; white-space: pre-line; }}
ul, ol {{ margin: 0; padding-left: calc(60 * var(--u)); display: flex; flex-direction: column; gap: calc(12 * var(--u)); }}
.layout-title ul, .layout-title ol {{ align-self: center; text-align: left; }}
li::marker {{ color: var(--accent); }}
code {{ font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; background: var(--inline-code-bg); color: var(--code-text); padding: 0 .18em; border-radius: .15em; }}
pre {{ margin: 0; padding: calc(26 * var(--u)); background: var(--code-bg); border-radius: calc(12 * var(--u)); font-size: calc(26 * var(--u)); line-height: 1.4; overflow: hidden; text-align: left; }}
pre code {{ background: none; padding: 0; }}
figure {{ margin: 0; flex: 1 1 0; min-height: calc(160 * var(--u)); display: flex; justify-content: center; }}
figure img {{ max-width: 100%; max-height: 100%; object-fit: contain; }}
.missing {{ flex: 0 0 auto; padding: calc(30 * var(--u)); background: var(--code-bg); color: var(--muted); font-style: italic; border-radius: calc(12 * var(--u)); }}
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
    );

    for (i, slide) in visible(deck).into_iter().enumerate() {
        let layout = match slide.layout {
            Layout::Title => "layout-title",
            Layout::Content => "layout-content",
        };
        let _ = write!(
            out,
            "<section class=\"slide {layout}\" id=\"slide-{}\" aria-label=\"Slide {}\">\n<div class=\"frame\">\n",
            i + 1,
            i + 1
        );
        if let Some(title) = slide.title.as_deref().filter(|t| !t.trim().is_empty()) {
            out.push_str("<h1>");
            marked(&mut out, title);
            out.push_str("</h1>\n");
        }
        for block in &slide.blocks {
            match block {
                Block::Heading { text } => {
                    out.push_str("<h2>");
                    marked(&mut out, text);
                    out.push_str("</h2>\n");
                }
                Block::Text { text } => {
                    out.push_str("<p>");
                    marked(&mut out, text);
                    out.push_str("</p>\n");
                }
                Block::Bullets { items, ordered } => {
                    let tag = if *ordered { "ol" } else { "ul" };
                    let _ = write!(out, "<{tag}>");
                    for item in items {
                        out.push_str("<li>");
                        marked(&mut out, item);
                        out.push_str("</li>");
                    }
                    let _ = writeln!(out, "</{tag}>");
                }
                Block::Code { code, language } => {
                    out.push_str("<pre><code");
                    if let Some(lang) = language.as_deref().filter(|l| !l.is_empty()) {
                        out.push_str(" class=\"language-");
                        escape_into(&mut out, lang);
                        out.push('"');
                    }
                    out.push('>');
                    escape_into(&mut out, code.trim_end_matches('\n'));
                    out.push_str("</code></pre>\n");
                }
                Block::Image { asset_id, alt } => {
                    let alt = alt.as_deref().unwrap_or("");
                    match images.get(asset_id) {
                        Some(image) => {
                            let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
                            out.push_str("<figure><img alt=\"");
                            escape_into(&mut out, alt);
                            out.push_str("\" src=\"data:");
                            escape_into(&mut out, mime);
                            out.push_str(";base64,");
                            base64::engine::general_purpose::STANDARD
                                .encode_string(&image.bytes, &mut out);
                            out.push_str("\"></figure>\n");
                        }
                        None => {
                            out.push_str("<div class=\"missing\">[image: ");
                            escape_into(&mut out, if alt.is_empty() { "unavailable" } else { alt });
                            out.push_str("]</div>\n");
                        }
                    }
                }
            }
        }
        out.push_str("</div>\n</section>\n");
    }

    // Arrow keys, Page Up/Down and space move a slide at a time; scrolling snaps too.
    out.push_str(
        r#"</main>
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
  document.addEventListener("keydown", function (e) {
    var step = { ArrowDown: 1, ArrowRight: 1, PageDown: 1, " ": 1, ArrowUp: -1, ArrowLeft: -1, PageUp: -1 }[e.key];
    if (e.key === "Home") step = -slides.length;
    if (e.key === "End") step = slides.length;
    if (!step) return;
    e.preventDefault();
    var next = Math.max(0, Math.min(slides.length - 1, current() + step));
    slides[next].scrollIntoView({ behavior: "smooth", block: "center" });
  });
})();
</script>
</body>
</html>
"#,
    );
    out
}

/// Inline marks as `<strong>`, `<em>` and `<code>`.
fn marked(out: &mut String, text: &str) {
    for span in spans(text) {
        let tags: Vec<&str> = [
            (span.bold, "strong"),
            (span.italic, "em"),
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
}

fn escape_into(out: &mut String, text: &str) {
    crate::svg::escape_into(out, text);
}
