//! Callback signing secrets, one per account (`callback_secrets`): the secret is stored
//! encrypted (the caller encrypts and decrypts); made on first use, replaced by a
//! rotation, which may keep the one before valid for a while (`previous_*`).

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::with_db;

/// An account's secrets as stored (encrypted).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Secrets {
    pub secret: String,
    pub created_at: DateTime<Utc>,
    /// The secret a rotation replaced, while it is still valid.
    pub previous_secret: Option<String>,
    pub previous_expires_at: Option<DateTime<Utc>>,
}

/// The account's secrets, if it has one.
pub async fn secret(db: &Db, user_id: &str) -> sqlx::Result<Option<Secrets>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT secret, created_at, previous_secret, previous_expires_at \
         FROM callback_secrets WHERE user_id = $1"
    ).bind(user_id).fetch_optional(p).await)
}

/// Stores `encrypted` as the account's secret unless it has one; the ones it has after.
pub async fn secret_or_insert(db: &Db, user_id: &str, encrypted: &str) -> sqlx::Result<Secrets> {
    with_db!(db, p => sqlx::query(
        "INSERT INTO callback_secrets (user_id, secret, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO NOTHING"
    ).bind(user_id).bind(encrypted).bind(now()).execute(p).await.map(|_| ()))?;
    secret(db, user_id).await?.ok_or(sqlx::Error::RowNotFound)
}

/// Replaces the account's secret with `encrypted` (made now); the replaced one stays
/// valid until `keep_until` (`None`: it stops at once).
pub async fn replace(
    db: &Db,
    user_id: &str,
    encrypted: &str,
    keep_until: Option<DateTime<Utc>>,
) -> sqlx::Result<Secrets> {
    let at = now();
    with_db!(db, p => sqlx::query(
        "INSERT INTO callback_secrets (user_id, secret, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE SET \
           previous_secret = CASE WHEN $4 IS NULL THEN NULL ELSE callback_secrets.secret END, \
           previous_expires_at = $4, \
           secret = excluded.secret, created_at = excluded.created_at"
    ).bind(user_id).bind(encrypted).bind(at).bind(keep_until).execute(p).await.map(|_| ()))?;
    secret(db, user_id).await?.ok_or(sqlx::Error::RowNotFound)
}
