//! Every run of every job, as operators see it: one worker layer (outermost of ours,
//! outside the panic and timeout layers) that
//! - counts the run in the job metrics, with the time the job waited for a worker
//!   (`plinth_job_latency_seconds`: due → started) and, on failure, its cause;
//! - decides what a failure means: another attempt after its queue's [`Backoff`], or the
//!   end (a permanent failure, or no attempts left), and writes that into the job's own
//!   row before apalis records the result;
//! - records the run (attempt, worker, times, outcome, error) for the attempt history;
//! - logs each failure once, with the job id, queue, attempt and cause.
//!
//! apalis records a failed run as `Failed` with its attempt count and fetches a `Failed`
//! job with attempts left again once its `run_at` is due: the layer moves `run_at` to
//! the end of the wait (a retry), or lowers `max_attempts` to the attempts made (the
//! end). apalis's lifecycle leaves a run that timed out or panicked marked `Running`
//! (its future was dropped or unwound); the layer marks it `Failed` so that it is
//! retried like any failure rather than held by a live worker for ever.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use apalis::prelude::{BoxDynError, Status, Task, WorkerContext};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use tower::{Layer, Service};

use crate::retry::{classify, Backoff};
use crate::QueueName;

/// How a run ended (stored as `job_attempts.outcome`).
pub use plinth_vocab::AttemptOutcome as Outcome;

/// One run of a job.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// apalis's id of the job.
    pub job_id: String,
    pub queue: QueueName,
    /// 1 on the first run.
    pub attempt: i64,
    pub max_attempts: i64,
    pub worker: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    /// How long the job waited for a worker: from when it was due to `started_at`.
    pub waited_ms: i64,
    pub outcome: Outcome,
    pub cause: Option<&'static str>,
    pub error: Option<String>,
    /// When the next attempt is due (a retry).
    pub next_at: Option<DateTime<Utc>>,
}

/// Where the layer writes: the job's own row (apalis's table) and the attempt history.
/// The server implements it over its database.
pub trait JobLog: Send + Sync + 'static {
    /// Records the run and, for a retry, moves the job's `run_at` to `next_at`; for a run
    /// that failed for good, lowers its `max_attempts` to `attempt`. Both only while
    /// `worker` still holds the job (before apalis records the result).
    fn finish<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), BoxDynError>>;
}

pub type Log = Arc<dyn JobLog>;

/// The worker layer of one queue (see the module comment).
#[derive(Clone)]
pub struct Lifecycle {
    pub queue: QueueName,
    pub backoff: Arc<Backoff>,
    pub log: Log,
}

impl<S> Layer<S> for Lifecycle {
    type Service = LifecycleService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        LifecycleService {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct LifecycleService<S> {
    inner: S,
    layer: Lifecycle,
}

/// The epoch milliseconds of a ULID (its first 10 Crockford base-32 characters).
fn ulid_ms(id: &str) -> Option<i64> {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if id.len() != 26 {
        return None;
    }
    let mut ms: i64 = 0;
    for c in id.bytes().take(10) {
        let v = ALPHABET.iter().position(|a| *a == c.to_ascii_uppercase())?;
        ms = ms.checked_mul(32)?.checked_add(v as i64)?;
    }
    Some(ms)
}

/// When a job became due, in epoch milliseconds: its creation (the ULID's time, to the
/// millisecond) or its `run_at` (whole seconds) when that is later (a delayed job, a
/// retry).
fn due_ms(id: &str, run_at_secs: Option<u64>) -> Option<i64> {
    let created = ulid_ms(id);
    let run_at = run_at_secs.map(|s| s as i64 * 1000);
    match (created, run_at) {
        // `run_at` of a job queued now is its creation second, rounded down.
        (Some(c), Some(r)) if r > c => Some(r),
        (Some(c), _) => Some(c),
        (None, r) => r,
    }
}

impl<S, Args> Service<Task<Args>> for LifecycleService<S>
where
    S: Service<Task<Args>, Error = BoxDynError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxDynError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxDynError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Args>) -> Self::Future {
        let layer = self.layer.clone();
        let queue = layer.queue.name();
        let ctx = task.ctx().clone();
        let job_id = ctx.task_id().map(|t| t.to_string()).unwrap_or_default();
        let worker = ctx
            .data()
            .get::<WorkerContext>()
            .map(|w| w.name().to_owned())
            .or_else(|| ctx.lock_by().map(str::to_owned))
            .unwrap_or_default();
        let started_at = Utc::now();
        let waited_ms = due_ms(&job_id, ctx.run_at())
            .map_or(0, |due| (started_at.timestamp_millis() - due).max(0));
        crate::metrics::started(queue, waited_ms);
        let clock = Instant::now();
        let run = self.inner.call(task);
        Box::pin(async move {
            let result = run.await;
            // apalis counts the attempt when the run starts: 1 on a job's first run.
            let attempt = ctx.attempt().max(1);
            let max_attempts = ctx.max_attempts().unwrap_or(1).max(1);
            let finished_at = Utc::now();
            let mut record = RunRecord {
                job_id: job_id.clone(),
                queue: layer.queue,
                attempt: attempt as i64,
                max_attempts: max_attempts as i64,
                worker,
                started_at,
                finished_at,
                waited_ms,
                outcome: Outcome::Succeeded,
                cause: None,
                error: None,
                next_at: None,
            };
            match &result {
                Ok(_) => {
                    crate::metrics::finished(queue, None, attempt, clock.elapsed());
                    // A job that failed before and now went through is worth a line.
                    if attempt > 1 {
                        tracing::info!(job_id, queue, attempt, "job succeeded after a retry");
                    }
                }
                Err(e) => {
                    let failure = classify(e);
                    record.cause = Some(failure.cause);
                    record.error = Some(failure.message.clone());
                    let last = failure.permanent || attempt >= max_attempts;
                    record.outcome = if failure.cancelled {
                        Outcome::Cancelled
                    } else if last {
                        Outcome::Failed
                    } else {
                        Outcome::Retrying
                    };
                    // A run cut off by its timeout or a panic never reached apalis's
                    // status update: record it as the failure it is.
                    let status = ctx.status();
                    if failure.cancelled {
                        ctx.raw_status().store(Status::Killed);
                    } else if status != Status::Failed {
                        ctx.raw_status().store(Status::Failed);
                    }
                    crate::metrics::finished(queue, Some(failure.cause), attempt, clock.elapsed());
                    match record.outcome {
                        Outcome::Retrying => {
                            let wait = layer.backoff.delay(attempt);
                            let next =
                                finished_at + chrono::TimeDelta::from_std(wait).unwrap_or_default();
                            record.next_at = Some(next);
                            crate::metrics::retry_scheduled(queue, failure.cause);
                            tracing::warn!(
                                job_id, queue, attempt, max_attempts, cause = failure.cause,
                                error = %failure.message,
                                next_attempt_at = %next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                                next_attempt_in_secs = wait.as_secs(),
                                "job failed; retrying"
                            );
                        }
                        Outcome::Failed => {
                            crate::metrics::failed_for_good(queue, failure.cause);
                            tracing::error!(
                                job_id, queue, attempt, max_attempts, cause = failure.cause,
                                error = %failure.message,
                                "job failed for good"
                            );
                        }
                        Outcome::Cancelled => {
                            tracing::info!(job_id, queue, attempt, error = %failure.message, "job cancelled while it ran");
                        }
                        Outcome::Succeeded => {}
                    }
                }
            }
            if let Err(e) = layer.log.finish(&record).await {
                // The result itself still reaches apalis; only the schedule or the history
                // is missing (a retry then comes at once, as apalis alone would do it).
                tracing::warn!(job_id, queue, attempt, error = %e, "could not record the job's run");
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ulid_carries_its_millisecond() {
        // 01ARZ3NDEK: 1469922850259 ms (the ULID specification's example id).
        assert_eq!(
            ulid_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV"),
            Some(1_469_922_850_259)
        );
        assert_eq!(ulid_ms("short"), None);
        assert_eq!(
            ulid_ms("01ARZ3NDEKTSV4RRFFQ69G5FA!"),
            Some(1_469_922_850_259)
        );
        // Due: the later of creation and run_at.
        let id = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
        assert_eq!(due_ms(id, Some(1_469_922_850)), Some(1_469_922_850_259));
        assert_eq!(due_ms(id, Some(1_469_922_900)), Some(1_469_922_900_000));
        assert_eq!(due_ms("not-a-ulid", Some(5)), Some(5_000));
    }
}
