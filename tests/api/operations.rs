//! Issue 18, operators: `/metrics` (token or its own listener) scraped by a real
//! Prometheus, `/livez` and `/readyz`, worker pools per queue, and a SIGTERM that loses
//! no request and no job.

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::Process;
use crate::common::{email, free_port, metric_sample as sample, Options, Server};
use crate::scaleout_jobs::{assert_published_once, poll_job};
use crate::slide_helpers::{create_md, ended, id, long_deck, start_export};

async fn scrape(url: &str, token: Option<&str>) -> (u16, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// Scrapes until `ready` holds for the text (scrape-time gauges and job counters lag the
/// requests that cause them), at most 20 s.
async fn scrape_until(url: &str, token: Option<&str>, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, text) = scrape(url, token).await;
        assert_eq!(status, 200, "{text}");
        if ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "metrics never got there:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

const TOKEN: &str = "metrics-token-for-tests";

#[tokio::test]
async fn metrics_need_the_token_and_count_answers_refusals_jobs_and_actors() {
    let port = free_port();
    let s = Server::start_with(
        Options::default()
            // Base limits: five auth requests per window, so a sixth is refused.
            .env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")
            .env("PLINTH_METRICS_TOKEN", TOKEN)
            .env("PLINTH_METRICS_LISTEN", &format!("127.0.0.1:{port}")),
    )
    .await;
    let on_api = format!("{}/metrics", s.base);
    let (status, _) = scrape(&on_api, None).await;
    assert_eq!(status, 401, "no token");
    let (status, _) = scrape(&on_api, Some("wrong")).await;
    assert_eq!(status, 401, "a wrong token");

    s.get("/api/status", None).await.assert_ok();
    let (_addr, _) = s.signup(&email("metrics")).await; // queues a verification email
    for _ in 0..6 {
        let r = s
            .post("/api/users/verify", None, json!({"code": "nope"}))
            .await;
        assert!([404, 429].contains(&r.status.as_u16()), "{}", r.body);
    }
    let text = scrape_until(&on_api, Some(TOKEN), |t| {
        sample(t, "plinth_jobs_succeeded_total", &[("queue", "email")]).is_some()
    })
    .await;
    let status_200 = [
        ("route", "/api/status"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert!(sample(&text, "plinth_http_requests_total", &status_200).unwrap() >= 1.0);
    let verify_429 = [("route", "/api/users/verify"), ("status", "429")];
    assert!(sample(&text, "plinth_http_requests_total", &verify_429).unwrap() >= 1.0);
    assert!(
        sample(
            &text,
            "plinth_http_request_duration_seconds_bucket",
            &[("route", "/api/status"), ("le", "+Inf")]
        )
        .unwrap()
            >= 1.0
    );
    assert!(sample(&text, "plinth_rate_limited_total", &[("category", "auth")]).unwrap() >= 1.0);
    for counter in ["plinth_jobs_enqueued_total", "plinth_jobs_started_total"] {
        assert!(
            sample(&text, counter, &[("queue", "email")]).unwrap() >= 1.0,
            "{counter}"
        );
    }
    assert!(
        sample(
            &text,
            "plinth_job_duration_seconds_count",
            &[("queue", "email")]
        )
        .unwrap()
            >= 1.0
    );
    for queue in ["email", "export", "images", "expiry", "callbacks"] {
        for status in ["pending", "scheduled", "running", "retrying", "failed"] {
            assert!(
                sample(
                    &text,
                    "plinth_queue_depth",
                    &[("queue", queue), ("status", status)]
                )
                .is_some(),
                "{queue} {status}"
            );
        }
        assert!(sample(
            &text,
            "plinth_queue_oldest_pending_seconds",
            &[("queue", queue)]
        )
        .is_some());
    }
    for actor in ["rate", "credits", "decks", "telemetry", "analytics"] {
        assert!(
            sample(&text, "plinth_actor_mailbox_length", &[("actor", actor)]).is_some(),
            "{actor}"
        );
    }
    let in_use = sample(&text, "plinth_db_pool_connections", &[("state", "in_use")]).unwrap();
    let idle = sample(&text, "plinth_db_pool_connections", &[("state", "idle")]).unwrap();
    assert!(in_use + idle >= 1.0);
    assert!(text.contains("# TYPE plinth_http_request_duration_seconds histogram"));
    // What every Prometheus target is expected to say: its build and its process.
    assert_eq!(
        sample(
            &text,
            "plinth_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0)
    );
    assert!(sample(&text, "process_cpu_seconds_total", &[]).unwrap() > 0.0);
    assert!(sample(&text, "process_resident_memory_bytes", &[]).unwrap() > 1e6);
    let open = sample(&text, "process_open_fds", &[]).unwrap();
    assert!(open >= 3.0 && open < sample(&text, "process_max_fds", &[]).unwrap());
    let started = sample(&text, "process_start_time_seconds", &[]).unwrap();
    let now = chrono::Utc::now().timestamp() as f64;
    assert!(
        started > now - 600.0 && started <= now + 1.0,
        "{started} vs {now}"
    );
    assert!(text.contains("# TYPE process_cpu_seconds_total counter"));
    // Jobs: the wait for a worker per queue.
    assert!(
        sample(
            &text,
            "plinth_job_latency_seconds_count",
            &[("queue", "email")]
        )
        .unwrap()
            >= 1.0
    );

    // The separate listener serves the same without a token, and the probes.
    let private = format!("http://127.0.0.1:{port}");
    let (status, text) = scrape(&format!("{private}/metrics"), None).await;
    assert_eq!(status, 200);
    assert!(sample(&text, "plinth_http_requests_total", &status_200).is_some());
    for base in [s.base.as_str(), private.as_str()] {
        let live: Value = reqwest::get(format!("{base}/livez"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(live, json!({"status": "ok"}));
        let res = reqwest::get(format!("{base}/readyz")).await.unwrap();
        assert_eq!(res.status(), 200);
        let ready: Value = res.json().await.unwrap();
        assert_eq!(
            ready,
            json!({"status": "ready", "checks": {
                "database": true, "writes": true, "ledger": true, "queue": true, "storage": true
            }})
        );
    }
}

#[tokio::test]
async fn without_a_token_metrics_are_not_served_and_the_probes_are() {
    let s = Server::start().await;
    let (status, _) = scrape(&format!("{}/metrics", s.base), None).await;
    assert_eq!(status, 404);
    let res = reqwest::get(format!("{}/readyz", s.base)).await.unwrap();
    assert_eq!(res.status(), 200);
    let res = reqwest::get(format!("{}/livez", s.base)).await.unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn readyz_is_503_naming_what_is_down() {
    let s = Server::start().await;
    // Local object storage that cannot work: its directory is now a file.
    let objects = s.data_dir().join("objects");
    let _ = std::fs::remove_dir_all(&objects);
    std::fs::write(&objects, b"not a directory").unwrap();
    let res = reqwest::get(format!("{}/readyz", s.base)).await.unwrap();
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], json!("not ready"));
    assert_eq!(body["checks"]["storage"], json!(false));
    assert_eq!(body["checks"]["database"], json!(true));
}

/// Prometheus itself scrapes plinth's /metrics (with the bearer token) and answers a
/// query for a known series.
#[tokio::test]
async fn a_real_prometheus_scrapes_plinth_and_answers_queries() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: prometheus is not installed (apt-get install prometheus; .ci/run installs it)");
        return;
    }
    let s = Server::start_with(Options::default().env("PLINTH_METRICS_TOKEN", TOKEN)).await;
    s.get("/api/status", None).await.assert_ok();
    let target = s.base.trim_start_matches("http://").to_owned();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: plinth\n    metrics_path: /metrics\n    authorization:\n      credentials: {TOKEN}\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let web = format!("127.0.0.1:{}", free_port());
    let prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _prometheus = Kill(prometheus);
    let query = format!(
        "http://{web}/api/v1/query?query={}",
        "plinth_http_requests_total%7Broute%3D%22%2Fapi%2Fstatus%22%2Cstatus%3D%22200%22%7D"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let found = loop {
        if let Ok(res) = reqwest::get(&query).await {
            if let Ok(v) = res.json::<Value>().await {
                if v["status"] == json!("success")
                    && v["data"]["result"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty())
                {
                    break v;
                }
            }
        }
        if Instant::now() > deadline {
            let log =
                std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
            panic!("Prometheus never had the series; its log:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let result = &found["data"]["result"][0];
    assert_eq!(result["metric"]["job"], json!("plinth"));
    assert_eq!(result["metric"]["method"], json!("GET"));
    let value: f64 = result["value"][1].as_str().unwrap().parse().unwrap();
    assert!(value >= 1.0, "{found}");
    // The target is healthy in Prometheus's own eyes.
    let up: Value = reqwest::get(format!(
        "http://{web}/api/v1/query?query=up%7Bjob%3D%22plinth%22%7D"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(up["data"]["result"][0]["value"][1], json!("1"), "{up}");
}

#[tokio::test]
async fn a_worker_runs_only_the_queues_it_is_given() {
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let _mail = Process::worker_with(&s, "mail-only", &["--queues", "email"]);
    // Sign-up and verification need the email queue only.
    let key = s.verified_user(&email("pools")).await;
    let deck = id(&create_md(&s, &key, "# Pools\n\n---\n\n## Two").await);
    let job = start_export(&s, &key, &deck, "pdf").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let v = job_view(&s, &key, &deck, &job).await;
    assert_eq!(
        v.body["status"],
        json!("pending"),
        "no export worker yet: {}",
        v.body
    );
    let _exports = Process::worker_with(
        &s,
        "exports-only",
        &["--queues", "export", "--concurrency", "export=2"],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = poll_job(&s, &key, &deck, &job, deadline, ended).await;
    assert_eq!(done["status"], json!("succeeded"), "{done}");
}

#[tokio::test]
async fn unknown_queues_and_bad_concurrency_are_refused_at_start() {
    let s = Server::start().await;
    for (args, needle) in [
        (
            vec!["worker", "--queues", "export,bogus"],
            "unknown queue `bogus`",
        ),
        (
            vec!["worker", "--concurrency", "export=0"],
            "from 1 to 1024",
        ),
        (vec!["worker", "--concurrency", "export"], "is not QUEUE=N"),
        (vec!["serve", "--queues", "mail"], "unknown queue `mail`"),
    ] {
        let out = s.cli(&args);
        assert!(!out.status.success(), "{args:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// The job as its client sees it.
async fn job_view(s: &Server, key: &str, deck: &str, job: &str) -> crate::common::Resp {
    s.get(&format!("/api/slides/jobs/{job}?deck_id={deck}"), Some(key))
        .await
}

/// A PNG export of a `slides`-slide deck by a new verified account, once its first
/// slides are done: (key, deck, job, the deadline of the scenario).
async fn export_under_way(
    s: &Server,
    who: &str,
    slides: usize,
) -> (String, String, String, Instant) {
    let key = s.verified_user(&email(who)).await;
    let deck = long_deck(s, &key, slides).await;
    let job = start_export(s, &key, &deck, "png").await;
    let deadline = Instant::now() + Duration::from_secs(90);
    poll_job(s, &key, &deck, &job, deadline, |v| {
        v["slides_done"].as_i64().unwrap_or(0) >= 2
    })
    .await;
    (key, deck, job, deadline)
}

/// Stops a worker with SIGTERM in the middle of a long export, with a shutdown timeout
/// too short for it: the worker exits at once, the job goes back to its queue (not after
/// heartbeats and the lease lapse, ~20 s) and another worker finishes it exactly once.
#[tokio::test]
async fn sigterm_mid_export_hands_the_job_back_and_it_ends_exactly_once() {
    const SLIDES: usize = 60;
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let mut first = Process::worker_with(&s, "stopping", &["--shutdown-timeout", "1"]);
    let (key, deck, job, deadline) = export_under_way(&s, "sigterm", SLIDES).await;
    let stopped_at = Instant::now();
    first.signal("-TERM");
    let exit = first
        .wait_exit(Duration::from_secs(15))
        .expect("the worker exits after its shutdown timeout");
    assert!(exit.success(), "clean exit: {exit:?}");
    let v = job_view(&s, &key, &deck, &job).await;
    assert!(!ended(&v.body), "the export was cut short: {}", v.body);
    let _second = Process::worker(&s, "second");
    // The job is running again soon: it was handed back, not left to lapse.
    poll_job(&s, &key, &deck, &job, deadline, |v| {
        v["attempts"] == json!(2) || ended(v)
    })
    .await;
    let handed_over = stopped_at.elapsed();
    assert!(
        handed_over < Duration::from_secs(12),
        "the job ran again {handed_over:?} after SIGTERM"
    );
    let done = poll_job(&s, &key, &deck, &job, deadline, ended).await;
    assert_eq!(
        done["attempts"],
        json!(2),
        "stopped once, finished once: {done}"
    );
    assert_published_once(&s, &deck, &done, SLIDES).await;
}

/// With a timeout long enough, SIGTERM lets the running export finish before the
/// worker exits: no other worker is needed.
#[tokio::test]
async fn sigterm_lets_a_running_export_finish_within_the_timeout() {
    const SLIDES: usize = 30;
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let mut worker = Process::worker_with(&s, "patient", &["--shutdown-timeout", "60"]);
    let (key, deck, job, _) = export_under_way(&s, "patient", SLIDES).await;
    worker.signal("-TERM");
    let exit = worker
        .wait_exit(Duration::from_secs(65))
        .expect("the worker exits once its export is done");
    assert!(exit.success(), "clean exit: {exit:?}");
    let v = job_view(&s, &key, &deck, &job).await;
    assert_eq!(v.body["status"], json!("succeeded"), "{}", v.body);
    assert_eq!(v.body["attempts"], json!(1), "{}", v.body);
    assert_published_once(&s, &deck, &v.body, SLIDES).await;
}

/// SIGTERM to `serve` while a request is in flight (its body still arriving): the
/// request is answered, new connections are refused, and the process exits cleanly.
#[tokio::test]
async fn sigterm_finishes_an_in_flight_request_and_refuses_new_connections() {
    let mut s = Server::start().await;
    let pid = s.pid().to_string();
    let addr = s.base.trim_start_matches("http://").to_owned();
    let body = br#"{"text": "in flight during shutdown"}"#;
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // `Expect: 100-continue`: the server says when the handler starts reading the body,
    // so SIGTERM comes while the request is surely in flight (a head not yet parsed when
    // the shutdown starts is an idle connection to hyper, and is closed).
    write!(
        conn,
        "POST /api/aes HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    conn.flush().unwrap();
    let mut interim = [0u8; 25];
    conn.read_exact(&mut interim).unwrap();
    assert_eq!(&interim[..], b"HTTP/1.1 100 Continue\r\n\r\n");
    conn.write_all(&body[..10]).unwrap();
    conn.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "a new connection after SIGTERM"
    );
    conn.write_all(&body[10..]).unwrap();
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let status = s
        .wait_exit(Duration::from_secs(30))
        .expect("serve exits after answering");
    assert!(status.success(), "{status:?}");
}
