//! `Jobs`: which queues this process works, with how many workers, and how long
//! finished jobs stay.

use clap::Args;

/// Jobs and workers.
#[derive(Args, Debug, Clone)]
pub struct Jobs {
    /// `serve` without embedded job workers (run `plinth worker` processes instead).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_NO_WORKERS",
        global = true
    )]
    pub no_workers: bool,
    /// Concurrent email deliveries per process.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_EMAIL_CONCURRENCY",
        default_value_t = 4,
        global = true
    )]
    pub email_concurrency: usize,
    /// Concurrent slide exports per process (each renders on a blocking thread).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_RENDER_CONCURRENCY",
        default_value_t = 2,
        global = true
    )]
    pub render_concurrency: usize,
    /// Concurrent slide image validations per process.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_IMAGE_CONCURRENCY",
        default_value_t = 2,
        global = true
    )]
    pub image_concurrency: usize,
    /// Queues this process runs workers for, comma-separated: email, export, images,
    /// expiry, callbacks [default: all five]. `serve --no-workers` runs none.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_QUEUES",
        value_delimiter = ',',
        global = true
    )]
    pub queues: Vec<String>,
    /// Workers per queue, e.g. `export=4,images=2,email=8` (overrides the
    /// PLINTH_*_CONCURRENCY flags for the queues it names; expiry is always 1).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_CONCURRENCY",
        value_delimiter = ',',
        global = true
    )]
    pub concurrency: Vec<String>,
    /// Milliseconds between an idle worker's looks for jobs it was not woken for: jobs
    /// queued by another process on SQLite (PostgreSQL tells every process at once),
    /// retries and delayed jobs that came due [default: 100 on SQLite, 1000 on
    /// PostgreSQL]. Jobs queued by this process wake its workers at once.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_QUEUE_POLL_MS",
        global = true
    )]
    pub queue_poll_ms: Option<u64>,
    /// Waits between the attempts of a completion callback its receiver did not
    /// acknowledge with a 2xx (each ±20 %); one more attempt than waits.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_CALLBACK_BACKOFF",
        default_value = "10s,1m,5m,30m,2h,8h,24h",
        global = true
    )]
    pub callback_backoff: Option<String>,
    /// Let completion callbacks reach loopback and private-network addresses (off: a
    /// client could otherwise make this server call its internal network).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_CALLBACK_PRIVATE_NETWORKS",
        global = true
    )]
    pub callback_private_networks: bool,
    /// Prefix of this process's worker names [default: host and process id]; the full
    /// names are made unique per start, as apalis requires.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_WORKER_NAME",
        global = true
    )]
    pub worker_name: Option<String>,
    /// Days a finished job (done, failed for good, killed) stays in the queue tables;
    /// the upkeep (each monthly interval) deletes older ones. 0 keeps them forever.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_JOB_RETENTION_DAYS",
        default_value_t = 14,
        global = true
    )]
    pub job_retention_days: u64,
}
