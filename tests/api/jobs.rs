//! The email queue: embedded workers, separate `plinth worker` processes, jobs that
//! outlive the process that queued them, and delivery over real SMTP.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::cluster::Process;
use crate::common::{email, python_has, Options, Server};

#[tokio::test]
async fn without_embedded_workers_mail_waits_for_a_worker_process() {
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let addr = email("queued");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw"}),
        )
        .await;
    assert_eq!(r.body["emailed"], json!(true), "queued for delivery");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        s.emails_to(&addr).is_empty(),
        "no worker runs in this server"
    );
    let _w = Process::worker_env(&s, "mail", &[], &[]);
    let code = s.verification_code(&addr).await;
    s.post("/api/users/verify", None, json!({"code": code}))
        .await
        .assert_ok();
}

#[tokio::test]
async fn a_job_queued_before_a_crash_is_delivered_after_restart() {
    let mut s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let addr = email("crash");
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": "pw"}),
    )
    .await
    .assert_ok();
    s.kill(); // the process that queued the job is gone
    let _w = Process::worker_env(&s, "mail", &[], &[]);
    s.wait_for_email(&addr, "?code=").await;
    // Exactly one email: the job ran once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(s.emails_to(&addr).len(), 1);
}

#[tokio::test]
async fn smtp_delivery_to_a_real_smtp_server() {
    if !python_has("aiosmtpd") {
        eprintln!("skipped: aiosmtpd is not installed (pip install aiosmtpd; .ci/run installs it)");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (mut sink, maildir) = crate::common::smtp_sink(port);
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "SMTP sink did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = Server::start_with(
        Options::default().env("PLINTH_SMTP_URL", &format!("smtp://127.0.0.1:{port}")),
    )
    .await;
    let status = s.get("/api/status", None).await;
    assert_eq!(status.body["services"]["mail"]["backend"], json!("smtp"));
    let addr = email("smtp");
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": "pw"}),
    )
    .await
    .assert_ok();
    let deadline = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let found = std::fs::read_dir(maildir.path().join("new"))
            .unwrap()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .find(|t| t.contains(&addr));
        if let Some(t) = found {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "no message reached the SMTP server"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(text.contains("?code="));
    assert!(
        s.emails_to(&addr).is_empty(),
        "nothing goes to the outbox when SMTP is set"
    );
    let _ = sink.kill();
    let _ = sink.wait();
}

/// The workers run under apalis's monitor: on SIGTERM every pool stops (in-flight jobs
/// get a grace period) and the process exits cleanly.
#[tokio::test]
async fn sigterm_stops_every_worker_pool_through_the_monitor() {
    let mut s = Server::start().await;
    s.get("/api/status", None).await.assert_ok();
    let (took, clean) = s.terminate();
    assert!(clean, "the server did not exit cleanly");
    assert!(took < Duration::from_secs(20), "shutdown took {took:?}");
    let log = std::fs::read_to_string(s.data_dir().join("server.log")).unwrap();
    for queue in ["email", "slide-export", "slide-images"] {
        assert!(
            log.lines()
                .any(|l| l.contains("stopped") && l.contains(&format!("-{queue}-"))),
            "no stop logged for the {queue} pool:\n{log}"
        );
    }
}
