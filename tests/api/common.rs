//! Test harness: starts the real `plinth` binary on a free port with a temp data dir and
//! talks HTTP to it. `PLINTH_TEST_DATABASE_URL=postgres://...` runs every test against a
//! fresh PostgreSQL database created for that server (dropped afterwards).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::{json, Value};

pub const BIN: &str = env!("CARGO_BIN_EXE_plinth");

pub struct Server {
    pub base: String,
    pub dir: tempfile::TempDir,
    /// The data dir: `dir`, or another server's (`Options::data_dir`).
    data: PathBuf,
    pub database_url: String,
    child: Child,
    pg_db: Option<(String, String)>,
    env: Vec<(String, String)>,
    client: reqwest::Client,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    }
    /// Every response carries `_usage` in the body and the same numbers as headers.
    pub fn assert_usage(&self) {
        let u = &self.body["_usage"];
        assert!(u.is_object(), "missing _usage in {}", self.body);
        assert!(u["tokens"]["cost"].is_u64(), "{}", self.body);
        for (field, header) in [
            ("limit", "x-ratelimit-limit"),
            ("remaining", "x-ratelimit-remaining"),
            ("interval_ms", "x-ratelimit-interval-ms"),
        ] {
            assert_eq!(
                self.header(header).unwrap_or_default(),
                u["rate_limit"][field].to_string(),
                "header {header} vs body in {}",
                self.body
            );
        }
        assert_eq!(
            self.header("x-tokens-cost").unwrap_or_default(),
            u["tokens"]["cost"].to_string()
        );
        match u["tokens"].get("remaining") {
            Some(r) => assert_eq!(self.header("x-tokens-remaining").unwrap(), r.to_string()),
            None => assert!(self.header("x-tokens-remaining").is_none()),
        }
    }
    /// An error envelope with this status.
    pub fn assert_error(&self, status: u16) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.body["error"], json!(true), "body: {}", self.body);
        assert!(self.body["message"].as_str().is_some_and(|m| !m.is_empty()));
        self.assert_usage();
    }
    pub fn assert_ok(&self) {
        assert!(
            self.status.is_success(),
            "status {} body {}",
            self.status,
            self.body
        );
        self.assert_usage();
    }
}

/// Environment for a test server; the rate-limit multiplier is raised by default so that
/// many sign-ups from 127.0.0.1 are not throttled (tests of limits set it back to 1).
pub struct Options {
    pub env: Vec<(String, String)>,
    /// PostgreSQL reached through this local port (a test's TCP proxy) instead of its own.
    pub db_port: Option<u16>,
    /// The SQLite database file in this directory (a small tmpfs) instead of the data dir.
    pub sqlite_in: Option<PathBuf>,
    /// A PostgreSQL database made by the test (a restored backup), dropped with the server.
    pub pg_database: Option<String>,
    /// SQLite even when PLINTH_TEST_DATABASE_URL is set (a deployment to move).
    pub sqlite: bool,
    /// This data dir (another server's, kept by the test) instead of a new one.
    pub data_dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            env: vec![("PLINTH_RATE_LIMIT_MULTIPLIER".into(), "1000".into())],
            db_port: None,
            sqlite_in: None,
            pg_database: None,
            sqlite: false,
            data_dir: None,
        }
    }
}

impl Options {
    pub fn db_port(mut self, port: u16) -> Self {
        self.db_port = Some(port);
        self
    }
    pub fn pg_database(mut self, name: &str) -> Self {
        self.pg_database = Some(name.to_owned());
        self
    }
    pub fn sqlite_in(mut self, dir: &std::path::Path) -> Self {
        self.sqlite_in = Some(dir.to_path_buf());
        self
    }
    pub fn sqlite(mut self) -> Self {
        self.sqlite = true;
        self
    }
    pub fn data_dir(mut self, dir: &std::path::Path) -> Self {
        self.data_dir = Some(dir.to_path_buf());
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.into(), v.into()));
        self
    }
}

pub fn pg_admin_url() -> Option<String> {
    std::env::var("PLINTH_TEST_DATABASE_URL")
        .ok()
        .filter(|s| !s.is_empty())
}

pub fn replace_db_name(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let cut = base.rfind('/').expect("database URL has a path");
    let mut out = format!("{}/{name}", &base[..cut]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `url` with its host and port replaced by `127.0.0.1:<port>`.
pub fn with_port(url: &str, port: u16) -> String {
    let at = url
        .rfind('@')
        .map_or_else(|| url.find("://").unwrap() + 3, |i| i + 1);
    let end = url[at..].find('/').map_or(url.len(), |i| at + i);
    format!("{}127.0.0.1:{port}{}", &url[..at], &url[end..])
}

impl Server {
    pub async fn start() -> Server {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(opts: Options) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let data = opts
            .data_dir
            .clone()
            .unwrap_or_else(|| dir.path().to_path_buf());
        let (database_url, pg_db) = match pg_admin_url().filter(|_| !opts.sqlite) {
            Some(admin) if opts.pg_database.is_some() => {
                let name = opts.pg_database.clone().unwrap();
                (replace_db_name(&admin, &name), Some((admin, name)))
            }
            Some(admin) => {
                let name = format!("plinth_t_{}", uuid::Uuid::new_v4().simple());
                let pool = sqlx::PgPool::connect(&admin)
                    .await
                    .expect("PostgreSQL for tests");
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&pool)
                    .await
                    .unwrap();
                pool.close().await;
                let url = replace_db_name(&admin, &name);
                let url = match opts.db_port {
                    Some(port) => with_port(&url, port),
                    None => url,
                };
                (url, Some((admin, name)))
            }
            None => (
                format!(
                    "sqlite://{}",
                    opts.sqlite_in
                        .as_deref()
                        .unwrap_or(&data)
                        .join("plinth.db")
                        .display()
                ),
                None,
            ),
        };
        let (child, base) = spawn(&data, &database_url, &opts.env);
        Server {
            base,
            dir,
            data,
            database_url,
            child,
            pg_db,
            env: opts.env,
            client: reqwest::Client::new(),
        }
    }

    /// `kill -9` and start again on the same data dir and database (a new port).
    pub fn restart(&mut self) {
        self.kill();
        let (child, base) = spawn(&self.data, &self.database_url, &self.env);
        self.child = child;
        self.base = base;
    }

    /// Changes an environment variable for the next `restart`.
    pub fn set_env(&mut self, k: &str, v: &str) {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.into(), v.into()));
    }

    /// Asks the server to stop (SIGTERM) and waits for it: how long it took and whether
    /// it exited cleanly.
    pub fn terminate(&mut self) -> (Duration, bool) {
        let started = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        (started.elapsed(), status.success())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the server to exit on its own: its exit status, or None after `within`.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server process abruptly (the data dir and database stay).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn data_dir(&self) -> PathBuf {
        self.data.clone()
    }

    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(k) = key {
            req = req.header("x-api-key", k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        Self::read(req.send().await.expect("request failed")).await
    }

    pub async fn read(res: reqwest::Response) -> Resp {
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("response is not JSON ({e}): {status} {text:?}"));
        Resp {
            status,
            headers,
            body,
        }
    }

    /// A raw request for malformed-input tests.
    pub fn raw(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{}", self.base, path))
    }

    /// Delivers a payment-provider event to `/api/webhooks/stripe`, signed with `secret`
    /// now (or with the given `Stripe-Signature`; an empty one sends none).
    pub async fn webhook(&self, event: &Value, secret: &str, signature: Option<String>) -> Resp {
        let body = event.to_string();
        let sig = signature.unwrap_or_else(|| {
            plinth::adapters::payments::sign_event(
                secret,
                chrono::Utc::now().timestamp(),
                body.as_bytes(),
            )
        });
        let mut req = self
            .raw(reqwest::Method::POST, "/api/webhooks/stripe")
            .header("content-type", "application/json")
            .body(body);
        if !sig.is_empty() {
            req = req.header("stripe-signature", sig);
        }
        Self::read(req.send().await.unwrap()).await
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> Resp {
        self.request(reqwest::Method::GET, path, key, None).await
    }

    pub async fn post(&self, path: &str, key: Option<&str>, body: Value) -> Resp {
        self.request(reqwest::Method::POST, path, key, Some(body))
            .await
    }

    /// Signs up; returns (key, user).
    pub async fn signup(&self, email: &str) -> (String, Value) {
        let r = self
            .post(
                "/api/users/authenticate",
                None,
                json!({"email": email, "password": "correct horse"}),
            )
            .await;
        r.assert_ok();
        assert_eq!(r.body["existing"], json!(false));
        let key = r.body["user"]["key"].as_str().unwrap().to_owned();
        (key, r.body["user"].clone())
    }

    /// Waits for the email to `to` whose body contains `needle`; returns its text.
    pub async fn wait_for_email(&self, to: &str, needle: &str) -> String {
        let outbox = self.data.join("outbox");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(entries) = std::fs::read_dir(&outbox) {
                for e in entries.flatten() {
                    if e.path().extension().is_some_and(|x| x == "eml") {
                        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                        if text.contains(&format!("To: {to}")) && text.contains(needle) {
                            return text;
                        }
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "no email to {to} containing {needle:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn emails_to(&self, to: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.data.join("outbox")) else {
            return vec![];
        };
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .filter(|t| t.contains(&format!("To: {to}")))
            .collect()
    }

    /// The code from the newest verification email to `to`.
    pub async fn verification_code(&self, to: &str) -> String {
        let text = self.wait_for_email(to, "?code=").await;
        code_in(&text)
    }

    /// Signs up and verifies as the client that signed up would (the code confirms this
    /// sign-up and its password); returns the key of a level-10 account (the first
    /// verification rotates the key: the sign-up key stops working).
    pub async fn verified_user(&self, email: &str) -> String {
        let (signup_key, _) = self.signup(email).await;
        let code = self.verification_code(email).await;
        let r = self
            .post(
                "/api/users/verify",
                Some(&signup_key),
                json!({"code": code}),
            )
            .await;
        r.assert_ok();
        let key = r.body["user"]["key"].as_str().unwrap().to_owned();
        assert_ne!(key, signup_key, "verification must rotate the key");
        key
    }

    /// `plinth users set-level`, as an operator would run it next to the server.
    pub fn set_level(&self, email: &str, level: i64) -> std::process::Output {
        self.cli(&[
            "users",
            "set-level",
            "--email",
            email,
            "--level",
            &level.to_string(),
        ])
    }

    /// A `plinth` command run next to the server, on its data dir and database (and
    /// with its master key, when the server was given one).
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .arg("--data-dir")
            .arg(&self.data)
            .arg("--database-url")
            .arg(&self.database_url)
            .env("RUST_LOG", "warn");
        if let Some((_, key)) = self.env.iter().find(|(k, _)| k == "PLINTH_MASTER_KEY") {
            cmd.env("PLINTH_MASTER_KEY", key);
        }
        cmd.output().unwrap()
    }

    /// A new organization of `admin` taking guest checkouts, with a random domain
    /// `<prefix>-xxxxxxxx.example`: `(domain, id)`.
    pub async fn organization(&self, admin: &str, prefix: &str) -> (String, String) {
        let domain = format!(
            "{prefix}-{}.example",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let r = self
            .post(
                "/api/organizations/create",
                Some(admin),
                json!({"domain": domain, "data": {"guest_checkout_enabled": true}}),
            )
            .await;
        r.assert_ok();
        let id = r.body["data"]["id"]
            .as_str()
            .expect("organization id")
            .to_owned();
        (domain, id)
    }

    /// A verified account with the 100-token welcome bonus.
    pub async fn funded_user(&self, email: &str) -> String {
        let key = self.verified_user(email).await;
        self.post(
            "/api/credits/distribute-bonus",
            Some(&key),
            json!({"bonusName": "welcome"}),
        )
        .await
        .assert_ok();
        key
    }

    /// A guest checkout session of the organization: its bearer token.
    pub async fn guest_session(&self, domain: &str) -> String {
        let r = self
            .post(
                "/api/marketplace/guest/session",
                None,
                json!({"domain": domain}),
            )
            .await;
        r.assert_ok();
        r.body["token"].as_str().unwrap().to_owned()
    }

    /// A POST with a guest session's bearer token instead of a key.
    pub async fn post_as_guest(&self, path: &str, token: &str, body: Value) -> Resp {
        Self::read(
            self.raw(reqwest::Method::POST, path)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// A verified account raised to admin; waits until the server sees the new level.
    pub async fn admin(&self, email: &str) -> String {
        let key = self.verified_user(email).await;
        let out = self.set_level(email, 100);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(12);
        loop {
            let r = self.get("/api/users/viewer", Some(&key)).await;
            if r.body["user"]["level"] == json!(100) {
                return key;
            }
            assert!(
                Instant::now() < deadline,
                "level change not seen within 12 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Runs SQL against the server's database (to age a code, for instance).
    pub async fn sql(&self, statement: &str) {
        if self.database_url.starts_with("postgres") {
            let pool = sqlx::PgPool::connect(&self.database_url).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
        } else {
            let pool = sqlx::SqlitePool::connect(&self.database_url).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
        }
    }

    /// The single integer a query returns (`SELECT COUNT(*) ...`), read straight from the
    /// server's database.
    pub async fn sql_count(&self, query: &str) -> i64 {
        if self.database_url.starts_with("postgres") {
            let pool = sqlx::PgPool::connect(&self.database_url).await.unwrap();
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(query.to_owned()))
                .fetch_one(&pool)
                .await
                .unwrap();
            pool.close().await;
            n
        } else {
            let pool = sqlx::SqlitePool::connect(&self.database_url).await.unwrap();
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(query.to_owned()))
                .fetch_one(&pool)
                .await
                .unwrap();
            pool.close().await;
            n
        }
    }
}

/// Starts `plinth serve` on a free port; returns the process and its base URL.
fn spawn(dir: &std::path::Path, database_url: &str, env: &[(String, String)]) -> (Child, String) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(dir)
        .arg("--database-url")
        .arg(database_url)
        .env_remove("PLINTH_DATABASE_URL")
        .env("RUST_LOG", "info,sqlx=warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawning plinth");
    let base = match wait_for_line(&mut child, "plinth listening on ", Duration::from_secs(60)) {
        Some(b) => b,
        None => {
            let _ = child.kill();
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            panic!("server did not start; log:\n{log}");
        }
    };
    (child, base)
}

/// Reads a child's (piped) stdout until a line holding `marker`: what follows it on that
/// line, or `None` after `within`. The rest of the output keeps being drained.
pub fn wait_for_line(child: &mut Child, marker: &'static str, within: Duration) -> Option<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(at) = line.find(marker) {
                let _ = tx.send(line[at + marker.len()..].to_owned());
            }
        }
    });
    rx.recv_timeout(within).ok()
}

pub fn code_in(email_text: &str) -> String {
    let at = email_text.rfind("?code=").expect("link with ?code=") + 6;
    email_text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failed test shows what the server logged, since its data dir goes with it.
        if std::thread::panicking() {
            let log =
                std::fs::read_to_string(self.data_dir().join("server.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- server.log (last {} lines)", tail.len());
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
        if let Some((admin, name)) = self.pg_db.take() {
            // Drop runs inside the test's runtime: use a thread with its own.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    if let Ok(pool) = sqlx::PgPool::connect(&admin).await {
                        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                        )))
                        .execute(&pool)
                        .await;
                        pool.close().await;
                    }
                });
            })
            .join();
        }
    }
}

/// A unique email for this test run.
pub fn email(tag: &str) -> String {
    format!(
        "{tag}-{}@example.com",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    )
}

/// Routes whose caller is a guest checkout session (`Authorization: Bearer`): without
/// one they answer 401 whatever API key is sent; the purchases ("Key or guest session")
/// take a valid key too, so they are 401 only without either.
pub fn guest_session_route(path: &str) -> bool {
    path.starts_with("/api/marketplace/guest/cart")
        || path == "/api/marketplace/guest/checkout"
        || path == "/api/licenses/purchase"
        || path == "/api/downloads/purchase"
}

/// A port free right now, for a listener the test names before the server starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether `python3` can import `module` (tests that need a Python peer skip without it).
pub fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success())
}

/// An aiosmtpd sink on `port` delivering into a maildir (read `<dir>/new`); kill the
/// child when done.
pub fn smtp_sink(port: u16) -> (Child, tempfile::TempDir) {
    let maildir = tempfile::tempdir().unwrap();
    for d in ["tmp", "new", "cur"] {
        std::fs::create_dir_all(maildir.path().join(d)).unwrap();
    }
    let sink = Command::new("python3")
        .args([
            "-m",
            "aiosmtpd",
            "-n",
            "-l",
            &format!("127.0.0.1:{port}"),
            "-c",
            "aiosmtpd.handlers.Mailbox",
        ])
        .arg(maildir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (sink, maildir)
}

/// The value of the first Prometheus sample of `name` whose labels include every
/// `labels` pair.
pub fn metric_sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}
