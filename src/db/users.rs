//! Accounts and their one-time codes.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::changed::{Changed, Stale};
use crate::db::{now, BeginWrite, Db};
use crate::with_db;

/// The tag of an account that gets no email at all (an exempt application domain's).
pub const EXEMPT_ALL_EMAILS: &str = "EXEMPT_ALL_EMAILS";

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

/// A one-time code; `attempt_id` names the sign-up attempt a verification code confirms.
pub async fn add_code(
    db: &Db,
    user_id: &str,
    code_hash: &str,
    purpose: &str,
    expires: DateTime<Utc>,
    attempt_id: Option<&str>,
) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("INSERT INTO user_codes (code_hash, user_id, purpose, expires_at, created_at, attempt_id) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(code_hash).bind(user_id).bind(purpose).bind(expires).bind(now()).bind(attempt_id)
        .execute(p).await.map(|_| ()))
}

#[derive(Debug, sqlx::FromRow)]
pub struct CodeRow {
    pub user_id: String,
    pub purpose: String,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
    pub attempt_id: Option<String>,
}

pub async fn code(db: &Db, code_hash: &str) -> sqlx::Result<Option<CodeRow>> {
    const SQL: &str = "SELECT user_id, purpose, expires_at, used_at, attempt_id \
                       FROM user_codes WHERE code_hash = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(code_hash).fetch_optional(p).await)
}

pub struct NewAttempt<'a> {
    pub user_id: &'a str,
    pub opened_account: bool,
    pub password_hash: Option<&'a str>,
    pub source: Option<&'a str>,
    pub client_ip: Option<&'a str>,
}

/// A sign-up attempt (what a verification code confirms); its id.
pub async fn add_attempt(db: &Db, a: NewAttempt<'_>) -> sqlx::Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query("INSERT INTO signup_attempts (id, user_id, opened_account, password_hash, source, client_ip, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .bind(&id).bind(a.user_id).bind(a.opened_account).bind(a.password_hash).bind(a.source)
        .bind(a.client_ip).bind(now()).execute(p).await.map(|_| ()))?;
    Ok(id)
}

/// An attempt as the confirmation page shows it (never its password).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptRow {
    pub id: String,
    pub opened_account: bool,
    pub source: Option<String>,
    pub client_ip: Option<String>,
    pub created_at: DateTime<Utc>,
}

pub async fn attempt(db: &Db, id: &str) -> sqlx::Result<Option<AttemptRow>> {
    const SQL: &str = "SELECT id, opened_account, source, client_ip, created_at \
                       FROM signup_attempts WHERE id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The attempt that created the account (the oldest, if several claim it).
pub async fn opening_attempt(db: &Db, user_id: &str) -> sqlx::Result<Option<AttemptRow>> {
    const SQL: &str = "SELECT id, opened_account, source, client_ip, created_at \
                       FROM signup_attempts WHERE user_id = $1 AND opened_account \
                       ORDER BY created_at, id LIMIT 1";
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).fetch_optional(p).await)
}

/// Spends the unused codes of one attempt ("this wasn't me"); how many there were.
pub async fn retire_attempt(db: &Db, attempt_id: &str) -> sqlx::Result<u64> {
    with_db!(db, p => sqlx::query("UPDATE user_codes SET used_at = $2 WHERE attempt_id = $1 AND used_at IS NULL")
        .bind(attempt_id).bind(now()).execute(p).await.map(|r| r.rows_affected()))
}

/// Marks a code used (an expired code is spent when it is answered); `false` when it
/// was spent already.
pub async fn spend_code(db: &Db, code_hash: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query("UPDATE user_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL")
        .bind(code_hash).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// What a first verification does with what was set before the mailbox was proven
/// (reviews: H1, H3 of round 2, N-M1 and N-L5 of 2026-11-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unproven<'a> {
    /// The sign-up that opened the account was confirmed: everything stays.
    Opener,
    /// A later sign-up attempt was confirmed: its password and source replace the
    /// opener's, and the opener's wallet and exemption tag go.
    Attempt {
        password_hash: Option<&'a str>,
        source: Option<&'a str>,
    },
    /// The mailbox was proven another way (reset or sign-in link, identity provider,
    /// grant, a verification code that confirms no attempt): the opener's password,
    /// wallet and exemption tag go; `source` (one this proof names) becomes the owner's
    /// own, else the opener's stays but no longer counts as the owner's choice.
    Elsewhere { source: Option<&'a str> },
}

/// How an account is being verified.
pub struct Verification<'a> {
    /// `(key_hash, key_cipher)` of a fresh API key, installed when this is the account's
    /// first verification (or always, with `always_rotate`).
    pub new_key: (&'a str, &'a str),
    /// Rotate the key even on a verified account (a completed password reset).
    pub always_rotate: bool,
    pub unproven: Unproven<'a>,
    /// A new password, set in the same statement (wins over the attempt's).
    pub new_password_hash: Option<&'a str>,
}

/// The columns a verification writes.
#[derive(Debug, PartialEq)]
pub struct Settled {
    pub key_hash: String,
    pub key_cipher: String,
    pub password_hash: Option<String>,
    pub source: Option<String>,
    pub source_by_self: bool,
    pub data: Value,
    pub clear_wallet: bool,
}

/// The account after `how`, from the row as it was (read under its lock).
pub fn settle(user: &UserRow, how: &Verification<'_>) -> Settled {
    let first = !user.verified;
    let (key_hash, key_cipher) = if first || how.always_rotate {
        (how.new_key.0.to_owned(), how.new_key.1.to_owned())
    } else {
        (user.key_hash.clone(), user.key_cipher.clone())
    };
    let mut s = Settled {
        key_hash,
        key_cipher,
        password_hash: user.password_hash.clone(),
        source: user.source.clone(),
        source_by_self: user.source_by_self,
        data: user.data.0.clone(),
        clear_wallet: false,
    };
    if first {
        let source = match how.unproven {
            Unproven::Opener => None,
            Unproven::Attempt {
                password_hash,
                source,
            } => {
                s.password_hash = password_hash.map(str::to_owned);
                Some(source)
            }
            Unproven::Elsewhere { source } => {
                s.password_hash = None;
                source.map(Some)
            }
        };
        if how.unproven != Unproven::Opener {
            s.clear_wallet = true;
            untag(&mut s.data);
            match source {
                Some(src) => {
                    s.source = src.map(str::to_owned);
                    s.source_by_self = true;
                }
                None => s.source_by_self = false,
            }
        }
    }
    if let Some(p) = how.new_password_hash {
        s.password_hash = Some(p.to_owned());
    }
    s
}

/// Removes the exemption tag (set by whoever opened the account, never proven).
fn untag(data: &mut Value) {
    let Some(map) = data.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(tags)) = map.get_mut("exemptions") {
        tags.retain(|t| t != EXEMPT_ALL_EMAILS);
        if tags.is_empty() {
            map.remove("exemptions");
        }
    }
}

const USER_LIVE: &str = concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE id = $1 AND deleted_at IS NULL"
);
const USER_LIVE_LOCKED: &str = concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE id = $1 AND deleted_at IS NULL FOR UPDATE"
);
const WRITE_VERIFIED: &str = concat!(
    "UPDATE users SET key_hash = $2, key_cipher = $3, password_hash = $4, source = $5, \
       source_by_self = $6, data = $7, \
       wallet_address = CASE WHEN $8 THEN NULL ELSE wallet_address END, \
       wallet_signature = CASE WHEN $8 THEN NULL ELSE wallet_signature END, \
       verified = TRUE, level = CASE WHEN level < 10 THEN 10 ELSE level END, \
       version = version + 1, updated_at = $9 \
     WHERE id = $1 RETURNING ",
    user_columns!()
);

/// Reads the account under a lock (PostgreSQL's row lock; SQLite's write transaction),
/// settles it and writes it, inside the transaction `$tx`.
macro_rules! verify_in {
    ($tx:expr, $locked:expr, $id:expr, $how:expr) => {{
        let sql = if $locked { USER_LIVE_LOCKED } else { USER_LIVE };
        let before: Option<UserRow> = sqlx::query_as(sql)
            .bind($id)
            .fetch_optional(&mut *$tx)
            .await?;
        match before {
            None => None,
            Some(before) => {
                let s = settle(&before, $how);
                let user: UserRow = sqlx::query_as(WRITE_VERIFIED)
                    .bind($id)
                    .bind(&s.key_hash)
                    .bind(&s.key_cipher)
                    .bind(&s.password_hash)
                    .bind(&s.source)
                    .bind(s.source_by_self)
                    .bind(Json(&s.data))
                    .bind(s.clear_wallet)
                    .bind(now())
                    .fetch_one(&mut *$tx)
                    .await?;
                Some(user)
            }
        }
    }};
}

/// Email ownership proven (identity provider, identity service grant): see
/// [`Verification`]. `None` when the account no longer exists.
pub async fn verify(
    db: &Db,
    id: &str,
    how: &Verification<'_>,
) -> sqlx::Result<Option<Changed<UserRow>>> {
    let locked = matches!(db, Db::Postgres(_));
    let user: Option<UserRow> = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let user = verify_in!(tx, locked, id, how);
        tx.commit().await?;
        user
    });
    Ok(user.map(changed))
}

/// Spends a one-time code and verifies its account atomically: a verification code
/// confirms its own sign-up attempt ([`Unproven`]); a reset or sign-in code, or a
/// verification code from before attempts, proves the mailbox only. A code spent
/// concurrently, or expired, yields `None` and changes nothing.
pub async fn verify_with_code(
    db: &Db,
    code_hash: &str,
    new_key: (&str, &str),
    new_password_hash: Option<&str>,
) -> sqlx::Result<Option<Changed<UserRow>>> {
    let locked = matches!(db, Db::Postgres(_));
    let now = now();
    let user: Option<UserRow> = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let spent: Option<(String, String, Option<String>)> = sqlx::query_as(
            "UPDATE user_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL \
             AND expires_at > $2 RETURNING user_id, purpose, attempt_id",
        )
        .bind(code_hash)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((user_id, purpose, attempt_id)) = spent else {
            return Ok(None);
        };
        let attempt: Option<(bool, Option<String>, Option<String>)> = match &attempt_id {
            Some(a) if purpose == "verify" => sqlx::query_as(
                "SELECT opened_account, password_hash, source FROM signup_attempts WHERE id = $1",
            )
            .bind(a)
            .fetch_optional(&mut *tx)
            .await?,
            _ => None,
        };
        let unproven = match &attempt {
            Some((true, _, _)) => Unproven::Opener,
            Some((false, password_hash, source)) => Unproven::Attempt {
                password_hash: password_hash.as_deref(),
                source: source.as_deref(),
            },
            None => Unproven::Elsewhere { source: None },
        };
        let how = Verification {
            new_key,
            always_rotate: purpose == "reset" && new_password_hash.is_some(),
            unproven,
            new_password_hash,
        };
        let user = verify_in!(tx, locked, &user_id, &how);
        if user.is_some() {
            // The account's other codes die with this one (finding L6).
            sqlx::query("UPDATE user_codes SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL")
                .bind(&user_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        user
    });
    Ok(user.map(changed))
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

/// Deletes an account nobody has confirmed ("this wasn't me"), with everything that
/// cascades; `false` when it is gone or was verified meanwhile.
pub async fn delete_unverified(db: &Db, id: &str) -> sqlx::Result<Changed<bool>> {
    let n = with_db!(db, p => sqlx::query("DELETE FROM users WHERE id = $1 AND NOT verified")
        .bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(Changed::new(n > 0, Stale::Deleted(id.to_owned())))
}

pub async fn set_level(db: &Db, id: &str, level: i64) -> sqlx::Result<Changed<()>> {
    with_db!(db, p => sqlx::query("UPDATE users SET level = $2, updated_at = $3 WHERE id = $1")
        .bind(id).bind(level).bind(now()).execute(p).await.map(|_| ()))?;
    Ok(Changed::new((), Stale::User(id.to_owned())))
}

/// Failed password sign-ins of one email (its sha256): how many, and when the next
/// attempt may be made.
#[derive(Debug, sqlx::FromRow)]
pub struct Failures {
    pub failures: i64,
    pub next_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn failures(db: &Db, email_hash: &str) -> sqlx::Result<Option<Failures>> {
    const SQL: &str =
        "SELECT failures, next_at, updated_at FROM sign_in_failures WHERE email_hash = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(email_hash).fetch_optional(p).await)
}

/// Counts one more attempt if the count is still `seen` (`None`: no row yet); `false`
/// when another request counted first (read again and retry).
pub async fn count_failure(
    db: &Db,
    email_hash: &str,
    seen: Option<i64>,
    failures: i64,
    next_at: DateTime<Utc>,
) -> sqlx::Result<bool> {
    let now = now();
    let n = match seen {
        None => with_db!(db, p => sqlx::query(
            "INSERT INTO sign_in_failures (email_hash, failures, next_at, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (email_hash) DO NOTHING")
            .bind(email_hash).bind(failures).bind(next_at).bind(now)
            .execute(p).await.map(|r| r.rows_affected()))?,
        Some(old) => with_db!(db, p => sqlx::query(
            "UPDATE sign_in_failures SET failures = $3, next_at = $4, updated_at = $5 \
             WHERE email_hash = $1 AND failures = $2")
            .bind(email_hash).bind(old).bind(failures).bind(next_at).bind(now)
            .execute(p).await.map(|r| r.rows_affected()))?,
    };
    Ok(n == 1)
}

/// Forgets the failures of an email (a right password, or the owner proved the mailbox).
pub async fn clear_failures(db: &Db, email_hash: &str) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("DELETE FROM sign_in_failures WHERE email_hash = $1")
        .bind(email_hash).execute(p).await.map(|_| ()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn unverified() -> UserRow {
        UserRow {
            id: "u".into(),
            email: "a@example.com".into(),
            username: None,
            key_hash: "old-hash".into(),
            key_cipher: "old-cipher".into(),
            password_hash: Some("opener".into()),
            level: 0,
            verified: false,
            data: Json(json!({"name": "x", "exemptions": ["EXEMPT_ALL_EMAILS"]})),
            wallet_address: Some("0xabc".into()),
            source: Some("evil.example".into()),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            deleted_at: None,
            version: 0,
            source_by_self: true,
        }
    }

    fn how(unproven: Unproven<'_>) -> Verification<'_> {
        Verification {
            new_key: ("new-hash", "new-cipher"),
            always_rotate: false,
            unproven,
            new_password_hash: None,
        }
    }

    #[test]
    fn the_opening_attempt_keeps_what_its_opener_set() {
        let s = settle(&unverified(), &how(Unproven::Opener));
        assert_eq!(
            s.key_hash, "new-hash",
            "a first verification always rotates"
        );
        assert_eq!(s.password_hash.as_deref(), Some("opener"));
        assert_eq!(s.source.as_deref(), Some("evil.example"));
        assert!(s.source_by_self && !s.clear_wallet);
        assert_eq!(s.data["exemptions"], json!(["EXEMPT_ALL_EMAILS"]));
    }

    #[test]
    fn another_attempt_replaces_the_openers_password_source_wallet_and_tag() {
        let s = settle(
            &unverified(),
            &how(Unproven::Attempt {
                password_hash: Some("owner"),
                source: None,
            }),
        );
        assert_eq!(s.password_hash.as_deref(), Some("owner"));
        assert_eq!(s.source, None);
        assert!(s.source_by_self && s.clear_wallet);
        assert_eq!(s.data, json!({"name": "x"}));
    }

    #[test]
    fn a_proof_elsewhere_clears_the_password_and_disowns_the_source() {
        let s = settle(&unverified(), &how(Unproven::Elsewhere { source: None }));
        assert_eq!(s.password_hash, None);
        assert_eq!(s.source.as_deref(), Some("evil.example"));
        assert!(!s.source_by_self && s.clear_wallet);
        let s = settle(
            &unverified(),
            &how(Unproven::Elsewhere {
                source: Some("app.example"),
            }),
        );
        assert_eq!(s.source.as_deref(), Some("app.example"));
        assert!(s.source_by_self);
    }

    #[test]
    fn a_verified_account_keeps_everything_but_a_new_password_or_a_reset_key() {
        let mut user = unverified();
        user.verified = true;
        let mut h = how(Unproven::Elsewhere { source: None });
        let s = settle(&user, &h);
        assert_eq!(s.key_hash, "old-hash");
        assert_eq!(s.password_hash.as_deref(), Some("opener"));
        assert!(s.source_by_self && !s.clear_wallet);
        h.always_rotate = true;
        h.new_password_hash = Some("reset");
        let s = settle(&user, &h);
        assert_eq!(s.key_hash, "new-hash");
        assert_eq!(s.password_hash.as_deref(), Some("reset"));
    }
}
