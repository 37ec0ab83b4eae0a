//! Periodic work that runs with the job workers (embedded in `serve`, or `plinth worker`):
//! the monthly credit distribution. Every run pays each paying-tier account the
//! allotment of the current calendar month once; the ledger's unique
//! `monthly:<YYYY-MM>` key makes runs idempotent and safe on several workers at once.

use std::time::Duration;

use plinth_actors::credits::{Applied, Change, CreditAccounts, Entry};
use serde_json::json;
use tokio::sync::watch;

use crate::api::credits::monthly_credits;
use crate::db::Db;
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

/// Runs the distribution now and then every `every` until `stop` turns true.
pub async fn run(
    db: Db,
    credits: CreditAccounts,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        match distribute_monthly_all(&db, &credits).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(accounts = n, "monthly credits distributed"),
            Err(e) => {
                tracing::warn!(error = %e, "monthly distribution failed; retrying next round")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
