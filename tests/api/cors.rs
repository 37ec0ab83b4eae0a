//! Issue 34, CORS for browser apps (`PLINTH_CORS_ORIGINS`): a page of an allowed origin
//! calls the API from headless Chromium (reads and writes, with its key); a page of
//! another origin cannot; `*` lets any origin read, never write, never with credentials;
//! preflights are cached.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::{email, Options, Server, BIN};

/// A page that calls the API named in its URL's fragment and publishes what happened.
const PAGE: &str = r##"<!doctype html><html><head><title>app</title></head><body><script>
(async function () {
  var p = new URLSearchParams(location.hash.slice(1));
  var base = p.get("base"), key = p.get("key"), out = {};
  try {
    var r = await fetch(base + "/api/users/viewer", { headers: { "x-api-key": key } });
    var j = await r.json();
    out.read = { status: r.status, email: j.user ? j.user.email : null,
                 request_id: r.headers.get("x-request-id") !== null,
                 remaining: r.headers.get("x-ratelimit-remaining") };
  } catch (e) { out.read = { error: String(e) }; }
  try {
    var w = await fetch(base + "/api/slides/create", { method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": p.get("idem") },
      body: JSON.stringify({ markdown: "# From another origin" }) });
    var d = await w.json();
    out.write = { status: w.status, id: d.id || null };
  } catch (e) { out.write = { error: String(e) }; }
  window.results = out;
})();
</script></body></html>"##;

/// Serves `PAGE` on a free loopback port: its origin.
async fn page_server() -> String {
    let app = axum::Router::new().route(
        "/app",
        axum::routing::get(|| async { axum::response::Html(PAGE) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    origin
}

/// Opens the page of `origin` against `s` with `key`: what its two calls got.
async fn from_page(browser: &Browser, origin: &str, s: &Server, key: &str, idem: &str) -> Value {
    browser
        .goto(&format!(
            "{origin}/app#base={}&key={key}&idem={idem}",
            s.base
        ))
        .await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let v = browser.exec("return window.results || null;").await;
        if !v.is_null() {
            return v;
        }
        assert!(Instant::now() < deadline, "the page never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn preflight(s: &Server, origin: &str, method: &str) -> reqwest::Response {
    s.raw(reqwest::Method::OPTIONS, "/api/slides/create")
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header("access-control-request-headers", "x-api-key, content-type")
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_page_of_an_allowed_origin_calls_the_api_and_others_cannot() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (allowed, stranger) = (page_server().await, page_server().await);
    let s = Server::start_with(Options::default().env("PLINTH_CORS_ORIGINS", &allowed)).await;
    let addr = email("cors");
    let key = s.verified_user(&addr).await;

    let got = from_page(&browser, &allowed, &s, &key, "cors-1").await;
    assert_eq!(got["read"]["status"], json!(200), "{got}");
    assert_eq!(got["read"]["email"], json!(addr));
    assert_eq!(
        got["read"]["request_id"],
        json!(true),
        "exposed headers: {got}"
    );
    assert!(got["read"]["remaining"].is_string(), "{got}");
    assert_eq!(got["write"]["status"], json!(200), "{got}");
    let deck = got["write"]["id"].as_str().unwrap().to_owned();
    s.get(&format!("/api/slides/{deck}"), Some(&key))
        .await
        .assert_ok();

    // Another origin: the browser lets the page read nothing and send no write.
    let got = from_page(&browser, &stranger, &s, &key, "cors-2").await;
    assert!(
        got["read"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("Failed to fetch"),
        "{got}"
    );
    assert!(
        got["write"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("Failed to fetch"),
        "{got}"
    );
    let decks = s.get("/api/slides", Some(&key)).await;
    assert_eq!(decks.body["count"], json!(1), "{}", decks.body);

    // The preflight: answered by plinth, cached a day, with credentials for this origin.
    let r = preflight(&s, &allowed, "POST").await;
    assert_eq!(r.status(), 204);
    let h = r.headers();
    assert_eq!(h["access-control-allow-origin"], allowed.as_str());
    assert_eq!(h["access-control-allow-credentials"], "true");
    assert_eq!(h["access-control-max-age"], "86400");
    let allow = h["access-control-allow-headers"].to_str().unwrap();
    assert!(
        allow.contains("x-api-key") && allow.contains("idempotency-key"),
        "{allow}"
    );
    let r = preflight(&s, &stranger, "POST").await;
    assert!(r.headers().get("access-control-allow-origin").is_none());
    browser.quit().await;
}

#[tokio::test]
async fn a_star_lets_any_origin_read_never_write_and_never_with_credentials() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let anywhere = page_server().await;
    let s = Server::start_with(Options::default().env("PLINTH_CORS_ORIGINS", "*")).await;
    let key = s.verified_user(&email("corsstar")).await;
    let got = from_page(&browser, &anywhere, &s, &key, "star-1").await;
    assert_eq!(got["read"]["status"], json!(200), "{got}");
    assert!(
        got["write"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("Failed to fetch"),
        "{got}"
    );
    let r = s
        .raw(reqwest::Method::GET, "/api/users/viewer")
        .header("origin", &anywhere)
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert!(r
        .headers()
        .get("access-control-allow-credentials")
        .is_none());
    let r = preflight(&s, &anywhere, "POST").await;
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = preflight(&s, &anywhere, "GET").await;
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    browser.quit().await;
}

#[tokio::test]
async fn without_origins_only_the_track_route_answers_other_origins() {
    let s = Server::start().await;
    let r = s
        .raw(reqwest::Method::GET, "/api/status")
        .header("origin", "https://elsewhere.example")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    assert!(r.headers().get("vary").is_none());
    let r = s
        .raw(reqwest::Method::OPTIONS, "/api/analytics/track")
        .header("origin", "https://site.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://site.example"
    );
    // A value that is not an origin is refused at start.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env("PLINTH_CORS_ORIGINS", "https://app.example.com/path")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an origin"));
}
