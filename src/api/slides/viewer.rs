//! The audience viewer: what the published URL answers to a browser. The page is the
//! renderer's HTML export of the audience deck (no notes, no hidden slides; every deck
//! text escaped by the renderer) with the renderer's own script replaced by the
//! viewer's: one slide at a time scaled to the window, keyboard navigation, a counter
//! and fullscreen. The policy allows only the viewer's script, by its hash.

use std::sync::{Arc, LazyLock};

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use plinth_render::{Image, Images};
use sha2::{Digest, Sha256};

use super::*;

/// Keys: → ↓ PageDown Space Enter forward; ← ↑ PageUp Backspace Shift+Space back;
/// Home/End first/last; `f` fullscreen; `p` opens the presenter window. A click or tap
/// on the right two thirds goes forward, on the left third back; a swipe left or right
/// turns the page. `#n` in the URL opens slide n. `#presenter` is the presenter window:
/// the current slide, the next one, the counter and a timer; it and every audience
/// window of the same publication follow each other (a BroadcastChannel per page).
const SCRIPT: &str = r##"
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll("main > section.slide"));
  var counter = document.getElementById("viewer-counter"), at = 0;
  var presenter = location.hash === "#presenter";
  var channel = typeof BroadcastChannel === "function" ? new BroadcastChannel("plinth-viewer:" + location.pathname) : null;
  var timer = document.getElementById("viewer-timer"), started = Date.now();
  if (presenter) document.body.classList.add("viewer-presenter");
  function show(i, quiet) {
    if (!slides.length) { counter.textContent = "0 / 0"; return; }
    at = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach(function (s, k) {
      s.classList.toggle("current", k === at);
      s.classList.toggle("next", presenter && k === at + 1);
    });
    counter.textContent = (at + 1) + " / " + slides.length;
    if (!presenter && history.replaceState) history.replaceState(null, "", "#" + (at + 1));
    if (channel && !quiet) channel.postMessage({ at: at });
  }
  if (channel) channel.onmessage = function (e) {
    if (e.data && typeof e.data.at === "number") show(e.data.at, true);
  };
  function tick() {
    var s = Math.floor((Date.now() - started) / 1000);
    timer.textContent = Math.floor(s / 60) + ":" + ("0" + (s % 60)).slice(-2);
  }
  if (presenter) { tick(); setInterval(tick, 1000); }
  function fullscreen() {
    var d = document;
    if (d.fullscreenElement) { if (d.exitFullscreen) d.exitFullscreen(); return; }
    var r = d.documentElement.requestFullscreen && d.documentElement.requestFullscreen();
    if (r && r.catch) r.catch(function () {});
  }
  var first = parseInt(location.hash.slice(1), 10);
  show(first > 0 ? first - 1 : 0, true);
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "f" || e.key === "F") { e.preventDefault(); fullscreen(); return; }
    if ((e.key === "p" || e.key === "P") && !presenter) {
      e.preventDefault();
      window.open(location.pathname + "#presenter", "plinth-presenter", "popup,width=1100,height=700");
      return;
    }
    if ((e.key === "t" || e.key === "T") && presenter) { started = Date.now(); tick(); return; }
    var step = { ArrowRight: 1, ArrowDown: 1, PageDown: 1, " ": 1, Enter: 1,
                 ArrowLeft: -1, ArrowUp: -1, PageUp: -1, Backspace: -1 }[e.key];
    if (e.key === " " && e.shiftKey) step = -1;
    var to = e.key === "Home" ? 0 : e.key === "End" ? slides.length - 1 : step ? at + step : null;
    if (to === null) return;
    e.preventDefault();
    show(to);
  });
  // Mouse, touch and pen alike: a swipe turns the page its way, a tap goes by side.
  var down = null;
  document.addEventListener("pointerdown", function (e) {
    down = e.isPrimary ? { x: e.clientX, y: e.clientY } : null;
  });
  document.addEventListener("pointerup", function (e) {
    if (!down || !e.isPrimary) return;
    var dx = e.clientX - down.x, dy = e.clientY - down.y;
    down = null;
    if (e.target && e.target.closest && e.target.closest("a")) return;
    if (Math.abs(dx) > 40 && Math.abs(dx) > Math.abs(dy)) { show(at + (dx < 0 ? 1 : -1)); return; }
    if (Math.abs(dx) > 10 || Math.abs(dy) > 10 || e.button > 0) return;
    show(at + (e.clientX < window.innerWidth / 3 ? -1 : 1));
  });
})();
"##;

/// Everything after the slides: the counter and the viewer's script.
static TAIL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "</main>\n<div id=\"viewer-counter\" aria-live=\"polite\"></div>\n<div id=\"viewer-timer\"></div>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
});

/// The viewer's policy: its one script by hash, images only as data: URLs (the
/// renderer inlines them), nothing fetched, never framed.
static POLICY: LazyLock<HeaderValue> = LazyLock::new(|| {
    let digest = Sha256::digest(SCRIPT.as_bytes());
    let csp = format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'unsafe-inline'; \
         img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, digest)
    );
    HeaderValue::from_str(&csp).expect("a policy of ASCII text")
});

const NOT_FOUND: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Not found</title>\
<style>body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;\
background:#0b0d10;color:#e8ebef;font-family:sans-serif}</style></head>\n<body><main><h1>\
This presentation is not available</h1><p>It was never published, or it has been taken down.\
</p></main></body>\n</html>\n";

/// Whether the client asked for HTML over JSON: `text/html` (or `text/*`) with a
/// higher weight than `application/json` (or `application/*`, `*/*`). A tie, no
/// `Accept` or `*/*` alone keeps the JSON answer API clients have always had.
pub(super) fn wants_html(headers: &HeaderMap) -> bool {
    let mut html = 0.0f32;
    let mut json = 0.0f32;
    for accept in headers.get_all(header::ACCEPT) {
        let Ok(accept) = accept.to_str() else {
            continue;
        };
        for item in accept.split(',') {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0)
                .clamp(0.0, 1.0);
            match media.as_str() {
                "text/html" | "text/*" => html = html.max(q),
                "application/json" | "application/*" | "*/*" => json = json.max(q),
                _ => {}
            }
        }
    }
    html > json
}

/// Marks the answer as depending on `Accept`, so no cache hands a page to an API client.
pub(super) fn vary_accept(mut res: Response) -> Response {
    res.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("accept"));
    res
}

/// The page a browser gets for an unknown or withdrawn publication.
pub(super) fn not_found_page() -> Response {
    vary_accept(crate::http::pages::send(
        StatusCode::NOT_FOUND,
        NOT_FOUND.to_owned(),
        POLICY.clone(),
    ))
}

/// How long a rendered viewer page is served from memory: a publication's content never
/// changes, but an image deleted from the deck should leave its page soon.
const PAGE_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// Rendered pages by publication id, in one shard holding one page of the renderer's
/// largest size and then some (a sharded cache splits its capacity, and pages between a
/// shard's share and the limit were never kept, so each view built them again): without it every view read
/// and hashed each image from storage and rendered the deck again. Whether the
/// publication is still active is read from the database on every request, before this.
/// A page is shared bytes: every response sends the cached page, never a copy of it, and
/// concurrent first views of one publication build it once (security review N-H2).
#[derive(Clone)]
struct ByLength;

type Page = (std::time::Instant, bytes::Bytes);

impl quick_cache::Weighter<String, Page> for ByLength {
    fn weight(&self, _: &String, v: &Page) -> u64 {
        v.1.len().max(1) as u64
    }
}

type Pages = quick_cache::sync::Cache<String, Page, ByLength>;

static PAGES: LazyLock<Pages> = LazyLock::new(|| {
    let options = quick_cache::OptionsBuilder::new()
        .shards(1)
        .estimated_items_capacity(256)
        // The hot section (97 %) must hold the largest page.
        .weight_capacity(plinth_render::MAX_HTML_BYTES * 9 / 8)
        .build()
        .expect("valid cache options");
    Pages::with_options(options, ByLength, Default::default(), Default::default())
});

/// How long building one viewer page may take (its images read, the deck rendered).
const BUILD_LIMIT: std::time::Duration = std::time::Duration::from_secs(8);

/// The viewer page of a publication's audience content.
pub(super) async fn page(
    app: &AppState,
    publication_id: &str,
    deck_id: &str,
    content: &Value,
) -> ApiResult<Response> {
    let html = loop {
        match PAGES.get_value_or_guard_async(publication_id).await {
            Ok((at, html)) if at.elapsed() < PAGE_TTL => break html,
            Ok(_) => {
                PAGES.remove(publication_id);
            }
            Err(guard) => {
                let html = build(app, deck_id, content).await?;
                let _ = guard.insert((std::time::Instant::now(), html.clone()));
                break html;
            }
        }
    };
    Ok(vary_accept(crate::http::pages::send(
        StatusCode::OK,
        html,
        POLICY.clone(),
    )))
}

/// Renders a publication's page on the render pool, within [`BUILD_LIMIT`] and the
/// renderer's page limit (`MAX_HTML_BYTES`), which is checked against the images' stored
/// sizes before any of them is read.
async fn build(app: &AppState, deck_id: &str, content: &Value) -> ApiResult<bytes::Bytes> {
    // Stored content is already the audience deck; filtering again costs nothing and
    // keeps notes and hidden slides out even of content stored by an older release.
    let deck = Deck::from_json(content.clone())
        .map_err(ApiError::internal)?
        .audience();
    let images = images(app, deck_id, &deck).await?;
    let budget = plinth_render::Budget::new(
        Arc::default(),
        Some(std::time::Instant::now() + BUILD_LIMIT),
    );
    // A client that goes away (or the request deadline) stops the render too.
    let _stop = StopOnDrop(budget.clone());
    plinth_workers::render_pool()
        .run(move || viewer_html(&deck, &images, &budget))
        .await
        .map_err(ApiError::internal)?
        .map(bytes::Bytes::from)
        .map_err(|e| ApiError::unprocessable(e.to_string()))
}

/// Cancels a render when the request that wanted it is dropped.
struct StopOnDrop(plinth_render::Budget);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The deck's ready images, checked against their sha256 as the export worker does (an
/// object replaced through its upload URL after validation is left out, L4). A missing
/// one is drawn by the renderer as a placeholder.
async fn images(app: &AppState, deck_id: &str, deck: &Deck) -> ApiResult<Images> {
    let ids = deck.asset_ids();
    let mut out = Images::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let assets = store::deck_assets(&app.db, deck_id).await?;
    let used: Vec<_> = assets
        .iter()
        .filter(|a| a.status == plinth_vocab::AssetStatus::Ready && ids.contains(&a.id))
        .collect();
    // Each image goes into the page once, as base64: a page that could not be sent is
    // refused before a byte of its images is read.
    let inlined: u64 = used
        .iter()
        .map(|a| (a.size.max(0) as u64).div_ceil(3) * 4)
        .sum();
    if inlined > plinth_render::MAX_HTML_BYTES {
        return Err(ApiError::unprocessable(format!(
            "the page's images would be {inlined} bytes, over the limit of {} bytes \
             (MAX_HTML_BYTES); use fewer or smaller images",
            plinth_render::MAX_HTML_BYTES
        ))
        .with("max_bytes", plinth_render::MAX_HTML_BYTES));
    }
    for a in used {
        let fetched = app
            .objects
            .get_limited(&a.object_key, MAX_ASSET_BYTES)
            .await?;
        if let Ok(bytes) = fetched.verified(&a.sha256) {
            out.insert(
                a.id.clone(),
                Image {
                    mime: a.mime.clone(),
                    bytes,
                },
            );
        }
    }
    Ok(out)
}

/// The export's head and slides, with the viewer's style and tail.
fn viewer_html(
    deck: &Deck,
    images: &Images,
    budget: &plinth_render::Budget,
) -> Result<String, plinth_render::RenderError> {
    let export = plinth_render::deck_html(deck, images, budget)?;
    let (w, h) = if deck.aspect == Some(plinth_slides::Aspect::Standard) {
        (4, 3)
    } else {
        (16, 9)
    };
    let style = format!(
        "<style>\n\
         html {{ scroll-snap-type: none; height: 100%; overflow: hidden; }}\n\
         body {{ height: 100%; overflow: hidden; }}\n\
         main {{ height: 100vh; padding: 0; gap: 0; justify-content: center; }}\n\
         main > section.slide {{ display: none; box-shadow: none; width: min(100vw, calc(100vh * {w} / {h})); }}\n\
         main > section.slide.current {{ display: block; }}\n\
         #viewer-counter {{ position: fixed; right: 12px; bottom: 8px; padding: 2px 8px; border-radius: 4px; background: rgba(0,0,0,.5); color: #e8ebef; font: 14px/1.4 \"DejaVu Sans\", Verdana, sans-serif; font-variant-numeric: tabular-nums; }}\n\
         :fullscreen #viewer-counter {{ opacity: .6; }}\n\
         main > section.slide {{ touch-action: pan-y; user-select: none; }}\n\
         #viewer-timer {{ display: none; }}\n\
         body.viewer-presenter main {{ display: flex; flex-direction: row; align-items: flex-start; justify-content: flex-start; gap: 2vw; padding: 2vh 2vw; box-sizing: border-box; }}\n\
         body.viewer-presenter main > section.slide.current {{ width: 62vw; }}\n\
         body.viewer-presenter main > section.slide.next {{ display: block; width: 32vw; opacity: .85; }}\n\
         body.viewer-presenter #viewer-counter {{ left: 2vw; right: auto; bottom: 4vh; font-size: 3vh; }}\n\
         body.viewer-presenter #viewer-timer {{ display: block; position: fixed; left: 66vw; bottom: 4vh; color: #e8ebef; font: 6vh/1 \"DejaVu Sans\", Verdana, sans-serif; font-variant-numeric: tabular-nums; }}\n\
         </style>\n</head>"
    );
    // The head is the renderer's template (deck text there is escaped), so its first
    // `</head>` is the real one; `</main>` is last in the body, after every slide.
    let head_end = export.find("</head>");
    let main_end = export.rfind("</main>");
    match (head_end, main_end) {
        (Some(he), Some(me)) if he < me => {
            let mut out = String::with_capacity(export.len() + 2048);
            out.push_str(&export[..he]);
            out.push_str(&style);
            out.push_str(&export[he + "</head>".len()..me]);
            out.push_str(&TAIL);
            Ok(out)
        }
        // The renderer's page changed shape: its slides, with no script at all, rather
        // than a page whose script the policy would block half of.
        _ => Ok(export),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn browsers_get_html_and_api_clients_json() {
        let chrome =
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
        assert!(wants_html(&accept(chrome)));
        assert!(wants_html(&accept("text/html")));
        assert!(!wants_html(&HeaderMap::new()));
        assert!(!wants_html(&accept("*/*")));
        assert!(!wants_html(&accept("application/json")));
        assert!(!wants_html(&accept("application/json, text/html")));
        assert!(!wants_html(&accept("text/html;q=0.5, application/json")));
        assert!(!wants_html(&accept("text/html;q=0")));
    }

    #[test]
    fn the_policy_names_the_one_script_of_the_tail() {
        let policy = crate::http::pages::policy_for(&TAIL);
        let own = POLICY.to_str().unwrap();
        let hash = policy
            .to_str()
            .unwrap()
            .split(';')
            .find(|p| p.trim().starts_with("script-src"))
            .unwrap()
            .trim()
            .to_owned();
        assert!(own.contains(&hash), "{own} / {hash}");
        assert!(!own.contains("script-src 'unsafe"), "{own}");
    }
}
