//! Background jobs: apalis queues in the API's own database, and the work they do.
//!
//! Queues: email delivery (outbox files by default, SMTP by configuration), slide export
//! (PDF, PNG, HTML), slide image validation and attachment expiry. Each has its own worker
//! pool and concurrency, so `plinth worker` processes can be scaled per queue.

pub mod expiry;
mod mail;
pub mod slides;

use std::time::Duration;

use apalis::layers::retry::backoff::{ExponentialBackoffMaker, MakeBackoff};
use apalis::layers::retry::{HasherRng, RetryPolicy};
use apalis::prelude::*;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use serde::{Deserialize, Serialize};

pub use apalis::prelude::BoxDynError;
pub use expiry::{ExpiryEnv, ExpiryTask};
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
const EXPIRY_QUEUE: &str = "expiry";
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
        expiry: SqliteStorage<ExpiryTask>,
    },
    Postgres {
        email: PostgresStorage<EmailJob>,
        export: PostgresStorage<ExportTask>,
        images: PostgresStorage<ImageTask>,
        expiry: PostgresStorage<ExpiryTask>,
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

/// Whether the monitor should start a worker again after it stopped with `error` (apalis
/// ends a worker on any backend error, a busy database say): always, unless the process
/// is shutting down. apalis restarts at once and the callback is synchronous, so the
/// back-off (1 s doubling to 30 s with the worker's restart count) blocks this thread,
/// after `block_in_place` has handed its other tasks to another one.
fn restart_after(ctx: &WorkerContext, error: &WorkerError) -> bool {
    if ctx.is_shutting_down() {
        return false;
    }
    let restarts = ctx.restarts();
    let pause = Duration::from_secs(1 << restarts.min(5)).min(Duration::from_secs(30));
    tracing::warn!(worker = ctx.name(), restarts, ?pause, error = %error, "worker stopped; restarting");
    tokio::task::block_in_place(|| std::thread::sleep(pause));
    true
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

/// The four worker pools over the storages of one backend, under one apalis
/// [`Monitor`]; `$poll` is how that backend learns of new jobs. Every (re)start takes a
/// fresh worker name (see `worker_name`).
macro_rules! monitor {
    ($email:ident, $export:ident, $images:ident, $expiry:ident, $cfg:expr, $mail:expr, $env:expr, $xenv:expr, $($poll:tt)*) => {{
        let (prefix, mail, env, xenv) = ($cfg.name_prefix.clone(), $mail, $env, $xenv);
        // Exports of large decks take a while; the timeout only stops runaway jobs.
        let (mail_timeout, slide_timeout) = (Duration::from_secs(60), Duration::from_secs(600));
        let (ec, rc, ic) = (
            $cfg.email_concurrency.max(1),
            $cfg.render_concurrency.max(1),
            $cfg.image_concurrency.max(1),
        );
        let p = prefix.clone();
        let monitor = Monitor::new().register(move |_| {
            worker!(worker_name(&p, EMAIL_QUEUE), $email.clone() $($poll)*, mail.clone(), ec, mail_timeout, deliver)
        });
        let (p, e) = (prefix.clone(), env.clone());
        let monitor = monitor.register(move |_| {
            worker!(worker_name(&p, EXPORT_QUEUE), $export.clone() $($poll)*, e.clone(), rc, slide_timeout, slides::run_export)
        });
        let p = prefix.clone();
        let monitor = monitor.register(move |_| {
            worker!(worker_name(&p, IMAGE_QUEUE), $images.clone() $($poll)*, env.clone(), ic, slide_timeout, slides::run_image_check)
        });
        let p = prefix;
        monitor.register(move |_| {
            worker!(worker_name(&p, EXPIRY_QUEUE), $expiry.clone() $($poll)*, xenv.clone(), 1, slide_timeout, expiry::run)
        })
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
            expiry: SqliteStorage::new(pool).with_config(sqlite_config(EXPIRY_QUEUE)),
        })
    }

    /// PostgreSQL: apalis keeps its tables and migration history in schema `apalis`.
    pub async fn postgres(pool: &sqlx::PgPool) -> Result<Self, BoxDynError> {
        PostgresStorage::setup(pool).await?;
        Ok(Queue::Postgres {
            email: PostgresStorage::new(pool).with_config(postgres_config(EMAIL_QUEUE)),
            export: PostgresStorage::new(pool).with_config(postgres_config(EXPORT_QUEUE)),
            images: PostgresStorage::new(pool).with_config(postgres_config(IMAGE_QUEUE)),
            expiry: PostgresStorage::new(pool).with_config(postgres_config(EXPIRY_QUEUE)),
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

    /// Queues a run of attachment expiry (tried once: the next round queues another).
    pub async fn push_expiry(&self, queued_at: String) -> Result<(), BoxDynError> {
        let task = TaskBuilder::new(ExpiryTask { queued_at })
            .max_attempts(1)
            .build();
        push!(self, expiry, task);
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

    /// Runs this process's worker pools (email, slide export, slide images, expiry)
    /// under an apalis monitor until `shutdown` turns true; in-flight jobs get `grace` to
    /// finish.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_workers(
        &self,
        cfg: WorkerConfig,
        mail: MailBackend,
        env: slides::Env,
        expiry_env: expiry::Env,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
        grace: Duration,
    ) {
        // SQLite is polled (100 ms); PostgreSQL hears new jobs by LISTEN/NOTIFY, with a
        // slower poll for retries and delayed jobs.
        let fast = Duration::from_millis(100);
        let slow = Duration::from_secs(1);
        let monitor = match self.clone() {
            Queue::Sqlite {
                email,
                export,
                images,
                expiry,
            } => {
                monitor!(email, export, images, expiry, cfg, mail, env, expiry_env, .poll_with_interval(fast))
            }
            Queue::Postgres {
                email,
                export,
                images,
                expiry,
            } => monitor!(
                email, export, images, expiry, cfg, mail, env, expiry_env,
                .with_pubsub().poll_with_interval(slow)
            ),
        };
        let signal = async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
            Ok(())
        };
        tracing::info!(queues = ?[EMAIL_QUEUE, EXPORT_QUEUE, IMAGE_QUEUE, EXPIRY_QUEUE], "workers starting");
        if let Err(e) = monitor
            .should_restart(restart_after)
            .with_terminator(async move { tokio::time::sleep(grace).await })
            .run_with_signal(signal)
            .await
        {
            tracing::error!(error = %e, "workers stopped");
        }
    }
}

/// A slide task for a queue, encoded as both storages store it (JSON bytes).
fn slide_task<T: Serialize>(args: &T) -> Result<Task<Vec<u8>>, sqlx::Error> {
    let bytes = serde_json::to_vec(args).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    Ok(TaskBuilder::new(bytes)
        .max_attempts(SLIDE_MAX_ATTEMPTS)
        .build())
}

/// Queues slide work on a connection inside the caller's transaction, so the row a
/// client polls and the task that runs it commit together or not at all (no `pending`
/// row that no worker will ever run, no task for a row that was rolled back). Both apalis
/// storages expose their push as a function over any executor; the queue tables live in
/// the API's database.
pub trait Enqueue {
    fn push_export(
        &mut self,
        job_id: &str,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send;
    fn push_image_check(
        &mut self,
        asset_id: &str,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send;
}

fn sqlite_err(e: apalis_sqlite::Error) -> sqlx::Error {
    match e {
        apalis_sqlite::Error::Database(e) => e,
        other => sqlx::Error::Protocol(other.to_string()),
    }
}

fn postgres_err(e: apalis_postgres::Error) -> sqlx::Error {
    match e {
        apalis_postgres::Error::Database(e) => e,
        other => sqlx::Error::Protocol(other.to_string()),
    }
}

impl Enqueue for sqlx::SqliteConnection {
    async fn push_export(&mut self, job_id: &str) -> Result<(), sqlx::Error> {
        let task = slide_task(&ExportTask {
            job_id: job_id.to_owned(),
        })?;
        apalis_sqlite::queries::push_tasks(self, EXPORT_QUEUE, &[task])
            .await
            .map_err(sqlite_err)
    }
    async fn push_image_check(&mut self, asset_id: &str) -> Result<(), sqlx::Error> {
        let task = slide_task(&ImageTask {
            asset_id: asset_id.to_owned(),
        })?;
        apalis_sqlite::queries::push_tasks(self, IMAGE_QUEUE, &[task])
            .await
            .map_err(sqlite_err)
    }
}

impl Enqueue for sqlx::PgConnection {
    async fn push_export(&mut self, job_id: &str) -> Result<(), sqlx::Error> {
        let task = slide_task(&ExportTask {
            job_id: job_id.to_owned(),
        })?;
        apalis_postgres::queries::push_tasks(self, EXPORT_QUEUE, vec![task])
            .await
            .map_err(postgres_err)
    }
    async fn push_image_check(&mut self, asset_id: &str) -> Result<(), sqlx::Error> {
        let task = slide_task(&ImageTask {
            asset_id: asset_id.to_owned(),
        })?;
        apalis_postgres::queries::push_tasks(self, IMAGE_QUEUE, vec![task])
            .await
            .map_err(postgres_err)
    }
}
