//! Accounts and their one-time codes.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::changed::{Changed, Stale};
use crate::db::{now, BeginWrite, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub username: Option<String>,
    pub key_hash: String,
    pub key_cipher: String,
    pub password_hash: Option<String>,
    pub level: i64,
    pub verified: bool,
    pub data: Json<Value>,
    pub wallet_address: Option<String>,
    pub source: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub version: i64,
    /// `source` was the owner's own choice (their sign-up), not an organization admin's
    /// (a waitlist accept): only then do the organization's email templates apply.
    pub source_by_self: bool,
}

/// The columns of [`UserRow`], as a literal so queries stay `&'static str` (sqlx 0.9
/// refuses dynamic SQL strings).
macro_rules! user_columns {
    () => {
        "id, email, username, key_hash, key_cipher, password_hash, level, verified, data, \
         wallet_address, source, created_at, updated_at, deleted_at, version, source_by_self"
    };
}

pub struct NewUser<'a> {
    pub email: &'a str,
    pub key_hash: &'a str,
    pub key_cipher: &'a str,
    pub password_hash: Option<&'a str>,
    pub level: i64,
    pub verified: bool,
    pub data: Value,
    pub source: Option<&'a str>,
    pub source_by_self: bool,
}

pub async fn by_email(db: &Db, email: &str) -> sqlx::Result<Option<UserRow>> {
    const SQL: &str = concat!("SELECT ", user_columns!(), " FROM users WHERE email = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(email).fetch_optional(p).await)
}

pub async fn by_id(db: &Db, id: &str) -> sqlx::Result<Option<UserRow>> {
    const SQL: &str = concat!("SELECT ", user_columns!(), " FROM users WHERE id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The hot-path lookup: one indexed query (the balance comes from the credit actors).
pub async fn by_key_hash(db: &Db, key_hash: &str) -> sqlx::Result<Option<UserRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE key_hash = $1 AND deleted_at IS NULL"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(key_hash).fetch_optional(p).await)
}

/// Creates the account, its credit account and (optionally) a first one-time code in one
/// transaction, so a failure leaves nothing behind.
pub async fn create(
    db: &Db,
    new: NewUser<'_>,
    code: Option<(&str, &str, DateTime<Utc>)>,
) -> sqlx::Result<UserRow> {
    let id = uuid::Uuid::new_v4().to_string();
    let now = now();
    const INSERT_USER: &str = concat!(
        "INSERT INTO users (id, email, key_hash, key_cipher, password_hash, level, verified, data, \
         source, created_at, updated_at, source_by_self) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11) RETURNING ",
        user_columns!()
    );
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let user: UserRow = sqlx::query_as(INSERT_USER)
            .bind(&id)
            .bind(new.email)
            .bind(new.key_hash)
            .bind(new.key_cipher)
            .bind(new.password_hash)
            .bind(new.level)
            .bind(new.verified)
            .bind(Json(&new.data))
            .bind(new.source)
            .bind(now)
            .bind(new.source_by_self)
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO credit_accounts (id, user_id, balance, created_at, updated_at) VALUES ($1, $2, 0, $3, $3)")
            .bind(uuid::Uuid::new_v4().to_string())
            .bind(&id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        if let Some((code_hash, purpose, expires)) = code {
            sqlx::query("INSERT INTO user_codes (code_hash, user_id, purpose, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)")
                .bind(code_hash)
                .bind(&id)
                .bind(purpose)
                .bind(expires)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(user)
    })
}

pub async fn add_code(
    db: &Db,
    user_id: &str,
    code_hash: &str,
    purpose: &str,
    expires: DateTime<Utc>,
) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("INSERT INTO user_codes (code_hash, user_id, purpose, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(code_hash).bind(user_id).bind(purpose).bind(expires).bind(now())
        .execute(p).await.map(|_| ()))
}

#[derive(Debug, sqlx::FromRow)]
pub struct CodeRow {
    pub user_id: String,
    pub purpose: String,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

pub async fn code(db: &Db, code_hash: &str) -> sqlx::Result<Option<CodeRow>> {
    const SQL: &str =
        "SELECT user_id, purpose, expires_at, used_at FROM user_codes WHERE code_hash = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(code_hash).fetch_optional(p).await)
}

/// Marks a code used (an expired code is spent when it is answered); `false` when it
/// was spent already.
pub async fn spend_code(db: &Db, code_hash: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query("UPDATE user_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL")
        .bind(code_hash).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// How an account is being verified (review finding H1: a key or password set before the
/// mailbox was proven must not survive into the verified account).
pub struct Verification<'a> {
    /// `(key_hash, key_cipher)` of a fresh API key, installed when this is the account's
    /// first verification (or always, with `always_rotate`).
    pub new_key: (&'a str, &'a str),
    /// Rotate the key even on a verified account (a completed password reset).
    pub always_rotate: bool,
    /// Clear a password set before the first verification: the proof came from someone
    /// who did not necessarily choose it (identity provider, grant, reset or sign-in link).
    pub clear_unverified_password: bool,
    /// A new password (a completed reset), set in the same statement.
    pub new_password_hash: Option<&'a str>,
}

/// VERIFIED (level at least 10), atomically rotating the key and clearing or replacing
/// the password as `how` says. Every column reads the row as it was before the update,
/// so "first verification" is decided by the database, not by a racy read before.
const VERIFY_USER: &str = concat!(
    "UPDATE users SET \
       key_hash = CASE WHEN verified AND NOT $4 THEN key_hash ELSE $2 END, \
       key_cipher = CASE WHEN verified AND NOT $4 THEN key_cipher ELSE $3 END, \
       password_hash = COALESCE(CAST($6 AS TEXT), \
         CASE WHEN NOT verified AND $5 THEN NULL ELSE password_hash END), \
       verified = TRUE, level = CASE WHEN level < 10 THEN 10 ELSE level END, \
       updated_at = $7 \
     WHERE id = $1 AND deleted_at IS NULL RETURNING ",
    user_columns!()
);

macro_rules! bind_verification {
    ($q:expr, $id:expr, $how:expr, $now:expr) => {
        $q.bind($id)
            .bind($how.new_key.0)
            .bind($how.new_key.1)
            .bind($how.always_rotate)
            .bind($how.clear_unverified_password)
            .bind($how.new_password_hash)
            .bind($now)
    };
}

/// Email ownership proven (identity provider, identity service grant): see
/// [`Verification`]. `None` when the account no longer exists.
pub async fn verify(
    db: &Db,
    id: &str,
    how: &Verification<'_>,
) -> sqlx::Result<Option<Changed<UserRow>>> {
    let now = now();
    let user: Option<UserRow> = with_db!(db, p => bind_verification!(sqlx::query_as(VERIFY_USER), id, how, now).fetch_optional(p).await)?;
    Ok(user.map(changed))
}

/// Spends a one-time code and verifies its account (the code proves control of the
/// email) as `how` says, atomically: a code that was spent concurrently yields `None`
/// and changes nothing.
pub async fn verify_with_code(
    db: &Db,
    code_hash: &str,
    how: &Verification<'_>,
) -> sqlx::Result<Option<Changed<UserRow>>> {
    Ok(spend_code_and_verify(db, code_hash, how)
        .await?
        .map(changed))
}

async fn spend_code_and_verify(
    db: &Db,
    code_hash: &str,
    how: &Verification<'_>,
) -> sqlx::Result<Option<UserRow>> {
    let now = now();
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let spent: Option<(String,)> = sqlx::query_as(
            "UPDATE user_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL \
             AND expires_at > $2 RETURNING user_id",
        )
        .bind(code_hash)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((user_id,)) = spent else {
            return Ok(None);
        };
        let user: Option<UserRow> = bind_verification!(sqlx::query_as(VERIFY_USER), &user_id, how, now)
            .fetch_optional(&mut *tx)
            .await?;
        if user.is_some() {
            // Older codes of the same purpose die with this one (finding L6).
            sqlx::query("UPDATE user_codes SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL")
                .bind(&user_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(user)
    })
}

/// `plinth users set-level`: the account's id, `None` when no account has that email.
pub async fn set_level_by_email(
    db: &Db,
    email: &str,
    level: i64,
) -> sqlx::Result<Option<Changed<String>>> {
    let id: Option<(String,)> = with_db!(db, p => sqlx::query_as(
        "UPDATE users SET level = $2, updated_at = $3 WHERE email = $1 RETURNING id")
        .bind(email).bind(level).bind(now()).fetch_optional(p).await)?;
    Ok(id.map(|(id,)| Changed::new(id.clone(), Stale::User(id))))
}

pub async fn by_username(db: &Db, username: &str) -> sqlx::Result<Option<UserRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE username = $1"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(username).fetch_optional(p).await)
}

/// Newest first.
pub async fn list(db: &Db, limit: i64, offset: i64) -> sqlx::Result<(Vec<UserRow>, i64)> {
    const SQL: &str = concat!(
        "SELECT ",
        user_columns!(),
        " FROM users ORDER BY created_at DESC, id LIMIT $1 OFFSET $2"
    );
    let rows = with_db!(db, p => sqlx::query_as(SQL).bind(limit).bind(offset).fetch_all(p).await)?;
    let total: (i64,) =
        with_db!(db, p => sqlx::query_as("SELECT COUNT(*) FROM users").fetch_one(p).await)?;
    Ok((rows, total.0))
}

pub async fn list_by_source(db: &Db, source: &str) -> sqlx::Result<Vec<UserRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE source = $1 ORDER BY created_at DESC, id"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(source).fetch_all(p).await)
}

/// Replaces `data` if nobody wrote it since `version` was read; `None` on a lost race.
pub async fn write_data(
    db: &Db,
    id: &str,
    version: i64,
    data: &Value,
) -> sqlx::Result<Option<Changed<UserRow>>> {
    const SQL: &str = concat!(
        "UPDATE users SET data = $3, version = version + 1, updated_at = $4 \
         WHERE id = $1 AND version = $2 RETURNING ",
        user_columns!()
    );
    let user: Option<UserRow> = with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(version).bind(Json(data)).bind(now()).fetch_optional(p).await)?;
    Ok(user.map(changed))
}

/// A user row that was written, to announce.
fn changed(user: UserRow) -> Changed<UserRow> {
    let stale = Stale::User(user.id.clone());
    Changed::new(user, stale)
}

pub async fn set_password(db: &Db, id: &str, hash: &str) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1")
        .bind(id).bind(hash).bind(now()).execute(p).await.map(|_| ()))
}

/// A taken username surfaces as a unique violation (409 through `ApiError`).
pub async fn set_username(db: &Db, id: &str, username: &str) -> sqlx::Result<Changed<UserRow>> {
    const SQL: &str = concat!(
        "UPDATE users SET username = $2, updated_at = $3 WHERE id = $1 RETURNING ",
        user_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(username).bind(now()).fetch_one(p).await)
        .map(changed)
}

pub async fn set_key(
    db: &Db,
    id: &str,
    key_hash: &str,
    key_cipher: &str,
) -> sqlx::Result<Changed<UserRow>> {
    const SQL: &str = concat!(
        "UPDATE users SET key_hash = $2, key_cipher = $3, updated_at = $4 WHERE id = $1 RETURNING ",
        user_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(key_hash).bind(key_cipher).bind(now()).fetch_one(p).await).map(changed)
}

pub async fn set_wallet(
    db: &Db,
    id: &str,
    address: Option<&str>,
    signature: Option<&str>,
) -> sqlx::Result<Changed<UserRow>> {
    const SQL: &str = concat!(
        "UPDATE users SET wallet_address = $2, wallet_signature = $3, updated_at = $4 \
         WHERE id = $1 RETURNING ",
        user_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(address).bind(signature).bind(now()).fetch_one(p).await).map(changed)
}

/// What deleting an account did.
#[derive(Debug, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    NotFound,
    /// The account is the last admin of these organizations (domains): nothing deleted.
    LastAdmin(Vec<String>),
}

/// Permanently deletes the account; its codes, credits, memberships, applications,
/// likes and personal decks go with it through `ON DELETE CASCADE`. Organization decks
/// it created are handed to another admin of their organization first, and the last
/// admin of an organization cannot be deleted (finding M5: either would let a member
/// destroy what belongs to the organization). The memberships are locked (PostgreSQL)
/// or the database is (SQLite), so no concurrent step-down slips between check and delete.
pub async fn delete(db: &Db, id: &str) -> sqlx::Result<Changed<Deletion>> {
    let deletion = delete_unannounced(db, id).await?;
    Ok(Changed::new(deletion, Stale::Deleted(id.to_owned())))
}

async fn delete_unannounced(db: &Db, id: &str) -> sqlx::Result<Deletion> {
    let is_pg = matches!(db, Db::Postgres(_));
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        if is_pg {
            sqlx::query(
                "SELECT o.id FROM organizations o JOIN organization_members m \
                 ON m.organization_id = o.id WHERE m.user_id = $1 ORDER BY o.id FOR UPDATE OF o",
            )
            .bind(id).execute(&mut *tx).await?;
        } else {
            // Take SQLite's write lock before reading.
            sqlx::query("UPDATE users SET updated_at = updated_at WHERE id = $1")
                .bind(id).execute(&mut *tx).await?;
        }
        let last_admin: Vec<(String,)> = sqlx::query_as(
            "SELECT o.domain FROM organizations o JOIN organization_members m \
             ON m.organization_id = o.id AND m.user_id = $1 AND m.role = 'admin' \
             WHERE NOT EXISTS (SELECT 1 FROM organization_members a WHERE a.organization_id = o.id \
               AND a.role = 'admin' AND a.user_id <> $1) ORDER BY o.domain",
        )
        .bind(id).fetch_all(&mut *tx).await?;
        if !last_admin.is_empty() {
            return Ok(Deletion::LastAdmin(last_admin.into_iter().map(|r| r.0).collect()));
        }
        // Organization decks go to the organization's longest-standing other admin.
        sqlx::query(
            "UPDATE slide_decks SET owner_id = (SELECT a.user_id FROM organization_members a \
               WHERE a.organization_id = slide_decks.organization_id AND a.role = 'admin' \
               AND a.user_id <> $1 ORDER BY a.created_at, a.user_id LIMIT 1) \
             WHERE owner_id = $1 AND organization_id IS NOT NULL AND EXISTS \
               (SELECT 1 FROM organization_members a WHERE a.organization_id = slide_decks.organization_id \
                AND a.role = 'admin' AND a.user_id <> $1)",
        )
        .bind(id).execute(&mut *tx).await?;
        let n = sqlx::query("DELETE FROM users WHERE id = $1")
            .bind(id).execute(&mut *tx).await?.rows_affected();
        tx.commit().await?;
        Ok(if n > 0 { Deletion::Deleted } else { Deletion::NotFound })
    })
}

pub async fn set_level(db: &Db, id: &str, level: i64) -> sqlx::Result<Changed<()>> {
    with_db!(db, p => sqlx::query("UPDATE users SET level = $2, updated_at = $3 WHERE id = $1")
        .bind(id).bind(level).bind(now()).execute(p).await.map(|_| ()))?;
    Ok(Changed::new((), Stale::User(id.to_owned())))
}
