//! The deck as one self-contained HTML file: inline CSS, one `<section>` per visible
//! slide, and each image once, as a data: URL in an SVG `<defs>` that every use of it
//! references (`<svg><use href="#pic-N"/></svg>`: an image element of the SVG, so the
//! viewer's `img-src data:` policy covers it). Sizes follow the layout engine's (in
//! units of 1/1920 of the slide width via container query units), so slides look alike.
//!
//! The page is written through [`Out`]: into a `String`, or into a counter that
//! measures it without building it ([`html_size_bound`]).

use std::collections::HashMap;
use std::fmt::Write;

use base64::Engine;
use plinth_slides::{
    link_allowed, spans, Align, Aspect, Background, BackgroundFit, BackgroundPosition, Block, Deck,
    Layout, ListItem, Slide, Theme, MAX_NESTING,
};

use crate::image::{format_of, natural_size, SvgTrees};
use crate::layout::slide_palette;
use crate::{visible, Budget, Images, RenderError};

/// The largest HTML page the renderer builds (an export, or the public viewer's page).
pub const MAX_HTML_BYTES: u64 = 64 << 20;

/// Where the page is written.
trait Out: Write {
    fn push_str(&mut self, s: &str);
    fn push(&mut self, c: char);
    /// A size in CSS pixels: at most 9 characters.
    fn number(&mut self, v: f32);
    fn base64(&mut self, bytes: &[u8]);
    /// A code block's content, highlighted.
    fn code(&mut self, code: &str, language: Option<&str>, dark: bool);
}

impl Out for String {
    fn push_str(&mut self, s: &str) {
        String::push_str(self, s);
    }
    fn push(&mut self, c: char) {
        String::push(self, c);
    }
    fn number(&mut self, v: f32) {
        String::push_str(self, &crate::svg::num(v.clamp(0.0, 999_999.0)));
    }
    fn base64(&mut self, bytes: &[u8]) {
        base64::engine::general_purpose::STANDARD.encode_string(bytes, self);
    }
    fn code(&mut self, code: &str, language: Option<&str>, dark: bool) {
        match crate::highlight::highlight(code, language, dark) {
            Some(lines) => {
                for (i, line) in lines.iter().enumerate() {
                    if i > 0 {
                        String::push(self, '\n');
                    }
                    for (colour, text) in line {
                        let _ = write!(self, "<span style=\"color:{}\">", colour.hex());
                        escape_into(self, text);
                        String::push_str(self, "</span>");
                    }
                }
            }
            None => escape_into(self, code.trim_end_matches('\n')),
        }
    }
}

/// Counts what would be written; numbers and highlighted code at their longest.
struct Count(u64);

impl Write for Count {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len() as u64;
        Ok(())
    }
}

impl Out for Count {
    fn push_str(&mut self, s: &str) {
        self.0 += s.len() as u64;
    }
    fn push(&mut self, c: char) {
        self.0 += c.len_utf8() as u64;
    }
    fn number(&mut self, _: f32) {
        self.0 += 9;
    }
    fn base64(&mut self, bytes: &[u8]) {
        self.0 += (bytes.len() as u64).div_ceil(3) * 4;
    }
    fn code(&mut self, code: &str, _: Option<&str>, _: bool) {
        // Each character its own run: `<span style="color:#rrggbb">` and `</span>`
        // (35 bytes) around at most 6 bytes of escaped text; tabs become 4 spaces.
        self.0 += 41 * code.len() as u64;
    }
}

/// The images a page uses, each numbered at its first use, with its size.
struct Pics<'a> {
    images: &'a Images,
    /// `None` while measuring: sizes are not needed then.
    trees: Option<&'a SvgTrees>,
    index: HashMap<&'a str, usize>,
    used: Vec<(&'a str, f32, f32)>,
}

impl<'a> Pics<'a> {
    fn new(images: &'a Images, trees: Option<&'a SvgTrees>) -> Pics<'a> {
        Pics {
            images,
            trees,
            index: HashMap::new(),
            used: Vec::new(),
        }
    }

    /// The image's number and natural size (what a browser would take for an `<img>`;
    /// an SVG image usvg cannot size gets a browser's default of 300×150).
    fn get(&mut self, id: &str) -> Option<(usize, f32, f32)> {
        let (key, image) = self.images.get_key_value(id)?;
        if let Some(&k) = self.index.get(id) {
            let (_, w, h) = self.used[k];
            return Some((k, w, h));
        }
        let (w, h) = match self.trees {
            Some(trees) => match natural_size(key, image, trees) {
                Ok(Some(n)) if n.width > 0.0 && n.height > 0.0 => (n.width, n.height),
                _ => (300.0, 150.0),
            },
            None => (0.0, 0.0),
        };
        self.index.insert(key.as_str(), self.used.len());
        self.used.push((key.as_str(), w, h));
        Some((self.used.len() - 1, w, h))
    }

    /// Every image used, once.
    fn defs<O: Out>(&self, out: &mut O, budget: &Budget) -> Result<(), RenderError> {
        if self.used.is_empty() {
            return Ok(());
        }
        out.push_str("<svg class=\"pics\" aria-hidden=\"true\"><defs>\n");
        for (k, (id, w, h)) in self.used.iter().enumerate() {
            budget.check()?;
            let image = &self.images[*id];
            let mime = format_of(image).map_or(image.mime.as_str(), |f| f.mime());
            let _ = write!(out, "<image id=\"pic-{k}\" width=\"");
            out.number(*w);
            out.push_str("\" height=\"");
            out.number(*h);
            out.push_str("\" preserveAspectRatio=\"none\" href=\"data:");
            escape_into(out, mime);
            out.push_str(";base64,");
            out.base64(&image.bytes);
            out.push_str("\"/>\n");
        }
        out.push_str("</defs></svg>\n");
        Ok(())
    }
}

/// An upper bound of the page's size in bytes, computed without building it: the
/// markup measured as it would be written (numbers and highlighted code at their
/// longest) and each distinct image's base64 once.
pub fn html_size_bound(deck: &Deck, images: &Images, options: crate::Options) -> u64 {
    let mut count = Count(0);
    let mut pics = Pics::new(images, None);
    let unlimited = Budget::unlimited();
    let _ = write_page(&mut count, deck, &mut pics, options, &unlimited);
    let _ = pics.defs(&mut count, &unlimited);
    tail(&mut count);
    count.0
}

pub fn render(
    deck: &Deck,
    images: &Images,
    options: crate::Options,
    budget: &Budget,
) -> Result<String, RenderError> {
    render_within(deck, images, options, budget, MAX_HTML_BYTES)
}

/// [`render`] with the limit as a parameter (tests use a small one).
pub fn render_within(
    deck: &Deck,
    images: &Images,
    options: crate::Options,
    budget: &Budget,
    limit: u64,
) -> Result<String, RenderError> {
    budget.check()?;
    let bound = html_size_bound(deck, images, options);
    if bound > limit {
        return Err(RenderError::TooLarge {
            what: "the HTML page",
            name: "MAX_HTML_BYTES",
            size: bound,
            limit,
        });
    }
    let trees = SvgTrees::default();
    let mut pics = Pics::new(images, Some(&trees));
    let mut out = String::with_capacity(bound as usize);
    write_page(&mut out, deck, &mut pics, options, budget)?;
    pics.defs(&mut out, budget)?;
    tail(&mut out);
    Ok(out)
}

/// The head and the slides, up to the images' `<defs>`.
fn write_page<O: Out>(
    out: &mut O,
    deck: &Deck,
    pics: &mut Pics<'_>,
    options: crate::Options,
    budget: &Budget,
) -> Result<(), RenderError> {
    // The deck's own colours and brand; slides with their own get them inline below.
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
        r#":root {{ color-scheme: {scheme}; --bg: {bg}; --text: {text}; --title: {title}; --accent: {accent}; --code-bg: {code_bg}; --code-text: {code_text}; --inline-code-bg: {inline}; --muted: {muted}; --stripe: {stripe}; --rule: {rule}; --quote-bar: {quote_bar}; }}
html {{ scroll-snap-type: y mandatory; background: #0b0d10; }}
body {{ margin: 0; }}
main {{ display: flex; flex-direction: column; align-items: center; gap: 2vh; padding: 2vh 0; }}
section.slide {{ position: relative; scroll-snap-align: center; width: min(96vw, calc(96vh * {aw} / {ah})); aspect-ratio: {aw} / {ah}; container-type: inline-size; background: var(--bg); color: var(--text); overflow: hidden; box-shadow: 0 2px 12px rgba(0,0,0,.4); }}
section.slide > * {{ --u: calc(100cqw / {units}); }}
section.slide > .frame {{ --u: calc(100cqw / {units} * var(--s, 1)); }}
svg.pic {{ width: auto; height: auto; }}
svg.pics {{ position: absolute; width: 0; height: 0; overflow: hidden; }}
svg.bg {{ position: absolute; top: 0; height: 100%; }}
.chrome {{ position: absolute; left: calc(110 * var(--u)); right: calc(110 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(24 * var(--u)); line-height: 1.2; color: var(--muted); white-space: nowrap; overflow: hidden; }}
header.chrome {{ top: calc(26 * var(--u)); }}
footer.chrome {{ bottom: calc(26 * var(--u)); }}
.page-number {{ position: absolute; right: calc(110 * var(--u)); bottom: calc(26 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(24 * var(--u)); color: var(--muted); }}
figure.sized {{ flex: 0 0 auto; align-self: flex-start; max-width: 100%; }}
.layout-title figure.sized {{ align-self: center; }}
figure.sized svg.pic {{ width: 100%; height: 100%; }}
.frame {{ position: absolute; top: 0; bottom: 0; box-sizing: border-box; padding: calc(80 * var(--u)) calc(110 * var(--u)); display: flex; flex-direction: column; gap: calc(30 * var(--u)); font-family: "DejaVu Sans", Verdana, sans-serif; font-size: calc(40 * var(--u)); line-height: 1.35; }}
.layout-title .frame {{ justify-content: center; text-align: center; }}
.body {{ flex: 1 1 auto; min-height: 0; display: flex; flex-direction: column; gap: calc(30 * var(--u)); justify-content: safe center; }}
.layout-title .body {{ display: contents; }}
svg.logo {{ position: absolute; top: calc(16 * var(--u)); right: calc(110 * var(--u)); height: calc(56 * var(--u)); max-width: calc(280 * var(--u)); }}
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
figure svg.pic {{ max-width: 100%; max-height: 100%; }}
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
svg.inline {{ height: 1em; vertical-align: -0.15em; margin: 0 .08em; }}
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
        budget.check()?;
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
        let (left, right) = backgrounds_html(out, slide, pics);
        if let Some(logo) = deck.logo.as_deref() {
            if pic(out, pics, logo, "logo", "logo", "xMaxYMid meet") {
                out.push('\n');
            }
        }
        // The frame at the step the layout engine shrank this slide to, so the page
        // never cuts what the PDF and PNG show (a long listing).
        let _ = write!(
            out,
            "<div class=\"frame\" style=\"left: {left}%; right: {right}%; --s: "
        );
        out.number(fit_scale(deck, slide, pics, budget)?);
        out.push_str("\">\n");
        if let Some(title) = slide.title.as_deref().filter(|t| !t.trim().is_empty()) {
            out.push_str("<h1>");
            marked(out, title, pics);
            out.push_str("</h1>\n");
        }
        // The body, centred in the room under the title as the layout engine does it.
        if !slide.blocks.is_empty() {
            out.push_str("<div class=\"body\">\n");
            if slide.blocks.contains(&Block::ColumnBreak) {
                out.push_str("<div class=\"columns\">\n");
                for blocks in slide.blocks.split(|b| *b == Block::ColumnBreak) {
                    out.push_str("<div class=\"column\">\n");
                    blocks_html(out, blocks, pics, 0, own.dark);
                    out.push_str("</div>\n");
                }
                out.push_str("</div>\n");
            } else {
                blocks_html(out, &slide.blocks, pics, 0, own.dark);
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
                marked(out, text, pics);
                let _ = writeln!(out, "</{tag}>");
            }
        }
        if let Some(n) = crate::layout::page_number(deck, slide) {
            if right > 0 {
                let _ = writeln!(
                    out,
                    "<span class=\"page-number\" style=\"right: calc({right}% + 110 * var(--u))\">{n}</span>"
                );
            } else {
                let _ = writeln!(out, "<span class=\"page-number\">{n}</span>");
            }
        }
        if options.notes {
            if let Some(notes) = slide.notes.as_deref().filter(|n| !n.trim().is_empty()) {
                out.push_str("<aside class=\"notes\">");
                escape_into(out, notes);
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
    Ok(())
}

/// The layout engine's shrink step for a slide (1 while only measuring the page).
fn fit_scale(
    deck: &Deck,
    slide: &Slide,
    pics: &Pics<'_>,
    budget: &Budget,
) -> Result<f32, RenderError> {
    let Some(trees) = pics.trees else {
        return Ok(1.0);
    };
    let naturals = crate::image::natural_sizes(deck, slide, pics.images, trees, budget)?;
    let size = crate::deck_size(deck, crate::Size::default());
    Ok(crate::layout::page(deck, slide, &naturals, size).scale)
}

/// From `</main>` on: the export's own script.
fn tail<O: Out>(out: &mut O) {
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
}

fn blocks_html<O: Out>(
    out: &mut O,
    blocks: &[Block],
    pics: &mut Pics<'_>,
    depth: usize,
    dark: bool,
) {
    for block in blocks {
        match block {
            Block::Heading { text, level, .. } => {
                // h1 is the slide title; headings in the body are h2 to h6.
                let h = level.unwrap_or(2).clamp(2, 6);
                let _ = write!(out, "<h{h}>");
                marked(out, text, pics);
                let _ = writeln!(out, "</h{h}>");
            }
            Block::Text { text } => {
                out.push_str("<p>");
                marked(out, text, pics);
                out.push_str("</p>\n");
            }
            Block::Bullets {
                items,
                ordered,
                start,
            } => list_html(out, items, (*ordered, *start), pics, depth + 1, dark),
            Block::Code { code, language } => {
                out.push_str("<pre><code");
                if let Some(lang) = language.as_deref().filter(|l| !l.is_empty()) {
                    out.push_str(" class=\"language-");
                    escape_into(out, lang);
                    out.push('"');
                }
                out.push('>');
                out.code(code, language.as_deref(), dark);
                out.push_str("</code></pre>\n");
            }
            Block::Image {
                asset_id,
                alt,
                width,
                height,
            } => {
                let alt = alt.as_deref().unwrap_or("");
                match pics.images.contains_key(asset_id) {
                    true if width.is_some() || height.is_some() => {
                        // Sized like the layout: slide pixels in units of the slide.
                        out.push_str("<figure class=\"sized\" style=\"");
                        if let Some(w) = width {
                            let _ = write!(out, "width:calc({w} * var(--u));");
                        }
                        if let Some(h) = height {
                            let _ = write!(out, "height:calc({h} * var(--u));");
                        }
                        out.push_str("\">");
                        pic(out, pics, asset_id, alt, "", "xMidYMid meet");
                        out.push_str("</figure>\n");
                    }
                    true => {
                        out.push_str("<figure>");
                        pic(out, pics, asset_id, alt, "", "xMidYMid meet");
                        out.push_str("</figure>\n");
                    }
                    false => {
                        out.push_str("<div class=\"missing\">[image: ");
                        escape_into(out, if alt.is_empty() { "unavailable" } else { alt });
                        out.push_str("]</div>\n");
                    }
                }
            }
            Block::Quote { blocks } => {
                out.push_str("<blockquote>\n");
                if depth < MAX_NESTING {
                    blocks_html(out, blocks, pics, depth + 1, dark);
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
                    marked(out, cell, pics);
                    out.push_str("</th>");
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in rows {
                    out.push_str("<tr>");
                    for (c, cell) in row.iter().enumerate() {
                        let _ = write!(out, "<td{}>", style(c));
                        marked(out, cell, pics);
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
fn backgrounds_html<O: Out>(out: &mut O, slide: &Slide, pics: &mut Pics<'_>) -> (u32, u32) {
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
        let Some((k, nw, nh)) = pics.get(&bg.asset_id) else {
            continue;
        };
        // `slice` covers the box as `background-size: cover` would, `meet` contains.
        let fit = match bg.fit {
            BackgroundFit::Cover => "slice",
            BackgroundFit::Contain => "meet",
        };
        let _ = write!(
            out,
            "<svg class=\"bg\" style=\"left: {x}%; width: {w}%\" aria-hidden=\"true\" viewBox=\"0 0 "
        );
        out.number(nw);
        out.push(' ');
        out.number(nh);
        let _ = writeln!(
            out,
            "\" preserveAspectRatio=\"xMidYMid {fit}\"><use href=\"#pic-{k}\"/></svg>"
        );
    }
    (left, right)
}

/// A list at `depth` (the quotes and lists it sits in, itself included; bounded).
fn list_html<O: Out>(
    out: &mut O,
    items: &[ListItem],
    (ordered, start): (bool, Option<u64>),
    pics: &mut Pics<'_>,
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
        marked(out, &item.text, pics);
        if !item.blocks.is_empty() && depth < MAX_NESTING {
            out.push_str("<div class=\"item-blocks\">");
            blocks_html(out, &item.blocks, pics, depth, dark);
            out.push_str("</div>");
        }
        if let Some(sub) = item.list.as_ref().filter(|_| depth < MAX_NESTING) {
            list_html(
                out,
                &sub.items,
                (sub.ordered, sub.start),
                pics,
                depth + 1,
                dark,
            );
        }
        out.push_str("</li>");
    }
    let _ = writeln!(out, "</{tag}>");
}

/// A use of an image, sized as an `<img>` of it would be; false when there is no
/// such image.
fn pic<O: Out>(
    out: &mut O,
    pics: &mut Pics<'_>,
    id: &str,
    alt: &str,
    class: &str,
    align: &str,
) -> bool {
    let Some((k, w, h)) = pics.get(id) else {
        return false;
    };
    out.push_str("<svg class=\"pic");
    if !class.is_empty() {
        out.push(' ');
        out.push_str(class);
    }
    out.push_str("\" role=\"img\" aria-label=\"");
    escape_into(out, alt);
    out.push_str("\" width=\"");
    out.number(w);
    out.push_str("\" height=\"");
    out.number(h);
    out.push_str("\" viewBox=\"0 0 ");
    out.number(w);
    out.push(' ');
    out.number(h);
    let _ = write!(
        out,
        "\" preserveAspectRatio=\"{align}\"><use href=\"#pic-{k}\"/></svg>"
    );
    true
}

/// Inline marks as `<strong>`, `<em>`, `<s>`, `<code>`, `<a>` and inline images; line
/// breaks in the text stay line breaks (`white-space: pre-line`).
fn marked<O: Out>(out: &mut O, text: &str, pics: &mut Pics<'_>) {
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
            if !pic(out, pics, id, &span.text, "inline", "xMidYMid meet") {
                out.push('[');
                escape_into(out, &span.text);
                out.push(']');
            }
            continue;
        }
        let tags: Vec<&str> = [
            (span.bold, "strong"),
            (span.italic, "em"),
            (span.strike, "s"),
            (span.code, "code"),
            (span.sub, "sub"),
            (span.sup, "sup"),
            (span.small, "small"),
            (span.mark, "mark"),
            (span.underline, "u"),
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

fn escape_into<O: Out>(out: &mut O, text: &str) {
    crate::svg::escape_into(out, text);
}
