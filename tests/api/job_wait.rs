//! Issue 34, "clients wait, not poll": a job queued while a worker of its queue is idle
//! starts at once (woken, not found by the next poll); `GET /api/slides/jobs/{id}?wait=N`
//! answers when the job changes, woken by the change (in-process, or NOTIFY from another
//! process on PostgreSQL); the job's event stream; `Location` and `Retry-After`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::Process;
use crate::common::{email, Options, Server};
use crate::slide_helpers::{create_md, ended, id, long_deck, poll, start_export};

/// An admin who signed up without a delivered email (servers without workers).
async fn admin_without_email(s: &Server, tag: &str) -> String {
    let addr = email(tag);
    let (key, _) = s.signup(&addr).await;
    assert!(s.set_level(&addr, 100).status.success());
    let deadline = Instant::now() + Duration::from_secs(12);
    while s.get("/api/users/viewer", Some(&key)).await.body["user"]["level"] != json!(100) {
        assert!(Instant::now() < deadline, "level change not seen");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    key
}

/// How long the job waited for a worker on its first run (its attempt record).
async fn waited_ms(s: &Server, admin: &str, client_id: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s
            .get(&format!("/api/admin/jobs/{client_id}"), Some(admin))
            .await;
        if let Some(first) = r.body["attempts"].as_array().and_then(|a| a.first()) {
            return first["waited_ms"].as_i64().unwrap();
        }
        assert!(Instant::now() < deadline, "no attempt recorded: {}", r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The workers look for jobs every 5 s here: a job they found only by polling would wait
/// seconds. Jobs queued by this process wake them: each starts within milliseconds.
#[tokio::test]
async fn a_job_queued_while_its_workers_are_idle_starts_at_once() {
    let s = Server::start_with(Options::default().env("PLINTH_QUEUE_POLL_MS", "5000")).await;
    let admin = s.admin(&email("pickup")).await;
    // Let every worker settle into waiting (its first polls are done).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let deck = id(&create_md(&s, &admin, "# Pickup").await);
    let mut waits = Vec::new();
    for _ in 0..5 {
        let job = start_export(&s, &admin, &deck, "html").await;
        poll(
            &s,
            &format!("/api/slides/jobs/{job}?deck_id={deck}"),
            &admin,
            ended,
        )
        .await;
        waits.push(waited_ms(&s, &admin, &job).await);
        // Idle again before the next one.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    waits.sort_unstable();
    assert!(waits[2] < 500, "median pickup {} ms: {waits:?}", waits[2]);
    assert!(waits[4] < 2000, "{waits:?}");
}

/// `?wait=N`: the answer comes when the job's status changes, within a moment of the
/// change (the waiter is woken by it; its fallback re-read is 10 s here), with
/// `Retry-After` while the job has not ended; the create answers `Location`.
#[tokio::test]
async fn a_waiting_client_learns_of_each_change_at_once() {
    let s = Server::start().await;
    let key = s.verified_user(&email("waiter")).await;
    let deck = long_deck(&s, &key, 40).await;
    let r = s
        .post(
            "/api/slides/exports/create",
            Some(&key),
            json!({"deck_id": deck, "format": "png"}),
        )
        .await;
    r.assert_ok();
    let job = id(&r.body);
    let path = format!("/api/slides/jobs/{job}?deck_id={deck}");
    assert_eq!(r.header("location").as_deref(), Some(path.as_str()));
    let mut seen = vec![r.body["status"].as_str().unwrap().to_owned()];
    let deadline = Instant::now() + Duration::from_secs(120);
    let last = loop {
        let asked = Instant::now();
        let r = s.get(&format!("{path}&wait=60"), Some(&key)).await;
        r.assert_ok();
        let status = r.body["status"].as_str().unwrap().to_owned();
        if ended(&r.body) {
            assert_eq!(r.header("retry-after"), None);
            break (r, asked);
        }
        assert_eq!(r.header("retry-after").as_deref(), Some("1"));
        // Not an answer at once with nothing new: the status moved on.
        assert!(
            seen.last() != Some(&status) || asked.elapsed() >= Duration::from_secs(59),
            "answered without a change: {status} after {:?}",
            asked.elapsed()
        );
        seen.push(status);
        assert!(Instant::now() < deadline, "{seen:?}");
    };
    let (r, _) = last;
    assert_eq!(r.body["status"], json!("succeeded"), "{}", r.body);
    assert!(
        seen.contains(&"running".to_owned()) || seen == ["pending"],
        "{seen:?}"
    );
    // The final answer came right after the job ended.
    let finished: chrono::DateTime<chrono::Utc> =
        r.body["finished_at"].as_str().unwrap().parse().unwrap();
    let lag = chrono::Utc::now() - finished;
    assert!(
        lag < chrono::TimeDelta::milliseconds(1500),
        "answered {lag:?} after the job ended"
    );
    // An ended job answers at once, whatever the wait.
    let asked = Instant::now();
    s.get(&format!("{path}&wait=30"), Some(&key))
        .await
        .assert_ok();
    assert!(asked.elapsed() < Duration::from_secs(2));
    for bad in ["61", "x", "-1"] {
        s.get(&format!("{path}&wait={bad}"), Some(&key))
            .await
            .assert_error(400);
    }
}

/// A job nobody runs: `wait` holds the answer for its N seconds, then answers the job
/// as it is. On another process's change (a worker started meanwhile) the waiter is
/// woken: on PostgreSQL by NOTIFY (this server's fallback re-read is 10 s there), on
/// SQLite by its half-second re-read (no notifications between SQLite processes).
#[tokio::test]
async fn a_waiter_hears_a_change_made_by_another_process() {
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let key = admin_without_email(&s, "xwaiter").await;
    let deck = id(&create_md(&s, &key, "# Elsewhere").await);
    let job = start_export(&s, &key, &deck, "html").await;
    let path = format!("/api/slides/jobs/{job}?deck_id={deck}");
    let asked = Instant::now();
    let r = s.get(&format!("{path}&wait=2"), Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["status"], json!("pending"));
    assert!(
        asked.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));

    let waiter = {
        let (base, key, path) = (s.base.clone(), key.clone(), path.clone());
        tokio::spawn(async move {
            let res = reqwest::Client::new()
                .get(format!("{base}{path}&wait=60"))
                .header("x-api-key", key)
                .send()
                .await
                .unwrap();
            let body: Value = res.json().await.unwrap();
            (body, chrono::Utc::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _worker = Process::worker(&s, "elsewhere");
    let (body, answered) = waiter.await.unwrap();
    assert_ne!(body["status"], json!("pending"), "{body}");
    // Woken by the worker's change: at its start (running) or its end.
    let changed_at: chrono::DateTime<chrono::Utc> = body["started_at"]
        .as_str()
        .or(body["finished_at"].as_str())
        .unwrap()
        .parse()
        .unwrap();
    let lag = answered - changed_at;
    assert!(
        lag < chrono::TimeDelta::milliseconds(1500),
        "answered {lag:?} after the change: {body}"
    );
}

/// The job's event stream: one event at once, one per change of status or progress, the
/// last one the ended job; then the stream closes.
#[tokio::test]
async fn a_client_follows_a_job_as_server_sent_events() {
    let s = Server::start().await;
    let key = s.verified_user(&email("follower")).await;
    let deck = long_deck(&s, &key, 12).await;
    let job = start_export(&s, &key, &deck, "png").await;
    let res = s
        .raw(
            reqwest::Method::GET,
            &format!("/api/slides/jobs/{job}/events?deck_id={deck}"),
        )
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut text = String::new();
    let mut res = res;
    let read = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(chunk) = res.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(read.is_ok(), "the stream did not end: {text}");
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(events.len() >= 3, "{text}");
    let last = events.last().unwrap();
    assert_eq!(last["status"], json!("succeeded"), "{last}");
    assert_eq!(last["artifacts"].as_array().unwrap().len(), 12);
    let done: Vec<i64> = events
        .iter()
        .map(|e| e["slides_done"].as_i64().unwrap())
        .collect();
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert!(
        events.iter().any(|e| e["status"] == json!("running")),
        "{text}"
    );
    let ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Another's job, or none: 404 before any stream.
    let other = s.verified_user(&email("stranger")).await;
    let r = s
        .get(
            &format!("/api/slides/jobs/{job}/events?deck_id={deck}"),
            Some(&other),
        )
        .await;
    r.assert_error(404);
}
