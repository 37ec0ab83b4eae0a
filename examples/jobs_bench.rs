//! Job notification benchmark (issue 34), driven by `bench/jobs.sh` against a running
//! plinth whose account `KEY` is a platform administrator (level 100).
//!
//! `wait BASE KEY DECK JOBS WAITERS`: pauses the export queue, queues JOBS html exports
//! with one client following each (`?wait=60`, again after each change) and, behind them,
//! jobs that WAITERS - JOBS more clients wait on, resumes the queue once the server holds
//! them all (`plinth_job_waiters`) and reports how long after each measured job's
//! `finished_at` its client heard of it (milliseconds).
//!
//! `wait` and `hold` read `/metrics` with `PLINTH_METRICS_TOKEN`.
//!
//! `pickup BASE KEY DECK N [GAP_MS]`: N html exports one after another, each followed
//! with `?wait=60` (and, with GAP_MS, queued that long after the previous one ended, so
//! that its worker is idle); reports the queue's pickup (`started_at - created_at`) and
//! how long after `finished_at` the client heard (medians).
//!
//! `hold BASE KEY DECK WAITERS SECONDS`: WAITERS clients wait on jobs of the paused export
//! queue for SECONDS (the script measures the viewer's throughput meanwhile), then resumes.
//!
//! `callbacks BASE KEY DECK N`: a receiver on 127.0.0.1 that fails the first delivery of
//! every tenth event; N exports with that `callback_url`; reports deliveries, duplicates
//! after a 2xx and the time until every event was acknowledged.
//!
//! Server clocks and this process's clock are the same machine's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-api-key", &self.key)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = r.status();
        let v: Value = r.json().await.expect("json");
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    async fn get(&self, path: &str) -> Value {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header("x-api-key", &self.key)
            .send()
            .await
            .expect("request");
        let status = r.status();
        let v: Value = r.json().await.expect("json");
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    async fn export(&self, deck: &str, extra: Value) -> String {
        let mut body = json!({"deck_id": deck, "format": "html"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let v = self.post("/api/slides/exports/create", body).await;
        v["id"].as_str().expect("job id").to_owned()
    }

    async fn queue(&self, action: &str) {
        self.post(
            &format!("/api/admin/queues/{action}"),
            json!({"queue": "export"}),
        )
        .await;
        // Workers apply a pause within a second (they read the paused queues every
        // second): jobs queued before that could still start.
        if action == "pause" {
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
    }
}

impl Api {
    /// Waits until the server holds `n` waiting clients (`plinth_job_waiters`, read with
    /// `PLINTH_METRICS_TOKEN`): a client whose request is still queued behind the others'
    /// is not waiting yet. How long that took.
    async fn waiting(&self, n: usize) -> Duration {
        let token = std::env::var("PLINTH_METRICS_TOKEN").expect("PLINTH_METRICS_TOKEN");
        let start = Instant::now();
        loop {
            let text = self
                .http
                .get(format!("{}/metrics", self.base))
                .bearer_auth(&token)
                .send()
                .await
                .expect("metrics")
                .text()
                .await
                .expect("metrics text");
            let now = text
                .lines()
                .find_map(|l| l.strip_prefix("plinth_job_waiters "))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0);
            if now as usize >= n {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{now} of {n} waiting"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn ended(status: &str) -> bool {
    matches!(status, "succeeded" | "failed" | "cancelled")
}

fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

fn rfc3339_ms(s: &str) -> f64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .expect("RFC 3339 time")
        .timestamp_micros() as f64
        / 1000.0
}

/// Waits on one job until it ends; the receive time and the job as answered.
async fn follow(api: Arc<Api>, deck: String, id: String) -> (SystemTime, Value) {
    loop {
        let v = api
            .get(&format!("/api/slides/jobs/{id}?deck_id={deck}&wait=60"))
            .await;
        if ended(v["status"].as_str().unwrap_or("")) {
            return (SystemTime::now(), v);
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

async fn wait(api: Arc<Api>, deck: String, jobs: usize, waiters: usize) {
    // Queued in this order while the queue is paused, so the measured jobs run first and
    // the others' waiters stay waiting the whole time: `jobs` clients each follow one
    // measured job, the other `waiters - jobs` wait ten to a job on the later ones.
    api.queue("pause").await;
    let mut measured = Vec::new();
    for _ in 0..jobs {
        measured.push(api.export(&deck, json!({})).await);
    }
    let idle = waiters.saturating_sub(jobs);
    let mut later = Vec::new();
    for _ in 0..idle.div_ceil(10) {
        later.push(api.export(&deck, json!({})).await);
    }
    let mut idle_tasks = Vec::new();
    for w in 0..idle {
        let id = later[w / 10].clone();
        idle_tasks.push(tokio::spawn(follow(api.clone(), deck.clone(), id)));
    }
    let mut tasks = Vec::new();
    for id in &measured {
        tasks.push(tokio::spawn(follow(api.clone(), deck.clone(), id.clone())));
    }
    let registered = api.waiting(waiters).await;
    let resumed = Instant::now();
    api.queue("resume").await;
    let mut heard = Vec::new();
    for t in tasks {
        let (at, v) = t.await.unwrap();
        let finished = rfc3339_ms(v["finished_at"].as_str().expect("finished_at"));
        heard.push(unix_ms(at) - finished);
    }
    let done_after = resumed.elapsed();
    for t in idle_tasks {
        t.abort();
    }
    println!("jobs {jobs}");
    println!("waiters {waiters} ({idle} of them on later jobs)");
    println!(
        "all_waiting_after_ms {:.0}",
        registered.as_secs_f64() * 1000.0
    );
    println!(
        "measured_jobs_done_after_resume_ms {:.0}",
        done_after.as_secs_f64() * 1000.0
    );
    println!("heard_after_end_ms_median {:.1}", median(&mut heard));
    println!("heard_after_end_ms_p90 {:.1}", pct(&mut heard, 0.9));
    println!("heard_after_end_ms_max {:.1}", pct(&mut heard, 1.0));
}

/// `gap`: how long to leave the queue idle before each export (none: each one is queued
/// as soon as the client heard of the previous one's end, while its worker still records
/// that run).
async fn pickup(api: Arc<Api>, deck: String, n: usize, gap: Duration) {
    let (mut picked, mut heard_after) = (Vec::new(), Vec::new());
    for _ in 0..n {
        tokio::time::sleep(gap).await;
        let id = api.export(&deck, json!({})).await;
        let (heard, v) = follow(api.clone(), deck.clone(), id).await;
        let at = |k: &str| rfc3339_ms(v[k].as_str().unwrap_or_else(|| panic!("{k}: {v}")));
        picked.push(at("started_at") - at("created_at"));
        heard_after.push(unix_ms(heard) - at("finished_at"));
    }
    println!("exports {n}, {} ms apart", gap.as_millis());
    println!("pickup_ms_median {:.1}", median(&mut picked));
    println!("pickup_ms_p90 {:.1}", pct(&mut picked, 0.9));
    println!("heard_after_end_ms_median {:.1}", median(&mut heard_after));
}

async fn hold(api: Arc<Api>, deck: String, waiters: usize, seconds: u64) {
    api.queue("pause").await;
    let jobs = 100.min(waiters);
    let mut ids = Vec::new();
    for _ in 0..jobs {
        ids.push(api.export(&deck, json!({})).await);
    }
    let mut tasks = Vec::new();
    for w in 0..waiters {
        tasks.push(tokio::spawn(follow(
            api.clone(),
            deck.clone(),
            ids[w % jobs].clone(),
        )));
    }
    let registered = api.waiting(waiters).await;
    println!(
        "holding {waiters} waiters for {seconds} s (all waiting after {} ms)",
        registered.as_millis()
    );
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    api.queue("resume").await;
    for t in tasks {
        t.await.unwrap();
    }
    println!("released");
}

#[derive(Default)]
struct Receiver {
    seen: HashMap<String, usize>,
    acked: HashMap<String, usize>,
    order: usize,
}

async fn callbacks(api: Arc<Api>, deck: String, n: usize) {
    let state = Arc::new(Mutex::new(Receiver::default()));
    let st = state.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::Json<Value>| {
            let st = st.clone();
            async move {
                let id = body["id"].as_str().unwrap_or("").to_owned();
                let mut r = st.lock().unwrap();
                let first = !r.seen.contains_key(&id);
                if first {
                    r.order += 1;
                }
                let order = r.order;
                *r.seen.entry(id.clone()).or_default() += 1;
                if first && order % 10 == 0 {
                    return axum::http::StatusCode::INTERNAL_SERVER_ERROR;
                }
                *r.acked.entry(id).or_default() += 1;
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let start = Instant::now();
    for _ in 0..n {
        api.export(&deck, json!({"callback_url": url})).await;
    }
    let queued = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let acked = state.lock().unwrap().acked.len();
        if acked >= n || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all_acked = start.elapsed();
    // Late duplicates would arrive after the acknowledgement: give them a moment.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let r = state.lock().unwrap();
    let deliveries: usize = r.seen.values().sum();
    let failed_first = r.seen.values().filter(|&&c| c > 1).count();
    let dup_after_ack = r.acked.values().filter(|&&c| c > 1).count();
    println!("exports {n}");
    println!("queued_s {:.1}", queued.as_secs_f64());
    println!("events_acknowledged {}", r.acked.len());
    println!("deliveries {deliveries}");
    println!("events_retried_after_a_500 {failed_first}");
    println!("events_acknowledged_twice {dup_after_ack}");
    println!("all_acknowledged_after_s {:.1}", all_acked.as_secs_f64());
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: jobs_bench pickup|wait|hold|callbacks BASE KEY DECK ...";
    let (mode, base, key, deck) = match &args[..] {
        [m, b, k, d, ..] => (m.as_str(), b.clone(), k.clone(), d.clone()),
        _ => panic!("{usage}"),
    };
    let num = |i: usize| -> usize { args.get(i).expect(usage).parse().expect(usage) };
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(2000)
        .timeout(Duration::from_secs(90))
        .build()
        .unwrap();
    let api = Arc::new(Api { http, base, key });
    match mode {
        "pickup" => {
            let gap = args.get(5).map_or(0, |_| num(5)) as u64;
            pickup(api, deck, num(4), Duration::from_millis(gap)).await
        }
        "wait" => wait(api, deck, num(4), num(5)).await,
        "hold" => hold(api, deck, num(4), num(5) as u64).await,
        "callbacks" => callbacks(api, deck, num(4)).await,
        _ => panic!("{usage}"),
    }
}
