//! Issue 34, completion callbacks: `exports/create` with a `callback_url` gets a signed
//! event (Stripe's scheme, the account's own secret) when the job ends, retried with the
//! same event id until the receiver acknowledges it; the secret can be read and rotated.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use crate::common::{email, Options, Server};
use crate::slide_helpers::{create_md, export, id};

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Got {
    signature: String,
    event_id: String,
    body: Vec<u8>,
    answered: u16,
}

#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Got>>>,
    /// Answer this to the first attempt of every event, then 200.
    first: Arc<Mutex<Option<u16>>>,
}

impl Receiver {
    /// Serves on a free loopback port: its URL.
    async fn start(first: Option<u16>) -> (Receiver, String) {
        let r = Receiver::default();
        *r.first.lock().unwrap() = first;
        let state = r.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let state = state.clone();
                async move {
                    let h = |n: &str| {
                        headers
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned()
                    };
                    let event_id = h("plinth-event-id");
                    let mut got = state.got.lock().unwrap();
                    let seen = got.iter().any(|g| g.event_id == event_id);
                    let answered = match *state.first.lock().unwrap() {
                        Some(code) if !seen => code,
                        _ => 200,
                    };
                    got.push(Got {
                        signature: h("plinth-signature"),
                        event_id,
                        body: body.to_vec(),
                        answered,
                    });
                    StatusCode::from_u16(answered).unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (r, url)
    }

    /// Waits until `n` requests arrived.
    async fn wait_for(&self, n: usize) -> Vec<Got> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.got.lock().unwrap().clone();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "only {} requests: {got:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn options() -> Options {
    Options::default()
        .env("PLINTH_CALLBACK_PRIVATE_NETWORKS", "true")
        .env("PLINTH_CALLBACK_BACKOFF", "1s,1s")
}

async fn secret(s: &Server, key: &str) -> String {
    let r = s.get("/api/slides/callbacks/secret", Some(key)).await;
    r.assert_ok();
    assert_eq!(
        r.header("cache-control").as_deref(),
        Some("private, no-store")
    );
    r.body["secret"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_finished_export_posts_a_signed_event_retried_until_acknowledged() {
    let s = Server::start_with(options()).await;
    let key = s.verified_user(&email("callback")).await;
    let secret = secret(&s, &key).await;
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 64,
        "{secret}"
    );
    let (receiver, url) = Receiver::start(Some(503)).await;
    let deck = id(&create_md(&s, &key, "# Called back").await);
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": deck, "format": "pdf", "callback_url": url}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["callback_url"], json!(url));
    let job = id(&r.body);

    // The first attempt is refused (503), the second one a back-off later acknowledged.
    let got = receiver.wait_for(2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].answered, got[1].answered), (503, 200));
    assert_eq!(got[0].event_id, got[1].event_id, "one event, two attempts");
    let now = chrono::Utc::now().timestamp();
    for (n, g) in got.iter().enumerate() {
        plinth::adapters::payments::verify_signature(&secret, &g.signature, &g.body, now)
            .unwrap_or_else(|e| panic!("attempt {n}: {e}: {}", g.signature));
        let event: Value = serde_json::from_slice(&g.body).unwrap();
        assert_eq!(event["id"], json!(g.event_id));
        assert!(g.event_id.starts_with("evt_"));
        assert_eq!(event["type"], json!("export.succeeded"), "{event}");
        assert_eq!(event["attempt"], json!(n + 1));
        assert_eq!(event["data"]["job"]["id"], json!(job));
        assert_eq!(event["data"]["job"]["status"], json!("succeeded"));
        assert_eq!(
            event["data"]["job"]["artifacts"].as_array().unwrap().len(),
            1
        );
    }
    // A forged or altered event does not verify.
    let mut altered = got[1].body.clone();
    altered[0] = b' ';
    assert!(plinth::adapters::payments::verify_signature(
        &secret,
        &got[1].signature,
        &altered,
        now
    )
    .is_err());
    assert!(plinth::adapters::payments::verify_signature(
        "whsec_other",
        &got[1].signature,
        &got[1].body,
        now
    )
    .is_err());
    // Nothing more arrives: acknowledged once is done.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(receiver.got.lock().unwrap().len(), 2);

    // Rotation: a new secret, which signs the next events.
    let r = s
        .post("/api/slides/callbacks/secret/rotate", Some(&key), json!({}))
        .await;
    r.assert_ok();
    let rotated = r.body["secret"].as_str().unwrap().to_owned();
    assert_ne!(rotated, secret);
    assert_eq!(self::secret(&s, &key).await, rotated);
    // The replaced secret keeps signing beside the new one for 24 hours (issue 45).
    let until =
        chrono::DateTime::parse_from_rfc3339(r.body["previous_expires_at"].as_str().unwrap())
            .unwrap()
            .with_timezone(&chrono::Utc);
    let hours = (until - chrono::Utc::now()).num_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "{hours}");

    // A failed export is told too (and the receiver answers at once this time).
    *receiver.first.lock().unwrap() = None;
    let r = s
        .post(
            "/api/slides/assets/create",
            Some(&key),
            json!({"deck_id": deck, "file": "a.png", "type": "image/png", "size": 10,
                   "sha256": "00".repeat(32)}),
        )
        .await;
    let asset = id(&r.body);
    s.post(
        "/api/slides/update",
        Some(&key),
        json!({"id": deck, "expected_version": 1, "markdown": format!("# x\n\n![x](asset:{asset})")}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": deck, "format": "png", "callback_url": url}),
        )
        .await;
    r.assert_ok();
    let got = receiver.wait_for(3).await;
    let event: Value = serde_json::from_slice(&got[2].body).unwrap();
    assert_eq!(event["type"], json!("export.failed"), "{event}");
    assert_eq!(event["data"]["job"]["id"], r.body["id"]);
    plinth::adapters::payments::verify_signature(&rotated, &got[2].signature, &got[2].body, now)
        .unwrap();
    // Both signatures during the overlap: a receiver still on the old secret verifies.
    assert_eq!(
        got[2].signature.matches("v1=").count(),
        2,
        "{}",
        got[2].signature
    );
    plinth::adapters::payments::verify_signature(&secret, &got[2].signature, &got[2].body, now)
        .unwrap();
    // Without a callback_url nothing is posted.
    export(&s, &key, &deck, "html").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(receiver.got.lock().unwrap().len(), 3);

    // After a leak: no overlap, the replaced secret stops at once.
    for bad in [json!({"overlap_hours": 25}), json!({"overlap_hours": -1})] {
        s.post("/api/slides/callbacks/secret/rotate", Some(&key), bad)
            .await
            .assert_error(400);
    }
    let r = s
        .post(
            "/api/slides/callbacks/secret/rotate",
            Some(&key),
            json!({"overlap_hours": 0}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["previous_expires_at"], Value::Null, "{}", r.body);
    let newest = r.body["secret"].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": deck, "format": "png", "callback_url": url}),
        )
        .await;
    r.assert_ok();
    let got = receiver.wait_for(4).await;
    assert_eq!(
        got[3].signature.matches("v1=").count(),
        1,
        "{}",
        got[3].signature
    );
    plinth::adapters::payments::verify_signature(&newest, &got[3].signature, &got[3].body, now)
        .unwrap();
    assert!(plinth::adapters::payments::verify_signature(
        &rotated,
        &got[3].signature,
        &got[3].body,
        now
    )
    .is_err());
}

#[tokio::test]
async fn callback_urls_are_checked_and_a_410_ends_the_retries() {
    let s = Server::start_with(Options::default().env("PLINTH_CALLBACK_BACKOFF", "1s")).await;
    let key = s.verified_user(&email("cbcheck")).await;
    let deck = id(&create_md(&s, &key, "# Checked").await);
    // A malformed URL is a 400; a private destination is a 403 (a well-formed request
    // this server's policy refuses).
    for (url, needle, status) in [
        ("ftp://example.com/hook", "http or https", 400),
        ("https://user:pw@example.com/hook", "credentials", 400),
        ("http://127.0.0.1:9/hook", "private", 403),
        ("http://169.254.169.254/latest", "private", 403),
        ("http://0/hook", "private", 403),
        ("nope", "not a URL", 400),
    ] {
        let r = s
            .post(
                "/api/slides/exports/create",
                Some(&key),
                json!({"deck_id": deck, "format": "pdf", "callback_url": url}),
            )
            .await;
        r.assert_error(status);
        assert!(
            r.body["message"].as_str().unwrap().contains(needle),
            "{url}: {}",
            r.body
        );
    }

    let s = Server::start_with(options()).await;
    let admin = s.admin(&email("cbgone")).await;
    let (receiver, url) = Receiver::start(Some(410)).await;
    let deck = id(&create_md(&s, &admin, "# Gone").await);
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&admin),
            json!({"deck_id": deck, "format": "html", "callback_url": url}),
        )
        .await;
    r.assert_ok();
    let job = id(&r.body);
    receiver.wait_for(1).await;
    // The callback's job, found by the export's id (its client id), failed for good.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = s
            .get(
                &format!("/api/admin/jobs?queue=callbacks&search={job}"),
                Some(&admin),
            )
            .await;
        found.assert_ok();
        let jobs = found.body["jobs"].as_array().unwrap();
        if let Some(j) = jobs.first().filter(|j| j["status"] == json!("failed")) {
            assert_eq!(j["attempts"], json!(1), "{j}");
            assert!(j["last_error"].as_str().unwrap().contains("410"), "{j}");
            break;
        }
        assert!(Instant::now() < deadline, "{}", found.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.got.lock().unwrap().len(), 1, "no retry after 410");
}

fn cli_ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The review's O2 (issue 45): after an operator's cancel, the export's id also names the
/// callback job that told its client; `jobs show` and `jobs retry` with that id act on
/// the export (the job the client meant) and list the callback job.
#[tokio::test]
async fn a_client_id_names_the_export_before_the_callbacks_about_it() {
    let s = Server::start_with(options()).await;
    let key = s.verified_user(&email("client-id")).await;
    let (receiver, url) = Receiver::start(None).await;
    cli_ok(&s.cli(&["jobs", "pause", "export"]));
    // Every process sees the pause within a second.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let deck = id(&create_md(&s, &key, "# Meant").await);
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": deck, "format": "html", "callback_url": url}),
        )
        .await;
    r.assert_ok();
    let job = id(&r.body);
    let out = cli_ok(&s.cli(&["jobs", "cancel", &job]));
    assert!(out.contains("cancelled"), "{out}");
    let got = receiver.wait_for(1).await;
    assert!(
        String::from_utf8_lossy(&got[0].body).contains("export.failed"),
        "{got:?}"
    );
    // The callback job that delivered it has ended, and is the newest with this id.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = cli_ok(&s.cli(&["jobs", "list", "--search", &job]));
        if list
            .lines()
            .any(|l| l.contains("callbacks") && l.contains("succeeded"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "{list}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let show = cli_ok(&s.cli(&["jobs", "show", &job]));
    let field = |name: &str| {
        show.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} line: {show}"))
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_owned()
    };
    assert_eq!(field("queue"), "export", "{show}");
    let same = show
        .lines()
        .find(|l| l.starts_with("same client"))
        .unwrap_or_else(|| panic!("the other jobs are listed: {show}"));
    assert!(same.contains("callbacks, succeeded"), "{show}");

    let out = cli_ok(&s.cli(&["jobs", "retry", &job]));
    assert!(out.contains("(export) is pending again"), "{out}");
    assert!(
        out.contains("also names") && out.contains("callbacks"),
        "{out}"
    );
    cli_ok(&s.cli(&["jobs", "resume", "export"]));
    let done = crate::slide_helpers::poll(
        &s,
        &format!("/api/slides/jobs/{job}?deck_id={deck}"),
        &key,
        |v| v["status"] == json!("succeeded"),
    )
    .await;
    assert_eq!(done["status"], json!("succeeded"));
}
