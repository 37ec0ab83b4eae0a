//! Download links. A redeem is one conditional update (live, not expired, under its
//! maximum), so concurrent redeems never exceed `max_downloads`; the expiry work marks a
//! clone deleted only after the object store deleted it.

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::states::LinkStatus;
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LinkRow {
    pub id: String,
    pub organization_id: String,
    pub item_id: Option<String>,
    pub order_id: Option<String>,
    pub user_id: Option<String>,
    pub source_key: String,
    pub clone_key: String,
    pub file_name: String,
    pub mime_type: String,
    pub max_downloads: i64,
    pub download_count: i64,
    pub status: LinkStatus,
    pub expires_at: DateTime<Utc>,
    pub last_download_at: Option<DateTime<Utc>>,
    pub clone_deleted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

macro_rules! link_columns {
    () => {
        "id, organization_id, item_id, order_id, issuer_id, user_id, source_key, clone_key, \
         file_name, mime_type, max_downloads, download_count, status, expires_at, exhausted_at, \
         last_download_at, clone_deleted_at, created_at, updated_at"
    };
}

pub struct NewLink<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub item_id: Option<&'a str>,
    pub order_id: Option<&'a str>,
    pub issuer_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    pub token_hash: &'a str,
    pub source_key: &'a str,
    pub clone_key: &'a str,
    pub file_name: &'a str,
    pub mime_type: &'a str,
    pub max_downloads: i64,
    pub expires_at: DateTime<Utc>,
}

pub async fn create(db: &Db, l: &NewLink<'_>) -> sqlx::Result<LinkRow> {
    const SQL: &str = concat!(
        "INSERT INTO download_links (id, organization_id, item_id, issuer_id, user_id, token_hash, \
         source_key, clone_key, file_name, mime_type, max_downloads, status, expires_at, \
         created_at, updated_at, order_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
         'live', $12, $13, $13, $14) RETURNING ",
        link_columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(l.id).bind(l.org_id).bind(l.item_id)
        .bind(l.issuer_id).bind(l.user_id).bind(l.token_hash).bind(l.source_key).bind(l.clone_key)
        .bind(l.file_name).bind(l.mime_type).bind(l.max_downloads).bind(l.expires_at).bind(now())
        .bind(l.order_id).fetch_one(p).await)
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<LinkRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        link_columns!(),
        " FROM download_links WHERE id = $1"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

pub async fn by_token(db: &Db, token_hash: &str) -> sqlx::Result<Option<LinkRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        link_columns!(),
        " FROM download_links WHERE token_hash = $1"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(token_hash).fetch_optional(p).await)
}

/// The organization's links, newest first, and how many there are.
pub async fn list(
    db: &Db,
    org_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<LinkRow>, i64)> {
    const SQL: &str = concat!(
        "SELECT ",
        link_columns!(),
        " FROM download_links WHERE organization_id = $1 ORDER BY created_at DESC, id \
         LIMIT $2 OFFSET $3"
    );
    const COUNT: &str = "SELECT COUNT(*) FROM download_links WHERE organization_id = $1";
    with_db!(db, p => {
        let rows = sqlx::query_as(SQL).bind(org_id).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(COUNT).bind(org_id).fetch_one(p).await?;
        Ok((rows, total))
    })
}

/// Counts one download of a live link, if it is not expired or used up: its clone's
/// key, or `None` for any link that may not be downloaded.
pub async fn redeem(db: &Db, token_hash: &str) -> sqlx::Result<Option<String>> {
    const SQL: &str = "UPDATE download_links SET download_count = download_count + 1, \
        last_download_at = $2, updated_at = $2, \
        exhausted_at = CASE WHEN download_count + 1 >= max_downloads THEN $2 ELSE exhausted_at END \
        WHERE token_hash = $1 AND status = 'live' AND expires_at > $2 \
        AND download_count < max_downloads AND clone_deleted_at IS NULL \
        RETURNING clone_key";
    with_db!(db, p => sqlx::query_scalar(SQL).bind(token_hash).bind(now()).fetch_optional(p).await)
}

/// Revokes a live link; `false` when it was revoked already.
pub async fn revoke(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE download_links SET status = 'revoked', updated_at = $2 \
        WHERE id = $1 AND status = 'live'";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// Links whose clone is due for deletion: revoked, expired, or used up more than `grace`
/// ago (the last download's short-lived URL must still work), clone not yet deleted.
pub async fn due_clones(
    db: &Db,
    now: DateTime<Utc>,
    used_up_before: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    const SQL: &str = "SELECT id, clone_key FROM download_links WHERE clone_deleted_at IS NULL \
        AND (status = 'revoked' OR expires_at <= $1 OR exhausted_at <= $2) \
        ORDER BY updated_at LIMIT $3";
    with_db!(db, p => sqlx::query_as(SQL).bind(now).bind(used_up_before).bind(limit).fetch_all(p).await)
}

/// The clone of this link is gone from the store.
pub async fn clone_deleted(db: &Db, id: &str) -> sqlx::Result<()> {
    const SQL: &str = "UPDATE download_links SET clone_deleted_at = $2 \
        WHERE id = $1 AND clone_deleted_at IS NULL";
    with_db!(db, p => sqlx::query(SQL).bind(id).bind(now()).execute(p).await.map(|_| ()))
}
