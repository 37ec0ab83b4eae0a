//! A job kind is a type: its arguments (the type itself, stored as JSON in the queue),
//! its names, timeout, retry policy and concurrency, the port it reaches the outside
//! through, and what a run does. The registry (`registry!` in `lib.rs`) lists the kinds;
//! everything else (storages, workers, the lifecycle layer, `enqueue`) is generic over
//! them. docs/architecture.md, "Adding a job kind", walks through one.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::{Attempt, BoxDynError, Data};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::retry::{cancelled, Backoff, JobError};
use crate::QueueName;

/// How often a job kind is tried, and the waits between its attempts.
#[derive(Clone, Debug)]
pub struct Retry {
    /// Attempts a new job gets in all (apalis's `max_attempts`).
    pub max_attempts: usize,
    /// The waits after failed attempts (`lifecycle` moves `run_at` by them).
    pub backoff: Arc<Backoff>,
}

/// One kind of background job (module comment).
pub trait Job: Serialize + DeserializeOwned + Clone + Send + Sync + Unpin + 'static {
    /// The queue's name for operators: `--queues`, `--concurrency`, `plinth jobs`,
    /// metrics labels.
    const NAME: &'static str;
    /// The queue's name in apalis's tables (`job_type`).
    const TABLE: &'static str;
    /// A run that takes longer is stopped and counts as a failure (`timeout`).
    const TIMEOUT: Duration;
    /// Where a JSON pointer into the arguments finds the id the job's client holds (an
    /// export's job id, an email's id), for `plinth jobs` and the console's search.
    const CLIENT_ID: Option<&'static str> = None;
    /// At most this many runs at once per process, whatever `--concurrency` says.
    const MAX_CONCURRENCY: Option<usize> = None;
    /// What a run reaches the outside through; the process provides one value of this
    /// type in its [`Ports`].
    type Port: Clone + Send + Sync + 'static;

    /// Attempts and back-off.
    fn retry() -> Retry;

    /// The job's idempotency key in the queue: a second job with the same key is not
    /// queued, and the key finds the job (an export: its client's job id).
    fn key(&self) -> Option<String> {
        None
    }

    /// One run; `attempt` is 1 on the first. An `Err` is retried after the back-off
    /// unless it is permanent or cancelled ([`JobError`]), or no attempt is left.
    fn run(
        self,
        port: &Self::Port,
        attempt: usize,
    ) -> impl Future<Output = Result<(), JobError>> + Send;

    /// What to do when the job has failed for good (a permanent error, or the last
    /// attempt's): by default nothing beyond what the lifecycle layer records (the
    /// attempt, its outcome and the error). Not called for a cancelled job.
    fn on_final_failure(
        &self,
        port: &Self::Port,
        error: &JobError,
    ) -> impl Future<Output = ()> + Send {
        let _ = (port, error);
        async {}
    }
}

/// Whether a run's error ends the job: permanent, or no attempt is left.
fn is_final<J: Job>(error: &JobError, attempt: usize) -> bool {
    error.permanent || attempt >= J::retry().max_attempts
}

/// The apalis handler of every job kind: the run, its error as the lifecycle layer
/// classifies it (a cancellation is apalis's abort: the job is `Killed`).
pub(crate) async fn handle<J: Job>(
    job: J,
    port: Data<J::Port>,
    attempt: Attempt,
) -> Result<(), BoxDynError> {
    let attempt = attempt.current().max(1);
    // The arguments outlive the run for the final-failure hook (they are a few ids).
    let args = job.clone();
    match job.run(&port, attempt).await {
        Ok(()) => Ok(()),
        Err(e) if e.cancelled => Err(cancelled(e.message)),
        Err(e) => {
            if is_final::<J>(&e, attempt) {
                args.on_final_failure(&port, &e).await;
            }
            Err(Box::new(e))
        }
    }
}

/// The ports of a process's job kinds, one value per port type, and the queue control.
#[derive(Clone)]
pub struct Ports {
    by_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    pub control: crate::control::Env,
}

/// A queue this process runs has no port for its jobs: a wiring mistake of the server.
#[derive(Debug, thiserror::Error)]
#[error("no port of type {port} for the jobs of queue {queue}")]
pub struct MissingPort {
    pub queue: &'static str,
    pub port: &'static str,
}

impl Ports {
    pub fn new(control: crate::control::Env) -> Ports {
        Ports {
            by_type: HashMap::new(),
            control,
        }
    }

    /// Adds the port of every job kind whose `Port` is `P`.
    pub fn with<P: Clone + Send + Sync + 'static>(mut self, port: P) -> Ports {
        self.by_type.insert(TypeId::of::<P>(), Arc::new(port));
        self
    }

    /// The port of job kind `J`.
    pub fn of<J: Job>(&self) -> Result<J::Port, MissingPort> {
        self.by_type
            .get(&TypeId::of::<J::Port>())
            .and_then(|p| p.downcast_ref::<J::Port>())
            .cloned()
            .ok_or(MissingPort {
                queue: J::NAME,
                port: std::any::type_name::<J::Port>(),
            })
    }
}

/// A job kind the registry lists: its queue. Implemented by `registry!` only, so that
/// only registered kinds can be queued.
pub trait Registered: Job {
    const QUEUE: QueueName;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde::Deserialize;

    use super::*;

    /// Fails as told; counts the final-failure calls in its port.
    #[derive(Clone, Serialize, Deserialize)]
    struct Flaky {
        permanent: bool,
        cancelled: bool,
    }

    impl Job for Flaky {
        const NAME: &'static str = "flaky";
        const TABLE: &'static str = "flaky";
        const TIMEOUT: Duration = Duration::from_secs(1);
        type Port = Arc<AtomicUsize>;

        fn retry() -> Retry {
            Retry {
                max_attempts: 3,
                backoff: Arc::new(crate::retry::Backoff::slides()),
            }
        }

        async fn run(self, _: &Self::Port, _: usize) -> Result<(), JobError> {
            let mut e = JobError::retry("test", "failed");
            e.permanent = self.permanent;
            e.cancelled = self.cancelled;
            Err(e)
        }

        async fn on_final_failure(&self, finals: &Self::Port, _: &JobError) {
            finals.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn the_final_failure_hook_runs_once_the_job_has_failed_for_good() {
        let finals = Arc::new(AtomicUsize::new(0));
        let run = |permanent, cancelled, attempt| {
            let job = Flaky {
                permanent,
                cancelled,
            };
            let port = Data::new(finals.clone());
            handle::<Flaky>(job, port, Attempt::new_with_value(attempt))
        };
        // Attempts left: retried, no hook.
        assert!(run(false, false, 1).await.is_err());
        assert!(run(false, false, 2).await.is_err());
        assert_eq!(finals.load(Ordering::SeqCst), 0);
        // A cancelled job is not a failure.
        assert!(run(false, true, 3).await.is_err());
        assert_eq!(finals.load(Ordering::SeqCst), 0);
        // The last attempt, and a permanent error on the first.
        assert!(run(false, false, 3).await.is_err());
        assert!(run(true, false, 1).await.is_err());
        assert_eq!(finals.load(Ordering::SeqCst), 2);
    }
}
