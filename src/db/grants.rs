//! Redeemed token-exchange grants (single use).

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::with_db;

/// Records a grant as spent; `false` when it was spent before. Expired records are
/// pruned on the way, so the table holds at most ten minutes of grants.
pub async fn spend(db: &Db, token_hash: &str, expires_at: DateTime<Utc>) -> sqlx::Result<bool> {
    with_db!(db, p => {
        sqlx::query("DELETE FROM used_grants WHERE expires_at < $1")
            .bind(now())
            .execute(p)
            .await?;
        let n = sqlx::query(
            "INSERT INTO used_grants (token_hash, expires_at) VALUES ($1, $2) \
             ON CONFLICT (token_hash) DO NOTHING",
        )
        .bind(token_hash)
        .bind(expires_at)
        .execute(p)
        .await?
        .rows_affected();
        Ok(n == 1)
    })
}
