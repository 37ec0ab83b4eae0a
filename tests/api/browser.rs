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
