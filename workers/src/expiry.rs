//! Attachment expiry: deletes stored objects whose time is up (the storage clones of
//! revoked, expired and used-up download links, and analytics attachments of events older
//! than 30 days), 200 at a time. The API's periodic round queues one run every 30 s;
//! a run is idempotent (each deletion is conditional and deleting a deleted object is
//! not an error), so several workers may run it at once.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::job::{Job, Retry};
use crate::retry::{Backoff, JobError};

/// Why a run could not delete what is due: the database or the object store failed.
#[derive(Debug, thiserror::Error)]
pub enum ExpiryError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// The object store (its message as it gave it).
    #[error("{0}")]
    Storage(String),
}

/// What a run needs from the API's side (its database and object store).
pub trait ExpiryEnv: Send + Sync + 'static {
    /// Deletes what is due; how many objects went.
    fn expire(&self) -> BoxFuture<'_, Result<usize, ExpiryError>>;
}

pub type Env = Arc<dyn ExpiryEnv>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExpiryTask {
    /// When the round queued it (for the log line).
    pub queued_at: String,
}

impl Job for ExpiryTask {
    const NAME: &'static str = "expiry";
    const TABLE: &'static str = "expiry";
    const TIMEOUT: Duration = Duration::from_secs(600);
    /// One sweep at a time per process, by design.
    const MAX_CONCURRENCY: Option<usize> = Some(1);
    type Port = Env;

    /// Tried once: the next round queues another.
    fn retry() -> Retry {
        Retry {
            max_attempts: 1,
            backoff: Arc::new(Backoff::slides()),
        }
    }

    async fn run(self, env: &Env, _attempt: usize) -> Result<(), JobError> {
        run(self, env).await
    }
}

async fn run(task: ExpiryTask, env: &Env) -> Result<(), JobError> {
    let deleted = env
        .expire()
        .await
        .map_err(|e| JobError::retry("expiry", e))?;
    // Routine work, every 30 s: at DEBUG unless something went.
    if deleted > 0 {
        tracing::info!(deleted, "attachment expiry deleted objects");
    } else {
        tracing::debug!(queued_at = %task.queued_at, "attachment expiry ran");
    }
    Ok(())
}
