//! Idempotency records (`idempotency_records`): the recorded answer of a mutation under
//! its key, per scope (a deck's changes, a buyer's checkouts), with the hash of the
//! request it answers; the upkeep sweep prunes records after
//! [`KEPT`]. The rules are `http::idempotency`'s.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, Db};
use crate::with_db;

/// How long a recorded answer replays; older records are expired and pruned.
pub const KEPT: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// A deck change's claim on its key that is still "in progress" after this long is
/// presumed dead (its process stopped between claim and answer; a change's caller gives
/// up after 30 s) and the same request may take it over.
pub const STALE_CLAIM: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// The same for work that is at most once by itself (a credit change under its ledger
/// key): past the longest a credit batch takes to commit.
pub const LEDGER_STALE_CLAIM: chrono::TimeDelta = chrono::TimeDelta::seconds(6);

/// The record of a key if it was saved after `since` (older ones are expired even
/// before the sweep deletes them).
pub async fn load(
    db: &Db,
    scope: &str,
    key: &str,
    since: DateTime<Utc>,
) -> sqlx::Result<Option<(String, i64, Value)>> {
    let row: Option<(String, i64, Json<Value>)> = with_db!(db, p => sqlx::query_as(
        "SELECT request_hash, status, response FROM idempotency_records \
         WHERE scope = $1 AND key = $2 AND created_at >= $3"
    ).bind(scope).bind(key).bind(since).fetch_optional(p).await)?;
    Ok(row.map(|(h, s, r)| (h, s, r.0)))
}

/// The recorded answer (status, body) of the request with hash `hash` under `key`, saved
/// after `since`, whatever its scope (the hash names the route, the caller and the body):
/// what the usage layer replays before a request is counted.
pub async fn recorded(
    db: &Db,
    key: &str,
    hash: &str,
    since: DateTime<Utc>,
) -> sqlx::Result<Option<(i64, Value)>> {
    let row: Option<(i64, Json<Value>)> = with_db!(db, p => sqlx::query_as(
        "SELECT status, response FROM idempotency_records \
         WHERE key = $1 AND request_hash = $2 AND status <> 0 AND created_at >= $3 LIMIT 1"
    ).bind(key).bind(hash).bind(since).fetch_optional(p).await)?;
    Ok(row.map(|(s, r)| (s, r.0)))
}

/// Status of a record whose request is still running (no answer yet).
pub const IN_PROGRESS: i64 = 0;

/// [`begin`], and when `stale_before` is given, also takes over a claim of the same
/// request still in progress since before it (its process died before answering). The
/// claim is one statement (insert, or a conditional update of the row in the way), so
/// of two processes claiming one key at once exactly one wins.
pub async fn claim(
    db: &Db,
    scope: &str,
    key: &str,
    hash: &str,
    expired_before: DateTime<Utc>,
    stale_before: Option<DateTime<Utc>>,
) -> sqlx::Result<Option<(String, i64, Value)>> {
    const CLAIM: &str =
        "INSERT INTO idempotency_records (scope, key, request_hash, status, response, created_at) \
        VALUES ($1, $2, $3, 0, 'null', $4) ON CONFLICT (scope, key) DO UPDATE SET \
        request_hash = excluded.request_hash, status = 0, response = 'null', \
        created_at = excluded.created_at WHERE idempotency_records.created_at < $5 \
        OR (idempotency_records.status = 0 AND idempotency_records.created_at < $6 \
            AND idempotency_records.request_hash = excluded.request_hash)";
    let stale_before = stale_before.unwrap_or(expired_before);
    // The row in the way may be abandoned (deleted) between the claim and the read: then
    // claim again rather than report a claim this call does not hold.
    for _ in 0..3 {
        let claimed = with_db!(db, p => sqlx::query(CLAIM).bind(scope).bind(key).bind(hash)
            .bind(now()).bind(expired_before).bind(stale_before).execute(p).await
            .map(|r| r.rows_affected()))?;
        if claimed == 1 {
            return Ok(None);
        }
        if let Some(held) = load(db, scope, key, expired_before).await? {
            return Ok(Some(held));
        }
    }
    // Claimed and abandoned three times over in a few milliseconds: report it as busy.
    Ok(Some((hash.to_owned(), IN_PROGRESS, Value::Null)))
}

/// Records the answer of a claimed key (never over an answer already recorded).
pub async fn finish(
    db: &Db,
    scope: &str,
    key: &str,
    status: i64,
    response: &Value,
) -> sqlx::Result<()> {
    const SQL: &str = "UPDATE idempotency_records SET status = $3, response = $4 \
        WHERE scope = $1 AND key = $2 AND status = 0";
    with_db!(db, p => sqlx::query(SQL).bind(scope).bind(key).bind(status).bind(Json(response))
        .execute(p).await.map(|_| ()))
}

/// Gives a claimed key up (its request failed on our side and may be retried).
pub async fn abandon(db: &Db, scope: &str, key: &str) -> sqlx::Result<()> {
    const SQL: &str =
        "DELETE FROM idempotency_records WHERE scope = $1 AND key = $2 AND status = 0";
    with_db!(db, p => sqlx::query(SQL).bind(scope).bind(key).execute(p).await.map(|_| ()))
}
