//! Attachment expiry: deletes stored objects whose time is up (the storage clones of
//! revoked, expired and used-up download links, and analytics attachments of events older
//! than 30 days), 200 at a time. The API's periodic round queues one run every 30 s;
//! a run is idempotent (each deletion is conditional and deleting a deleted object is
//! not an error), so several workers may run it at once.

use std::sync::Arc;

use apalis::prelude::*;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// What a run needs from the API's side (its database and object store).
pub trait ExpiryEnv: Send + Sync + 'static {
    /// Deletes what is due; how many objects went.
    fn expire(&self) -> BoxFuture<'_, Result<usize, String>>;
}

pub type Env = Arc<dyn ExpiryEnv>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExpiryTask {
    /// When the round queued it (for the log line).
    pub queued_at: String,
}

pub async fn run(task: ExpiryTask, env: Data<Env>) -> Result<(), BoxDynError> {
    let deleted = env
        .expire()
        .await
        .map_err(|e| crate::retry::JobError::retry("expiry", e))?;
    // Routine work, every 30 s: at DEBUG unless something went.
    if deleted > 0 {
        tracing::info!(deleted, "attachment expiry deleted objects");
    } else {
        tracing::debug!(queued_at = %task.queued_at, "attachment expiry ran");
    }
    Ok(())
}
