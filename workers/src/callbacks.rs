//! Completion callbacks: when a job whose client gave a `callback_url` ends, plinth
//! POSTs a signed event to it. One task per event, queued in the same transaction as
//! the job's end; the server does the delivery ([`CallbackEnv`]: the event, its
//! signature, the HTTP request). A delivery that the receiver does not acknowledge
//! (2xx) fails and is retried after the callback back-off, with the same event id:
//! events arrive at least once, and receivers drop repeats by `id`.

use std::sync::Arc;

use apalis::prelude::{BoxDynError, Data};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

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

pub async fn run(
    task: CallbackTask,
    env: Data<Env>,
    attempt: apalis::prelude::Attempt,
) -> Result<(), BoxDynError> {
    env.deliver(&task, attempt.current().max(1)).await
}
