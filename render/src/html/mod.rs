//! The deck as one self-contained HTML file: inline CSS, one `<section>` per visible
//! slide, and each image once, as a data: URL in an SVG `<defs>` that every use of it
//! references (`<svg><use href="#pic-N"/></svg>`: an image element of the SVG, so the
//! viewer's `img-src data:` policy covers it). Sizes follow the layout engine's (in
//! units of 1/1920 of the slide width via container query units), so slides look alike.
//!
//! The page is written through [`Out`]: into a `String`, or into a counter that
//! measures it without building it ([`html_size_bound`]). Its parts: the [`head`] and
//! style sheet, one [`slide`] section each (its [`blocks`] and [`pics`]), the script.

mod blocks;
mod custom;
mod head;
mod out;
mod pics;
mod slide;

use plinth_slides::Deck;

use crate::image::SvgTrees;
use crate::{visible, Budget, Images, RenderError};

use out::{Count, Out};
use pics::Pics;

/// The largest HTML page the renderer builds (an export, or the public viewer's page).
pub const MAX_HTML_BYTES: u64 = 64 << 20;

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
    head::head(out, deck);
    for (i, slide) in visible(deck).into_iter().enumerate() {
        budget.check()?;
        slide::section(out, deck, slide, i, pics, options, budget)?;
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
