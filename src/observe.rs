//! What operators watch: Prometheus metrics (`/metrics`), the recent 5xx answers the
//! console shows, and the health probes' checks (`/livez`, `/readyz`).
//!
//! Metrics go through the `metrics` facade to one process-wide Prometheus recorder,
//! installed only when the operator asks for metrics (`PLINTH_METRICS_TOKEN` or
//! `--metrics-listen`): without it every recording is a no-op. Gauges that describe
//! shared state (queue depth, pool use, actor mailboxes) are read at scrape time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::adapters::storage::ObjectStore;
use crate::db::Db;
use crate::state::AppState;
use plinth_workers::Queue;

/// What the probes and the scrape need: a `worker` process has these but no API state.
#[derive(Clone)]
pub struct OpsState {
    pub db: Db,
    /// The credit-account shards (none in a process that does not serve requests).
    pub credits: Option<plinth_actors::credits::CreditAccounts>,
    pub queue: Queue,
    pub objects: ObjectStore,
    /// `PLINTH_METRICS_TOKEN`: the bearer token `/metrics` needs on this listener.
    pub token: Option<String>,
    /// The `--metrics-listen` listener: `/metrics` without a token (a private address).
    pub open: bool,
}

impl OpsState {
    pub fn of_api(app: &AppState) -> OpsState {
        OpsState {
            db: app.db.clone(),
            credits: Some(app.credits.clone()),
            queue: app.queue.clone(),
            objects: app.objects.clone(),
            token: app
                .opts
                .observability
                .metrics_token
                .clone()
                .filter(|t| !t.is_empty()),
            open: false,
        }
    }
}

static RECORDER: OnceLock<PrometheusHandle> = OnceLock::new();

/// Latency buckets in seconds, from a cached read (~50 µs) to a slow export.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];

/// Installs the Prometheus recorder (once per process; later calls keep the first) and
/// the task that folds recorded latencies into their buckets.
pub fn install() -> anyhow::Result<()> {
    if RECORDER.get().is_some() {
        return Ok(());
    }
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)?
        .build_recorder();
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        anyhow::bail!("a metrics recorder is already installed");
    }
    let _ = RECORDER.set(handle.clone());
    describe();
    metrics::gauge!("plinth_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            handle.run_upkeep();
        }
    });
    Ok(())
}

/// Whether this process records metrics.
pub fn enabled() -> bool {
    RECORDER.get().is_some()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        "plinth_http_requests_total",
        "API answers by route template, method and status"
    );
    describe_histogram!(
        "plinth_http_request_duration_seconds",
        Unit::Seconds,
        "API answer latency by route template and method"
    );
    describe_counter!(
        "plinth_rate_limited_total",
        "Requests refused with 429 by rate category"
    );
    describe_counter!("plinth_jobs_enqueued_total", "Jobs put on a queue");
    describe_counter!("plinth_jobs_started_total", "Job runs started");
    describe_counter!("plinth_jobs_succeeded_total", "Job runs that succeeded");
    describe_counter!(
        "plinth_jobs_failed_total",
        "Job runs that failed (error, panic or timeout) by queue and cause"
    );
    describe_counter!(
        "plinth_jobs_retries_scheduled_total",
        "Failed job runs whose job waits out its back-off for another attempt, by cause"
    );
    describe_counter!(
        "plinth_jobs_dead_total",
        "Jobs that failed for good (no attempt left, or a failure no attempt cures), by cause"
    );
    describe_histogram!(
        "plinth_job_latency_seconds",
        Unit::Seconds,
        "How long a job waited for a worker: from due (queued, or its retry time) to started"
    );
    describe_counter!(
        "plinth_jobs_retried_total",
        "Job runs of a job that ran before"
    );
    describe_histogram!(
        "plinth_job_duration_seconds",
        Unit::Seconds,
        "Job run duration by queue"
    );
    describe_gauge!(
        "plinth_queue_depth",
        "Jobs by queue and status (pending, scheduled, running, retrying, failed: failed for good or cancelled); the same from every process"
    );
    describe_gauge!(
        "plinth_queue_paused",
        "1 while an operator has paused the queue (no worker starts its jobs), else 0"
    );
    describe_gauge!(
        "plinth_queue_oldest_pending_seconds",
        "Age of the oldest due pending job by queue"
    );
    describe_gauge!(
        "plinth_actor_mailbox_length",
        "Messages waiting for an actor kind's shards in this process"
    );
    describe_counter!(
        "plinth_actor_restarts_total",
        "Actor shards restarted by their supervisor"
    );
    describe_gauge!(
        "plinth_job_waiters",
        "Clients of this process waiting on a slide job (`?wait=`, event streams)"
    );
    describe_gauge!(
        "plinth_db_pool_connections",
        "This process's database connections by state (in_use, idle)"
    );
    describe_gauge!(
        "plinth_build_info",
        "Always 1; the version of the running binary is its label"
    );
}

/// The Prometheus text of everything recorded, with the scrape-time gauges refreshed
/// first; None when this process records no metrics.
pub async fn render(db: &Db) -> Option<String> {
    let handle = RECORDER.get()?;
    let (size, idle) = db.pool_use();
    metrics::gauge!("plinth_db_pool_connections", "state" => "in_use")
        .set(size.saturating_sub(idle) as f64);
    metrics::gauge!("plinth_db_pool_connections", "state" => "idle").set(idle as f64);
    metrics::gauge!("plinth_job_waiters").set(crate::db::watch::waiting() as f64);
    for (actor, n) in plinth_actors::shard::mailbox_lengths() {
        metrics::gauge!("plinth_actor_mailbox_length", "actor" => actor).set(n as f64);
    }
    match tokio::time::timeout(Duration::from_secs(5), crate::db::jobs::depth(db)).await {
        Ok(Ok(queues)) => {
            for q in queues {
                for (status, n) in [
                    ("pending", q.pending),
                    ("scheduled", q.scheduled),
                    ("running", q.running),
                    ("retrying", q.retrying),
                    ("failed", q.failed),
                ] {
                    metrics::gauge!("plinth_queue_depth", "queue" => q.queue, "status" => status)
                        .set(n as f64);
                }
                metrics::gauge!("plinth_queue_oldest_pending_seconds", "queue" => q.queue)
                    .set(q.oldest_pending_secs);
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "queue depth for /metrics"),
        Err(_) => tracing::warn!("queue depth for /metrics timed out"),
    }
    match tokio::time::timeout(Duration::from_secs(5), crate::db::jobs::paused(db)).await {
        Ok(Ok(paused)) => {
            for q in plinth_workers::QueueName::ALL {
                metrics::gauge!("plinth_queue_paused", "queue" => q.name())
                    .set(if paused.contains(&q) { 1.0 } else { 0.0 });
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "paused queues for /metrics"),
        Err(_) => tracing::warn!("paused queues for /metrics timed out"),
    }
    let mut text = handle.render();
    text.push_str(&process_metrics());
    Some(text)
}

/// The process's CPU time, memory, open files, threads and start time, in the standard
/// `process_*` names (what Prometheus client libraries export), read from `/proc/self` at
/// scrape time; nothing where `/proc` is missing.
fn process_metrics() -> String {
    use std::fmt::Write;
    // Linux exposes CPU times to user space in units of USER_HZ, 100 per second on every
    // architecture this runs on.
    const TICKS: f64 = 100.0;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    };
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // After the command name (in parentheses, which may hold spaces): state is
        // field 3, utime 14, stime 15, num_threads 20, starttime 22.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
        if let (Some(user), Some(system)) = (field(14), field(15)) {
            metric(
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
                (user + system) / TICKS,
            );
        }
        if let Some(threads) = field(20) {
            metric(
                "process_threads",
                "gauge",
                "Number of OS threads in the process.",
                threads,
            );
        }
        let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<f64>().ok())
        });
        if let (Some(boot), Some(start)) = (boot, field(22)) {
            metric(
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                boot + start / TICKS,
            );
        }
    }
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let kb = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
                .map(|k| k * 1024.0)
        };
        if let Some(rss) = kb("VmRSS:") {
            metric(
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
                rss,
            );
        }
        if let Some(vm) = kb("VmSize:") {
            metric(
                "process_virtual_memory_bytes",
                "gauge",
                "Virtual memory size in bytes.",
                vm,
            );
        }
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        metric(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            fds.count() as f64,
        );
    }
    if let Ok(limits) = std::fs::read_to_string("/proc/self/limits") {
        let max = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<f64>().ok());
        if let Some(max) = max {
            metric(
                "process_max_fds",
                "gauge",
                "Maximum number of open file descriptors.",
                max,
            );
        }
    }
    out
}

/// One answer's metrics. Handles are kept per (route, method, status): the facade's
/// lookup by labels costs an allocation and a hash per call, this a read-locked probe.
type HttpKey = (usize, u8, u16);
static HTTP: OnceLock<RwLock<HashMap<HttpKey, (Counter, Histogram)>>> = OnceLock::new();

/// Records one API answer; `route` is the route template ("unmatched" for the 404
/// fallback), so the label set stays bounded.
pub fn http(route: &'static str, method: &Method, status: StatusCode, started: Instant) {
    let (m, method) = method_label(method);
    let key = (route.as_ptr() as usize, m, status.as_u16());
    let map = HTTP.get_or_init(Default::default);
    let hit = map
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    let (count, latency) = match hit {
        Some(h) => h,
        None => {
            let h = (
                metrics::counter!("plinth_http_requests_total",
                    "route" => route, "method" => method, "status" => status_label(status)),
                metrics::histogram!("plinth_http_request_duration_seconds",
                    "route" => route, "method" => method),
            );
            map.write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, h.clone());
            h
        }
    };
    count.increment(1);
    latency.record(started.elapsed().as_secs_f64());
}

fn method_label(m: &Method) -> (u8, &'static str) {
    match *m {
        Method::GET => (0, "GET"),
        Method::POST => (1, "POST"),
        Method::PUT => (2, "PUT"),
        Method::PATCH => (3, "PATCH"),
        Method::DELETE => (4, "DELETE"),
        Method::HEAD => (5, "HEAD"),
        Method::OPTIONS => (6, "OPTIONS"),
        _ => (7, "other"),
    }
}

/// "100" to "599" as static strings (made once), for the status label.
fn status_label(s: StatusCode) -> &'static str {
    static LABELS: OnceLock<Vec<&'static str>> = OnceLock::new();
    let labels = LABELS.get_or_init(|| {
        (100..600u16)
            .map(|c| &*Box::leak(c.to_string().into_boxed_str()))
            .collect()
    });
    labels
        .get(usize::from(s.as_u16()).wrapping_sub(100))
        .copied()
        .unwrap_or("other")
}

/// A 429 in a rate category.
pub fn rate_limited(category: &'static str) {
    metrics::counter!("plinth_rate_limited_total", "category" => category).increment(1);
}

/// One 5xx answer, as the console lists it.
#[derive(Clone, serde::Serialize, schemars::JsonSchema)]
pub struct ServerError {
    /// When it was answered (RFC 3339, UTC).
    pub at: String,
    pub method: String,
    /// The route template.
    pub route: String,
    pub status: u16,
    pub request_id: Option<String>,
}

/// 5xx answers of this process by (method, route) since it started.
#[derive(Clone, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorCount {
    pub method: String,
    pub route: String,
    pub count: u64,
}

/// The latest 5xx answers kept for the console.
const RECENT_ERRORS: usize = 100;

#[derive(Default)]
struct Errors {
    recent: VecDeque<ServerError>,
    by_route: HashMap<(String, String), u64>,
}

static ERRORS: Mutex<Option<Errors>> = Mutex::new(None);

/// Records a 5xx answer (501 "not built yet" is not one: the usage layer skips it).
pub fn server_error(method: &Method, route: &str, status: StatusCode, request_id: Option<&str>) {
    let mut guard = ERRORS.lock().unwrap_or_else(|e| e.into_inner());
    let errors = guard.get_or_insert_with(Errors::default);
    if errors.recent.len() == RECENT_ERRORS {
        errors.recent.pop_front();
    }
    errors.recent.push_back(ServerError {
        at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        method: method.as_str().to_owned(),
        route: route.to_owned(),
        status: status.as_u16(),
        request_id: request_id.map(str::to_owned),
    });
    *errors
        .by_route
        .entry((method.as_str().to_owned(), route.to_owned()))
        .or_default() += 1;
}

/// The recent 5xx answers, newest first, and the counts by route, most first.
pub fn server_errors() -> (Vec<ServerError>, Vec<ErrorCount>) {
    let guard = ERRORS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(errors) = guard.as_ref() else {
        return (Vec::new(), Vec::new());
    };
    let recent = errors.recent.iter().rev().cloned().collect();
    let mut counts: Vec<ErrorCount> = errors
        .by_route
        .iter()
        .map(|((method, route), count)| ErrorCount {
            method: method.clone(),
            route: route.clone(),
            count: *count,
        })
        .collect();
    counts.sort_by(|a, b| b.count.cmp(&a.count).then(a.route.cmp(&b.route)));
    (recent, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_metrics_come_from_proc() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let text = process_metrics();
        for name in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
            "process_threads",
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{name} ")))
                .unwrap_or_else(|| panic!("no {name} in {text}"));
            let v: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(v >= 0.0, "{line}");
        }
        assert!(text.contains("# TYPE process_cpu_seconds_total counter"));
    }

    #[test]
    fn status_labels_are_the_codes() {
        assert_eq!(status_label(StatusCode::OK), "200");
        assert_eq!(status_label(StatusCode::TOO_MANY_REQUESTS), "429");
        assert_eq!(status_label(StatusCode::from_u16(599).unwrap()), "599");
    }

    #[test]
    fn recent_errors_are_bounded_and_counted_by_route() {
        for _ in 0..RECENT_ERRORS + 5 {
            server_error(
                &Method::POST,
                "/api/test/observe",
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
            );
        }
        let (recent, counts) = server_errors();
        assert!(recent.len() <= RECENT_ERRORS);
        let c = counts
            .iter()
            .find(|c| c.route == "/api/test/observe")
            .unwrap();
        assert_eq!(c.count, (RECENT_ERRORS + 5) as u64);
    }
}
