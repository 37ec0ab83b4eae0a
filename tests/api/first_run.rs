//! Issue 34, "first run": the links in account emails open pages that confirm with one
//! click (or go to the application with PLINTH_APP_URL); start-up says where to go next;
//! operator commands never create a database or a master key; `migrate` on PostgreSQL
//! refuses to bind a generated key; each command's `--help` lists its own options.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::browser::Browser;
use crate::common::{email, Options, Server, BIN};

/// The link on the line of an email that holds `/<page>?code=`.
fn link_in(text: &str, page: &str) -> String {
    let needle = format!("/{page}?code=");
    text.lines()
        .find(|l| l.contains(&needle))
        .map(|l| l.trim().to_owned())
        .unwrap_or_else(|| panic!("no {needle} link in:\n{text}"))
}

/// Waits until the page says it is done (or shows an error): its text.
async fn outcome(browser: &Browser) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let v = browser
            .exec(
                "return { done: document.body.getAttribute('data-done') === 'true',
                   error: document.getElementById('error').textContent,
                   message: document.getElementById('done').textContent,
                   key: document.getElementById('key').textContent };",
            )
            .await;
        if v["done"] == json!(true) || !v["error"].as_str().unwrap_or("").is_empty() {
            return v;
        }
        assert!(Instant::now() < deadline, "the page never finished: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_links_in_account_emails_open_pages_that_confirm_with_one_click() {
    let s = Server::start().await;
    // Served under a strict policy, never cached.
    let r = s
        .raw(reqwest::Method::GET, "/verify?code=00")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("connect-src 'self'") && csp.contains("default-src 'none'"));
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_eq!(r.headers()["referrer-policy"], "no-referrer");
    for page in ["/reset-password", "/sign-in"] {
        let r = s.raw(reqwest::Method::GET, page).send().await.unwrap();
        assert_eq!(r.status(), 200, "{page}");
    }

    let Some(browser) = Browser::start().await else {
        return;
    };
    let addr = email("firstrun");
    let (signup_key, _) = s.signup(&addr).await;
    let text = s.wait_for_email(&addr, "/verify?code=").await;
    let link = link_in(&text, "verify");
    assert!(link.starts_with(&s.base), "{link} is plinth's own page");
    browser.goto(&link).await;
    let shown = browser
        .exec("return [document.getElementById('title').textContent, document.getElementById('form').hidden, document.getElementById('password-label').textContent];")
        .await;
    assert_eq!(
        shown,
        json!(["Confirm your email", false, "New password (optional)"])
    );
    // Before anything is spent, the page shows when and from where the sign-up was
    // made, and offers "this wasn't me" (issue 42).
    let deadline = Instant::now() + Duration::from_secs(15);
    let details = loop {
        let d = browser
            .exec("return [document.getElementById('details').textContent, document.getElementById('reject').hidden];")
            .await;
        if !d[0].as_str().unwrap_or("").is_empty() {
            break d;
        }
        assert!(Instant::now() < deadline, "no details shown");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = details[0].as_str().unwrap();
    assert!(
        text.contains(&addr) && text.contains("127.0.0.1"),
        "{details}"
    );
    assert!(
        text.contains("This sign-up created the account"),
        "{details}"
    );
    assert_eq!(details[1], json!(false));
    // Opening the link spends nothing: the sign-up key still works until the click.
    s.get("/api/users/viewer", Some(&signup_key))
        .await
        .assert_ok();
    browser.click("#confirm").await;
    let done = outcome(&browser).await;
    assert_eq!(done["error"], json!(""), "{done}");
    assert!(done["message"].as_str().unwrap().contains(&addr), "{done}");
    let key = done["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("pk_") && key != signup_key, "{done}");
    let viewer = s.get("/api/users/viewer", Some(&key)).await;
    viewer.assert_ok();
    assert_eq!(viewer.body["user"]["verified"], json!(true));
    // The key rotated at verification, as the README says.
    s.get("/api/users/viewer", Some(&signup_key))
        .await
        .assert_error(401);
    // The password chosen at sign-up survives the click (UX review A1).
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["key"], json!(key));
    // The same link again: the code is spent, and the page says so.
    browser.goto(&link).await;
    browser.click("#confirm").await;
    let again = outcome(&browser).await;
    assert!(
        again["error"].as_str().unwrap().contains("already used"),
        "{again}"
    );

    // A reset link: the page asks for the new password and sets it.
    s.post("/api/users/reset-password", None, json!({ "email": addr }))
        .await
        .assert_ok();
    let text = s.wait_for_email(&addr, "/reset-password?code=").await;
    browser.goto(&link_in(&text, "reset-password")).await;
    browser.fill("#password", "a new long password").await;
    browser.click("#confirm").await;
    let reset = outcome(&browser).await;
    assert_eq!(reset["error"], json!(""), "{reset}");
    assert!(reset["message"]
        .as_str()
        .unwrap()
        .contains("password is changed"));
    let signin = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "a new long password"}),
        )
        .await;
    signin.assert_ok();
    assert_eq!(signin.body["user"]["key"], reset["key"]);

    // A one-time sign-in link: one click, and the page shows the account's key.
    s.post(
        "/api/users/authenticate-interstitial",
        None,
        json!({ "email": addr }),
    )
    .await
    .assert_ok();
    let text = s.wait_for_email(&addr, "/sign-in?code=").await;
    browser.goto(&link_in(&text, "sign-in")).await;
    assert_eq!(
        browser
            .exec("return document.getElementById('password-box').hidden;")
            .await,
        json!(true)
    );
    browser.click("#confirm").await;
    let signed = outcome(&browser).await;
    assert_eq!(signed["error"], json!(""), "{signed}");
    assert!(signed["message"].as_str().unwrap().contains("signed in"));
    s.get("/api/users/viewer", Some(signed["key"].as_str().unwrap()))
        .await
        .assert_ok();
    // A link without a code says so and offers nothing to click.
    browser.goto(&format!("{}/verify", s.base)).await;
    let v = browser
        .exec("return [document.getElementById('form').hidden, document.getElementById('error').textContent];")
        .await;
    assert_eq!(v[0], json!(true));
    assert!(v[1].as_str().unwrap().contains("no valid code"), "{v}");
    browser.quit().await;
}

#[tokio::test]
async fn app_url_sends_account_links_to_the_application() {
    let s =
        Server::start_with(Options::default().env("PLINTH_APP_URL", "https://app.example.com/"))
            .await;
    let addr = email("appurl");
    s.signup(&addr).await;
    let text = s.wait_for_email(&addr, "?code=").await;
    let link = link_in(&text, "verify");
    assert!(
        link.starts_with("https://app.example.com/verify?code="),
        "{link}"
    );
    // A value that is not a base URL is refused at start.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env("PLINTH_APP_URL", "app.example.com")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("PLINTH_APP_URL"));
}

/// The lines `serve` prints after it listens, until `stop` appears or 20 s pass.
fn startup_lines(dir: &std::path::Path) -> (std::process::Child, Vec<String>) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-workers",
            "--data-dir",
        ])
        .arg(dir)
        .env_remove("PLINTH_DATABASE_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let openapi = line.starts_with("plinth OpenAPI:");
        lines.push(line);
        if openapi {
            // The first-administrator line, if any, follows at once.
            if let Ok(next) = rx.recv_timeout(Duration::from_millis(500)) {
                lines.push(next);
            }
            break;
        }
    }
    (child, lines)
}

#[tokio::test]
async fn serve_says_where_to_go_next_and_how_to_make_the_first_administrator() {
    if crate::common::pg_admin_url().is_some() {
        return; // the lines are the same; this runs the binary on SQLite
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines) = startup_lines(dir.path());
    let _ = child.kill();
    let _ = child.wait();
    let base = lines[0]
        .strip_prefix("plinth listening on ")
        .unwrap_or_else(|| panic!("{lines:?}"))
        .to_owned();
    assert!(lines.contains(&format!(
        "plinth console: {base}/console (sign in with an administrator's API key)"
    )));
    assert!(lines.contains(&format!("plinth OpenAPI: {base}/api/openapi.json")));
    let admin = lines
        .iter()
        .find(|l| l.starts_with("plinth first administrator:"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        admin.contains("plinth users set-level --email you@example.com --level 100 --data-dir"),
        "{admin}"
    );
    // Once there is an administrator, that line goes.
    let (mut child, lines) = startup_lines(dir.path());
    let base = lines[0]
        .strip_prefix("plinth listening on ")
        .unwrap()
        .to_owned();
    let res = reqwest::Client::new()
        .post(format!("{base}/api/users/authenticate"))
        .json(&json!({"email": "first@example.com", "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    let out = Command::new(BIN)
        .args([
            "users",
            "set-level",
            "--email",
            "first@example.com",
            "--level",
            "100",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = child.kill();
    let _ = child.wait();
    let (mut child, lines) = startup_lines(dir.path());
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        lines.iter().any(|l| l.starts_with("plinth console:")),
        "{lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("plinth first administrator:")),
        "{lines:?}"
    );
}

#[test]
fn operator_commands_create_nothing_and_say_what_they_looked_for() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("data");
    for args in [
        vec![
            "users",
            "set-level",
            "--email",
            "me@example.com",
            "--level",
            "100",
        ],
        vec!["jobs", "stats"],
        vec!["jobs", "list"],
        vec!["analytics", "rebuild-rollups"],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .arg("--data-dir")
            .arg(&missing)
            .current_dir(root.path())
            .env_remove("PLINTH_DATABASE_URL")
            .env_remove("PLINTH_MASTER_KEY")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no database at")
                && err.contains("plinth.db")
                && err.contains("--data-dir"),
            "{args:?}: {err}"
        );
        assert!(!missing.exists(), "{args:?} created {}", missing.display());
    }
    // The default data dir (./data) is looked for, not made.
    let out = Command::new(BIN)
        .args(["jobs", "stats"])
        .current_dir(root.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_DATA_DIR")
        .env_remove("PLINTH_MASTER_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no database at ./data/plinth.db"));
    assert!(!root.path().join("data").exists());

    // A database without its key file: refused, and no key is made.
    std::fs::create_dir_all(&missing).unwrap();
    let made = Command::new(BIN)
        .args(["migrate", "--data-dir"])
        .arg(&missing)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .output()
        .unwrap();
    assert!(made.status.success());
    std::fs::rename(missing.join("master.key"), root.path().join("kept.key")).unwrap();
    let out = Command::new(BIN)
        .args(["jobs", "stats", "--data-dir"])
        .arg(&missing)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no master key"));
    assert!(!missing.join("master.key").exists());
    // With it: the command says which database it opened.
    std::fs::rename(root.path().join("kept.key"), missing.join("master.key")).unwrap();
    let out = Command::new(BIN)
        .args(["jobs", "stats", "--data-dir"])
        .arg(&missing)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("plinth: database sqlite://"));
}

#[tokio::test]
async fn migrate_on_postgresql_never_binds_a_generated_key() {
    let Some(admin) = crate::common::pg_admin_url() else {
        eprintln!("skipped: PostgreSQL only (PLINTH_TEST_DATABASE_URL)");
        return;
    };
    let name = format!("plinth_m_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::PgPool::connect(&admin).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&pool)
        .await
        .unwrap();
    let (base, _) = admin.rsplit_once('/').unwrap();
    let url = format!("{base}/{name}");
    let dir = tempfile::tempdir().unwrap();
    let migrate = |key: Option<&str>| {
        let mut cmd = Command::new(BIN);
        cmd.args(["migrate", "--database-url", &url, "--data-dir"])
            .arg(dir.path())
            .env_remove("PLINTH_DATABASE_URL")
            .env_remove("PLINTH_MASTER_KEY");
        if let Some(k) = key {
            cmd.env("PLINTH_MASTER_KEY", k);
        }
        cmd.output().unwrap()
    };
    let out = migrate(None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs PLINTH_MASTER_KEY") && err.contains("no key was bound"),
        "{err}"
    );
    assert!(
        !dir.path().join("master.key").exists(),
        "a key file was made"
    );
    let key = "ab".repeat(32);
    let out = migrate(Some(&key));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Bound now: without the key (and no key file) it is refused again, naming why.
    let out = migrate(None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("set up with another key"));
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&pool)
    .await;
}

#[test]
fn each_command_lists_its_own_options_in_its_help() {
    let help = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let worker = help(&["worker", "--help"]);
    for present in [
        "--queues",
        "--concurrency",
        "--data-dir",
        "--smtp-url",
        "--shutdown-timeout",
    ] {
        assert!(worker.contains(present), "worker --help lacks {present}");
    }
    for absent in [
        "--listen",
        "--stripe-secret-key",
        "--apple-issuer-id",
        "--gcs-bucket",
        "--token-costs",
    ] {
        assert!(!worker.contains(absent), "worker --help lists {absent}");
    }
    let list = help(&["jobs", "list", "--help"]);
    assert!(list.contains("--queue") && list.contains("--search") && list.contains("--data-dir"));
    for absent in ["--s3-bucket", "--listen", "--smtp-url", "--queues"] {
        assert!(!list.contains(absent), "jobs list --help lists {absent}");
    }
    assert!(help(&["jobs", "list", "--help"]).lines().count() < 40);
    let set_level = help(&["users", "set-level", "--help"]);
    assert!(set_level.contains("--email") && set_level.contains("--master-key"));
    assert!(!set_level.contains("--metrics-token"));
    // serve (the default command) takes them all.
    let all = help(&["--help"]);
    assert!(
        all.contains("--stripe-secret-key") && all.contains("--queues") && all.contains("--listen")
    );
    // A hidden option is still accepted where it is placed.
    let out = Command::new(BIN)
        .args([
            "jobs",
            "stats",
            "--listen",
            "127.0.0.1:1",
            "--data-dir",
            "/nonexistent/plinth",
        ])
        .env_remove("PLINTH_DATABASE_URL")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no database at"));
}
