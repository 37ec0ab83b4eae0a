//! Issue 34, "one truth about every job" and "retries with real back-off": a job that
//! failed for its client is a failed job for operators (status, error, attempt history,
//! metrics by cause, one log line), a job its client cancelled is a cancelled one, and
//! email delivery waits out a relay that refuses, then delivers when it accepts.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{email, free_port, metric_sample as sample, python_has, Options, Server};
use crate::slide_helpers::{create_md, export, id, start_export};

const TOKEN: &str = "truth-metrics-token";

async fn metrics(s: &Server) -> String {
    let res = s
        .raw(reqwest::Method::GET, "/metrics")
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.text().await.unwrap()
}

/// The job its client's id names, as `GET /api/admin/jobs/{id}` shows it.
async fn operator_view(s: &Server, admin: &str, client_id: &str) -> Value {
    let r = s
        .get(&format!("/api/admin/jobs/{client_id}"), Some(admin))
        .await;
    r.assert_ok();
    r.body
}

#[tokio::test]
async fn an_export_that_fails_for_its_client_is_a_failed_job_for_operators() {
    let s = Server::start_with(Options::default().env("PLINTH_METRICS_TOKEN", TOKEN)).await;
    let admin = s.admin(&email("truth")).await;
    // A deck whose image was reserved but never uploaded: it cannot be rendered.
    let deck = id(&create_md(&s, &admin, "# Truth").await);
    let r = s
        .post(
            "/api/slides/assets/create",
            Some(&admin),
            json!({"deck_id": deck, "file": "a.png", "type": "image/png", "size": 10,
                   "sha256": "00".repeat(32)}),
        )
        .await;
    r.assert_ok();
    let asset = id(&r.body);
    s.post(
        "/api/slides/update",
        Some(&admin),
        json!({"id": deck, "expected_version": 1, "markdown": format!("# Truth\n\n![x](asset:{asset})")}),
    )
    .await
    .assert_ok();
    let job = export(&s, &admin, &deck, "pdf").await;
    assert_eq!(job["status"], json!("failed"), "{job}");
    let reason = job["error"].as_str().unwrap().to_owned();
    assert!(reason.contains("not ready"), "{reason}");
    let client_id = job["id"].as_str().unwrap();

    // The operator sees the same: failed, for good at once (no attempt can cure it), with
    // the client's reason and an attempt record naming the cause.
    let deadline = Instant::now() + Duration::from_secs(10);
    let view = loop {
        let v = operator_view(&s, &admin, client_id).await;
        if v["job"]["status"] != json!("running") {
            break v;
        }
        assert!(Instant::now() < deadline, "{v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(view["job"]["status"], json!("failed"), "{view}");
    assert_eq!(view["job"]["client_id"], json!(client_id));
    assert_eq!(view["job"]["last_error"], json!(reason), "{view}");
    assert_eq!(view["job"]["attempts"], json!(1), "{view}");
    let runs = view["attempts"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{view}");
    assert_eq!(runs[0]["outcome"], json!("failed"));
    assert_eq!(runs[0]["cause"], json!("asset"));
    assert_eq!(runs[0]["error"], json!(reason));
    assert!(runs[0]["waited_ms"].as_i64().unwrap() >= 0);
    let listed = s
        .get("/api/admin/jobs?queue=export&status=failed", Some(&admin))
        .await;
    assert!(listed.body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|j| j["client_id"] == json!(client_id)));
    let out = s.cli(&["jobs", "list", "--status", "failed"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(client_id));
    let stats = s.get("/api/admin/jobs/stats", Some(&admin)).await;
    let export_q = stats.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == json!("export"))
        .unwrap()
        .clone();
    assert_eq!(export_q["failed"], json!(1), "{export_q}");
    assert_eq!(export_q["succeeded"], json!(0), "{export_q}");

    // The metrics count it as a failure by cause, and a job failed for good; not a
    // success.
    let text = metrics(&s).await;
    let q = ("queue", "export");
    assert_eq!(
        sample(&text, "plinth_jobs_failed_total", &[q, ("cause", "asset")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "plinth_jobs_dead_total", &[q, ("cause", "asset")]),
        Some(1.0)
    );
    assert_eq!(sample(&text, "plinth_jobs_succeeded_total", &[q]), None);
    assert!(sample(&text, "plinth_job_latency_seconds_count", &[q]).unwrap() >= 1.0);

    // Logged once, with the job id, queue, attempt and cause.
    let log = std::fs::read_to_string(s.data_dir().join("server.log")).unwrap();
    let job_id = view["job"]["id"].as_str().unwrap();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(job_id)).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    for needle in [
        "job failed for good",
        "export",
        "attempt=1",
        "asset",
        "not ready",
    ] {
        assert!(lines[0].contains(needle), "{needle}: {}", lines[0]);
    }
    assert!(!log.contains("\u{1b}["), "no colour codes in a log file");
}

/// A job its client cancels before any worker takes it is cancelled in the queue too.
#[tokio::test]
async fn an_export_its_client_cancels_is_a_cancelled_job() {
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let admin_email = email("truthcancel");
    let (admin, _) = s.signup(&admin_email).await;
    assert!(s.set_level(&admin_email, 100).status.success());
    let deadline = Instant::now() + Duration::from_secs(12);
    while s.get("/api/users/viewer", Some(&admin)).await.body["user"]["level"] != json!(100) {
        assert!(Instant::now() < deadline, "level change not seen");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let deck = id(&create_md(&s, &admin, "# Fine").await);
    let job = start_export(&s, &admin, &deck, "html").await;
    assert_eq!(
        operator_view(&s, &admin, &job).await["job"]["status"],
        json!("pending")
    );
    let r = s
        .post(
            "/api/slides/jobs/cancel",
            Some(&admin),
            json!({"deck_id": deck, "job_id": job}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], json!("cancelled"));
    let v = operator_view(&s, &admin, &job).await;
    assert_eq!(v["job"]["status"], json!("cancelled"), "{v}");
    assert_eq!(
        v["job"]["last_error"],
        json!("cancelled by its client"),
        "{v}"
    );
}

/// An SMTP relay that is down (nothing listens: the connection is refused), then comes
/// up: the verification email waits out its back-off as `retrying`, with the next
/// attempt's time and the relay's error, and is delivered once the relay accepts. The
/// attempts are spaced by the back-off (here 2 s; the real one starts at 30 s), not
/// spent within a second.
#[tokio::test]
async fn email_waits_out_a_relay_that_refuses_and_is_delivered_when_it_accepts() {
    if !python_has("aiosmtpd") {
        eprintln!("skipped: aiosmtpd is not installed (pip install aiosmtpd; .ci/run installs it)");
        return;
    }
    let port = free_port();
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_SMTP_URL", &format!("smtp://127.0.0.1:{port}"))
            .env("PLINTH_EMAIL_BACKOFF", "2s,2s,2s,2s,60s"),
    )
    .await;
    let to = email("relay");
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": to, "password": "pw"}),
    )
    .await
    .assert_ok();

    // The relay refuses: the job is retrying, the error names the relay.
    let show = || {
        let out = s.cli(&["jobs", "show", &to]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let first = loop {
        let out = show();
        if out.contains("retrying") && out.contains("smtp") {
            break out;
        }
        assert!(Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(first.contains(&format!("127.0.0.1:{port}")), "{first}");
    assert!(first.contains("next attempt"), "{first}");
    // /api/status says so (the relay is configured but not delivering), without the
    // relay's address to anyone but an administrator.
    let status = s.get("/api/status", None).await;
    let mail = &status.body["services"]["mail"];
    assert_eq!(mail["ok"], json!(false), "{}", status.body);
    assert_eq!(status.body["status"], json!("degraded"), "{}", status.body);
    assert!(mail["failing_since"].as_str().is_some(), "{mail}");
    assert!(
        mail.get("last_error").is_none() && mail.get("host").is_none(),
        "{mail}"
    );
    // Two more refusals a back-off apart (at least ~1.6 s each), never all at once.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = show();
        if out.matches("retrying (next").count() >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The relay comes up: the next attempt delivers.
    let (mut sink, maildir) = crate::common::smtp_sink(port);
    let deadline = Instant::now() + Duration::from_secs(30);
    let delivered = loop {
        let found = std::fs::read_dir(maildir.path().join("new"))
            .unwrap()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .find(|t| t.contains(&to));
        if let Some(t) = found {
            break t;
        }
        assert!(Instant::now() < deadline, "never delivered:\n{}", show());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(delivered.contains("?code="));
    let deadline = Instant::now() + Duration::from_secs(10);
    let done = loop {
        let out = show();
        if out.contains("succeeded (apalis: Done)") {
            break out;
        }
        assert!(Instant::now() < deadline, "{out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Delivering again, the relay is well again (the status answer lives a second).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = s.get("/api/status", None).await;
        let mail = &status.body["services"]["mail"];
        if mail["ok"] == json!(true) && mail.get("failing_since").is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "{mail}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Every attempt is on record: the refusals, then the delivery.
    let attempts: Vec<&str> = done
        .lines()
        .skip_while(|l| !l.starts_with("ATTEMPT"))
        .skip(1)
        .collect();
    assert!(attempts.len() >= 4, "{done}");
    assert!(attempts.last().unwrap().contains("succeeded"), "{done}");
    assert!(
        attempts[..attempts.len() - 1]
            .iter()
            .all(|a| a.contains("retrying") && a.contains("smtp")),
        "{done}"
    );
    // One WARN per refused attempt, naming the job, queue, attempt and cause.
    let log = std::fs::read_to_string(s.data_dir().join("server.log")).unwrap();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("job failed; retrying"))
        .collect();
    assert_eq!(warned.len(), attempts.len() - 1, "{warned:?}");
    assert!(warned
        .iter()
        .all(|l| l.contains("email") && l.contains("smtp") && l.contains("attempt=")));
    let _ = sink.kill();
    let _ = sink.wait();
    // Nothing went to the outbox instead.
    assert!(s.emails_to(&to).is_empty());
}
