//! Credit balances and their ledger. Every change is a committed ledger row plus a
//! conditional balance update in one transaction.

use crate::db::{now, Db};
use crate::with_db;

/// Reserves `cost` tokens for a request. `Ok(Ok(new_balance))` when charged,
/// `Ok(Err(balance))` when the balance is short (nothing written).
pub async fn charge_usage(db: &Db, user_id: &str, cost: i64) -> sqlx::Result<Result<i64, i64>> {
    apply(db, user_id, -cost, "usage").await
}

/// Gives back a reservation whose request did not succeed.
pub async fn refund_usage(db: &Db, user_id: &str, cost: u64) -> sqlx::Result<i64> {
    match apply(db, user_id, cost as i64, "usage_refund").await? {
        Ok(b) | Err(b) => Ok(b),
    }
}

async fn apply(db: &Db, user_id: &str, delta: i64, kind: &str) -> sqlx::Result<Result<i64, i64>> {
    let now = now();
    with_db!(db, p => {
        let mut tx = p.begin().await?;
        let updated: Option<(String, i64)> = sqlx::query_as(
            "UPDATE credit_accounts SET balance = balance + $1, updated_at = $3 \
             WHERE user_id = $2 AND balance + $1 >= 0 RETURNING id, balance",
        )
        .bind(delta)
        .bind(user_id)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((account_id, balance)) = updated else {
            let current: Option<(i64,)> =
                sqlx::query_as("SELECT balance FROM credit_accounts WHERE user_id = $1")
                    .bind(user_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            return Ok(Err(current.map_or(0, |c| c.0)));
        };
        sqlx::query(
            "INSERT INTO credit_transactions (id, account_id, kind, amount, balance_after, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(&account_id)
        .bind(kind)
        .bind(delta)
        .bind(balance)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(balance))
    })
}
