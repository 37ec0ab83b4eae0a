//! The job workers of a process: which queues with how many workers, what each job needs
//! (its environment), retry back-off, and the credit shards.

use std::time::Duration;

use anyhow::Context;
use plinth_vocab::ProcessRole;
use plinth_workers::{MailBackend, QueueName, WorkerConfig};

use crate::config::{Jobs, Mail, Opts, Rates};
use crate::crypto::MasterKey;
use crate::db::Db;

/// One credit shard on both databases: it group-commits every account's changes in one
/// batch per round trip. SQLite has one writer anyway; on PostgreSQL eight shards made
/// eight small batches (~8 changes each) whose round trips and commits cost more than
/// their parallelism gave on this 2-core machine (spread deducts 3,218/s with eight,
/// 5,819/s with one: docs/benchmarks.md, issue 46). The accounts' per-key order is the
/// shard's mailbox either way.
pub(super) fn credit_shards(_db: &Db, _rates: &Rates) -> usize {
    1
}

/// Shards of the telemetry and analytics writers: one writer on SQLite, the rate shards'
/// count on PostgreSQL (there is no flag of their own: `--help` is unchanged).
pub(super) fn ingest_shards(db: &Db, rates: &Rates) -> usize {
    match db {
        Db::Sqlite(_) => 1,
        Db::Postgres(_) => rates.rate_shards,
    }
}

pub(super) fn slide_env(
    db: &Db,
    objects: &crate::adapters::storage::ObjectStore,
) -> plinth_workers::slides::Env {
    std::sync::Arc::new(crate::jobs::slides::Env {
        db: db.clone(),
        objects: objects.clone(),
    })
}

pub(super) fn expiry_env(
    db: &Db,
    objects: &crate::adapters::storage::ObjectStore,
) -> plinth_workers::expiry::Env {
    std::sync::Arc::new(crate::jobs::slides::Env {
        db: db.clone(),
        objects: objects.clone(),
    })
}

/// What the workers of this process (`role`: serve or worker) reach the outside through.
pub(super) fn ports(
    jobs: &Jobs,
    db: &Db,
    objects: &crate::adapters::storage::ObjectStore,
    key: &MasterKey,
    mail: MailBackend,
    (role, worker_prefix): (ProcessRole, &str),
) -> plinth_workers::Ports {
    let opener = key.clone();
    let mailer = plinth_workers::Mailer {
        backend: mail,
        open: std::sync::Arc::new(move |sealed: &str| {
            opener
                .decrypt(sealed)
                .and_then(|b| String::from_utf8(b).ok())
        }),
    };
    let callbacks: plinth_workers::callbacks::Env =
        std::sync::Arc::new(crate::jobs::callbacks::Deliverer {
            db: db.clone(),
            objects: objects.clone(),
            key: key.clone(),
            private_ok: jobs.callback_private_networks,
        });
    let control = std::sync::Arc::new(crate::jobs::slides::Control {
        db: db.clone(),
        name: crate::config::process_name(role.as_str()),
        role,
        worker_prefix: worker_prefix.to_owned(),
        started_at: chrono::Utc::now(),
    });
    // One port per type: the export and image jobs share the slide port.
    plinth_workers::Ports::new(control)
        .with(mailer)
        .with(slide_env(db, objects))
        .with(expiry_env(db, objects))
        .with(callbacks)
}

/// The worker pools of `--queues` and `--concurrency`; refused with a clear message on
/// a name or number that is not one. Also sets this process's email back-off
/// (`--email-backoff`), refused the same way.
pub fn worker_pools(opts: &Opts) -> anyhow::Result<Vec<(QueueName, usize)>> {
    configure_backoff(&opts.mail, &opts.jobs)?;
    let parse = |name: &str, flag: &str| {
        QueueName::parse(name).with_context(|| {
            format!(
                "unknown queue `{name}` in {flag}: the queues are email, export, images, expiry, callbacks"
            )
        })
    };
    let named: Vec<&String> = opts
        .jobs
        .queues
        .iter()
        .filter(|q| !q.trim().is_empty())
        .collect();
    let selected = if named.is_empty() {
        QueueName::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for q in named {
            let q = parse(q, "--queues (PLINTH_QUEUES)")?;
            if !v.contains(&q) {
                v.push(q);
            }
        }
        v
    };
    let mut queues: Vec<(QueueName, usize)> = selected
        .into_iter()
        .map(|q| {
            let n = match q {
                QueueName::Email => opts.jobs.email_concurrency,
                QueueName::Export => opts.jobs.render_concurrency,
                QueueName::Images => opts.jobs.image_concurrency,
                QueueName::Expiry => 1,
                QueueName::Callbacks => 4,
            };
            (q, n.max(1))
        })
        .collect();
    for entry in opts
        .jobs
        .concurrency
        .iter()
        .filter(|e| !e.trim().is_empty())
    {
        let flag = "--concurrency (PLINTH_CONCURRENCY)";
        let (name, n) = entry
            .split_once('=')
            .with_context(|| format!("`{entry}` in {flag} is not QUEUE=N, e.g. export=4"))?;
        let q = parse(name, flag)?;
        let n: usize = n
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=1024).contains(n))
            .with_context(|| format!("`{entry}` in {flag}: N must be a number from 1 to 1024"))?;
        match queues.iter_mut().find(|(p, _)| *p == q) {
            // Expiry runs one sweep at a time by design.
            Some((QueueName::Expiry, _)) => {}
            Some((_, c)) => *c = n,
            None => tracing::warn!(
                queue = q.name(),
                "{flag} names a queue this process does not run (--queues)"
            ),
        }
    }
    Ok(queues)
}

/// The worker pools of this process over its database.
pub(super) fn worker_config(jobs: &Jobs, db: &Db, queues: Vec<(QueueName, usize)>) -> WorkerConfig {
    WorkerConfig {
        log: std::sync::Arc::new(crate::jobs::slides::JobRuns(db.clone())),
        poll: jobs
            .queue_poll_ms
            .map(|ms| Duration::from_millis(ms.clamp(10, 60_000))),
        name_prefix: jobs.worker_name.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "plinth".into());
            format!("{host}-{}", std::process::id())
        }),
        queues,
    }
}

/// `--email-backoff` and `--callback-backoff`: the waits between the attempts of an
/// email and of a completion callback.
pub(super) fn configure_backoff(mail: &Mail, jobs: &Jobs) -> anyhow::Result<()> {
    let parse = |text: Option<&str>, flag: &str, default: plinth_workers::Backoff| match text {
        Some(t) => plinth_workers::Backoff::parse(t).map_err(|e| anyhow::anyhow!("{flag}: {e}")),
        None => Ok(default),
    };
    let email = parse(
        mail.email_backoff.as_deref(),
        "--email-backoff (PLINTH_EMAIL_BACKOFF)",
        plinth_workers::Backoff::email(),
    )?;
    let callbacks = parse(
        jobs.callback_backoff.as_deref(),
        "--callback-backoff (PLINTH_CALLBACK_BACKOFF)",
        plinth_workers::Backoff::callbacks(),
    )?;
    plinth_workers::configure_backoff(email, callbacks);
    Ok(())
}
