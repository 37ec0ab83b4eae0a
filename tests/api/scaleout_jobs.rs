//! Issue 17, deck idempotency and slide jobs across processes: several `plinth serve`
//! and `plinth worker` processes on one database (the harness's SQLite file in one data
//! dir, or a fresh PostgreSQL database with `PLINTH_TEST_DATABASE_URL`) behave as one.
//! - the same `idempotency_key` sent to every process at once creates one deck;
//! - a worker killed (SIGKILL) or frozen (SIGSTOP) mid-export: the job ends exactly once
//!   on another worker, with one published set of artifacts that all download.
//!
//! Every wait is bounded; each scenario takes well under a minute.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::{post_to, Process};
use crate::common::{email, Options, Server};
use crate::slide_helpers::{create_md, download, ended, id, long_deck, start_export};

#[tokio::test]
async fn the_same_idempotency_key_sent_to_three_servers_at_once_creates_one_deck() {
    let s = Server::start().await;
    let (b, c) = (Process::serve(&s, &[]), Process::serve(&s, &[]));
    let bases = [
        s.base.clone(),
        b.base.clone().unwrap(),
        c.base.clone().unwrap(),
    ];
    let key = s.verified_user(&email("idem")).await;
    let mut in_progress = 0;
    for round in 0..8 {
        let title = format!("Round {round} {}", uuid::Uuid::new_v4().simple());
        let body = json!({
            "markdown": format!("# {title}\n\nOne deck, however many processes get it."),
            "idempotency_key": format!("create-{title}"),
        });
        // Two requests to each process, all at once.
        let sends = (0..6).map(|i| post_to(&bases[i % 3], "/api/slides/create", &key, &body));
        let answers =
            tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(sends))
                .await
                .expect("answers within 30 s");
        let mut ids = Vec::new();
        for r in &answers {
            match r.status.as_u16() {
                200 => ids.push(id(&r.body)),
                409 => {
                    r.assert_error(409);
                    assert!(
                        r.body["message"]
                            .as_str()
                            .unwrap()
                            .contains("still running"),
                        "{}",
                        r.body
                    );
                    assert_eq!(r.body["retry_after_ms"], json!(1000), "{}", r.body);
                    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
                    in_progress += 1;
                }
                _ => panic!("unexpected answer {} {}", r.status, r.body),
            }
        }
        assert!(
            !ids.is_empty(),
            "someone created the deck: {answers:?}",
            answers = answers.iter().map(|r| &r.body).collect::<Vec<_>>()
        );
        assert!(ids.iter().all(|d| d == &ids[0]), "one deck id: {ids:?}");
        let decks = s
            .sql_count(&format!(
                "SELECT COUNT(*) FROM slide_decks WHERE title = '{title}'"
            ))
            .await;
        assert_eq!(decks, 1, "round {round}: exactly one deck");
        // Afterwards every process replays the answer.
        for base in &bases {
            let r = post_to(base, "/api/slides/create", &key, &body).await;
            r.assert_ok();
            assert_eq!(id(&r.body), ids[0]);
            assert_eq!(r.header("idempotent-replayed").as_deref(), Some("true"));
        }
        // The same key with another request is refused, as in one process.
        let mut other = body.clone();
        other["markdown"] = json!("# Something else");
        post_to(&bases[round % 3], "/api/slides/create", &key, &other)
            .await
            .assert_error(422);
    }
    eprintln!("{in_progress} answers were 409 (in progress)");
}

/// The attempts under `jobs/<job>/` in local storage that still hold files: (attempt,
/// number of files).
fn attempt_dirs(data: &Path, deck: &str, job: &str) -> Vec<(String, usize)> {
    let dir = data
        .join("objects/slides")
        .join(deck)
        .join("jobs")
        .join(job);
    let mut out: Vec<(String, usize)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let files = std::fs::read_dir(e.path()).map(|f| f.count()).unwrap_or(0);
                    (e.file_name().to_string_lossy().into_owned(), files)
                })
                .filter(|(_, n)| *n > 0)
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Polls a job until `done` holds, at most until `deadline`.
pub(crate) async fn poll_job(
    s: &Server,
    key: &str,
    deck: &str,
    job: &str,
    deadline: Instant,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let path = format!("/api/slides/jobs/{job}?deck_id={deck}");
    loop {
        let r = s.get(&path, Some(key)).await;
        r.assert_ok();
        if done(&r.body) {
            return r.body;
        }
        assert!(
            Instant::now() < deadline,
            "job {job} did not get there: {}",
            r.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A finished export: succeeded, every artifact downloads, and exactly one attempt's
/// objects are left in storage (the published one, named by the attempt count).
pub(crate) async fn assert_published_once(s: &Server, deck: &str, job: &Value, slides: usize) {
    assert_eq!(job["status"], json!("succeeded"), "{job}");
    let arts = job["artifacts"].as_array().unwrap();
    let expected = if job["format"] == json!("png") {
        slides
    } else {
        1
    };
    assert_eq!(arts.len(), expected, "{job}");
    for a in arts {
        let bytes = download(a["url"].as_str().unwrap()).await;
        assert_eq!(bytes.len() as u64, a["size"].as_u64().unwrap());
    }
    let attempts = job["attempts"].as_i64().unwrap();
    let job_id = id(job);
    // A losing run deletes its objects after it notices; give it a moment.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let dirs = attempt_dirs(&s.data_dir(), deck, &job_id);
        if dirs == vec![(attempts.to_string(), expected)] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "job {job_id}: one published attempt ({attempts}) expected, storage has {dirs:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

const SLIDES: usize = 60;

#[tokio::test]
async fn a_worker_killed_mid_export_is_finished_exactly_once_by_another() {
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    // The server runs no workers: the victim also delivers the sign-up email.
    let victim = Process::worker(&s, "victim");
    let key = s.verified_user(&email("killed")).await;
    let deck = long_deck(&s, &key, SLIDES).await;
    let small = id(&create_md(&s, &key, "# Small\n\n---\n\n## Two").await);
    let png = start_export(&s, &key, &deck, "png").await;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    poll_job(&s, &key, &deck, &png, deadline, |v| {
        v["slides_done"].as_i64().unwrap_or(0) >= 3
    })
    .await;
    // More work queued while the victim is busy: it has concurrency 1.
    let others = [
        (small.clone(), start_export(&s, &key, &small, "pdf").await),
        (small.clone(), start_export(&s, &key, &small, "html").await),
        (deck.clone(), start_export(&s, &key, &deck, "pdf").await),
    ];
    drop(victim); // SIGKILL, mid-export
    let _rescuer = Process::worker(&s, "rescuer");
    let done = poll_job(&s, &key, &deck, &png, deadline, ended).await;
    assert_eq!(
        done["attempts"],
        json!(2),
        "killed once, finished once: {done}"
    );
    assert_published_once(&s, &deck, &done, SLIDES).await;
    for (d, job) in &others {
        let v = poll_job(&s, &key, d, job, deadline, ended).await;
        assert_eq!(v["attempts"], json!(1), "{v}");
        let slides = if d == &deck { SLIDES } else { 2 };
        assert_published_once(&s, d, &v, slides).await;
    }
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM slide_jobs WHERE status IN ('pending', 'running')")
            .await,
        0
    );
    eprintln!("recovered in {:?}", started.elapsed());
}

#[tokio::test]
async fn a_frozen_worker_loses_its_job_and_deletes_only_its_own_attempt() {
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let frozen = Process::worker(&s, "frozen");
    let key = s.verified_user(&email("frozen")).await;
    let deck = long_deck(&s, &key, SLIDES).await;
    let job = start_export(&s, &key, &deck, "png").await;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    poll_job(&s, &key, &deck, &job, deadline, |v| {
        v["slides_done"].as_i64().unwrap_or(0) >= 3
    })
    .await;
    frozen.signal("-STOP");
    let _live = Process::worker(&s, "live");
    // The live worker takes the job over once the frozen one misses its heartbeats and
    // its lease lapses, and finishes it as attempt 2.
    let done = poll_job(&s, &key, &deck, &job, deadline, ended).await;
    assert_eq!(done["attempts"], json!(2), "{done}");
    // The frozen run wakes up: its next step finds the job taken, and it stops without
    // touching the published attempt (it removes only what it wrote itself).
    frozen.signal("-CONT");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let again = s
        .get(
            &format!("/api/slides/jobs/{job}?deck_id={deck}"),
            Some(&key),
        )
        .await;
    assert_eq!(again.body["attempts"], json!(2), "{}", again.body);
    assert_published_once(&s, &deck, &again.body, SLIDES).await;
    eprintln!("taken over in {:?}", started.elapsed());
}
