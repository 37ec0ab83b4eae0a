//! The queue: apalis's storages in the API's own database, and the one owner of apalis's
//! tables (`Jobs` on SQLite, `apalis.jobs` on PostgreSQL). Jobs are queued here
//! ([`Queue::enqueue`], [`Enqueue::enqueue`] inside a caller's transaction); every other
//! read and write of those tables (listings, counts, an operator's retry, cancel and
//! discard, the lifecycle layer's reschedule, the release of a stopping process's jobs)
//! is in [`tables`].

pub mod tables;

use apalis::prelude::{BoxDynError, Task, TaskBuilder};
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use serde::Serialize;

use crate::job::{Job, Registered};

/// The database the queue lives in: the API's own.
#[derive(Clone)]
pub enum Queue {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

#[derive(Debug, Clone, Serialize)]
pub struct QueueStatus {
    pub backend: &'static str,
    pub ok: bool,
}

/// Why a job could not be queued.
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    #[error("encoding the job's arguments: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error("queueing the job: {0}")]
    Queue(String),
}

impl From<EnqueueError> for sqlx::Error {
    fn from(e: EnqueueError) -> Self {
        match e {
            EnqueueError::Database(e) => e,
            EnqueueError::Encode(e) => sqlx::Error::Encode(Box::new(e)),
            EnqueueError::Queue(m) => sqlx::Error::Protocol(m),
        }
    }
}

impl Queue {
    /// Prepares the queue tables in the SQLite database the API uses. Runs apalis's own
    /// migrations (tolerating ours in the shared history table) without its pragmas: our
    /// pool already sets WAL, `synchronous=NORMAL` and foreign keys on every connection.
    pub async fn sqlite(pool: &sqlx::SqlitePool) -> Result<Self, BoxDynError> {
        let mut m = SqliteStorage::<()>::migrations();
        m.set_ignore_missing(true);
        m.run(pool).await?;
        Ok(Queue::Sqlite(pool.clone()))
    }

    /// PostgreSQL: apalis keeps its tables and migration history in schema `apalis`.
    pub async fn postgres(pool: &sqlx::PgPool) -> Result<Self, BoxDynError> {
        PostgresStorage::<()>::setup(pool).await?;
        Ok(Queue::Postgres(pool.clone()))
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Queue::Sqlite(_) => "apalis-sqlite",
            Queue::Postgres(_) => "apalis-postgres",
        }
    }

    pub async fn health(&self) -> QueueStatus {
        let ok = match self {
            Queue::Sqlite(p) => sqlx::query("SELECT 1").execute(p).await.is_ok(),
            Queue::Postgres(p) => sqlx::query("SELECT 1").execute(p).await.is_ok(),
        };
        QueueStatus {
            backend: self.backend(),
            ok,
        }
    }

    /// Queues `job` on its own (not inside a transaction of the caller) and wakes this
    /// process's workers of its queue.
    pub async fn enqueue<J: Registered>(&self, job: J) -> Result<(), EnqueueError> {
        match self {
            Queue::Sqlite(p) => p.acquire().await?.enqueue(job).await?,
            Queue::Postgres(p) => p.acquire().await?.enqueue(job).await?,
        }
        crate::wake::wake(J::QUEUE);
        Ok(())
    }
}

/// A job as both storages store it: JSON bytes, its kind's attempts, its key.
fn task<J: Job>(job: &J) -> Result<Task<Vec<u8>>, EnqueueError> {
    let bytes = serde_json::to_vec(job)?;
    let task = TaskBuilder::new(bytes).max_attempts(J::retry().max_attempts);
    Ok(match job.key() {
        Some(k) => task.idempotency_key(k).build(),
        None => task.build(),
    })
}

/// Queues jobs on a connection inside the caller's transaction, so the row a client
/// polls and the job that runs it commit together or not at all (no `pending` row that
/// no worker will ever run, no job for a row that was rolled back). The caller wakes the
/// queue's workers (`wake`) once it committed.
pub trait Enqueue: Send {
    fn enqueue<J: Registered>(
        &mut self,
        job: J,
    ) -> impl std::future::Future<Output = Result<(), EnqueueError>> + Send;
}

impl Enqueue for sqlx::SqliteConnection {
    async fn enqueue<J: Registered>(&mut self, job: J) -> Result<(), EnqueueError> {
        let task = task(&job)?;
        apalis_sqlite::queries::push_tasks(self, J::TABLE, &[task])
            .await
            .map_err(|e| match e {
                apalis_sqlite::Error::Database(e) => EnqueueError::Database(e),
                other => EnqueueError::Queue(other.to_string()),
            })?;
        crate::metrics::enqueued(J::NAME);
        Ok(())
    }
}

impl Enqueue for sqlx::PgConnection {
    async fn enqueue<J: Registered>(&mut self, job: J) -> Result<(), EnqueueError> {
        let task = task(&job)?;
        apalis_postgres::queries::push_tasks(self, J::TABLE, vec![task])
            .await
            .map_err(|e| match e {
                apalis_postgres::Error::Database(e) => EnqueueError::Database(e),
                other => EnqueueError::Queue(other.to_string()),
            })?;
        crate::metrics::enqueued(J::NAME);
        Ok(())
    }
}
