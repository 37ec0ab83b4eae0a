//! The workers of a process: for each queue it runs (`WorkerConfig::queues`), a worker
//! pool over the job kind's storage under one apalis [`Monitor`], with the lifecycle,
//! panic and timeout layers; the queue control (pauses, heartbeats); wake-ups; and the
//! stop (drain, then hand the unfinished jobs back).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use apalis::prelude::*;
use apalis_postgres::PostgresStorage;
use apalis_sqlite::SqliteStorage;

use crate::job::{handle, Job, MissingPort, Ports};
use crate::queue::Queue;
use crate::{control, gate, lifecycle, wake, QueueName};

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
struct WorkerNames(Arc<Mutex<Vec<(String, QueueName)>>>);

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

/// What registering one queue's workers needs.
pub(crate) struct Start<'a> {
    queue: &'a Queue,
    cfg: &'a WorkerConfig,
    names: &'a WorkerNames,
    ports: &'a Ports,
}

/// One worker of a queue. A failed run is not retried in the worker: the lifecycle layer
/// schedules the next attempt in the job's row after the queue's back-off (a wait of
/// hours must not hold a worker slot, and must survive a restart), and apalis fetches it
/// again when it is due. The lifecycle layer is outside the panic and timeout layers, so
/// those count as failures too.
macro_rules! worker {
    ($job:ty, $queue:expr, $name:expr, $backend:expr, $port:expr, $concurrency:expr, $log:expr) => {{
        WorkerBuilder::new($name)
            .backend($backend)
            .data($port)
            .concurrency($concurrency)
            .layer(lifecycle::Lifecycle {
                queue: $queue,
                backoff: <$job as Job>::retry().backoff,
                log: $log.clone(),
            })
            .catch_panic()
            .timeout(<$job as Job>::TIMEOUT)
            .build(handle::<$job>)
    }};
}

/// Registers the workers of job kind `J` (queue `queue`), if this process runs its
/// queue. Every (re)start takes a fresh worker name (see `worker_name`). A SQLite
/// storage is fetched when this process queued a job of its queue and, for the others'
/// jobs, when `wake::watch_due_sqlite` sees one due, never on an interval (apalis's
/// fetch takes the write lock whether a job is due or not); a PostgreSQL one when a job
/// is queued (by any process: `wake::listen_pg`) and on a slow interval (retries and
/// delayed jobs that came due).
pub(crate) fn register<J: Job>(
    monitor: Monitor,
    queue: QueueName,
    s: &Start<'_>,
) -> Result<Monitor, MissingPort> {
    let Some(c) = s.cfg.concurrency(queue) else {
        return Ok(monitor);
    };
    let c = J::MAX_CONCURRENCY.map_or(c, |max| c.min(max));
    let port = s.ports.of::<J>()?;
    let (prefix, names, log) = (
        s.cfg.name_prefix.clone(),
        s.names.clone(),
        s.cfg.log.clone(),
    );
    let (lite, pg) = (sqlite_config(J::TABLE), postgres_config(J::TABLE));
    Ok(match s.queue.clone() {
        Queue::Sqlite(pool) => monitor.register(move |_| {
            let storage =
                SqliteStorage::<J>::new(&pool).with_config(lite.clone().batch_size(batch(c)));
            let backend = gate::Gated::new(storage, Strategy::new().apply(wake::Wakes::new(queue)));
            let name = names.new_name(&prefix, queue);
            worker!(J, queue, name, backend, port.clone(), c, log)
        }),
        Queue::Postgres(pool) => {
            let poll = s.cfg.poll.unwrap_or(PG_POLL);
            monitor.register(move |_| {
                let storage =
                    PostgresStorage::<J>::new(&pool).with_config(pg.clone().batch_size(batch(c)));
                let strategy = Strategy::new()
                    .apply(wake::Wakes::new(queue))
                    .interval(poll);
                let backend = gate::Gated::new(storage, strategy);
                let name = names.new_name(&prefix, queue);
                worker!(J, queue, name, backend, port.clone(), c, log)
            })
        }
    })
}

impl Queue {
    /// Runs this process's worker pools under an apalis monitor until `shutdown` turns
    /// true. Running jobs then get `grace` to finish; the ones still running after it go
    /// back to their queue at once (not after the missed heartbeats another process
    /// would wait for), as do the jobs fetched but not started, and the slide exports
    /// give up their leases.
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
        self.watch_for_jobs(&cfg, shutdown.clone());
        let start = Start {
            queue: self,
            cfg: &cfg,
            names: &names,
            ports: &ports,
        };
        let mut monitor = Monitor::new();
        for queue in QueueName::ALL {
            monitor = match queue.register(monitor, &start) {
                Ok(m) => m,
                Err(e) => {
                    tracing::error!(error = %e, "workers not started");
                    return;
                }
            };
        }
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
            crate::slides::warm_up();
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
        if let Ok(env) = ports.of::<crate::slides::ExportTask>() {
            crate::slides::release_live_runs(&env).await;
        }
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

    /// How the idle workers hear of jobs other processes queued (module `wake`).
    fn watch_for_jobs(&self, cfg: &WorkerConfig, shutdown: tokio::sync::watch::Receiver<bool>) {
        let queues: Vec<QueueName> = cfg.queues.iter().map(|(q, _)| *q).collect();
        match self {
            Queue::Sqlite(pool) => tokio::spawn(wake::watch_due_sqlite(
                pool.clone(),
                queues,
                cfg.poll.unwrap_or(SQLITE_POLL),
                shutdown,
            )),
            Queue::Postgres(pool) => tokio::spawn(wake::listen_pg(pool.clone(), queues, shutdown)),
        };
    }
}
