//! Headless Chromium for the browser tests (the simulated payment page, the analytics
//! script): ChromeDriver's W3C WebDriver API spoken over HTTP, no extra crate.

use serde_json::{json, Value};

/// A program on `PATH`.
pub fn on_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Headless Chromium driven through ChromeDriver's W3C WebDriver API (JSON over HTTP).
/// Dropping it ends chromedriver and the browser it started, also when a test panics.
pub struct Browser {
    driver: std::process::Child,
    http: reqwest::Client,
    /// `http://127.0.0.1:{port}/session/{id}`
    session: String,
    /// The browser profile (removed after the browser is gone).
    profile: tempfile::TempDir,
}

/// The W3C web element identifier.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// `None` (after a `skipped:` line) when chromedriver or chromium is not installed.
    pub async fn start() -> Option<Browser> {
        use std::os::unix::process::CommandExt;
        use std::time::{Duration, Instant};
        let (Some(driver), Some(chromium)) = (on_path("chromedriver"), on_path("chromium")) else {
            eprintln!("skipped: chromedriver or chromium is not installed (apt-get install -y chromium chromium-driver; .ci/run installs them)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own process group, so that Drop ends the browser with it.
            .process_group(0)
            .spawn()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser {
            driver: child,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
            session: String::new(),
            profile,
        };
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let ready = match browser.http.get(format!("{base}/status")).send().await {
                Ok(r) => r
                    .json::<Value>()
                    .await
                    .ok()
                    .map(|v| v["value"]["ready"] == json!(true)),
                Err(_) => None,
            };
            if ready == Some(true) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not become ready"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!(
            "--user-data-dir={}",
            browser.profile.path().display()
        )])
        .collect::<Vec<_>>();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "timeouts": {"pageLoad": 15000, "script": 5000, "implicit": 0},
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let r = browser
            .call(
                reqwest::Method::POST,
                &format!("{base}/session"),
                Some(caps),
            )
            .await;
        let id = r["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"));
        browser.session = format!("{base}/session/{id}");
        Some(browser)
    }

    /// One WebDriver command; its `value` (panics on a WebDriver error).
    pub async fn call(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method.clone(), url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        assert!(status.is_success(), "{method} {url}: {status} {v}");
        v["value"].clone()
    }

    pub async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("{}{path}", self.session), body)
            .await
    }

    pub async fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    pub async fn url(&self) -> String {
        let v = self.cmd(reqwest::Method::GET, "/url", None).await;
        v.as_str().unwrap().to_owned()
    }

    pub async fn source(&self) -> String {
        let v = self.cmd(reqwest::Method::GET, "/source", None).await;
        v.as_str().unwrap().to_owned()
    }

    /// The element matching a CSS selector (its WebDriver id).
    pub async fn find(&self, css: &str) -> String {
        let v = self
            .cmd(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element for {css}: {v}"))
            .to_owned()
    }

    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    pub async fn selected(&self, css: &str) -> bool {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::GET,
            &format!("/element/{id}/selected"),
            None,
        )
        .await
        .as_bool()
        .unwrap()
    }

    /// Waits (a navigation may still be under way) until the page satisfies `test`.
    pub async fn wait_for(&self, what: &str, test: impl Fn(&str, &str) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (url, source) = (self.url().await, self.source().await);
            if test(&url, &source) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "browser never showed {what}; at {url}:\n{source}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Runs `script` (a function body; `return` gives the value) in the page.
    pub async fn exec(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Types `text` into the input matching a CSS selector.
    pub async fn fill(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Resizes the window (for screenshots).
    pub async fn window(&self, width: u32, height: u32) {
        self.cmd(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    /// The page as PNG bytes.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let v = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap()
    }

    /// Ends the session (the browser quits).
    pub async fn quit(mut self) {
        let session = std::mem::take(&mut self.session);
        let _ = self.http.delete(session).send().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole process group: chromedriver and the browser it started.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `GET /console` is one self-contained page: a strict policy (scripts and styles inline
/// only, requests to this origin only, never framed) and no reference to another origin.
#[tokio::test]
async fn the_console_is_one_page_under_a_strict_policy_with_nothing_from_elsewhere() {
    let s = crate::common::Server::start().await;
    let r = s
        .raw(reqwest::Method::GET, "/console")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let header = |name: &str| r.headers()[name].to_str().unwrap().to_owned();
    assert!(header("content-type").starts_with("text/html"));
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("referrer-policy"), "no-referrer");
    let csp = header("content-security-policy");
    // The page's own script by its hash, nothing inline besides (security round 2, L8).
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    assert!(!csp.contains("script-src 'unsafe-inline'"), "{csp}");
    for directive in [
        "default-src 'none'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    let page = r.text().await.unwrap();
    assert!(page.contains("<title>plinth console</title>"));
    for needle in ["http://", "https://", "src=", "@import", "url("] {
        assert!(!page.contains(needle), "the console refers to {needle:?}");
    }
    // The key lives in the tab's session storage only; API data is set as text.
    assert!(page.contains("sessionStorage") && !page.contains("localStorage"));
    assert!(!page.contains("innerHTML") && !page.contains("document.write"));
}

/// `GET /` is an index page (issue 45): HTML under the pages' policy (no script at all),
/// a first call with this server's own URL, and links that all answer here. In
/// Chromium when it is installed: every link of the page opens with a 200.
#[tokio::test]
async fn the_index_page_links_to_the_document_status_and_console() {
    let s = crate::common::Server::start().await;
    let r = s.raw(reqwest::Method::GET, "/").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let header = |name: &str| r.headers()[name].to_str().unwrap().to_owned();
    assert!(header("content-type").starts_with("text/html"));
    assert!(header("content-security-policy").contains("script-src 'none'"));
    let page = r.text().await.unwrap();
    let links: Vec<&str> = page
        .split("href=\"")
        .skip(1)
        .filter_map(|l| l.split('"').next())
        .filter(|l| l.starts_with('/'))
        .collect();
    for needed in ["/api/openapi.json", "/api/status", "/console"] {
        assert!(links.contains(&needed), "{links:?}");
    }
    assert!(
        page.contains(&format!("curl -s {}/api/users/authenticate", s.base)),
        "{page}"
    );
    assert!(page.contains("docs/api.md") && page.contains("README.md"));
    for link in &links {
        let r = s.raw(reqwest::Method::GET, link).send().await.unwrap();
        assert_eq!(r.status(), 200, "{link}");
    }
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.goto(&format!("{}/", s.base)).await;
    let hrefs = browser
        .exec("return Array.from(document.querySelectorAll('a')).map(a => a.href);")
        .await;
    let hrefs: Vec<String> = serde_json::from_value(hrefs).unwrap();
    assert!(hrefs.len() >= links.len(), "{hrefs:?}");
    for href in hrefs {
        browser.goto(&href).await;
        assert_eq!(browser.url().await, href);
        let text = browser.exec("return document.body.innerText;").await;
        assert!(
            !text.as_str().unwrap_or_default().contains("not_found"),
            "{href}: {text}"
        );
    }
    browser.quit().await;
}

/// The operator console in headless Chromium against real job data: exports and an image
/// check that succeed, verification emails that fail (SMTP pointed at a closed port) and a
/// 503 (object storage that does not answer). A refused key is told so; the admin's key draws the queue table, the per-minute
/// chart, the failed jobs and the 5xx by route; Retry puts a failed job back on its queue.
/// Nothing is asked of another origin. `PLINTH_BLESS=1` saves docs/console.png.
#[tokio::test]
async fn the_console_shows_queues_throughput_failed_jobs_and_5xx_and_retries_a_job() {
    use crate::common::email;
    use crate::slide_helpers::{create_md, export, id, png, upload_asset};
    use std::time::{Duration, Instant};

    let Some(browser) = Browser::start().await else {
        return;
    };
    let mut s = crate::common::Server::start().await;
    let admin = s.admin(&email("console-admin")).await;

    // Work that succeeds: six exports and two image checks.
    for title in ["Release review", "Roadmap"] {
        let md = format!("# {title}\n\n- queues\n- workers\n\n---\n\n## Next\n\nShip it");
        let deck = id(&create_md(&s, &admin, &md).await);
        for format in ["pdf", "png", "html"] {
            let job = export(&s, &admin, &deck, format).await;
            assert_eq!(job["status"], json!("succeeded"), "{job}");
        }
        let asset = upload_asset(&s, &admin, &deck, &png(40, 30), "image/png", None).await;
        assert_eq!(asset["status"], json!("ready"), "{asset}");
    }

    // From now on email cannot be delivered: each sign-up's verification email fails
    // every attempt and ends failed.
    s.set_env("PLINTH_SMTP_URL", "smtp://127.0.0.1:1");
    // Two attempts a second apart (the real back-off waits minutes to hours).
    s.set_env("PLINTH_EMAIL_BACKOFF", "1s");
    // Google Cloud Storage configured with an endpoint nothing answers on: a delete of
    // its object is a 503 (a dependency down).
    s.set_env("PLINTH_GCS_BUCKET", "plinth-test");
    s.set_env(
        "PLINTH_GCS_CREDENTIALS",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/gcs/test_service_account.not-a-test.json"
        ),
    );
    s.set_env("PLINTH_GCS_ENDPOINT", "http://127.0.0.1:9");
    s.restart();
    let signups = 3;
    for i in 0..signups {
        s.signup(&email(&format!("console-{i}"))).await;
    }
    // A 5xx of this process: deleting a GCS object while GCS does not answer.
    let (domain, _) = s.organization(&admin, "console").await;
    let body = json!({"domain": domain, "filename": "a.txt", "contentType": "text/plain"});
    let r = s
        .post("/api/data/generate-presigned-url-gcs", Some(&admin), body)
        .await;
    r.assert_ok();
    s.post(
        "/api/data/delete",
        Some(&admin),
        json!({"id": r.body["id"]}),
    )
    .await
    .assert_error(503);

    let deadline = Instant::now() + Duration::from_secs(180);
    let failed = loop {
        let r = s
            .get(
                "/api/admin/jobs?status=failed&queue=email&limit=50",
                Some(&admin),
            )
            .await;
        r.assert_ok();
        let jobs = r.body["jobs"].as_array().unwrap().clone();
        if jobs.len() >= signups {
            break jobs;
        }
        assert!(
            Instant::now() < deadline,
            "the emails never ended failed: {}",
            r.body
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // A job is done in the queue a moment after its work shows (the worker acknowledges
    // it after the handler returns).
    loop {
        let r = s.get("/api/admin/jobs/stats", Some(&admin)).await;
        r.assert_ok();
        let done = |q: &str| {
            r.body["queues"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["queue"] == json!(q))
                .map_or(0, |v| v["succeeded"].as_i64().unwrap())
        };
        if done("export") >= 6 && done("images") >= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slide jobs never ended done: {}",
            r.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Spread the finished jobs over the last hour, as on a server that has been running
    // a while (the chart then has more than one minute to draw).
    s.sql(if s.database_url.starts_with("postgres") {
        "UPDATE apalis.jobs SET done_at = done_at - (1 + floor(random() * 55)) * interval '1 minute' \
         WHERE status = 'Done'"
    } else {
        "UPDATE Jobs SET done_at = done_at - 60 * (1 + abs(random()) % 55) WHERE status = 'Done'"
    })
    .await;

    browser.window(1280, 1200).await;
    browser.goto(&format!("{}/console", s.base)).await;
    // A key that is not an admin's is refused, with the reason.
    browser.fill("#key", "pk_not_a_key").await;
    browser.click("#signin-button").await;
    let wait = |what: &'static str, script: &'static str| {
        let browser = &browser;
        async move {
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                let v = browser.exec(script).await;
                if v == json!(true) {
                    return;
                }
                assert!(Instant::now() < deadline, "the console never showed {what}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait(
        "the refusal",
        "return document.getElementById('signin-error').textContent.indexOf('refused (401)') >= 0
             && !document.getElementById('signin').hidden && sessionStorage.length === 0;",
    )
    .await;

    browser.fill("#key", &admin).await;
    browser.click("#signin-button").await;
    wait(
        "its data",
        "return document.body.getAttribute('data-loaded') === 'true';",
    )
    .await;
    let drawn = browser
        .exec(
            "var cells = function (sel) { return Array.prototype.map.call(document.querySelectorAll(sel),
               function (tr) { return Array.prototype.map.call(tr.cells, function (td) { return td.textContent; }); }); };
             return {
               queues: cells('#queues tbody tr'),
               done_bars: document.querySelectorAll('#chart rect.done').length,
               failed_bars: document.querySelectorAll('#chart rect.failed').length,
               done_hour: document.getElementById('total-done-hour').textContent,
               jobs: Array.prototype.map.call(document.querySelectorAll('#jobs tbody tr[data-id]'),
                 function (tr) { return tr.getAttribute('data-id'); }),
               job_rows: cells('#jobs tbody tr'),
               by_route: cells('#by-route tbody tr'),
               latest: cells('#latest-errors tbody tr'),
               errors: ['error', 'queues-error', 'jobs-error', 'errors-error'].map(function (id) {
                 return document.getElementById(id).textContent; }),
               stored: [sessionStorage.length, localStorage.length, document.cookie]
             };",
        )
        .await;
    assert_eq!(drawn["errors"], json!(["", "", "", ""]), "{drawn}");
    assert_eq!(drawn["stored"], json!([1, 0, ""]));
    let queues = drawn["queues"].as_array().unwrap();
    let queue = |name: &str| -> Vec<String> {
        let row = queues
            .iter()
            .find(|r| r[0].as_str().unwrap().contains(name))
            .unwrap_or_else(|| panic!("no row for {name}: {drawn}"));
        serde_json::from_value(row.clone()).unwrap()
    };
    for name in ["email", "export", "images", "expiry", "callbacks"] {
        queue(name);
    }
    // Queue, Paused, Pending, Scheduled, Running, Retrying, Failed, Cancelled, Succeeded,
    // Oldest pending, (pause button).
    let n = |v: &str| v.parse::<u64>().unwrap();
    assert_eq!(queue("email")[1], "no", "{drawn}");
    assert!(n(&queue("email")[6]) >= signups as u64, "{drawn}");
    assert!(n(&queue("export")[8]) >= 6, "{drawn}");
    assert!(n(&queue("images")[8]) >= 2, "{drawn}");
    assert!(n(drawn["done_hour"].as_str().unwrap()) >= 8, "{drawn}");
    assert!(drawn["done_bars"].as_u64().unwrap() >= 1, "{drawn}");
    assert!(drawn["failed_bars"].as_u64().unwrap() >= 1, "{drawn}");
    let shown: Vec<String> = serde_json::from_value(drawn["jobs"].clone()).unwrap();
    for job in &failed {
        assert!(
            shown.contains(&job["id"].as_str().unwrap().to_owned()),
            "{job} not listed: {drawn}"
        );
    }
    let by_route = drawn["by_route"].to_string();
    assert!(by_route.contains("/api/data/delete"), "{drawn}");
    assert!(drawn["latest"].to_string().contains("503"), "{drawn}");

    // Retry the newest failed email: it leaves the failed list and is queued again.
    let retried = failed[0]["id"].as_str().unwrap().to_owned();
    let before = browser
        .exec("return Number(document.body.getAttribute('data-refreshes'));")
        .await
        .as_u64()
        .unwrap();
    browser
        .click(&format!("#jobs button.retry[data-id=\"{retried}\"]"))
        .await;
    let deadline = Instant::now() + Duration::from_secs(15);
    let after = loop {
        let v = browser
            .exec(&format!(
                "return {{ refreshes: Number(document.body.getAttribute('data-refreshes')),
                   notice: document.getElementById('jobs-notice').textContent,
                   error: document.getElementById('jobs-error').textContent,
                   listed: !!document.querySelector('#jobs tr[data-id=\"{retried}\"]') }};"
            ))
            .await;
        if v["refreshes"].as_u64().unwrap() > before && !v["notice"].as_str().unwrap().is_empty() {
            break v;
        }
        assert!(Instant::now() < deadline, "the retry never showed: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(after["error"], json!(""), "{after}");
    assert!(
        after["notice"].as_str().unwrap().contains(&retried)
            && after["notice"].as_str().unwrap().contains("queued again"),
        "{after}"
    );
    assert_eq!(after["listed"], json!(false), "{after}");
    // The queue saw it: the job is no longer the failed one it was (it runs again, and
    // with SMTP still closed it may fail again later, as a new attempt).
    let r = s
        .get(
            "/api/admin/jobs?status=failed&queue=email&limit=50",
            Some(&admin),
        )
        .await;
    let again = r.body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == json!(retried))
        .cloned();
    if let Some(j) = again {
        assert_ne!(j, failed[0], "a retried job changes");
    }

    // Nothing was asked of another origin, and nothing was blocked.
    let origin = s.base.trim_end_matches('/').to_owned();
    let asked = browser
        .exec("return performance.getEntriesByType('resource').map(function (e) { return e.name; }).concat([location.href]);")
        .await;
    for url in asked.as_array().unwrap() {
        assert!(
            url.as_str().unwrap().starts_with(&format!("{origin}/")),
            "{url} is not on {origin}"
        );
    }
    assert_eq!(
        browser
            .exec("return document.getElementById('error').textContent;")
            .await,
        json!("")
    );

    // Stacked by queue: the bars take the queues' colours.
    let before = browser
        .exec("return Number(document.body.getAttribute('data-refreshes'));")
        .await;
    browser.click("#mode option[value=stacked]").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let stacked = loop {
        let v = browser
            .exec(
                "return { refreshes: Number(document.body.getAttribute('data-refreshes')),
                   queues: Array.prototype.map.call(document.querySelectorAll('#chart rect.done'),
                     function (r) { return r.getAttribute('data-queue'); }) };",
            )
            .await;
        if v["refreshes"] != before {
            break v;
        }
        assert!(Instant::now() < deadline, "the chart was not redrawn");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for q in ["export", "images"] {
        assert!(
            stacked["queues"].as_array().unwrap().contains(&json!(q)),
            "{stacked}"
        );
    }

    let shot = browser.screenshot().await;
    assert_eq!(&shot[..8], b"\x89PNG\r\n\x1a\n");
    if std::env::var_os("PLINTH_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console.png");
        std::fs::write(path, &shot).unwrap();
    }

    // Sign-out forgets the key.
    browser.click("#signout").await;
    wait(
        "the sign-in form again",
        "return !document.getElementById('signin').hidden && sessionStorage.length === 0;",
    )
    .await;
    browser.quit().await;
}

/// The console at Oban Web's level, in headless Chromium against real jobs: a queue
/// paused from the page waits in every worker (the process list shows its workers
/// paused), the jobs are listed by status and found by their client's id, a job's detail
/// shows its arguments and attempts, ticked jobs are cancelled and retried in bulk, the
/// queue resumed from the page runs them, and a job is discarded from its detail.
/// `PLINTH_BLESS=1` saves docs/console-jobs.png and docs/console-workers.png.
#[tokio::test]
async fn the_console_pauses_queues_lists_workers_shows_a_job_and_acts_in_bulk() {
    use crate::common::email;
    use crate::slide_helpers::{create_md, id, start_export};
    use std::time::{Duration, Instant};

    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = crate::common::Server::start().await;
    let admin = s.admin(&email("console-ops")).await;
    browser.window(1280, 1500).await;
    browser.goto(&format!("{}/console", s.base)).await;
    browser.fill("#key", &admin).await;
    browser.click("#signin-button").await;
    let wait = |what: &'static str, script: String| {
        let browser = &browser;
        async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let v = browser.exec(&script).await;
                if v == json!(true) {
                    return;
                }
                if Instant::now() >= deadline {
                    let page = browser
                        .exec("return [document.getElementById('jobs').textContent, document.getElementById('jobs-notice').textContent, document.getElementById('jobs-error').textContent, document.getElementById('error').textContent, document.getElementById('status').value, document.getElementById('queue').value];")
                        .await;
                    panic!("the console never showed {what}: {page}");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait(
        "its data",
        "return document.body.getAttribute('data-loaded') === 'true';".into(),
    )
    .await;
    // No refresh redraws a table between finding an element and clicking it: refreshes
    // come from the page's own actions only, and clicks in tables are made in the page.
    browser.click("#auto").await;
    let click = |css: String| {
        let browser = &browser;
        async move {
            let found = browser
                .exec(&format!(
                    "var e = document.querySelector({}); if (!e) return false; e.click(); return true;",
                    serde_json::to_string(&css).unwrap()
                ))
                .await;
            assert_eq!(found, json!(true), "nothing matches {css}");
        }
    };

    // Pause the export queue from its row.
    click("#queues button[data-queue=export]".into()).await;
    wait(
        "the export queue paused",
        "var tr = document.querySelector('#queues tr[data-queue=export][data-paused=true]');
         return !!tr && tr.querySelector('.paused-cell').textContent === 'paused';"
            .into(),
    )
    .await;
    let stats = s.get("/api/admin/jobs/stats", Some(&admin)).await;
    let export_q = stats.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == json!("export"))
        .unwrap()
        .clone();
    assert_eq!(export_q["paused"], json!(true), "{export_q}");
    // Give the workers their second to see it, then queue three exports: they wait.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let deck = id(&create_md(&s, &admin, "# Console\n\n- one\n\n---\n\n## Two").await);
    let mut exports = Vec::new();
    for _ in 0..3 {
        exports.push(start_export(&s, &admin, &deck, "pdf").await);
    }
    browser.exec("document.getElementById('status').value = 'pending'; document.getElementById('status').dispatchEvent(new Event('change')); return true;").await;
    wait(
        "three pending exports",
        "return document.querySelectorAll('#jobs tbody tr[data-id]').length === 3;".into(),
    )
    .await;
    // The process list: this server, its export worker paused.
    wait(
        "the paused export worker",
        "return Array.prototype.some.call(document.querySelectorAll('#processes tr.worker'), function (tr) {
           return tr.textContent.indexOf('export') >= 0 && tr.textContent.indexOf('paused') >= 0; })
           && document.querySelectorAll('#processes tr[data-process]').length >= 1;"
            .into(),
    )
    .await;
    if std::env::var_os("PLINTH_BLESS").is_some() {
        let shot = browser.screenshot().await;
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console-workers.png"),
            &shot,
        )
        .unwrap();
    }

    // Found by the id its client holds; the detail shows it, with no attempt yet.
    browser.fill("#search", &exports[0]).await;
    browser.click("#search-button").await;
    wait(
        "the searched export alone",
        "return document.querySelectorAll('#jobs tbody tr[data-id]').length === 1
           && document.querySelector('#jobs tbody').textContent.indexOf('client') >= 0;"
            .into(),
    )
    .await;
    click("#jobs tbody button[data-open]".into()).await;
    wait(
        "the job's detail",
        format!(
            "return !document.getElementById('detail').hidden
               && document.getElementById('detail-fields').textContent.indexOf('{}') >= 0
               && document.getElementById('detail-args').textContent.indexOf('job_id') >= 0
               && document.getElementById('attempts').textContent.indexOf('No attempt yet') >= 0;",
            exports[0]
        ),
    )
    .await;
    browser.click("#detail-close").await;

    // Tick the other two and cancel them together.
    browser.exec("document.getElementById('search').value = ''; document.getElementById('status').value = 'pending'; document.getElementById('status').dispatchEvent(new Event('change')); return true;").await;
    wait(
        "three pending exports again",
        "return document.querySelectorAll('#jobs tbody tr[data-id]').length === 3;".into(),
    )
    .await;
    let ids: Vec<String> = serde_json::from_value(
        browser
            .exec("return Array.prototype.map.call(document.querySelectorAll('#jobs tbody tr[data-id]'), function (tr) { return tr.getAttribute('data-id'); });")
            .await,
    )
    .unwrap();
    let first_job = s
        .get(&format!("/api/admin/jobs/{}", exports[0]), Some(&admin))
        .await
        .body["job"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let others: Vec<&String> = ids.iter().filter(|i| **i != first_job).collect();
    assert_eq!(others.len(), 2, "{ids:?}");
    for id in &others {
        click(format!("#jobs tbody input[data-id=\"{id}\"]")).await;
    }
    browser.click("#bulk-cancel").await;
    wait(
        "two cancelled",
        "return document.getElementById('jobs-notice').textContent.indexOf('2 jobs cancelled') >= 0;".into(),
    )
    .await;
    for id in &others {
        let r = s.get(&format!("/api/admin/jobs/{id}"), Some(&admin)).await;
        assert_eq!(r.body["job"]["status"], json!("cancelled"), "{}", r.body);
    }

    // Retry them in bulk from the cancelled list, then resume the queue from its row.
    browser.exec("document.getElementById('status').value = 'cancelled'; document.getElementById('status').dispatchEvent(new Event('change')); return true;").await;
    wait(
        "two cancelled listed",
        "return document.querySelectorAll('#jobs tbody tr[data-id]').length === 2;".into(),
    )
    .await;
    click("#jobs thead input[type=checkbox]".into()).await;
    browser.click("#bulk-retry").await;
    wait(
        "two retried",
        "return document.getElementById('jobs-notice').textContent.indexOf('2 jobs queued again') >= 0;".into(),
    )
    .await;
    click("#queues button[data-queue=export]".into()).await;
    wait(
        "the export queue resumed",
        "var tr = document.querySelector('#queues tr[data-queue=export]');
         return !!tr && !tr.hasAttribute('data-paused')
           && tr.querySelector('.paused-cell').textContent === 'no';"
            .into(),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    for e in &exports {
        loop {
            let r = s
                .get(
                    &format!("/api/slides/jobs/{e}?deck_id={deck}"),
                    Some(&admin),
                )
                .await;
            if r.body["status"] == json!("succeeded") {
                break;
            }
            assert!(Instant::now() < deadline, "{}", r.body);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    // The queue records each success a moment after its work shows (apalis acknowledges
    // after the handler returns).
    loop {
        let r = s
            .get(
                "/api/admin/jobs?queue=export&status=succeeded",
                Some(&admin),
            )
            .await;
        if r.body["jobs"].as_array().unwrap().len() == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "{}", r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The detail of a succeeded job: its attempt, then discarded from the detail.
    browser.exec("document.getElementById('status').value = 'succeeded'; document.getElementById('queue').value = 'export'; document.getElementById('status').dispatchEvent(new Event('change')); return true;").await;
    wait(
        "the succeeded exports",
        "return document.querySelectorAll('#jobs tbody tr[data-id]').length === 3;".into(),
    )
    .await;
    click(format!("#jobs tbody button[data-open=\"{first_job}\"]")).await;
    wait(
        "the attempt",
        "return !document.getElementById('detail').hidden
           && document.getElementById('attempts').textContent.indexOf('succeeded') >= 0
           && document.getElementById('attempts').textContent.indexOf(' ms') >= 0;"
            .into(),
    )
    .await;
    if std::env::var_os("PLINTH_BLESS").is_some() {
        let shot = browser.screenshot().await;
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console-jobs.png"),
            &shot,
        )
        .unwrap();
    }
    browser.click("#detail-discard").await;
    wait(
        "the job gone",
        "return document.getElementById('detail').hidden
           && document.querySelectorAll('#jobs tbody tr[data-id]').length === 2;"
            .into(),
    )
    .await;
    s.get(&format!("/api/admin/jobs/{first_job}"), Some(&admin))
        .await
        .assert_error(404);
    assert_eq!(
        browser
            .exec("return document.getElementById('error').textContent + document.getElementById('jobs-error').textContent;")
            .await,
        json!("")
    );
    browser.quit().await;
}

/// A browser's `EventSource` cannot send `x-api-key` (issue 45): a short-lived stream
/// token from an authenticated POST opens the job's event stream. Over HTTP: the token
/// opens only its own job, and dies with the account's key. In headless Chromium: an
/// `EventSource` on the token's URL receives the job's events until it has succeeded.
#[tokio::test]
async fn an_event_source_follows_a_job_with_a_stream_token() {
    use crate::common::email;
    use crate::slide_helpers::{create_md, id, long_deck, start_export};

    let s = crate::common::Server::start().await;
    let key = s.verified_user(&email("eventsource")).await;
    let deck = long_deck(&s, &key, 12).await;
    let job = start_export(&s, &key, &deck, "png").await;
    let mint = |job: String, deck: String| {
        let (s, key) = (&s, &key);
        async move {
            s.post(
                &format!("/api/slides/jobs/{job}/events/token"),
                Some(key),
                json!({ "deck_id": deck }),
            )
            .await
        }
    };
    let r = mint(job.clone(), deck.clone()).await;
    r.assert_ok();
    assert_eq!(
        r.header("cache-control").as_deref(),
        Some("private, no-store")
    );
    let url = r.body["url"].as_str().unwrap().to_owned();
    let token = r.body["token"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("/api/slides/jobs/{job}/stream?")),
        "{url}"
    );

    // Without a key or with a bad token: 401; another job's URL with this token: 401.
    let status = |path: String| {
        let s = &s;
        async move {
            s.raw(reqwest::Method::GET, &path)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let base = format!("/api/slides/jobs/{job}/stream?deck_id={deck}");
    assert_eq!(status(base.clone()).await, 401);
    assert_eq!(status(format!("{base}&token=x.1.y")).await, 401);
    let other_deck = id(&create_md(&s, &key, "# Other").await);
    let other = start_export(&s, &key, &other_deck, "pdf").await;
    assert_eq!(
        status(format!(
            "/api/slides/jobs/{other}/stream?deck_id={other_deck}&token={token}"
        ))
        .await,
        401
    );
    // Another account cannot mint one for this job.
    let stranger = s.verified_user(&email("eventsource-stranger")).await;
    s.post(
        &format!("/api/slides/jobs/{job}/events/token"),
        Some(&stranger),
        json!({ "deck_id": deck }),
    )
    .await
    .assert_error(404);

    if let Some(browser) = Browser::start().await {
        browser.goto(&format!("{}/", s.base)).await;
        browser
            .exec(&format!(
                "window.seen = []; var es = new EventSource({});
                 es.addEventListener('job', function (e) {{
                   var j = JSON.parse(e.data); window.seen.push(j.status + ':' + j.slides_done);
                   if (j.status === 'succeeded') es.close();
                 }});
                 return true;",
                serde_json::to_string(&url).unwrap()
            ))
            .await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let seen = loop {
            let seen: Vec<String> =
                serde_json::from_value(browser.exec("return window.seen;").await).unwrap();
            if seen.last().is_some_and(|l| l.starts_with("succeeded")) {
                break seen;
            }
            assert!(std::time::Instant::now() < deadline, "{seen:?}");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        assert!(seen.len() >= 2, "progress events before the end: {seen:?}");
        browser.quit().await;
    }

    // The token's own URL opens the stream (without Chromium too).
    let r = s.raw(reqwest::Method::GET, &url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    drop(r);
    // A new key ends every token minted before it.
    s.post("/api/users/regenerate-key", Some(&key), json!({}))
        .await
        .assert_ok();
    assert_eq!(
        status(format!("/{}", url.trim_start_matches('/'))).await,
        401
    );
}
