//! Background jobs: apalis queues in the API's own database, and the work they do.
//!
//! Today: email delivery (outbox files by default, SMTP by configuration). Slide export,
//! image validation and the periodic clean-ups join here as their areas land.

mod mail;

use std::time::Duration;

use apalis::layers::retry::backoff::{ExponentialBackoffMaker, MakeBackoff};
use apalis::layers::retry::{HasherRng, RetryPolicy};
use apalis::prelude::*;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use futures::FutureExt;
use serde::{Deserialize, Serialize};

pub use mail::{valid_mailbox, MailBackend, MailStatus};

/// One email. `id` names the outbox file and the Message-ID, so a delivery that runs
/// twice (retry after a crash) overwrites instead of duplicating in the outbox, and SMTP
/// receivers can de-duplicate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Email {
    pub to: String,
    pub from: String,
    pub subject: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EmailJob {
    pub id: String,
    pub email: Email,
}

const EMAIL_QUEUE: &str = "email";
/// A job is tried at most this many times in all (in-process retries included).
const EMAIL_MAX_ATTEMPTS: usize = 5;

#[derive(Clone)]
pub enum Queue {
    Sqlite(SqliteStorage<EmailJob>),
    Postgres(PostgresStorage<EmailJob>),
}

#[derive(Debug, Clone, Serialize)]
pub struct QueueStatus {
    pub backend: &'static str,
    pub ok: bool,
}

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Unique per process; see `worker_name`.
    pub name_prefix: String,
    pub email_concurrency: usize,
}

/// A worker name no other process uses: apalis breaks orphan recovery when two live
/// workers share a name, and refuses a name that was seen in the last heartbeat.
pub fn worker_name(prefix: &str, queue: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{queue}-{}", &id[..12])
}

fn sqlite_config() -> apalis_sqlite::Config {
    apalis_sqlite::Config::default()
        .queue(EMAIL_QUEUE)
        .heartbeat_interval(Duration::from_secs(5))
        .missed_heartbeats(3)
}

fn postgres_config() -> apalis_postgres::Config {
    apalis_postgres::Config::default()
        .queue(EMAIL_QUEUE)
        .heartbeat_interval(Duration::from_secs(5))
        .missed_heartbeats(3)
}

async fn deliver(job: EmailJob, mail: Data<MailBackend>) -> Result<(), BoxDynError> {
    mail.deliver(&job.id, &job.email).await
}

macro_rules! email_worker {
    ($name:expr, $backend:expr, $mail:expr, $concurrency:expr) => {{
        let backoff = ExponentialBackoffMaker::new(
            Duration::from_millis(200),
            Duration::from_secs(10),
            0.5,
            HasherRng::default(),
        )
        .expect("valid backoff bounds")
        .make_backoff();
        WorkerBuilder::new($name)
            .backend($backend)
            .data($mail)
            .catch_panic()
            .concurrency($concurrency)
            .retry(RetryPolicy::retries(2).with_backoff(backoff))
            .timeout(Duration::from_secs(60))
            .build(deliver)
    }};
}

impl Queue {
    /// Prepares the queue tables in the SQLite database the API uses. Runs apalis's own
    /// migrations (tolerating ours in the shared history table) without its pragmas: our
    /// pool already sets WAL, `synchronous=NORMAL` and foreign keys on every connection.
    pub async fn sqlite(pool: &sqlx::SqlitePool) -> Result<Self, BoxDynError> {
        let mut m = SqliteStorage::migrations();
        m.set_ignore_missing(true);
        m.run(pool).await?;
        Ok(Queue::Sqlite(
            SqliteStorage::new(pool).with_config(sqlite_config()),
        ))
    }

    /// PostgreSQL: apalis keeps its tables and migration history in schema `apalis`.
    pub async fn postgres(pool: &sqlx::PgPool) -> Result<Self, BoxDynError> {
        PostgresStorage::setup(pool).await?;
        Ok(Queue::Postgres(
            PostgresStorage::new(pool).with_config(postgres_config()),
        ))
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Queue::Sqlite(_) => "apalis-sqlite",
            Queue::Postgres(_) => "apalis-postgres",
        }
    }

    pub async fn push_email(&self, email: Email) -> Result<(), BoxDynError> {
        let job = EmailJob {
            id: uuid::Uuid::new_v4().to_string(),
            email,
        };
        let task = TaskBuilder::new(job)
            .max_attempts(EMAIL_MAX_ATTEMPTS)
            .build();
        match self {
            Queue::Sqlite(s) => s.clone().push_task(task).await?,
            Queue::Postgres(s) => s.clone().push_task(task).await?,
        }
        Ok(())
    }

    pub async fn health(&self) -> QueueStatus {
        let ok = match self {
            Queue::Sqlite(s) => sqlx::query("SELECT 1").execute(s.pool()).await.is_ok(),
            Queue::Postgres(s) => sqlx::query("SELECT 1").execute(s.pool()).await.is_ok(),
        };
        QueueStatus {
            backend: self.backend(),
            ok,
        }
    }

    /// Runs this process's workers until `shutdown` turns true; in-flight jobs finish
    /// first. apalis ends a worker on any backend error (a busy database, say), so a
    /// worker that stops on its own is started again, under a fresh name.
    pub async fn run_workers(
        &self,
        cfg: WorkerConfig,
        mail: MailBackend,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let concurrency = cfg.email_concurrency.max(1);
        while !*shutdown.borrow() {
            let name = worker_name(&cfg.name_prefix, EMAIL_QUEUE);
            tracing::info!(worker = %name, concurrency, backend = self.backend(), "email worker starting");
            let mut rx = shutdown.clone();
            let signal = async move {
                let _ = rx.wait_for(|stop| *stop).await;
                Ok::<(), std::io::Error>(())
            };
            let run = match self.clone() {
                Queue::Sqlite(s) => email_worker!(
                    name,
                    s.poll_with_interval(Duration::from_millis(100)),
                    mail.clone(),
                    concurrency
                )
                .run_until(signal)
                .boxed(),
                // LISTEN/NOTIFY for new jobs, plus an interval for retries and delayed jobs.
                Queue::Postgres(s) => email_worker!(
                    name,
                    s.with_pubsub().poll_with_interval(Duration::from_secs(1)),
                    mail.clone(),
                    concurrency
                )
                .run_until(signal)
                .boxed(),
            };
            if let Err(e) = run.await {
                tracing::warn!(error = %e, "email worker stopped; restarting");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = shutdown.wait_for(|stop| *stop) => {}
                }
            }
        }
    }
}
