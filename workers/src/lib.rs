//! Background jobs: apalis queues in the API's own database, and the work they do.
//!
//! Queues: email delivery (outbox files by default, SMTP by configuration), slide export
//! (PDF, PNG, HTML), slide image validation and attachment expiry. Each has its own worker
//! pool and concurrency, so `plinth worker` processes can be scaled per queue.

pub mod callbacks;
pub mod control;
pub mod expiry;
mod gate;
pub mod lifecycle;
mod mail;
pub mod metrics;
pub mod pool;
pub mod retry;
pub mod slides;
pub mod wake;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use apalis::prelude::*;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;
use serde::{Deserialize, Serialize};

pub use apalis::prelude::BoxDynError;
pub use callbacks::{CallbackEnv, CallbackTask};
pub use expiry::{ExpiryEnv, ExpiryTask};
pub use lifecycle::{JobLog, Outcome, RunRecord};
pub use mail::{mailbox_domain, valid_mailbox, MailBackend, MailStatus, Mailer, Opener, SEALED};
pub use pool::{render_pool, RenderPool};
pub use retry::{Backoff, JobError};
pub use slides::{ExportTask, ImageTask, SlideEnv};
pub use wake::wake;

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
const CALLBACK_QUEUE: &str = "callbacks";

/// The queues by the names operators use (`--queues`, `--concurrency`, `plinth jobs`,
/// metrics labels); `table_name` is the queue's name in apalis's job table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueName {
    Email,
    Export,
    Images,
    Expiry,
    /// Completion callbacks to clients' endpoints.
    Callbacks,
}

impl QueueName {
    pub const ALL: [QueueName; 5] = [
        QueueName::Email,
        QueueName::Export,
        QueueName::Images,
        QueueName::Expiry,
        QueueName::Callbacks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QueueName::Email => "email",
            QueueName::Export => "export",
            QueueName::Images => "images",
            QueueName::Expiry => "expiry",
            QueueName::Callbacks => "callbacks",
        }
    }

    pub fn table_name(self) -> &'static str {
        match self {
            QueueName::Email => EMAIL_QUEUE,
            QueueName::Export => EXPORT_QUEUE,
            QueueName::Images => IMAGE_QUEUE,
            QueueName::Expiry => EXPIRY_QUEUE,
            QueueName::Callbacks => CALLBACK_QUEUE,
        }
    }

    /// An operator's name or apalis's, trimmed and case-insensitive.
    pub fn parse(s: &str) -> Option<QueueName> {
        let s = s.trim().to_ascii_lowercase();
        QueueName::ALL
            .into_iter()
            .find(|q| q.name() == s || q.table_name() == s)
    }
}
/// Slide jobs count their own attempts (see `slides::MAX_ATTEMPTS`); the queue's limit
/// is a backstop one above it so that the last run can record the failure.
const SLIDE_MAX_ATTEMPTS: usize = slides::MAX_ATTEMPTS as usize + 1;

/// The waits between attempts of each queue (`retry::Backoff`), set once per process
/// from its configuration (`configure_backoff`); the defaults otherwise.
struct Schedules {
    email: Arc<Backoff>,
    slides: Arc<Backoff>,
    callbacks: Arc<Backoff>,
}

static SCHEDULES: OnceLock<Schedules> = OnceLock::new();

fn schedules() -> &'static Schedules {
    SCHEDULES.get_or_init(|| Schedules {
        email: Arc::new(Backoff::email()),
        slides: Arc::new(Backoff::slides()),
        callbacks: Arc::new(Backoff::callbacks()),
    })
}

/// Sets this process's email and callback back-offs (`PLINTH_EMAIL_BACKOFF`,
/// `PLINTH_CALLBACK_BACKOFF`); the first call wins.
pub fn configure_backoff(email: Backoff, callbacks: Backoff) {
    let _ = SCHEDULES.set(Schedules {
        email: Arc::new(email),
        slides: Arc::new(Backoff::slides()),
        callbacks: Arc::new(callbacks),
    });
}

/// Attempts a new job of `queue` gets in all.
pub fn max_attempts(queue: QueueName) -> usize {
    match queue {
        QueueName::Email | QueueName::Callbacks => backoff(queue).max_attempts(),
        QueueName::Export | QueueName::Images => SLIDE_MAX_ATTEMPTS,
        QueueName::Expiry => 1,
    }
}

/// The back-off of a queue's failed attempts (expiry runs once: the next round queues
/// another).
pub fn backoff(queue: QueueName) -> Arc<Backoff> {
    match queue {
        QueueName::Email => schedules().email.clone(),
        QueueName::Callbacks => schedules().callbacks.clone(),
        QueueName::Export | QueueName::Images | QueueName::Expiry => schedules().slides.clone(),
    }
}

#[derive(Clone)]
pub enum Queue {
    Sqlite {
        email: SqliteStorage<EmailJob>,
        export: SqliteStorage<ExportTask>,
        images: SqliteStorage<ImageTask>,
        expiry: SqliteStorage<ExpiryTask>,
        callbacks: SqliteStorage<CallbackTask>,
    },
    Postgres {
        email: PostgresStorage<EmailJob>,
        export: PostgresStorage<ExportTask>,
        images: PostgresStorage<ImageTask>,
        expiry: PostgresStorage<ExpiryTask>,
        callbacks: PostgresStorage<CallbackTask>,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct QueueStatus {
    pub backend: &'static str,
    pub ok: bool,
}

#[derive(Clone)]
pub struct WorkerConfig {
    /// Unique per process; see `worker_name`.
    pub name_prefix: String,
    /// The queues this process runs, each with its number of concurrent jobs.
    pub queues: Vec<(QueueName, usize)>,
    /// Where every run is recorded (`lifecycle`).
    pub log: lifecycle::Log,
    /// How often an idle worker looks for jobs it was not woken for (queued by another
    /// process, retries that came due); the backend's default when None.
    pub poll: Option<Duration>,
}

impl WorkerConfig {
    fn concurrency(&self, queue: QueueName) -> Option<usize> {
        self.queues
            .iter()
            .find(|(q, _)| *q == queue)
            .map(|(_, n)| (*n).max(1))
    }
}

/// The names of every worker this process started (a worker restarted by the monitor
/// takes a new one), so that a stop can hand their unfinished jobs back at once.
#[derive(Clone, Default)]
struct WorkerNames(std::sync::Arc<std::sync::Mutex<Vec<(String, QueueName)>>>);

impl WorkerNames {
    fn new_name(&self, prefix: &str, queue: QueueName) -> String {
        let name = worker_name(prefix, queue.table_name());
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((name.clone(), queue));
        name
    }

    fn all(&self) -> Vec<String> {
        let names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        names.iter().map(|(n, _)| n.clone()).collect()
    }

    fn queue_of(&self, name: &str) -> Option<QueueName> {
        let names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        names.iter().find(|(n, _)| n == name).map(|(_, q)| *q)
    }
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

async fn deliver(job: EmailJob, mail: Data<Mailer>) -> Result<(), BoxDynError> {
    mail.deliver(&job.id, &job.email).await
}

/// One worker of a queue. A failed run is not retried in the worker: the lifecycle layer
/// schedules the next attempt in the job's row after the queue's back-off (a wait of
/// hours must not hold a worker slot, and must survive a restart), and apalis fetches it
/// again when it is due. The lifecycle layer is outside the panic and timeout layers, so
/// those count as failures too.
macro_rules! worker {
    ($name:expr, $backend:expr, $data:expr, $concurrency:expr, $timeout:expr, $queue:expr, $log:expr, $handler:expr) => {{
        WorkerBuilder::new($name)
            .backend($backend)
            .data($data)
            .concurrency($concurrency)
            .layer(lifecycle::Lifecycle {
                queue: $queue,
                backoff: backoff($queue),
                log: $log.clone(),
            })
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

/// How long an idle SQLite worker goes without hearing of jobs queued by another process
/// (jobs of its own process wake it at once: `wake`): how often `wake::watch_due_sqlite`
/// looks.
const SQLITE_POLL: Duration = Duration::from_millis(100);
/// PostgreSQL hears new jobs by LISTEN/NOTIFY (any process) and its own process's wakes;
/// this slower poll finds retries and delayed jobs that came due.
const PG_POLL: Duration = Duration::from_secs(1);

/// How many jobs a worker fetches at once: as many as it runs (apalis's default, 10,
/// would hold jobs in one process's buffer, out of reach of idle processes and of a
/// pause).
fn batch(concurrency: usize) -> usize {
    concurrency.clamp(1, 10)
}

/// A SQLite storage as a worker's backend: fetched when this process queued a job of its
/// queue and, for the others' (`poll`), when `wake::watch_due_sqlite` sees one due, not on
/// an interval: apalis's fetch takes the write lock whether a job is due or not.
fn sqlite_backend<T>(
    s: SqliteStorage<T>,
    queue: QueueName,
    _poll: Option<Duration>,
    concurrency: usize,
) -> gate::Gated<SqliteStorage<T>, Strategy> {
    gate::Gated::new(
        s.with_config(sqlite_config(queue.table_name()).batch_size(batch(concurrency))),
        Strategy::new().apply(wake::Wakes::new(queue)),
    )
}

/// A PostgreSQL storage as a worker's backend: fetched when a job of its queue is queued
/// (by this process, or by another: `wake::listen_pg`), and on a slow interval (retries
/// and delayed jobs that came due).
fn pg_backend<T>(
    s: PostgresStorage<T>,
    queue: QueueName,
    poll: Option<Duration>,
    concurrency: usize,
) -> gate::Gated<PostgresStorage<T>, Strategy> {
    gate::Gated::new(
        s.with_config(postgres_config(queue.table_name()).batch_size(batch(concurrency))),
        Strategy::new()
            .apply(wake::Wakes::new(queue))
            .interval(poll.unwrap_or(PG_POLL)),
    )
}

/// The worker pools this process runs (`WorkerConfig::queues`) over the storages of one
/// backend, under one apalis [`Monitor`]; `$backend` makes a storage a worker's backend
/// (how it learns of new jobs). Every (re)start takes a fresh worker name (see
/// `worker_name`).
macro_rules! monitor {
    ($email:ident, $export:ident, $images:ident, $expiry:ident, $callbacks:ident, $cfg:expr, $names:expr, $ports:expr, $backend:ident) => {{
        let (cfg, names, ports): (&WorkerConfig, &WorkerNames, Ports) = ($cfg, $names, $ports);
        let (mail, env, xenv, cenv) = (ports.mail, ports.slides, ports.expiry, ports.callbacks);
        let log = cfg.log.clone();
        let poll = cfg.poll;
        // Exports of large decks take a while; the timeout only stops runaway jobs.
        let (mail_timeout, slide_timeout) = (Duration::from_secs(60), Duration::from_secs(600));
        let mut monitor = Monitor::new();
        if let Some(c) = cfg.concurrency(QueueName::Email) {
            let (p, n, l) = (cfg.name_prefix.clone(), names.clone(), log.clone());
            monitor = monitor.register(move |_| {
                worker!(
                    n.new_name(&p, QueueName::Email),
                    $backend($email.clone(), QueueName::Email, poll, c),
                    mail.clone(),
                    c,
                    mail_timeout,
                    QueueName::Email,
                    l,
                    deliver
                )
            });
        }
        if let Some(c) = cfg.concurrency(QueueName::Export) {
            let (p, n, e, l) = (
                cfg.name_prefix.clone(),
                names.clone(),
                env.clone(),
                log.clone(),
            );
            monitor = monitor.register(move |_| {
                worker!(
                    n.new_name(&p, QueueName::Export),
                    $backend($export.clone(), QueueName::Export, poll, c),
                    e.clone(),
                    c,
                    slide_timeout,
                    QueueName::Export,
                    l,
                    slides::run_export
                )
            });
        }
        if let Some(c) = cfg.concurrency(QueueName::Images) {
            let (p, n, l) = (cfg.name_prefix.clone(), names.clone(), log.clone());
            monitor = monitor.register(move |_| {
                worker!(
                    n.new_name(&p, QueueName::Images),
                    $backend($images.clone(), QueueName::Images, poll, c),
                    env.clone(),
                    c,
                    slide_timeout,
                    QueueName::Images,
                    l,
                    slides::run_image_check
                )
            });
        }
        if cfg.concurrency(QueueName::Expiry).is_some() {
            let (p, n, l) = (cfg.name_prefix.clone(), names.clone(), log.clone());
            monitor = monitor.register(move |_| {
                worker!(
                    n.new_name(&p, QueueName::Expiry),
                    $backend($expiry.clone(), QueueName::Expiry, poll, 1),
                    xenv.clone(),
                    1,
                    slide_timeout,
                    QueueName::Expiry,
                    l,
                    expiry::run
                )
            });
        }
        if let Some(c) = cfg.concurrency(QueueName::Callbacks) {
            let (p, n, l) = (cfg.name_prefix.clone(), names.clone(), log.clone());
            monitor = monitor.register(move |_| {
                worker!(
                    n.new_name(&p, QueueName::Callbacks),
                    $backend($callbacks.clone(), QueueName::Callbacks, poll, c),
                    cenv.clone(),
                    c,
                    mail_timeout,
                    QueueName::Callbacks,
                    l,
                    callbacks::run
                )
            });
        }
        monitor
    }};
}

/// What the workers reach the outside through (the server implements each).
pub struct Ports {
    pub mail: Mailer,
    pub slides: slides::Env,
    pub expiry: expiry::Env,
    pub callbacks: callbacks::Env,
    pub control: control::Env,
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
            callbacks: SqliteStorage::new(pool).with_config(sqlite_config(CALLBACK_QUEUE)),
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
            callbacks: PostgresStorage::new(pool).with_config(postgres_config(CALLBACK_QUEUE)),
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
            .max_attempts(backoff(QueueName::Email).max_attempts())
            .build();
        push!(self, email, task);
        metrics::enqueued(QueueName::Email.name());
        wake::wake(QueueName::Email);
        Ok(())
    }

    /// Queues a run of attachment expiry (tried once: the next round queues another).
    pub async fn push_expiry(&self, queued_at: String) -> Result<(), BoxDynError> {
        let task = TaskBuilder::new(ExpiryTask { queued_at })
            .max_attempts(1)
            .build();
        push!(self, expiry, task);
        metrics::enqueued(QueueName::Expiry.name());
        wake::wake(QueueName::Expiry);
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

    /// Runs this process's worker pools under an apalis monitor until `shutdown` turns
    /// true. Running jobs then get `grace` to finish; the ones still running after it go
    /// back to their queue at once (not after the missed heartbeats another process
    /// would wait for), as do the jobs fetched but not started, and the slide exports
    /// give up their leases.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_workers(
        &self,
        cfg: WorkerConfig,
        ports: Ports,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
        grace: Duration,
    ) {
        if cfg.queues.is_empty() {
            return;
        }
        let names = WorkerNames::default();
        let env = ports.slides.clone();
        let registry = control::Registry::default();
        // The paused queues are known before any worker starts: a worker of a paused
        // queue never takes a job, not even in its first poll.
        registry.load(&ports.control).await;
        let control_task = tokio::spawn(control::run(
            ports.control.clone(),
            registry.clone(),
            cfg.queues.clone(),
            shutdown.clone(),
        ));
        let queues: Vec<QueueName> = cfg.queues.iter().map(|(q, _)| *q).collect();
        match self {
            Queue::Sqlite { email, .. } => tokio::spawn(wake::watch_due_sqlite(
                email.pool().clone(),
                queues,
                cfg.poll.unwrap_or(SQLITE_POLL),
                shutdown.clone(),
            )),
            Queue::Postgres { email, .. } => tokio::spawn(wake::listen_pg(
                email.pool().clone(),
                queues,
                shutdown.clone(),
            )),
        };
        let monitor = match self.clone() {
            Queue::Sqlite {
                email,
                export,
                images,
                expiry,
                callbacks,
            } => {
                monitor!(
                    email,
                    export,
                    images,
                    expiry,
                    callbacks,
                    &cfg,
                    &names,
                    ports,
                    sqlite_backend
                )
            }
            Queue::Postgres {
                email,
                export,
                images,
                expiry,
                callbacks,
            } => {
                monitor!(email, export, images, expiry, callbacks, &cfg, &names, ports, pg_backend)
            }
        };
        let draining = registry.clone();
        let signal = async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
            let running = draining.running();
            tracing::info!(
                running,
                grace_secs = grace.as_secs(),
                "workers stopping: taking no new job, draining the running ones"
            );
            Ok(())
        };
        let queues: Vec<String> = cfg
            .queues
            .iter()
            .map(|(q, n)| format!("{}={n}", q.name()))
            .collect();
        tracing::info!(?queues, "workers starting");
        if cfg.queues.iter().any(|(q, _)| *q == QueueName::Export) {
            // Compiles the common languages' highlighting patterns (about 0.3 s) off the
            // request path, so the first export using one does not pay for it.
            tokio::task::spawn_blocking(plinth_render::warm_up_highlighting);
            // Scans the font directories (PLINTH_FONTS_DIR, the system's) and loads the
            // embedded faces likewise.
            tokio::task::spawn_blocking(plinth_render::warm_up_fonts);
        }
        let monitor = {
            let (registry, names) = (registry.clone(), names.clone());
            monitor.on_event(move |ctx, event| {
                registry.on_event(ctx, event, names.queue_of(ctx.name()))
            })
        };
        if let Err(e) = monitor
            .should_restart(restart_after)
            .with_terminator(async move { tokio::time::sleep(grace).await })
            .run_with_signal(signal)
            .await
        {
            tracing::error!(error = %e, "workers stopped");
        }
        slides::release_live_runs(&env).await;
        match self.release(&names.all()).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(jobs = n, "unfinished jobs returned to their queues"),
            Err(e) => {
                tracing::error!(error = %e, "could not return unfinished jobs to their queues; they run again after the workers' heartbeats lapse")
            }
        }
        let _ = control_task.await;
        tracing::info!("workers stopped");
    }

    /// Hands the jobs that `workers` fetched or were running back to their queue, as
    /// apalis does for a worker whose heartbeats stopped. The attempt stays counted.
    async fn release(&self, workers: &[String]) -> Result<u64, sqlx::Error> {
        const NOTE: &str = r#"{"Err":"returned to the queue: its worker stopped"}"#;
        if workers.is_empty() {
            return Ok(0);
        }
        let done = match self {
            Queue::Sqlite { email, .. } => {
                let list = serde_json::to_string(workers).unwrap_or_default();
                sqlx::query(
                    "UPDATE Jobs SET status = 'Pending', lock_by = NULL, lock_at = NULL, \
                     done_at = NULL, last_result = ?2 \
                     WHERE status IN ('Running', 'Queued') \
                     AND lock_by IN (SELECT value FROM json_each(?1))",
                )
                .bind(list)
                .bind(NOTE)
                .execute(email.pool())
                .await?
                .rows_affected()
            }
            Queue::Postgres { email, .. } => sqlx::query(
                "UPDATE apalis.jobs SET status = 'Pending', lock_by = NULL, lock_at = NULL, \
                     done_at = NULL, last_result = $2::jsonb \
                     WHERE status IN ('Running', 'Queued') AND lock_by = ANY($1)",
            )
            .bind(workers)
            .bind(NOTE)
            .execute(email.pool())
            .await?
            .rows_affected(),
        };
        Ok(done)
    }
}

/// A slide task for a queue, encoded as both storages store it (JSON bytes). `key`, when
/// given, is the task's idempotency key: the client's id of the job (an export), so that
/// the job is found by the id its client holds and is queued at most once.
fn slide_task<T: Serialize>(args: &T, key: Option<&str>) -> Result<Task<Vec<u8>>, sqlx::Error> {
    let bytes = serde_json::to_vec(args).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let task = TaskBuilder::new(bytes).max_attempts(SLIDE_MAX_ATTEMPTS);
    Ok(match key {
        Some(k) => task.idempotency_key(k).build(),
        None => task.build(),
    })
}

/// Queues slide work on a connection inside the caller's transaction, so the row a
/// client polls and the task that runs it commit together or not at all (no `pending`
/// row that no worker will ever run, no task for a row that was rolled back). Both apalis
/// storages expose their push as a function over any executor; the queue tables live in
/// the API's database. The caller wakes the queue's workers (`wake`) once it committed.
pub trait Enqueue: Send {
    /// Pushes one slide task onto `queue` of this connection's backend.
    fn push_slide(
        &mut self,
        queue: QueueName,
        task: Task<Vec<u8>>,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send;

    fn push_export(
        &mut self,
        job_id: &str,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send {
        let task = slide_task(
            &ExportTask {
                job_id: job_id.to_owned(),
            },
            Some(job_id),
        );
        async move { self.push_slide(QueueName::Export, task?).await }
    }

    /// Queues the delivery of a new completion event of export `job_id` (its id is made
    /// here, the same for every attempt).
    fn push_callback(
        &mut self,
        job_id: &str,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send {
        let event = CallbackTask {
            event_id: format!("evt_{}", uuid::Uuid::new_v4().simple()),
            job_id: job_id.to_owned(),
        };
        let task = serde_json::to_vec(&event)
            .map_err(|e| sqlx::Error::Encode(Box::new(e)))
            .map(|bytes| {
                TaskBuilder::new(bytes)
                    .max_attempts(max_attempts(QueueName::Callbacks))
                    .build()
            });
        async move { self.push_slide(QueueName::Callbacks, task?).await }
    }

    fn push_image_check(
        &mut self,
        asset_id: &str,
    ) -> impl std::future::Future<Output = Result<(), sqlx::Error>> + Send {
        let task = slide_task(
            &ImageTask {
                asset_id: asset_id.to_owned(),
            },
            None,
        );
        async move { self.push_slide(QueueName::Images, task?).await }
    }
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
    async fn push_slide(
        &mut self,
        queue: QueueName,
        task: Task<Vec<u8>>,
    ) -> Result<(), sqlx::Error> {
        apalis_sqlite::queries::push_tasks(self, queue.table_name(), &[task])
            .await
            .map_err(sqlite_err)?;
        metrics::enqueued(queue.name());
        Ok(())
    }
}

impl Enqueue for sqlx::PgConnection {
    async fn push_slide(
        &mut self,
        queue: QueueName,
        task: Task<Vec<u8>>,
    ) -> Result<(), sqlx::Error> {
        apalis_postgres::queries::push_tasks(self, queue.table_name(), vec![task])
            .await
            .map_err(postgres_err)?;
        metrics::enqueued(queue.name());
        Ok(())
    }
}
