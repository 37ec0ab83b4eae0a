//! The deck as one self-contained HTML file: inline CSS, one `<section>` per visible
//! slide, and each image once, as a data: URL in an SVG `<defs>` that every use of it
//! references (`<svg><use href="#pic-N"/></svg>`: an image element of the SVG, so the
//! viewer's `img-src data:` policy covers it).
//!
//! Each slide is drawn from the layout engine's page, as the PDF and PNG are: every
//! text run, box and image absolutely positioned in units of 1/1920 of the slide's
//! width (container query units), so the three agree by construction and the slide
//! scales with the window. The parts the layout marks (title, headings, paragraphs,
//! lists, tables, code…) become elements around their items, in document order, for
//! screen readers and copying.
//!
//! The page is written through [`Out`]: into a `String`, or into a counter that
//! measures it without building it. Its parts: the [`head`] and style sheet, one
//! [`slide`] section each (its [`items`] and [`pics`]), the script.

mod head;
mod items;
mod out;
mod pics;
mod slide;

use plinth_slides::{Deck, Slide};

use crate::image::SvgTrees;
use crate::layout::{self, Page};
use crate::{visible, Budget, Images, RenderError};

use out::{Count, Out};
use pics::Pics;

/// The largest HTML page the renderer builds (an export, or the public viewer's page).
pub const MAX_HTML_BYTES: u64 = 64 << 20;

/// An upper bound of the page's size in bytes, computed without building it: the
/// slides laid out and their markup measured as it would be written (numbers at their
/// longest) and each distinct image's base64 once. `u64::MAX` when the slides cannot
/// be laid out (an image that cannot be read).
pub fn html_size_bound(deck: &Deck, images: &Images, options: crate::Options) -> u64 {
    let (deck, images) = crate::maths::prepare(deck, images);
    let trees = SvgTrees::default();
    match pages(&deck, &images, &trees, &Budget::unlimited()) {
        Ok(pages) => measure(&deck, &pages, &images, &trees, options),
        Err(_) => u64::MAX,
    }
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
    let trees = SvgTrees::default();
    let pages = pages(deck, images, &trees, budget)?;
    // Measured before a byte is written: a page over the limit is never built.
    let bound = measure(deck, &pages, images, &trees, options);
    if bound > limit {
        return Err(RenderError::TooLarge {
            what: "the HTML page",
            name: "MAX_HTML_BYTES",
            size: bound,
            limit,
        });
    }
    let mut pics = Pics::new(images, &trees);
    let mut out = String::with_capacity(bound as usize);
    write_page(&mut out, deck, &pages, &mut pics, options, budget)?;
    pics.defs(&mut out, budget)?;
    tail(&mut out);
    Ok(out)
}

/// Each visible slide and its page, laid out as for the PDF, with its parts marked.
fn pages<'d>(
    deck: &'d Deck,
    images: &Images,
    trees: &SvgTrees,
    budget: &Budget,
) -> Result<Vec<(&'d Slide, Page)>, RenderError> {
    let size = crate::deck_size(deck, crate::Size::default());
    visible(deck)
        .into_iter()
        .map(|slide| {
            budget.check()?;
            let naturals = crate::image::natural_sizes(deck, slide, images, trees, budget)?;
            Ok((slide, layout::page_marked(deck, slide, &naturals, size)))
        })
        .collect()
}

/// The page's size in bytes as [`write_page`], the images' `<defs>` and the tail
/// would write it (numbers counted at their longest).
fn measure(
    deck: &Deck,
    pages: &[(&Slide, Page)],
    images: &Images,
    trees: &SvgTrees,
    options: crate::Options,
) -> u64 {
    let mut count = Count(0);
    let mut pics = Pics::new(images, trees);
    let unlimited = Budget::unlimited();
    let _ = write_page(&mut count, deck, pages, &mut pics, options, &unlimited);
    let _ = pics.defs(&mut count, &unlimited);
    tail(&mut count);
    count.0
}

/// The head and the slides, up to the images' `<defs>`.
fn write_page<O: Out>(
    out: &mut O,
    deck: &Deck,
    pages: &[(&Slide, Page)],
    pics: &mut Pics<'_>,
    options: crate::Options,
    budget: &Budget,
) -> Result<(), RenderError> {
    let units = pages
        .first()
        .map_or(layout::CANVAS_HEIGHT * 16.0 / 9.0, |(_, p)| p.width);
    head::head(out, deck, units);
    for (i, (slide, page)) in pages.iter().enumerate() {
        budget.check()?;
        slide::section(out, deck, slide, page, i, pics, options);
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
