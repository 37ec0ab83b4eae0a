//! `plinth slides watch` (issue 44, Speed): a live preview that draws the deck again on
//! each save and tells the open page over Server-Sent Events, within 100 ms of the write.
//! The tests run the binary on a deck in a temporary folder and speak HTTP to it as the
//! page does; one drives the page itself in headless Chromium.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{wait_for_line, BIN};
use crate::slide_helpers::png;

const DECK: &str = "---\nmarp: true\n---\n\n# Launch\n\n![w:400](img/chart.png)\n\n---\n\n## Plan\n\n- one\n- two\n\n---\n\n## Thanks\n";

/// A running `plinth slides watch`; ended when dropped, also when a test fails.
struct Watching {
    child: Child,
    url: String,
    stderr: std::path::PathBuf,
}

impl Watching {
    fn start(dir: &Path) -> Watching {
        let stderr = dir.join("watch.log");
        let mut child = Command::new(BIN)
            .args(["slides", "watch", "deck.md", "--listen", "127.0.0.1:0"])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&stderr).unwrap()))
            .spawn()
            .unwrap();
        let line = wait_for_line(&mut child, "plinth slides watch: ", Duration::from_secs(30))
            .unwrap_or_else(|| {
                panic!(
                    "watch did not start:\n{}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                )
            });
        let url = line.split_whitespace().next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Watching { child, url, stderr }
    }

    async fn page(&self) -> String {
        let r = reqwest::get(&self.url).await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["cache-control"], "no-store");
        r.text().await.unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The page's side of `/events`: `event: render` blocks, read as they arrive.
struct Renders {
    res: reqwest::Response,
    buf: String,
}

impl Renders {
    async fn open(base: &str) -> Renders {
        let res = reqwest::get(format!("{base}events")).await.unwrap();
        assert_eq!(res.status(), 200);
        assert!(res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        Renders {
            res,
            buf: String::new(),
        }
    }

    /// The tag of the next render event, or `None` after `within`.
    async fn next(&mut self, within: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim_start().to_owned())
                };
                if field("event:").as_deref() == Some("render") {
                    return field("data:");
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.res.chunk()).await;
            match chunk {
                Ok(Ok(Some(bytes))) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(other) => panic!("the event stream ended: {other:?}"),
                Err(_) => return None,
            }
        }
    }

    /// Writes with `write` and waits for the render it causes: its tag and the time from
    /// the write to the event.
    async fn after(&mut self, write: impl FnOnce()) -> (String, Duration) {
        let started = Instant::now();
        write();
        let tag = self
            .next(Duration::from_secs(10))
            .await
            .expect("a render event within 10 s of the write");
        (tag, started.elapsed())
    }
}

fn deck_with(title: &str) -> String {
    DECK.replace("## Plan", &format!("## {title}"))
}

#[tokio::test]
async fn watch_draws_each_save_and_tells_the_page_within_100_ms() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("img")).unwrap();
    std::fs::write(dir.path().join("img/chart.png"), png(320, 200)).unwrap();
    let deck = dir.path().join("deck.md");
    std::fs::write(&deck, DECK).unwrap();
    let w = Watching::start(dir.path());

    // The page is the HTML export with the script that follows /events, which names the
    // render the page holds first.
    let page = w.page().await;
    assert!(page.contains("Launch") && page.contains("Plan") && page.contains("Thanks"));
    assert!(page.contains("id=\"slide-2\"") && page.contains("new EventSource(\"/events\")"));
    // Only under the loopback names (a rebound DNS name is refused).
    let port = w.url.trim_end_matches('/').rsplit(':').next().unwrap();
    let other = reqwest::Client::new()
        .get(&w.url)
        .header("host", format!("attacker.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 403);
    let local = reqwest::get(format!("http://localhost:{port}/")).await;
    assert!(local.is_err() || local.unwrap().status() == 200);
    let mut renders = Renders::open(&w.url).await;
    let mut tag = renders.next(Duration::from_secs(5)).await.unwrap();
    assert!(page.contains(&format!("var shown = \"{tag}\"")), "{tag}");

    // Saves as a program writes a file in place; each time the event, then the page.
    let mut took = Vec::new();
    for n in 0..7 {
        let title = format!("Roadmap {n}");
        let (next, latency) = renders
            .after(|| std::fs::write(&deck, deck_with(&title)).unwrap())
            .await;
        assert_ne!(next, tag);
        tag = next;
        took.push(latency);
        let page = w.page().await;
        assert!(page.contains(&title) && !page.contains("Plan"), "{title}");
        assert!(page.contains(&format!("var shown = \"{tag}\"")));
    }
    took.sort();
    eprintln!(
        "slides watch: write → render event, 7 saves: best {} ms, median {} ms, worst {} ms",
        took[0].as_secs_f64() * 1e3,
        took[3].as_secs_f64() * 1e3,
        took[6].as_secs_f64() * 1e3,
    );
    // The best of seven: what the design takes (a render and a notice, no polling or
    // long debounce), with little of this shared machine's load in it.
    assert!(took[0] <= Duration::from_millis(100), "{took:?}");

    // An editor's save: a new file renamed over the deck (the folder is watched).
    let (next, _) = renders
        .after(|| {
            std::fs::write(dir.path().join(".deck.md.tmp"), deck_with("Renamed")).unwrap();
            std::fs::rename(dir.path().join(".deck.md.tmp"), &deck).unwrap();
        })
        .await;
    assert_ne!(next, tag);
    tag = next;
    assert!(w.page().await.contains("Renamed"));

    // A save that changes nothing, and a file beside the deck: no reload.
    std::fs::write(&deck, deck_with("Renamed")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    assert_eq!(renders.next(Duration::from_millis(400)).await, None);

    // A new image under the same name reloads the page.
    let before = w.page().await;
    let (next, _) = renders
        .after(|| std::fs::write(dir.path().join("img/chart.png"), png(640, 400)).unwrap())
        .await;
    assert_ne!(next, tag);
    tag = next;
    assert_ne!(w.page().await, before);

    // A deck that does not render: the error with its line over the last good slides, on
    // the page and on stderr; the watch goes on.
    let (next, _) = renders
        .after(|| std::fs::write(&deck, "# Title\n\ntext\n\n<p>raw</p>\n").unwrap())
        .await;
    assert_ne!(next, tag);
    let page = w.page().await;
    assert!(page.contains("Renamed"), "the last good slides stay");
    assert!(
        page.contains("<pre class=\"error\">error: deck.md: ") && page.contains("line 5"),
        "{}",
        &page[page.len().saturating_sub(3000)..]
    );
    assert!(
        w.log()
            .lines()
            .any(|l| l.starts_with("error: deck.md: ") && l.contains("line 5")),
        "{}",
        w.log()
    );
    // Fixed: the error goes, with a warning shown instead (a Marp setting without effect).
    renders
        .after(|| {
            std::fs::write(&deck, DECK.replace("marp: true", "marp: true\nmath: katex")).unwrap()
        })
        .await;
    let page = w.page().await;
    assert!(page.contains("Plan") && !page.contains("class=\"error\""));
    assert!(page.contains("<pre class=\"warning\""), "{}", w.log());

    // Ctrl-C ends it cleanly.
    let mut w = w;
    let sent = Command::new("kill")
        .args(["-INT", &w.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = w.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}\n{}", w.log());
}

/// The page in a browser reloads itself on a save, at the slide it showed.
#[tokio::test]
async fn watch_reloads_the_open_page_at_its_slide_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("img")).unwrap();
    std::fs::write(dir.path().join("img/chart.png"), png(320, 200)).unwrap();
    let deck = dir.path().join("deck.md");
    std::fs::write(&deck, DECK).unwrap();
    let w = Watching::start(dir.path());
    let Some(browser) = crate::browser::Browser::start().await else {
        return;
    };
    browser.window(1280, 800).await;
    browser.goto(&w.url).await;
    browser
        .wait_for("the deck", |_, source| source.contains("Thanks"))
        .await;
    let mut took = Vec::new();
    for (save, slide) in [2, 3, 2].into_iter().enumerate() {
        // A slide in the middle of the window, and a mark that a reload takes away.
        browser
            .exec(&format!(
                "document.getElementById('slide-{slide}').scrollIntoView({{block: 'center'}}); \
                 window.notReloaded = true; return true;"
            ))
            .await;
        // Time for the page's event stream to connect (it would learn of the save anyway,
        // from the render named first, but the time below would then include the connect).
        tokio::time::sleep(Duration::from_millis(300)).await;

        let title = format!("Roadmap {save}");
        let started = Instant::now();
        let written = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            * 1e3;
        std::fs::write(&deck, deck_with(&title)).unwrap();
        let probe = format!("return document.body.innerText.includes('{title}');");
        while browser.exec(&probe).await != serde_json::json!(true) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the page never showed the save:\n{}",
                w.log()
            );
            // Seldom: each look runs a script on the page's thread, which delays it.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // When the reloaded page had its new slides (the browser's clock is this
        // machine's), and where it stands.
        let state = browser
            .exec(
                "var n = performance.getEntriesByType('navigation')[0]; \
                 var mid = innerHeight / 2, best = null, dist = Infinity; \
                 document.querySelectorAll('section.slide').forEach(function (s) { \
                   var r = s.getBoundingClientRect(), d = Math.abs(r.top + r.height / 2 - mid); \
                   if (d < dist) { dist = d; best = s.id; } }); \
                 return [performance.timeOrigin, n.responseEnd, n.domContentLoadedEventEnd, \
                         location.hash, best, window.notReloaded === undefined];",
            )
            .await;
        let at = |i: usize| state[i].as_f64().unwrap();
        let (reload, received, ready) = (
            at(0) - written,
            at(0) + at(1) - written,
            at(0) + at(2) - written,
        );
        eprintln!(
            "slides watch in Chromium, save {save}: write → reload starts {reload:.1} ms, \
             → page received {received:.1} ms, → new slides in the DOM {ready:.1} ms"
        );
        took.push(ready);
        let here = format!("slide-{slide}");
        assert_eq!(
            state.as_array().unwrap()[3..],
            [
                serde_json::json!(format!("#{here}")),
                serde_json::json!(here),
                serde_json::json!(true)
            ]
        );
    }
    // The whole path, the browser's reload included, for the best of three saves. Not a
    // timing target (bench/slides-watch.py measures the 100 ms): a bound that a page
    // learning of a save by reconnecting (EventSource waits 3 s) or by polling fails,
    // with room for CI's loaded machine (up to ~300 ms seen under the suite).
    took.sort_by(f64::total_cmp);
    assert!(took[0] <= 1_000.0, "{took:?}");
    browser.quit().await;
}
