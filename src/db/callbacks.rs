//! Callback signing secrets, one per account (`callback_secrets`): the secret is stored
//! encrypted (the caller encrypts and decrypts); made on first use, replaced by a
//! rotation.

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::with_db;

/// The account's secret (encrypted) and when it was made, if it has one.
pub async fn secret(db: &Db, user_id: &str) -> sqlx::Result<Option<(String, DateTime<Utc>)>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT secret, created_at FROM callback_secrets WHERE user_id = $1"
    ).bind(user_id).fetch_optional(p).await)
}

/// Stores `encrypted` as the account's secret unless it has one; the one it has after.
pub async fn secret_or_insert(
    db: &Db,
    user_id: &str,
    encrypted: &str,
) -> sqlx::Result<(String, DateTime<Utc>)> {
    with_db!(db, p => sqlx::query(
        "INSERT INTO callback_secrets (user_id, secret, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO NOTHING"
    ).bind(user_id).bind(encrypted).bind(now()).execute(p).await.map(|_| ()))?;
    secret(db, user_id).await?.ok_or(sqlx::Error::RowNotFound)
}

/// Replaces the account's secret with `encrypted` (made now).
pub async fn replace(
    db: &Db,
    user_id: &str,
    encrypted: &str,
) -> sqlx::Result<(String, DateTime<Utc>)> {
    let at = now();
    with_db!(db, p => sqlx::query(
        "INSERT INTO callback_secrets (user_id, secret, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at"
    ).bind(user_id).bind(encrypted).bind(at).execute(p).await.map(|_| ()))?;
    Ok((encrypted.to_owned(), at))
}
