//! `plinth slides watch DECK.md`: a live preview on the author's machine. The deck is
//! drawn as `render --format html` draws it, served on 127.0.0.1, and drawn again each
//! time the deck or an image it names is saved; the open page then reloads itself at
//! the slide it showed.
//!
//! Three parts:
//! - a file watcher (`notify`) on the deck's folder and the folders of its images, not
//!   on the files themselves: editors save by writing a new file and renaming it over the
//!   old one, and a watch on the old file would end with the first save;
//! - a loop that turns each burst of events into one render, and publishes it only when
//!   the page would change (a save without changes, an editor's swap file: no reload);
//! - a small HTTP server (axum): `/` is the page with a script added, `/events` a
//!   Server-Sent Events stream that names the current render. The page knows the render
//!   it holds and reloads when the stream names another one, so a page that loaded just
//!   before a save still learns of it when it connects.
//!
//! A deck that does not render keeps the last page that did, with the error over it; the
//! watch goes on, and the next save that renders takes the error away.

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use futures::Stream;
use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};

use super::{load, Loaded};
use crate::http::pages::escape;
use plinth_render::{Budget, Options};

/// The address when `--listen` is not given: a fixed port, so that a page left open
/// finds the next `watch` of the same deck again.
const DEFAULT_LISTEN: &str = "127.0.0.1:8040";

/// How long a burst of file events may pause before the deck is drawn. Events that say
/// the writer is done (closed after writing, renamed into place) do not wait, and every
/// ordinary save ends with one; this is the fallback for writers that never close. It is
/// long because a truncated file is "modified" before its new text arrives: at 20 ms a
/// loaded machine drew the empty file between the two, and the page reloaded twice.
const SETTLE: Duration = Duration::from_millis(250);

/// What `plinth slides watch` was asked for.
pub struct Asked {
    pub deck: PathBuf,
    pub listen: Option<String>,
    pub notes: bool,
    pub outside: bool,
    pub open: bool,
}

/// One render as the server hands it out.
struct Page {
    /// Names this render: the page carries its own and reloads when `/events` names
    /// another. Unique across runs, so a page left open reloads after a restart too.
    tag: String,
    html: Bytes,
}

/// One look at the deck.
struct Draft {
    outcome: Outcome,
    /// The image paths the deck names (found or not); `None` when it did not parse.
    named: Option<Vec<PathBuf>>,
}

/// What a render showed; the page changes only when this does.
#[derive(PartialEq)]
struct Outcome {
    /// The export page, or why there is none.
    export: Result<Arc<str>, String>,
    warnings: Vec<String>,
}

impl Draft {
    fn failed(error: String) -> Draft {
        Draft {
            outcome: Outcome {
                export: Err(error),
                warnings: Vec::new(),
            },
            named: None,
        }
    }
}

pub async fn run(asked: Asked) -> Result<(), String> {
    let shown = asked.deck.display().to_string();
    // The folder is resolved once: file events name paths under the folder watched.
    let name = asked
        .deck
        .file_name()
        .ok_or_else(|| format!("{shown}: not a file"))?
        .to_owned();
    let dir = asked
        .deck
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", dir.display()))?;

    let (events_in, events) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = events_in.send(event);
    })
    .map_err(|e| format!("watching {shown}: {e}"))?;
    // Watching starts before the first render, so no save falls between the two.
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|e| format!("watching {}: {e}", dir.display()))?;

    let listener = bind(asked.listen).await?;
    let url = match listener.local_addr() {
        Ok(addr) => format!("http://{addr}/"),
        Err(e) => return Err(format!("the listener: {e}")),
    };

    let mut session = Session {
        path: asked.deck.clone(),
        shown: shown.clone(),
        deck: dir.join(&name),
        notes: asked.notes,
        outside: asked.outside,
        watcher,
        folders: HashSet::from([dir]),
        images: HashSet::new(),
        last: None,
        good: None,
        run: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
        renders: 0,
    };
    let first = session.draw().await;
    // The first render is always published (nothing was before it).
    let first = session.publish(first).unwrap_or_else(|| {
        Arc::new(Page {
            tag: String::new(),
            html: Bytes::new(),
        })
    });
    let (pages_in, pages) = watch::channel(first);

    println!("plinth slides watch: {url} shows {shown}; Ctrl-C stops");
    if asked.open {
        open_browser(&url);
    }
    let mut app = Router::new()
        .route("/", get(show))
        .route("/events", get(renders))
        .with_state(pages);
    if listener.local_addr().is_ok_and(|a| a.ip().is_loopback()) {
        app = app.layer(axum::middleware::from_fn(loopback_names_only));
    }
    let server = axum::serve(listener, app);
    // No graceful shutdown: an open event stream never ends by itself, and nothing is
    // lost by dropping it (the page reconnects to the next run).
    tokio::select! {
        served = server => served.map_err(|e| format!("serving the preview: {e}")),
        () = session.follow(events, pages_in) => Ok(()),
        () = stopped() => {
            eprintln!("plinth slides watch: stopped");
            Ok(())
        }
    }
}

/// The listener: `--listen` as given, else the default port, else any free one.
async fn bind(listen: Option<String>) -> Result<tokio::net::TcpListener, String> {
    if let Some(listen) = listen {
        let addr: SocketAddr = listen
            .parse()
            .map_err(|e| format!("--listen {listen}: {e} (an address like 127.0.0.1:8040)"))?;
        return tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("--listen {addr}: {e}"));
    }
    match tokio::net::TcpListener::bind(DEFAULT_LISTEN).await {
        Ok(l) => Ok(l),
        // Another watch has it: this one takes a free port (the URL is printed).
        Err(_) => tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("listening on 127.0.0.1: {e}")),
    }
}

/// Ctrl-C, or a polite kill.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(program)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("--open: {program}: {e}; open {url} yourself");
    }
}

/// On a loopback address, only requests that name it so: a web page elsewhere could
/// otherwise point a name of its own at 127.0.0.1 (DNS rebinding) and read the deck.
async fn loopback_names_only(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    // The name without its port (`[::1]:8040` keeps its brackets).
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !port.contains(']') => name,
        _ => host,
    };
    if matches!(name, "127.0.0.1" | "localhost" | "[::1]") {
        next.run(request).await
    } else {
        (
            axum::http::StatusCode::FORBIDDEN,
            "the preview answers only to 127.0.0.1 and localhost\n",
        )
            .into_response()
    }
}

/// `GET /`: the current page. Never cached: a reload must fetch the new render.
async fn show(State(pages): State<watch::Receiver<Arc<Page>>>) -> impl IntoResponse {
    let html = pages.borrow().html.clone();
    ([(header::CACHE_CONTROL, "no-store")], Html(html))
}

/// `GET /events`: an `event: render` naming the current render at once, then one for
/// each new render (renders in quick succession may coalesce into the last).
async fn renders(
    State(pages): State<watch::Receiver<Arc<Page>>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures::stream::unfold((pages, true), |(mut pages, first)| async move {
        if !first && pages.changed().await.is_err() {
            return None;
        }
        let tag = pages.borrow_and_update().tag.clone();
        Some((
            Ok(Event::default().event("render").data(tag)),
            (pages, false),
        ))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// The watch: what is watched, and what was last published.
struct Session {
    /// The deck as given (messages name it so).
    path: PathBuf,
    shown: String,
    /// The deck in its resolved folder, as file events name it.
    deck: PathBuf,
    notes: bool,
    outside: bool,
    watcher: RecommendedWatcher,
    folders: HashSet<PathBuf>,
    images: HashSet<PathBuf>,
    /// What the last render showed, to publish only changes.
    last: Option<Outcome>,
    /// The last export that rendered: what the page shows under an error.
    good: Option<Arc<str>>,
    /// When this run started (ms since 1970), and how many renders it published: the tag.
    run: u128,
    renders: u64,
}

impl Session {
    /// Reads file events until the watcher goes away, drawing the deck after each burst.
    async fn follow(
        &mut self,
        mut events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
        pages: watch::Sender<Arc<Page>>,
    ) {
        let mut due: Option<tokio::time::Instant> = None;
        loop {
            let event = match due {
                Some(at) => tokio::select! {
                    event = events.recv() => event,
                    () = tokio::time::sleep_until(at) => {
                        due = None;
                        self.redraw(&pages).await;
                        continue;
                    }
                },
                None => events.recv().await,
            };
            let Some(event) = event else { return };
            match event {
                Ok(event) if !self.concerns(&event) => {}
                Ok(event) if written(&event.kind) => {
                    due = None;
                    self.redraw(&pages).await;
                }
                Ok(_) => due = Some(tokio::time::Instant::now() + SETTLE),
                // Events were lost (the kernel's queue overflowed): look again.
                Err(e) => {
                    eprintln!("plinth slides watch: {e}; drawing the deck again");
                    due = Some(tokio::time::Instant::now() + SETTLE);
                }
            }
        }
    }

    /// Whether an event is about the deck or an image it names.
    fn concerns(&self, event: &notify::Event) -> bool {
        if matches!(event.kind, EventKind::Access(a) if !is_close_write(a)) {
            return false;
        }
        event
            .paths
            .iter()
            .any(|p| *p == self.deck || self.images.contains(p))
    }

    async fn redraw(&mut self, pages: &watch::Sender<Arc<Page>>) {
        let started = Instant::now();
        let draft = self.draw().await;
        let failed = draft.outcome.export.is_err();
        if let Some(page) = self.publish(draft) {
            pages.send_replace(page);
            if !failed {
                eprintln!(
                    "{}: drawn in {} ms, the page reloads",
                    self.shown,
                    started.elapsed().as_millis()
                );
            }
        }
    }

    /// Loads and renders the deck on a blocking thread (the render is CPU work).
    async fn draw(&self) -> Draft {
        let (path, notes, outside) = (self.path.clone(), self.notes, self.outside);
        let draw = move || -> Draft {
            let Loaded {
                deck,
                images,
                warnings,
                named,
                ..
            } = match load(&path, false, outside) {
                Ok(loaded) => loaded,
                Err(e) => return Draft::failed(e),
            };
            let options = Options {
                notes,
                created: None,
            };
            let export =
                plinth_render::deck_html_with(&deck, &images, options, &Budget::unlimited())
                    .map(Arc::from)
                    .map_err(|e| format!("{}: {e}", path.display()));
            Draft {
                outcome: Outcome { export, warnings },
                named: Some(named),
            }
        };
        tokio::task::spawn_blocking(draw)
            .await
            .unwrap_or_else(|_| Draft::failed("the render panicked".into()))
    }

    /// The page for a draft, when it differs from the last one published; prints the
    /// error, and the warnings when they changed. Watches the folders of new images.
    fn publish(&mut self, draft: Draft) -> Option<Arc<Page>> {
        if let Some(named) = draft.named {
            self.follow_images(named);
        }
        let now = draft.outcome;
        if self.last.as_ref() == Some(&now) {
            return None;
        }
        if let Err(e) = &now.export {
            eprintln!("error: {e}");
        }
        if self
            .last
            .as_ref()
            .is_none_or(|l| l.warnings != now.warnings)
        {
            super::print_warnings(&now.warnings);
        }
        if let Ok(html) = &now.export {
            self.good = Some(html.clone());
        }
        self.renders += 1;
        let tag = format!("{}-{}", self.run, self.renders);
        // A deck that does not render keeps the last export that did under its error.
        let html = served(self.good.as_deref(), &now, &tag);
        self.last = Some(now);
        Some(Arc::new(Page {
            tag,
            html: Bytes::from(html),
        }))
    }

    /// Adds the images the deck now names, and watches the folders they are in.
    fn follow_images(&mut self, named: Vec<PathBuf>) {
        for image in named {
            if let Some(dir) = image.parent() {
                if !self.folders.contains(dir) {
                    match self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                        Ok(()) => {
                            self.folders.insert(dir.to_owned());
                        }
                        Err(e) => {
                            eprintln!("warning: changes in {} are not seen: {e}", dir.display())
                        }
                    }
                }
            }
            self.images.insert(image);
        }
    }
}

fn is_close_write(kind: AccessKind) -> bool {
    kind == AccessKind::Close(AccessMode::Write)
}

/// Whether the writer is done with the file: closed after writing, or renamed into
/// place (an editor's atomic save). Such events are drawn at once.
fn written(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(a) => is_close_write(*a),
        EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) => true,
        _ => false,
    }
}

/// The page served: the export (or an empty page when nothing rendered yet) with the
/// problems shown over it and the script that reloads on a new render.
fn served(export: Option<&str>, problems: &Outcome, tag: &str) -> String {
    let export = export.unwrap_or(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>Slides</title>\n</head>\n<body>\n</body>\n</html>\n",
    );
    let mut added = String::new();
    if problems.export.is_err() || !problems.warnings.is_empty() {
        added.push_str(OVERLAY_STYLE);
        // Errors stay until a save fixes them; warnings go away on a click.
        added.push_str("<div id=\"watch-problems\" role=\"alert\">");
        if let Err(e) = &problems.export {
            added.push_str("<pre class=\"error\">error: ");
            added.push_str(&escape(e));
            added.push_str("</pre>");
        }
        for w in &problems.warnings {
            added.push_str("<pre class=\"warning\" onclick=\"this.remove()\">warning: ");
            added.push_str(&escape(w));
            added.push_str("</pre>");
        }
        added.push_str("</div>\n");
    }
    added.push_str(&RELOAD_SCRIPT.replace("TAG", tag));
    let at = export.rfind("</body>").unwrap_or(export.len());
    let mut page = String::with_capacity(export.len() + added.len());
    page.push_str(&export[..at]);
    page.push_str(&added);
    page.push_str(&export[at..]);
    page
}

const OVERLAY_STYLE: &str = "<style>\
#watch-problems { position: fixed; left: 0; right: 0; bottom: 0; z-index: 1000; max-height: 40vh; overflow: auto; margin: 0; }\
#watch-problems pre { margin: 0; padding: .6em 1em; white-space: pre-wrap; font: 14px/1.4 ui-monospace, monospace; color: #fff; }\
#watch-problems .error { background: #8b1a1a; }\
#watch-problems .warning { background: #6b4e0b; cursor: pointer; }\
</style>\n";

/// Listens to `/events`; on a render other than its own, notes the slide nearest the
/// middle of the window in the address (`#slide-N`) and reloads; the new page scrolls
/// to that slide itself (the browser's own restoring would land elsewhere when slides
/// grew or shrank). The presenter view keeps its own `#presenter`.
const RELOAD_SCRIPT: &str = r##"<script>
(function () {
  var shown = "TAG";
  history.scrollRestoration = "manual";
  var back = /^#slide-\d+$/.test(location.hash) && document.getElementById(location.hash.slice(1));
  if (back) back.scrollIntoView({ block: "center" });
  function slideInView() {
    var mid = window.innerHeight / 2, best = null, dist = Infinity;
    document.querySelectorAll("section.slide").forEach(function (s) {
      var r = s.getBoundingClientRect(), d = Math.abs(r.top + r.height / 2 - mid);
      if (d < dist) { dist = d; best = s.id; }
    });
    return best;
  }
  var source = new EventSource("/events");
  source.addEventListener("render", function (e) {
    if (e.data === shown) return;
    source.close();
    var at = slideInView();
    if (at && location.hash !== "#presenter") history.replaceState(null, "", "#" + at);
    location.reload();
  });
})();
</script>
"##;
