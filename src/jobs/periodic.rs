//! Periodic work that runs with the job workers (embedded in `serve`, or `plinth worker`):
//! the monthly credit distribution, the slide upkeep sweep, the release of expired order
//! holds, the analytics roll-up, the attachment-expiry enqueue and the job retention
//! (finished jobs older than `PLINTH_JOB_RETENTION_DAYS` deleted). Each task runs once
//! per round across every process on the database: a process runs it only after
//! claiming the round (`db::settings::claim_round`, rounds aligned to multiples of the
//! interval since the Unix epoch, so all processes agree on them). Every task stays safe
//! to run twice (the ledger's unique `monthly:<YYYY-MM>` key pays each account once a
//! month whatever happens), so a lost claim or a crashed holder costs a round, never money.

use std::time::Duration;

use futures::StreamExt;
use plinth_actors::credits::{Applied, Change, CreditAccounts, Entry};
use plinth_workers::Queue;
use serde_json::json;
use tokio::sync::watch;

use crate::db::Db;
use crate::domain::ledger::monthly_credits;

/// The periodic tasks, as named in `periodic_leases` and `periodic_runs`.
pub const MONTHLY: &str = "monthly-credits";
pub const SLIDE_UPKEEP: &str = "slide-upkeep";
pub const ORDER_HOLDS: &str = "order-holds";
pub const ANALYTICS_ROLLUP: &str = "analytics-rollup";
pub const ATTACHMENT_EXPIRY: &str = "attachment-expiry";
pub const RATE_WINDOWS: &str = "rate-windows";
pub const JOB_RETENTION: &str = "job-retention";

/// How long `periodic_runs` keeps a task's runs.
const RUNS_KEPT_MS: i64 = 24 * 3600 * 1000;
/// Due accounts read per query, and payments in flight at once: enough for the credit
/// shards to group-commit them, few enough to leave room for requests.
const DUE_PAGE: i64 = 1_000;
const IN_FLIGHT: usize = 64;

/// Pays this month's allotment to every account that has not had it; returns how many
/// were paid. Only due accounts are read (an anti-join on the month's ledger key), and
/// their payments are submitted together so the credit shards commit them in batches.
pub async fn distribute_monthly_all(db: &Db, credits: &CreditAccounts) -> anyhow::Result<usize> {
    let month = chrono::Utc::now().format("%Y-%m").to_string();
    let idem_key = format!("monthly:{month}");
    let mut after = String::new();
    let mut paid = 0;
    loop {
        let due = crate::db::credits::due_monthly(db, &idem_key, &after, DUE_PAGE).await?;
        let Some((last, _)) = due.last() else {
            break;
        };
        after = last.clone();
        let full = due.len() as i64 == DUE_PAGE;
        let changes = due.into_iter().filter_map(|(user_id, level)| {
            let amount = monthly_credits(level);
            (amount > 0).then(|| Change {
                entries: vec![Entry {
                    user_id,
                    delta: amount,
                    kind: crate::states::LedgerKind::Monthly,
                    idem_key: Some(idem_key.clone()),
                    data: json!({"month": month, "level": level, "by": "schedule"}),
                }],
            })
        });
        // A repeat (another process paid meanwhile) is refused by the ledger's unique
        // key and simply not counted.
        paid += futures::stream::iter(changes)
            .map(|change| credits.apply(change))
            .buffer_unordered(IN_FLIGHT)
            .filter(|r| std::future::ready(matches!(r, Ok(Applied::Done { .. }))))
            .count()
            .await;
        if !full {
            break;
        }
    }
    Ok(paid)
}

/// Claims of this process on periodic rounds.
#[derive(Clone)]
pub struct Rounds {
    db: Db,
    holder: String,
}

impl Rounds {
    /// `holder` names this process in the claims (`plinth-worker:<host>:<pid>`).
    pub fn new(db: Db, holder: String) -> Self {
        Self { db, holder }
    }

    /// Whether this process runs `task` in the current round of length `every`: true for
    /// the first process to ask in a round, false for the others and on a database error
    /// (the round is skipped; the next one runs it). On its `first` ask a process also
    /// takes over a round whose holder has died, so a restarted process catches up at once
    /// as it did before rounds were claimed.
    pub async fn claim(&self, task: &str, every: Duration, first: bool) -> bool {
        let now = chrono::Utc::now().timestamp_millis();
        let every = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
        let until = (now / every).saturating_add(1).saturating_mul(every);
        let claimed = async {
            // Most asks come after the round was claimed: a read answers them without
            // taking SQLite's write lock.
            let dead = match crate::db::settings::lease(&self.db, task).await? {
                Some((holder, held_until)) if held_until > now => {
                    if !first || holder == self.holder || self.alive(&holder).await? {
                        return Ok(false);
                    }
                    Some(holder)
                }
                _ => None,
            };
            crate::db::settings::claim_round(
                &self.db,
                task,
                &self.holder,
                now,
                until,
                now - RUNS_KEPT_MS,
                dead.as_deref(),
            )
            .await
        };
        match claimed.await {
            Ok(claimed) => claimed,
            Err::<_, sqlx::Error>(e) => {
                tracing::warn!(task, error = %e, "claiming a periodic round failed; skipping it");
                false
            }
        }
    }

    /// Whether the process named `holder` may still be running: it has a session on
    /// PostgreSQL; on SQLite (one host) its process id is live. Unknown counts as alive.
    async fn alive(&self, holder: &str) -> sqlx::Result<bool> {
        if let Some(connected) = crate::db::settings::connected(&self.db, holder).await? {
            return Ok(connected);
        }
        let mut parts = holder.rsplitn(3, ':');
        let (Some(pid), Some(host)) = (parts.next(), parts.next()) else {
            return Ok(true);
        };
        let proc = std::path::Path::new("/proc");
        if host != crate::config::host_name() || !proc.is_dir() {
            return Ok(true);
        }
        Ok(proc.join(pid).exists())
    }
}

/// A `running` export with no progress (or a `validating` image) for this long is
/// stuck: three attempts of the 10-minute job timeout plus backoff fit well inside it.
pub const STUCK_AFTER: chrono::TimeDelta = chrono::TimeDelta::minutes(45);
/// A `pending` export no worker has started for this long fails.
pub const PENDING_AFTER: chrono::TimeDelta = chrono::TimeDelta::hours(6);

/// Fails stuck slide work and prunes old idempotency records (findings M11, L5).
pub async fn sweep_slides(db: &Db) -> anyhow::Result<crate::db::slides::Swept> {
    let now = chrono::Utc::now();
    Ok(crate::db::slides::sweep(
        db,
        now - STUCK_AFTER,
        now - PENDING_AFTER,
        now - crate::db::idempotency::KEPT,
    )
    .await?)
}

/// Every `every` until `stop` turns true, each in a round this process claimed: ends
/// pending orders whose hold on their units expired (units back to stock; each release
/// is conditional on the order still being pending), rolls up the analytics hours that
/// ended (`db::analytics::roll_up`) and queues a run of attachment expiry (an apalis job:
/// `plinth_workers::expiry`).
async fn every_half_minute(
    rounds: Rounds,
    queue: Queue,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let db = &rounds.db;
    let mut first = true;
    loop {
        if rounds.claim(ORDER_HOLDS, every, first).await {
            match crate::db::orders::release_expired(db, chrono::Utc::now()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(orders = n, "expired order holds released"),
                Err(e) => tracing::warn!(error = %e, "releasing expired holds failed; retrying"),
            }
        }
        if rounds.claim(ANALYTICS_ROLLUP, every, first).await {
            match crate::domain::analytics::roll_up(db).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(events = n, "analytics hours rolled up"),
                Err(e) => tracing::warn!(error = %e, "analytics roll-up failed; retrying"),
            }
        }
        if rounds.claim(ATTACHMENT_EXPIRY, every, first).await {
            let run = plinth_workers::ExpiryTask {
                queued_at: chrono::Utc::now().to_rfc3339(),
            };
            if let Err(e) = queue.enqueue(run).await {
                tracing::warn!(error = %e, "queueing attachment expiry failed; retrying");
            }
        }
        // Ended shared rate windows (PLINTH_RATE_STORE=postgres) would pile up, one row per
        // caller ever seen; the table exists on PostgreSQL only.
        if let Db::Postgres(pool) = db {
            if rounds.claim(RATE_WINDOWS, every, first).await {
                if let Err(e) = crate::db::rate::sweep(pool).await {
                    tracing::warn!(error = %e, "sweeping ended rate windows failed; retrying");
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        first = false;
    }
}

/// Runs the distribution and the sweep now and then every `every` until `stop` turns
/// true; expired order holds are released and attachment expiry is queued every 30 s (or
/// `every` when shorter). Each task runs only in rounds this process claimed. Finished
/// jobs older than `job_retention_days` are deleted each round (0: never).
pub async fn run(
    db: Db,
    holder: String,
    credits: CreditAccounts,
    queue: Queue,
    (every, job_retention_days): (Duration, u64),
    mut stop: watch::Receiver<bool>,
) {
    let rounds = Rounds::new(db.clone(), holder);
    let holds = tokio::spawn(every_half_minute(
        rounds.clone(),
        queue,
        every.min(Duration::from_secs(30)),
        stop.clone(),
    ));
    let mut first = true;
    loop {
        if rounds.claim(MONTHLY, every, first).await {
            match distribute_monthly_all(&db, &credits).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(accounts = n, "monthly credits distributed"),
                Err(e) => {
                    tracing::warn!(error = %e, "monthly distribution failed; retrying next round")
                }
            }
        }
        if rounds.claim(SLIDE_UPKEEP, every, first).await {
            match sweep_slides(&db).await {
                Ok(s) if s == Default::default() => {}
                Ok(s) => tracing::warn!(
                    stuck_assets = s.assets,
                    stuck_jobs = s.jobs,
                    idempotency_records = s.idempotency,
                    "slide upkeep: stuck work failed, old records pruned"
                ),
                Err(e) => tracing::warn!(error = %e, "slide upkeep failed; retrying next round"),
            }
        }
        // The expiry enqueue alone finishes a job every 30 s: without this the queue
        // tables grow for ever.
        if job_retention_days > 0 && rounds.claim(JOB_RETENTION, every, first).await {
            match crate::db::jobs::prune(&db, job_retention_days).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    jobs = n,
                    days = job_retention_days,
                    "finished jobs past the retention deleted"
                ),
                Err(e) => tracing::warn!(error = %e, "job retention failed; retrying next round"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        first = false;
    }
    let _ = holds.await;
}
