//! The operator contract: command line, `PLINTH_*` environment, defaults.
//! Every option is a flag with an environment equivalent; `plinth --help` lists them.
//! `Opts` holds one section per `--help` heading (the `Storage` heading holds two:
//! `database` and `storage`), each in its own module with the checks of its values.

use clap::Parser;

mod accounts;
mod commands;
mod database;
mod jobs;
mod limits;
mod mail;
mod observability;
mod payments;
mod server;
mod storage;

pub use accounts::Accounts;
pub use commands::{
    AnalyticsCommand, Command, DbCommand, GrantsCommand, JobsCommand, Selection, SlidesCommand,
    UsersCommand,
};
pub use database::Database;
pub use jobs::Jobs;
pub use limits::{Limits, RateStoreKind, Rates, MAX_TOKEN_COST};
pub use mail::Mail;
pub use observability::{LogFormat, Observability};
pub use payments::Payments;
pub use server::Server;
pub use storage::Storage;

#[derive(Parser, Debug)]
#[command(
    name = "plinth",
    version,
    about = "plinth: a self-hosted platform backend (JSON REST API and background jobs)",
    long_about = "plinth serves the JSON REST API and runs its background jobs from one binary.\n\
        With no configuration it uses SQLite, local object storage, an email outbox folder and a \
        simulated payment provider, all under --data-dir."
)]
pub struct Cli {
    #[command(flatten)]
    pub opts: Opts,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Every option, by section. Each section keeps its options in their `--help` order, and
/// the sections are flattened so that every heading first appears where it always did,
/// in `plinth --help` and in each subcommand's (which lists its hidden options first):
/// `storage` (S3, GCS) comes after `payments`, as those options always have.
#[derive(clap::Args, Debug, Clone)]
pub struct Opts {
    #[command(flatten)]
    pub server: Server,
    #[command(flatten)]
    pub database: Database,
    #[command(flatten)]
    pub mail: Mail,
    #[command(flatten)]
    pub accounts: Accounts,
    #[command(flatten)]
    pub rates: Rates,
    #[command(flatten)]
    pub payments: Payments,
    #[command(flatten)]
    pub storage: Storage,
    #[command(flatten)]
    pub jobs: Jobs,
    #[command(flatten)]
    pub observability: Observability,
    /// What one client may hold of this process: connections, buffered bytes, time.
    #[command(flatten)]
    pub limits: Limits,
}

impl Opts {
    /// The checks `serve` makes of its values before it opens anything (the ones that need
    /// the database or files run where those are opened).
    pub fn validate(&self) -> anyhow::Result<()> {
        self.server.validate()?;
        self.rates.validate()
    }
}

/// The options each command uses (the others are hidden from its `--help`; `serve`, the
/// default command, and `plinth --help` show them all). By field name.
const DATABASE: &[&str] = &["data_dir", "database_url", "master_key", "log_format"];
const WORKER: &[&str] = &[
    "production",
    "public_url",
    "smtp_url",
    "s3_bucket",
    "s3_endpoint",
    "s3_region",
    "s3_access_key_id",
    "s3_secret_access_key",
    "s3_path_style",
    "queues",
    "concurrency",
    "email_concurrency",
    "render_concurrency",
    "image_concurrency",
    "queue_poll_ms",
    "email_backoff",
    "callback_backoff",
    "callback_private_networks",
    "shutdown_timeout",
    "metrics_listen",
    "worker_name",
    "monthly_interval_secs",
    "job_retention_days",
    "reservation_secs",
    "rate_shards",
];

/// The command line, with each subcommand's `--help` listing only the options it uses
/// (every option is global, so that `plinth --data-dir D users …` and
/// `plinth users … --data-dir D` both work).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let cmd = Cli::command();
    // Every option is global (defined once, on `plinth`): a subcommand that holds its own
    // copy of one is not given the root's, so a hidden copy hides it from that
    // subcommand's help (and, being global too, from its subcommands'), while its value
    // still reaches the root's matches.
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    let only = |sc: clap::Command, keep: &[&str]| -> clap::Command {
        globals
            .iter()
            .filter(|a| !keep.contains(&a.get_id().as_str()))
            .fold(sc, |sc, a| sc.arg(a.clone().hide(true)))
    };
    let worker: Vec<&str> = DATABASE.iter().chain(WORKER).copied().collect();
    let migrate: Vec<&str> = DATABASE.iter().chain(&["production"]).copied().collect();
    let mut cmd = cmd
        .mut_subcommand("worker", |sc| only(sc, &worker))
        .mut_subcommand("migrate", |sc| only(sc, &migrate));
    for name in ["users", "jobs", "analytics", "backup"] {
        cmd = cmd.mut_subcommand(name, |sc| only(sc, DATABASE));
    }
    cmd.mut_subcommand("grants", |sc| only(sc, &["auth_token_key", "log_format"]))
        // An author's command: none of the server's options apply.
        .mut_subcommand("slides", |sc| only(sc, &[]))
}

/// How this process names itself: the PostgreSQL `application_name` of its sessions and
/// the holder of the periodic rounds it claims. `role` is `serve`, `worker`, `migrate`
/// or `cli`; the start-up checks count the hosts of `serve` and `worker` processes.
pub fn process_name(role: &str) -> String {
    format!("plinth-{role}:{}:{}", host_name(), std::process::id())
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else
/// `localhost`), without `:` and cut to 40 characters so the whole process name fits
/// PostgreSQL's 63-byte `application_name`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_graphic() && *c != ':')
                .take(40)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Parses one `PLINTH_TRUSTED_PROXIES` item: a CIDR (`10.0.0.0/8`) or a single address.
pub fn parse_net(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("`{s}` is neither an IP address nor a CIDR block"))
}
