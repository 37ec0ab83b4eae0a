//! Job metrics for Prometheus (`plinth_jobs_*`, `plinth_job_*`), through the `metrics`
//! facade: free when the process records no metrics (no recorder). Recorded per run by
//! the `lifecycle` layer:
//! - `started`, with how long the job waited for a worker (`plinth_job_latency_seconds`:
//!   from when it was due, its creation or its retry time, to its start);
//! - `succeeded` or `failed{cause}` (an error, a panic or a timeout), with the run time;
//! - `retried` for a run of a job that ran before; `retries_scheduled{cause}` for a
//!   failure that waits for another attempt; `dead{cause}` for a job failed for good.

use std::time::Duration;

/// Counts one job put on `queue` (an operator's queue name: email, export, ...).
pub fn enqueued(queue: &'static str) {
    metrics::counter!("plinth_jobs_enqueued_total", "queue" => queue).increment(1);
}

/// A run starts, `waited_ms` after its job was due.
pub fn started(queue: &'static str, waited_ms: i64) {
    metrics::counter!("plinth_jobs_started_total", "queue" => queue).increment(1);
    metrics::histogram!("plinth_job_latency_seconds", "queue" => queue)
        .record(waited_ms.max(0) as f64 / 1000.0);
}

/// A run ends: succeeded (`cause` None) or failed with `cause`.
pub fn finished(queue: &'static str, cause: Option<&'static str>, attempt: usize, took: Duration) {
    match cause {
        None => metrics::counter!("plinth_jobs_succeeded_total", "queue" => queue).increment(1),
        Some(cause) => {
            metrics::counter!("plinth_jobs_failed_total", "queue" => queue, "cause" => cause)
                .increment(1)
        }
    }
    if attempt > 1 {
        metrics::counter!("plinth_jobs_retried_total", "queue" => queue).increment(1);
    }
    metrics::histogram!("plinth_job_duration_seconds", "queue" => queue).record(took.as_secs_f64());
}

/// A failed run whose job waits for another attempt.
pub fn retry_scheduled(queue: &'static str, cause: &'static str) {
    metrics::counter!("plinth_jobs_retries_scheduled_total", "queue" => queue, "cause" => cause)
        .increment(1);
}

/// A job that failed for good (no attempt left, or a failure no attempt can cure).
pub fn failed_for_good(queue: &'static str, cause: &'static str) {
    metrics::counter!("plinth_jobs_dead_total", "queue" => queue, "cause" => cause).increment(1);
}
