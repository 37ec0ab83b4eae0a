//! Periodic work that runs with the job workers (embedded in `serve`, or `plinth worker`):
//! the monthly credit distribution and the slide upkeep sweep. Every run pays each
//! paying-tier account the allotment of the current calendar month once; the ledger's
//! unique `monthly:<YYYY-MM>` key makes runs idempotent and safe on several workers at
//! once. The sweep ends jobs no worker will finish and prunes idempotency records.

use std::time::Duration;

use plinth_actors::credits::{Applied, Change, CreditAccounts, Entry};
use plinth_workers::Queue;
use serde_json::json;
use tokio::sync::watch;

use crate::db::Db;
use crate::domain::ledger::monthly_credits;
use crate::with_db;

/// Pays this month's allotment to every account that has not had it; returns how many
/// were paid.
pub async fn distribute_monthly_all(db: &Db, credits: &CreditAccounts) -> anyhow::Result<usize> {
    let month = chrono::Utc::now().format("%Y-%m").to_string();
    let rows: Vec<(String, i64)> = with_db!(db, p => sqlx::query_as(
        "SELECT id, level FROM users WHERE level >= 20 AND deleted_at IS NULL ORDER BY id"
    ).fetch_all(p).await)?;
    let mut paid = 0;
    for (user_id, level) in rows {
        let amount = monthly_credits(level);
        if amount == 0 {
            continue;
        }
        let change = Change {
            entries: vec![Entry {
                user_id,
                delta: amount,
                kind: "monthly".into(),
                idem_key: Some(format!("monthly:{month}")),
                data: json!({"month": month, "level": level, "by": "schedule"}),
            }],
        };
        if let Ok(Applied::Done { .. }) = credits.apply(change).await {
            paid += 1;
        }
    }
    Ok(paid)
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
        now - crate::domain::idempotency::KEPT,
    )
    .await?)
}

/// Every `every` until `stop` turns true: ends pending orders whose hold on their units
/// expired (units back to stock; each release is conditional on the order still being
/// pending, so several workers may run it at once), rolls up the analytics hours that
/// ended (one roller at a time: `db::analytics::roll_up`) and queues a run of attachment
/// expiry (an apalis job: `plinth_workers::expiry`).
async fn every_half_minute(db: Db, queue: Queue, every: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        match crate::db::orders::release_expired(&db, chrono::Utc::now()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(orders = n, "expired order holds released"),
            Err(e) => tracing::warn!(error = %e, "releasing expired holds failed; retrying"),
        }
        match crate::domain::analytics::roll_up(&db).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(events = n, "analytics hours rolled up"),
            Err(e) => tracing::warn!(error = %e, "analytics roll-up failed; retrying"),
        }
        if let Err(e) = queue.push_expiry(chrono::Utc::now().to_rfc3339()).await {
            tracing::warn!(error = %e, "queueing attachment expiry failed; retrying");
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// Runs the distribution and the sweep now and then every `every` until `stop` turns
/// true; expired order holds are released and attachment expiry is queued every 30 s (or
/// `every` when shorter).
pub async fn run(
    db: Db,
    credits: CreditAccounts,
    queue: Queue,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let holds = tokio::spawn(every_half_minute(
        db.clone(),
        queue,
        every.min(Duration::from_secs(30)),
        stop.clone(),
    ));
    loop {
        match distribute_monthly_all(&db, &credits).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(accounts = n, "monthly credits distributed"),
            Err(e) => {
                tracing::warn!(error = %e, "monthly distribution failed; retrying next round")
            }
        }
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
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    let _ = holds.await;
}
