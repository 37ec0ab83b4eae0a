//! The published URL as an audience viewer (issue 35): a browser (`Accept: text/html`)
//! gets an HTML page of the audience deck under a strict policy, API clients the JSON
//! they always had; the page driven in headless Chromium.

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::{email, Server};
use crate::slide_helpers::*;

const BROWSER_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

/// Four slides, one hidden, notes on two, and text that would be script if it were
/// not escaped (a JSON document: markdown refuses raw HTML outright).
fn document() -> Value {
    json!({
        "title": "Viewer <script>window.PWNED_TITLE = 1</script>",
        "slides": [
            {"title": "ALPHA opening", "notes": "SECRETNOTE one",
             "blocks": [{"type": "text", "text": "<script>window.PWNED = 1</script> <img src=x onerror=\"window.PWNED = 2\">"}]},
            {"title": "BRAVO middle", "blocks": [{"type": "bullets", "items": ["one", "two"]}]},
            {"title": "HIDDENSLIDE", "hidden": true, "notes": "HIDDENNOTE",
             "blocks": [{"type": "text", "text": "never shown"}]},
            {"title": "CHARLIE closing", "notes": "SECRETNOTE two",
             "blocks": [{"type": "text", "text": "thanks"}]}
        ]
    })
}

/// A published deck of [`document`]; returns (owner key, deck id, publication id).
async fn published(s: &Server) -> (String, String, String) {
    let key = s.verified_user(&email("viewer")).await;
    let r = s
        .post(
            "/api/slides/create",
            Some(&key),
            json!({ "document": document() }),
        )
        .await;
    r.assert_ok();
    let d = id(&r.body);
    let rev = r.body["revision_id"].as_str().unwrap().to_owned();
    assert_eq!(
        export(s, &key, &d, "html").await["status"],
        json!("succeeded")
    );
    let p = s
        .post(
            "/api/slides/publish",
            Some(&key),
            json!({"deck_id": d, "revision_id": rev, "expected_version": 1}),
        )
        .await;
    p.assert_ok();
    let url = p.body["url"].as_str().unwrap().to_owned();
    let pid = id(&p.body);
    assert!(url.ends_with(&format!("/api/slides/public/{pid}")), "{url}");
    (key, d, pid)
}

async fn fetch(
    s: &Server,
    path: &str,
    accept: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = s.raw(reqwest::Method::GET, path);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap())
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[tokio::test]
async fn published_url_negotiates_viewer_page_and_json() {
    let s = Server::start().await;
    let (key, d, pid) = published(&s).await;
    let path = format!("/api/slides/public/{pid}");

    // API clients: the same JSON with no Accept, */*, application/json, or a tie.
    let (status, h, plain) = fetch(&s, &path, None).await;
    assert_eq!(status, 200, "{plain}");
    assert!(header(&h, "content-type").starts_with("application/json"));
    assert!(header(&h, "vary").to_ascii_lowercase().contains("accept"));
    let plain: Value = serde_json::from_str(&plain).unwrap();
    assert_eq!(plain["id"], json!(pid));
    assert_eq!(plain["status"], json!("active"));
    let titles: Vec<&str> = plain["content"]["slides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["ALPHA opening", "BRAVO middle", "CHARLIE closing"]);
    assert!(!plain.to_string().contains("SECRETNOTE"));
    for accept in ["*/*", "application/json", "application/json, text/html"] {
        let (status, _, body) = fetch(&s, &path, Some(accept)).await;
        assert_eq!(status, 200, "{accept}");
        let body: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{accept}: {e}"));
        // `_usage` aside (it counts calls), the answer is the same.
        let strip = |mut v: Value| {
            v.as_object_mut().unwrap().remove("_usage");
            v
        };
        assert_eq!(strip(body), strip(plain.clone()), "{accept}");
    }

    // A browser: the viewer page, under a policy that allows one script by hash.
    let (status, h, html) = fetch(&s, &path, Some(BROWSER_ACCEPT)).await;
    assert_eq!(status, 200, "{html}");
    assert!(header(&h, "content-type").starts_with("text/html"), "{h:?}");
    assert!(header(&h, "vary").to_ascii_lowercase().contains("accept"));
    assert_eq!(header(&h, "x-frame-options"), "DENY");
    let csp = header(&h, "content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let script_src = csp
        .split(';')
        .find(|p| p.trim().starts_with("script-src"))
        .unwrap_or("");
    assert!(
        script_src.trim().starts_with("script-src 'sha256-") && !script_src.contains("unsafe"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    for title in ["ALPHA opening", "BRAVO middle", "CHARLIE closing"] {
        assert!(html.contains(title), "{title} missing");
    }
    assert_eq!(html.matches("<section class=\"slide").count(), 3);
    for absent in ["SECRETNOTE", "HIDDENSLIDE", "HIDDENNOTE", "never shown"] {
        assert!(!html.contains(absent), "{absent} in the page");
    }
    // Deck text is escaped: the only script element is the viewer's.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.contains("&lt;script&gt;window.PWNED = 1&lt;/script&gt;"));
    assert!(!html.contains("<img src=x"));

    // Unknown and withdrawn: a 404 page for a browser, the JSON error for a client.
    let unknown = "/api/slides/public/00000000-0000-4000-8000-000000000000";
    let (status, h, body) = fetch(&s, unknown, Some(BROWSER_ACCEPT)).await;
    assert_eq!(status, 404);
    assert!(header(&h, "content-type").starts_with("text/html"));
    assert!(header(&h, "content-security-policy").contains("default-src 'none'"));
    assert!(body.contains("not available"), "{body}");
    s.get(unknown, None).await.assert_error(404);
    s.post(
        "/api/slides/unpublish",
        Some(&key),
        json!({"deck_id": d, "expected_version": 1}),
    )
    .await
    .assert_ok();
    let (status, h, body) = fetch(&s, &path, Some(BROWSER_ACCEPT)).await;
    assert_eq!(status, 404, "{body}");
    assert!(header(&h, "content-type").starts_with("text/html"));
    assert!(!body.contains("ALPHA"));
    s.get(&path, None).await.assert_error(404);
}

#[tokio::test]
async fn viewer_navigates_by_keyboard_in_a_browser() {
    let s = Server::start().await;
    let (_, _, pid) = published(&s).await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.window(1280, 900).await;
    browser
        .goto(&format!("{}/api/slides/public/{pid}", s.base))
        .await;
    let state = r#"
        var shown = Array.prototype.filter.call(document.querySelectorAll("section.slide"),
            function (s) { return getComputedStyle(s).display !== "none"; });
        var r = shown.length ? shown[0].getBoundingClientRect() : {};
        return {
            shown: shown.length,
            title: shown.length ? shown[0].querySelector("h1").textContent : null,
            counter: document.getElementById("viewer-counter").textContent,
            width: r.width, height: r.height, left: r.left, top: r.top,
            vw: window.innerWidth, vh: window.innerHeight,
            pwned: typeof window.PWNED !== "undefined" || typeof window.PWNED_TITLE !== "undefined",
            dom: document.documentElement.outerHTML
        };"#;
    let key_press = |k: &str, shift: bool| {
        format!(
            "document.dispatchEvent(new KeyboardEvent('keydown', {{key: '{k}', shiftKey: {shift}, bubbles: true}}));"
        )
    };
    let at = browser.exec(state).await;
    assert_eq!(
        at["shown"],
        json!(1),
        "one slide at a time: {}",
        at["counter"]
    );
    assert_eq!(at["title"], json!("ALPHA opening"));
    assert_eq!(at["counter"], json!("1 / 3"));
    assert_eq!(at["pwned"], json!(false), "deck text ran as script");
    let dom = at["dom"].as_str().unwrap();
    assert!(!dom.contains("SECRETNOTE") && !dom.contains("HIDDEN"));
    // Scaled to the window: 16:9, as wide as the 1280 px window allows, inside it.
    let (w, h) = (
        at["width"].as_f64().unwrap(),
        at["height"].as_f64().unwrap(),
    );
    let (vw, vh) = (at["vw"].as_f64().unwrap(), at["vh"].as_f64().unwrap());
    assert!(
        (w - vw).abs() < 2.0 && h <= vh + 1.0,
        "{w}x{h} in {vw}x{vh}"
    );
    assert!((w / h - 16.0 / 9.0).abs() < 0.02, "{w}x{h}");

    let mut seen = Vec::new();
    for (k, shift) in [
        ("ArrowRight", false),
        ("ArrowRight", false),
        ("ArrowRight", false), // stays on the last
        ("ArrowLeft", false),
        ("Home", false),
        ("End", false),
        ("PageUp", false),
        ("PageDown", false),
        ("Home", false),
        (" ", false),
        (" ", true),
        ("ArrowDown", false),
        ("ArrowUp", false),
    ] {
        browser.exec(&key_press(k, shift)).await;
        let now = browser.exec(state).await;
        assert_eq!(now["shown"], json!(1), "after {k}");
        seen.push(format!(
            "{} {}",
            now["counter"].as_str().unwrap(),
            now["title"].as_str().unwrap()
        ));
    }
    assert_eq!(
        seen,
        [
            "2 / 3 BRAVO middle",
            "3 / 3 CHARLIE closing",
            "3 / 3 CHARLIE closing",
            "2 / 3 BRAVO middle",
            "1 / 3 ALPHA opening",
            "3 / 3 CHARLIE closing",
            "2 / 3 BRAVO middle",
            "3 / 3 CHARLIE closing",
            "1 / 3 ALPHA opening",
            "2 / 3 BRAVO middle",
            "1 / 3 ALPHA opening",
            "2 / 3 BRAVO middle",
            "1 / 3 ALPHA opening",
        ]
    );

    // A tall window: the slide fits its height instead.
    browser.window(600, 900).await;
    let tall = browser.exec(state).await;
    let (w, vw) = (
        tall["width"].as_f64().unwrap(),
        tall["vw"].as_f64().unwrap(),
    );
    let (h, vh) = (
        tall["height"].as_f64().unwrap(),
        tall["vh"].as_f64().unwrap(),
    );
    assert!((w - vw).abs() < 2.0 && h < vh / 2.0, "{w}x{h} in {vw}x{vh}");
    // `#2` opens the second slide; `f` asks for fullscreen without leaving the slide.
    browser.goto("about:blank").await;
    browser
        .goto(&format!("{}/api/slides/public/{pid}#2", s.base))
        .await;
    let deep = browser.exec(state).await;
    assert_eq!(deep["counter"], json!("2 / 3"), "{}", deep["counter"]);
    browser.exec(&key_press("f", false)).await;
    assert_eq!(browser.exec(state).await["counter"], json!("2 / 3"));
    browser.quit().await;
}

/// The viewer by pointer (mouse, touch, pen): a tap on the right goes forward, on the
/// left third back, a swipe turns the page its way. `p` opens the presenter window
/// (`#presenter`: this slide, the next one, the counter and a timer), which drives
/// every audience window of the publication, and they drive it.
#[tokio::test]
async fn viewer_taps_swipes_and_a_presenter_window_drives_the_audience() {
    let s = Server::start().await;
    let (_, _, pid) = published(&s).await;
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.window(1200, 800).await;
    let url = format!("{}/api/slides/public/{pid}", s.base);
    browser.goto(&url).await;
    let counter = r#"return document.getElementById("viewer-counter").textContent;"#;
    let pointer = |x0: u32, x1: u32| {
        format!(
            "var o = {{bubbles: true, isPrimary: true, pointerId: 1, pointerType: 'touch', clientY: 400}};\n\
             var t = document.querySelector('section.slide.current');\n\
             t.dispatchEvent(new PointerEvent('pointerdown', Object.assign({{clientX: {x0}}}, o)));\n\
             t.dispatchEvent(new PointerEvent('pointerup', Object.assign({{clientX: {x1}}}, o)));"
        )
    };
    let mut seen = Vec::new();
    for (x0, x1) in [
        (900, 900), // tap right: forward
        (100, 100), // tap left third: back
        (800, 300), // swipe left: forward
        (800, 300), // to the last
        (300, 800), // swipe right: back
    ] {
        browser.exec(&pointer(x0, x1)).await;
        seen.push(browser.exec(counter).await.as_str().unwrap().to_owned());
    }
    assert_eq!(seen, ["2 / 3", "1 / 3", "2 / 3", "3 / 3", "2 / 3"]);

    // The presenter window, as `p` opens it (a second window of the same browser).
    let audience = browser.cmd(reqwest::Method::GET, "/window", None).await;
    let opened = browser
        .cmd(
            reqwest::Method::POST,
            "/window/new",
            Some(json!({"type": "window"})),
        )
        .await;
    let presenter = opened["handle"].clone();
    browser
        .cmd(
            reqwest::Method::POST,
            "/window",
            Some(json!({ "handle": presenter })),
        )
        .await;
    browser.goto(&format!("{url}#presenter")).await;
    let view = r#"
        var shown = Array.prototype.filter.call(document.querySelectorAll("section.slide"),
            function (s) { return getComputedStyle(s).display !== "none"; });
        return {
            titles: shown.map(function (s) { return s.querySelector("h1").textContent; }),
            timer: document.getElementById("viewer-timer").textContent,
            timer_shown: getComputedStyle(document.getElementById("viewer-timer")).display !== "none",
            counter: document.getElementById("viewer-counter").textContent
        };"#;
    let v = browser.exec(view).await;
    assert_eq!(v["titles"], json!(["ALPHA opening", "BRAVO middle"]), "{v}");
    assert_eq!(v["timer_shown"], json!(true), "{v}");
    assert!(v["timer"].as_str().unwrap().starts_with("0:0"), "{v}");
    // The presenter moves on: the audience window follows.
    browser
        .exec("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));")
        .await;
    let v = browser.exec(view).await;
    assert_eq!(
        v["titles"],
        json!(["BRAVO middle", "CHARLIE closing"]),
        "{v}"
    );
    browser
        .cmd(
            reqwest::Method::POST,
            "/window",
            Some(json!({ "handle": audience })),
        )
        .await;
    let mut followed = String::new();
    for _ in 0..50 {
        followed = browser.exec(counter).await.as_str().unwrap().to_owned();
        if followed == "2 / 3" && browser.exec(view).await["titles"] == json!(["BRAVO middle"]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(followed, "2 / 3");
    // And the audience window drives the presenter's.
    browser.exec(&pointer(900, 900)).await;
    browser
        .cmd(
            reqwest::Method::POST,
            "/window",
            Some(json!({ "handle": presenter })),
        )
        .await;
    let mut titles = Value::Null;
    for _ in 0..50 {
        titles = browser.exec(view).await["titles"].clone();
        if titles == json!(["CHARLIE closing"]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        titles,
        json!(["CHARLIE closing"]),
        "the last slide has no next"
    );
    assert_eq!(browser.exec(counter).await, json!("3 / 3"));
    browser.quit().await;
}

/// `update` with `markdown`, expecting `version`.
async fn update_md(
    s: &Server,
    key: &str,
    deck: &str,
    version: i64,
    md: &str,
) -> crate::common::Resp {
    s.post(
        "/api/slides/update",
        Some(key),
        json!({"id": deck, "expected_version": version, "markdown": md}),
    )
    .await
}

#[tokio::test]
async fn image_file_names_resolve_to_the_decks_own_ready_assets() {
    let s = Server::start().await;
    let key = s.verified_user(&email("imgname")).await;
    let d = id(&create_md(&s, &key, "# Chart\n").await);
    let plain = export(&s, &key, &d, "pdf").await;
    assert_eq!(plain["status"], json!("succeeded"), "{plain}");
    let plain = download(plain["artifacts"][0]["url"].as_str().unwrap()).await;
    let asset = upload_asset(&s, &key, &d, &png(240, 160), "image/png", None).await;
    assert_eq!(asset["status"], json!("ready"), "{asset}");
    let asset_id = id(&asset);

    // A name no asset has is refused with its line, before and after a known one.
    let r = update_md(&s, &key, &d, 1, "# Chart\n\nintro\n\n![](nope.png)\n").await;
    r.assert_error(400);
    let msg = r.body["message"].as_str().unwrap();
    assert!(msg.contains("line 5") && msg.contains("nope.png"), "{msg}");

    // The uploaded file's name (`upload_asset` sends `picture.png`) resolves to it.
    let r = update_md(&s, &key, &d, 1, "# Chart\n\n![](picture.png)\n").await;
    r.assert_ok();
    let rev = s
        .get(
            &format!(
                "/api/slides/revisions/{}?deck_id={d}",
                r.body["revision_id"].as_str().unwrap()
            ),
            Some(&key),
        )
        .await;
    rev.assert_ok();
    assert!(rev.body.to_string().contains(&asset_id), "{}", rev.body);
    let job = export(&s, &key, &d, "pdf").await;
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let pdf = download(job["artifacts"][0]["url"].as_str().unwrap()).await;
    let has_image = |pdf: &[u8]| {
        pdf.windows(6).any(|w| w == b"/Image") || pdf.windows(7).any(|w| w == b"/XObject")
    };
    assert!(!has_image(&plain));
    assert!(
        has_image(&pdf) && pdf.len() > plain.len() + 1_000,
        "the image is in the PDF: {} vs {} bytes",
        pdf.len(),
        plain.len()
    );

    // Never another deck's asset: not the same owner's other deck, not another account's,
    // and not on create (a new deck has no assets).
    let other = id(&create_md(&s, &key, "# Other\n").await);
    let r = update_md(&s, &key, &other, 1, "# Other\n\n![](picture.png)\n").await;
    r.assert_error(400);
    assert!(r.body["message"].as_str().unwrap().contains("line 3"));
    let stranger = s.verified_user(&email("imgname-other")).await;
    let theirs = id(&create_md(&s, &stranger, "# Theirs\n").await);
    update_md(&s, &stranger, &theirs, 1, "# Theirs\n\n![](picture.png)\n")
        .await
        .assert_error(400);
    update_md(&s, &stranger, &d, 2, "# Mine\n\n![](picture.png)\n")
        .await
        .assert_error(404);
    s.post(
        "/api/slides/create",
        Some(&key),
        json!({"markdown": "# New\n\n![](picture.png)\n"}),
    )
    .await
    .assert_error(400);
}
