//! Job metrics for Prometheus (`plinth_jobs_*`, `plinth_job_duration_seconds`), through
//! the `metrics` facade: free when the process records no metrics (no recorder).
//!
//! Counted per run of a job: `started`, then `succeeded` or `failed` (an error, a panic
//! or a timeout), with its duration; `retried` counts runs of a job that ran before.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use apalis::prelude::Task;
use tower::{Layer, Service};

/// Counts one job put on `queue` (an operator's queue name: email, export, ...).
pub fn enqueued(queue: &'static str) {
    metrics::counter!("plinth_jobs_enqueued_total", "queue" => queue).increment(1);
}

/// A worker layer that records every run of the jobs of one queue.
#[derive(Clone, Copy)]
pub struct JobMetrics(pub &'static str);

impl<S> Layer<S> for JobMetrics {
    type Service = JobMetricsService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        JobMetricsService {
            inner,
            queue: self.0,
        }
    }
}

#[derive(Clone)]
pub struct JobMetricsService<S> {
    inner: S,
    queue: &'static str,
}

impl<S, Args> Service<Task<Args>> for JobMetricsService<S>
where
    S: Service<Task<Args>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Args>) -> Self::Future {
        let queue = self.queue;
        metrics::counter!("plinth_jobs_started_total", "queue" => queue).increment(1);
        // apalis counts the attempt before the run starts: 1 on a job's first run.
        if task.ctx().attempt() > 1 {
            metrics::counter!("plinth_jobs_retried_total", "queue" => queue).increment(1);
        }
        let start = Instant::now();
        let run = self.inner.call(task);
        Box::pin(async move {
            let result = run.await;
            let outcome = if result.is_ok() {
                "plinth_jobs_succeeded_total"
            } else {
                "plinth_jobs_failed_total"
            };
            metrics::counter!(outcome, "queue" => queue).increment(1);
            metrics::histogram!("plinth_job_duration_seconds", "queue" => queue)
                .record(start.elapsed().as_secs_f64());
            result
        })
    }
}
