//! Background jobs: apalis queues in the API's own database, and the work they do.
//!
//! Queues: email delivery (outbox files by default, SMTP by configuration), slide export
//! (PDF, PNG, HTML) and slide image validation. Each has its own worker pool and
//! concurrency, so `plinth worker` processes can be scaled per queue.

mod mail;
pub mod slides;

use std::time::Duration;

use apalis::layers::retry::backoff::{ExponentialBackoffMaker, MakeBackoff};
use apalis::layers::retry::{HasherRng, RetryPolicy};
use apalis::prelude::*;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Serialize};

pub use apalis::prelude::BoxDynError;
pub use mail::{mailbox_domain, valid_mailbox, MailBackend, MailStatus};
pub use slides::{ExportTask, ImageTask, SlideEnv};

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
const EXPORT_QUEUE: &str = "slide-export";
const IMAGE_QUEUE: &str = "slide-images";
/// A job is tried at most this many times in all (in-process retries included).
const EMAIL_MAX_ATTEMPTS: usize = 5;
/// Slide jobs count their own attempts (see `slides::MAX_ATTEMPTS`); the queue's limit
/// is a backstop one above it so that the last run can record the failure.
const SLIDE_MAX_ATTEMPTS: usize = slides::MAX_ATTEMPTS as usize + 1;

#[derive(Clone)]
pub enum Queue {
    Sqlite {
        email: SqliteStorage<EmailJob>,
        export: SqliteStorage<ExportTask>,
        images: SqliteStorage<ImageTask>,
    },
    Postgres {
        email: PostgresStorage<EmailJob>,
        export: PostgresStorage<ExportTask>,
        images: PostgresStorage<ImageTask>,
    },
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
    pub render_concurrency: usize,
    pub image_concurrency: usize,
}

/// A worker name no other process uses: apalis breaks orphan recovery when two live
/// workers share a name, and refuses a name that was seen in the last heartbeat.
pub fn worker_name(prefix: &str, queue: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{queue}-{}", &id[..12])
}

// A worker heartbeats every 5 s and is presumed dead after 3 missed beats; its running
// jobs are then handed to a live worker. Long exports are safe: the heartbeat is the
// worker's, not the job's, so a live worker never loses a long job.
fn sqlite_config(queue: &str) -> apalis_sqlite::Config {
    apalis_sqlite::Config::default()
        .queue(queue)
        .heartbeat_interval(Duration::from_secs(5))
        .missed_heartbeats(3)
}

fn postgres_config(queue: &str) -> apalis_postgres::Config {
    apalis_postgres::Config::default()
        .queue(queue)
        .heartbeat_interval(Duration::from_secs(5))
        .missed_heartbeats(3)
}

async fn deliver(job: EmailJob, mail: Data<MailBackend>) -> Result<(), BoxDynError> {
    mail.deliver(&job.id, &job.email).await
}

macro_rules! worker {
    ($name:expr, $backend:expr, $data:expr, $concurrency:expr, $timeout:expr, $handler:expr) => {{
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
            .data($data)
            .concurrency($concurrency)
            // Retry outside catch_panic, so a panicking job is retried like a failing
            // one (apalis warns about the other order; review finding M11).
            .retry(RetryPolicy::retries(2).with_backoff(backoff))
            .catch_panic()
            .timeout($timeout)
            .build($handler)
    }};
}

/// Runs one worker pool: its worker until `shutdown`, restarted under a fresh name when it
/// stops on its own (apalis ends a worker on any backend error, a busy database say).
async fn keep_running<F>(
    queue: &'static str,
    prefix: String,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    mut run: F,
) where
    F: FnMut(
        String,
        BoxFuture<'static, Result<(), std::io::Error>>,
    ) -> BoxFuture<'static, Result<(), apalis::prelude::WorkerError>>,
{
    while !*shutdown.borrow() {
        let name = worker_name(&prefix, queue);
        tracing::info!(worker = %name, queue, "worker starting");
        let mut rx = shutdown.clone();
        let signal = async move {
            let _ = rx.wait_for(|stop| *stop).await;
            Ok::<(), std::io::Error>(())
        }
        .boxed();
        if let Err(e) = run(name, signal).await {
            tracing::warn!(error = %e, queue, "worker stopped; restarting");
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.wait_for(|stop| *stop) => {}
            }
        }
    }
}

/// Pushes `task` onto one queue of whichever backend is in use.
macro_rules! push {
    ($queue:expr, $field:ident, $task:expr) => {
        match $queue {
            Queue::Sqlite { $field, .. } => $field.clone().push_task($task).await?,
            Queue::Postgres { $field, .. } => $field.clone().push_task($task).await?,
        }
    };
}

/// Runs the three worker pools over the storages of one backend; `$poll` is how that
/// backend learns of new jobs.
macro_rules! pools {
    ($email:ident, $export:ident, $images:ident, $cfg:expr, $mail:expr, $env:expr, $shutdown:expr, $($poll:tt)*) => {{
        let (prefix, mail, env, shutdown) = ($cfg.name_prefix.clone(), $mail, $env, $shutdown);
        // Exports of large decks take a while; the timeout only stops runaway jobs.
        let (mail_timeout, slide_timeout) = (Duration::from_secs(60), Duration::from_secs(600));
        let (ec, rc, ic) = (
            $cfg.email_concurrency.max(1),
            $cfg.render_concurrency.max(1),
            $cfg.image_concurrency.max(1),
        );
        tokio::join!(
            keep_running(EMAIL_QUEUE, prefix.clone(), shutdown.clone(), |name, signal| {
                worker!(name, $email.clone() $($poll)*, mail.clone(), ec, mail_timeout, deliver)
                    .run_until(signal)
                    .boxed()
            }),
            keep_running(EXPORT_QUEUE, prefix.clone(), shutdown.clone(), |name, signal| {
                worker!(name, $export.clone() $($poll)*, env.clone(), rc, slide_timeout, slides::run_export)
                    .run_until(signal)
                    .boxed()
            }),
            keep_running(IMAGE_QUEUE, prefix.clone(), shutdown.clone(), |name, signal| {
                worker!(name, $images.clone() $($poll)*, env.clone(), ic, slide_timeout, slides::run_image_check)
                    .run_until(signal)
                    .boxed()
            }),
        );
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
        Ok(Queue::Sqlite {
            email: SqliteStorage::new(pool).with_config(sqlite_config(EMAIL_QUEUE)),
            export: SqliteStorage::new(pool).with_config(sqlite_config(EXPORT_QUEUE)),
            images: SqliteStorage::new(pool).with_config(sqlite_config(IMAGE_QUEUE)),
        })
    }

    /// PostgreSQL: apalis keeps its tables and migration history in schema `apalis`.
    pub async fn postgres(pool: &sqlx::PgPool) -> Result<Self, BoxDynError> {
        PostgresStorage::setup(pool).await?;
        Ok(Queue::Postgres {
            email: PostgresStorage::new(pool).with_config(postgres_config(EMAIL_QUEUE)),
            export: PostgresStorage::new(pool).with_config(postgres_config(EXPORT_QUEUE)),
            images: PostgresStorage::new(pool).with_config(postgres_config(IMAGE_QUEUE)),
        })
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Queue::Sqlite { .. } => "apalis-sqlite",
            Queue::Postgres { .. } => "apalis-postgres",
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
        push!(self, email, task);
        Ok(())
    }

    /// Queues the export whose row (status `pending`) the API has written.
    pub async fn push_export(&self, job_id: &str) -> Result<(), BoxDynError> {
        let task = TaskBuilder::new(ExportTask {
            job_id: job_id.to_owned(),
        })
        .max_attempts(SLIDE_MAX_ATTEMPTS)
        .build();
        push!(self, export, task);
        Ok(())
    }

    /// Queues validation of an uploaded slide image.
    pub async fn push_image_check(&self, asset_id: &str) -> Result<(), BoxDynError> {
        let task = TaskBuilder::new(ImageTask {
            asset_id: asset_id.to_owned(),
        })
        .max_attempts(SLIDE_MAX_ATTEMPTS)
        .build();
        push!(self, images, task);
        Ok(())
    }

    pub async fn health(&self) -> QueueStatus {
        let ok = match self {
            Queue::Sqlite { email, .. } => {
                sqlx::query("SELECT 1").execute(email.pool()).await.is_ok()
            }
            Queue::Postgres { email, .. } => {
                sqlx::query("SELECT 1").execute(email.pool()).await.is_ok()
            }
        };
        QueueStatus {
            backend: self.backend(),
            ok,
        }
    }

    /// Runs this process's worker pools (email, slide export, slide images) until
    /// `shutdown` turns true; in-flight jobs finish first.
    pub async fn run_workers(
        &self,
        cfg: WorkerConfig,
        mail: MailBackend,
        env: slides::Env,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        // SQLite is polled (100 ms); PostgreSQL hears new jobs by LISTEN/NOTIFY, with a
        // slower poll for retries and delayed jobs.
        let fast = Duration::from_millis(100);
        let slow = Duration::from_secs(1);
        match self.clone() {
            Queue::Sqlite {
                email,
                export,
                images,
            } => pools!(
                email, export, images, cfg, mail, env, shutdown,
                .poll_with_interval(fast)
            ),
            Queue::Postgres {
                email,
                export,
                images,
            } => pools!(
                email, export, images, cfg, mail, env, shutdown,
                .with_pubsub().poll_with_interval(slow)
            ),
        }
    }
}
