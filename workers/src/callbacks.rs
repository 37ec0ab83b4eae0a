//! Completion callbacks: when a job whose client gave a `callback_url` ends, plinth
//! POSTs a signed event to it. One task per event, queued in the same transaction as
//! the job's end; the server does the delivery ([`CallbackEnv`]: the event, its
//! signature, the HTTP request). A delivery that the receiver does not acknowledge
//! (2xx) fails and is retried after the callback back-off, with the same event id:
//! events arrive at least once, and receivers drop repeats by `id`.

use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::BoxDynError;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::job::{Job, Retry};
use crate::retry::JobError;

/// The queue's payload: which event of which job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallbackTask {
    /// `evt_<uuid>`: the event's id, the same on every attempt.
    pub event_id: String,
    /// The export job that ended.
    pub job_id: String,
}

/// The server's side: builds the event from the job as it is, signs it with the job's
/// owner's secret and POSTs it; a [`crate::JobError`] says whether another attempt may
/// help.
pub trait CallbackEnv: Send + Sync + 'static {
    fn deliver<'a>(
        &'a self,
        task: &'a CallbackTask,
        attempt: usize,
    ) -> BoxFuture<'a, Result<(), BoxDynError>>;
}

pub type Env = Arc<dyn CallbackEnv>;

impl CallbackTask {
    /// A new completion event of export `job_id` (its id is made here, the same for
    /// every attempt).
    pub fn new(job_id: &str) -> CallbackTask {
        CallbackTask {
            event_id: format!("evt_{}", uuid::Uuid::new_v4().simple()),
            job_id: job_id.to_owned(),
        }
    }
}

impl Job for CallbackTask {
    const NAME: &'static str = "callbacks";
    const TABLE: &'static str = "callbacks";
    const TIMEOUT: Duration = Duration::from_secs(60);
    const CLIENT_ID: Option<&'static str> = Some("/job_id");
    type Port = Env;

    /// The callback back-off (`PLINTH_CALLBACK_BACKOFF`).
    fn retry() -> Retry {
        let backoff = crate::callback_backoff();
        Retry {
            max_attempts: backoff.max_attempts(),
            backoff,
        }
    }

    async fn run(self, env: &Env, attempt: usize) -> Result<(), JobError> {
        Ok(env.deliver(&self, attempt).await?)
    }

    /// The receiver never acknowledged the event: the log names the export and the event
    /// a receiver's owner asks about (the count is `plinth_jobs_dead_total`).
    async fn on_final_failure(&self, _: &Env, error: &JobError) {
        tracing::warn!(
            job_id = %self.job_id,
            event_id = %self.event_id,
            cause = error.cause,
            error = %error.message,
            "completion callback abandoned: no attempt left"
        );
    }
}
