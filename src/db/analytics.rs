//! Analytics: sites, their members, events (written by the ingest actor), the event list
//! and the stats aggregates. Every event query filters on `(site_id, created_at)` or
//! `(site_id, label, created_at)`, the two indexes.

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::types::Json;
use sqlx::AssertSqlSafe;

use crate::db::{now, values_sql, BeginWrite, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SiteRow {
    pub id: String,
    pub owner_id: String,
    pub name: String,
    /// Secret: keys the visitor ids of this site; never sent.
    pub salt: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const SITE: &str = "id, owner_id, name, salt, created_at, updated_at";

pub async fn create_site(
    db: &Db,
    id: &str,
    owner_id: &str,
    name: &str,
    salt: &str,
) -> sqlx::Result<SiteRow> {
    const SQL: &str =
        "INSERT INTO analytics_sites (id, owner_id, name, salt, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $5) RETURNING id, owner_id, name, salt, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(owner_id).bind(name).bind(salt).bind(now()).fetch_one(p).await)
}

/// An active (not deleted) site.
pub async fn site(db: &Db, id: &str) -> sqlx::Result<Option<SiteRow>> {
    let sql = format!("SELECT {SITE} FROM analytics_sites WHERE id = $1 AND deleted_at IS NULL");
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(p).await)
}

pub async fn rename_site(db: &Db, id: &str, name: &str) -> sqlx::Result<Option<SiteRow>> {
    let sql = format!(
        "UPDATE analytics_sites SET name = $2, updated_at = $3 WHERE id = $1 AND deleted_at IS NULL \
         RETURNING {SITE}"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(id).bind(name).bind(now()).fetch_optional(p).await)
}

/// Soft delete: the site stops accepting hits and leaves every list; its events stay.
pub async fn delete_site(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE analytics_sites SET deleted_at = $2, updated_at = $2 \
        WHERE id = $1 AND deleted_at IS NULL";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

#[derive(Debug, sqlx::FromRow)]
pub struct ListedSite {
    #[sqlx(flatten)]
    pub site: SiteRow,
    pub access_level: i64,
    pub is_owner: bool,
}

/// Active sites the user owns (access level 100) or is a member of, oldest first.
pub async fn sites_of(db: &Db, user_id: &str) -> sqlx::Result<Vec<ListedSite>> {
    let sql = format!(
        "SELECT {SITE}, CAST(100 AS BIGINT) AS access_level, TRUE AS is_owner FROM analytics_sites \
         WHERE owner_id = $1 AND deleted_at IS NULL \
         UNION ALL \
         SELECT s.id, s.owner_id, s.name, s.salt, s.created_at, s.updated_at, m.level, FALSE \
         FROM analytics_sites s JOIN analytics_members m ON m.site_id = s.id \
         WHERE m.user_id = $1 AND s.deleted_at IS NULL AND s.owner_id <> $1 \
         ORDER BY created_at, id LIMIT 1000"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(user_id).fetch_all(p).await)
}

#[derive(Debug, sqlx::FromRow)]
pub struct SiteForUser {
    #[sqlx(flatten)]
    pub site: SiteRow,
    /// The user's member level, if they are a member.
    pub member_level: Option<i64>,
}

/// An active site with the user's member level, in one query.
pub async fn site_for_user(db: &Db, id: &str, user_id: &str) -> sqlx::Result<Option<SiteForUser>> {
    const SQL: &str = "SELECT s.id, s.owner_id, s.name, s.salt, s.created_at, s.updated_at, \
        m.level AS member_level FROM analytics_sites s \
        LEFT JOIN analytics_members m ON m.site_id = s.id AND m.user_id = $2 \
        WHERE s.id = $1 AND s.deleted_at IS NULL";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(user_id).fetch_optional(p).await)
}

#[derive(Debug, sqlx::FromRow, serde::Serialize, schemars::JsonSchema)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub level: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn members(db: &Db, site_id: &str) -> sqlx::Result<Vec<Member>> {
    const SQL: &str = "SELECT m.user_id, u.email, m.level, m.created_at, m.updated_at \
        FROM analytics_members m JOIN users u ON u.id = m.user_id \
        WHERE m.site_id = $1 ORDER BY m.created_at, m.user_id";
    with_db!(db, p => sqlx::query_as(SQL).bind(site_id).fetch_all(p).await)
}

/// A new member; an existing one is a unique violation (409).
pub async fn add_member(db: &Db, site_id: &str, user_id: &str, level: i64) -> sqlx::Result<()> {
    const SQL: &str =
        "INSERT INTO analytics_members (site_id, user_id, level, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $4)";
    with_db!(db, p => sqlx::query(SQL).bind(site_id).bind(user_id).bind(level).bind(now()).execute(p).await.map(|_| ()))
}

pub async fn set_member_level(
    db: &Db,
    site_id: &str,
    user_id: &str,
    level: i64,
) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE analytics_members SET level = $3, updated_at = $4 \
        WHERE site_id = $1 AND user_id = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(site_id).bind(user_id).bind(level).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

pub async fn remove_member(db: &Db, site_id: &str, user_id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM analytics_members WHERE site_id = $1 AND user_id = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(site_id).bind(user_id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// One hit as written.
pub struct HitRow {
    pub id: String,
    pub site_id: String,
    pub label: Option<String>,
    pub visitor_id: String,
    pub data: Option<Value>,
    pub created_at: DateTime<Utc>,
    /// sha256 of the attachment token, and its end, when the hit asked for one.
    pub attachment: Option<(String, DateTime<Utc>)>,
}

/// The ingest actor's store: every hit of a flush in one transaction.
pub struct Ingest(pub Db);

/// Hits per statement (8 parameters each: far under either database's limit).
const HITS_PER_STATEMENT: usize = 500;

impl Ingest {
    /// Every hit of the flush in multi-row statements of one transaction.
    async fn write_groups(&self, groups: &[Vec<HitRow>]) -> sqlx::Result<Vec<u64>> {
        let hits: Vec<&HitRow> = groups.iter().flatten().collect();
        with_db!(&self.0, p => {
            let mut tx = p.begin_write().await?;
            for chunk in hits.chunks(HITS_PER_STATEMENT) {
                let sql = format!(
                    "INSERT INTO analytics_events (id, site_id, label, visitor_id, data, \
                     created_at, attachment_token_hash, attachment_token_expires_at) VALUES {}",
                    values_sql(chunk.len(), 8, None)
                );
                let mut q = sqlx::query(AssertSqlSafe(sql.as_str()));
                for h in chunk {
                    q = q
                        .bind(&h.id)
                        .bind(&h.site_id)
                        .bind(&h.label)
                        .bind(&h.visitor_id)
                        .bind(h.data.as_ref().map(Json))
                        .bind(h.created_at)
                        .bind(h.attachment.as_ref().map(|a| &a.0))
                        .bind(h.attachment.as_ref().map(|a| a.1));
                }
                q.execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(groups.iter().map(|g| g.len() as u64).collect())
        })
    }
}

impl plinth_actors::batch::BatchStore<HitRow> for Ingest {
    fn write<'a>(&'a self, groups: &'a [Vec<HitRow>]) -> BoxFuture<'a, Result<Vec<u64>, String>> {
        Box::pin(async move { self.write_groups(groups).await.map_err(|e| e.to_string()) })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub struct EventRow {
    pub id: String,
    pub label: Option<String>,
    pub visitor_id: String,
    pub data: Option<Json<Value>>,
    pub created_at: DateTime<Utc>,
    pub attachment_key: Option<String>,
}

/// Events of a site in `[from, to]`, newest first, after the cursor (the last row's
/// time and id).
pub async fn events(
    db: &Db,
    site_id: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    label: Option<&str>,
    after: Option<(DateTime<Utc>, &str)>,
    limit: i64,
) -> sqlx::Result<Vec<EventRow>> {
    // Optional filters are parameters that may be NULL: one statement text to prepare.
    let sql = format!(
        "SELECT id, label, visitor_id, data, created_at, attachment_key FROM analytics_events \
         WHERE site_id = $1 AND created_at >= $2 AND created_at <= $3 \
         AND ($4 IS NULL OR label = $4) \
         AND ($5 IS NULL OR created_at < $5 OR (created_at = $5 AND id < $6)) \
         ORDER BY created_at DESC, id DESC LIMIT {limit}"
    );
    let (at, id) = after.map_or((None, None), |(t, i)| (Some(t), Some(i)));
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str()))
        .bind(site_id).bind(from).bind(to).bind(label).bind(at).bind(id)
        .fetch_all(p).await)
}

/// Which events the stats count.
pub struct Scope<'a> {
    pub site_id: &'a str,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// `LIKE` patterns (`*` already turned into `%`, with `\` escapes); any may match.
    pub patterns: &'a [String],
}

#[derive(Debug, sqlx::FromRow)]
pub struct Counted {
    pub key: Option<String>,
    pub hits: i64,
    pub visitors: i64,
}

/// The text of the bucket (`YYYY-MM-DD` or `YYYY-MM-DDTHH`, UTC) of `created_at`.
fn bucket_expr(db: &Db, hourly: bool) -> &'static str {
    match (db, hourly) {
        (Db::Sqlite(_), false) => "substr(created_at, 1, 10)",
        (Db::Sqlite(_), true) => "substr(created_at, 1, 13)",
        (Db::Postgres(_), false) => "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
        (Db::Postgres(_), true) => "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24')",
    }
}

/// Hits and distinct visitors grouped by `key` (a bucket expression, `label`, or `NULL`
/// for the totals), largest first when `by_hits`, else by key; at most `limit` groups.
async fn counted(
    db: &Db,
    s: &Scope<'_>,
    key: &str,
    extra: &str,
    by_hits: bool,
    limit: i64,
) -> sqlx::Result<Vec<Counted>> {
    let mut sql = format!(
        "SELECT {key} AS key, COUNT(*) AS hits, COUNT(DISTINCT visitor_id) AS visitors \
         FROM analytics_events WHERE site_id = $1 AND created_at >= $2 AND created_at <= $3{extra}"
    );
    if !s.patterns.is_empty() {
        let any: Vec<String> = (0..s.patterns.len())
            .map(|i| format!("label LIKE ${} ESCAPE '\\'", i + 4))
            .collect();
        sql.push_str(&format!(" AND ({})", any.join(" OR ")));
    }
    sql.push_str(&format!(
        " GROUP BY 1 ORDER BY {} LIMIT {limit}",
        if by_hits { "2 DESC, 1" } else { "1" }
    ));
    with_db!(db, p => {
        let mut q = sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(s.site_id).bind(s.from).bind(s.to);
        for pattern in s.patterns {
            q = q.bind(pattern);
        }
        q.fetch_all(p).await
    })
}

pub async fn buckets(db: &Db, s: &Scope<'_>, hourly: bool) -> sqlx::Result<Vec<Counted>> {
    counted(db, s, bucket_expr(db, hourly), "", false, 10_000).await
}

pub async fn totals(db: &Db, s: &Scope<'_>) -> sqlx::Result<Counted> {
    let mut rows = counted(db, s, "NULL", "", false, 1).await?;
    Ok(rows.pop().unwrap_or(Counted {
        key: None,
        hits: 0,
        visitors: 0,
    }))
}

/// The most hit non-empty labels.
pub async fn top_labels(db: &Db, s: &Scope<'_>, limit: i64) -> sqlx::Result<Vec<Counted>> {
    counted(
        db,
        s,
        "label",
        " AND label IS NOT NULL AND label <> ''",
        true,
        limit,
    )
    .await
}

/// What the attachment routes need of an event.
#[derive(Debug, sqlx::FromRow)]
pub struct EventAttachment {
    pub site_id: String,
    pub attachment_token_hash: Option<String>,
    pub attachment_token_expires_at: Option<DateTime<Utc>>,
    pub attachment_key: Option<String>,
}

pub async fn event_attachment(db: &Db, id: &str) -> sqlx::Result<Option<EventAttachment>> {
    const SQL: &str = "SELECT site_id, attachment_token_hash, attachment_token_expires_at, \
        attachment_key FROM analytics_events WHERE id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// Records the event's one attachment if the token still holds and there is none yet
/// (one conditional statement); `false` otherwise.
pub async fn claim_attachment(
    db: &Db,
    id: &str,
    token_hash: &str,
    key: &str,
) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE analytics_events SET attachment_key = $3 \
        WHERE id = $1 AND attachment_token_hash = $2 AND attachment_token_expires_at > $4 \
        AND attachment_key IS NULL";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(token_hash).bind(key).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// Attachments of events created before `before`, oldest first.
pub async fn due_attachments(
    db: &Db,
    before: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    let sql = format!(
        "SELECT id, attachment_key FROM analytics_events \
         WHERE attachment_key IS NOT NULL AND created_at < $1 ORDER BY created_at LIMIT {limit}"
    );
    with_db!(db, p => sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(before).fetch_all(p).await)
}

/// The event forgets its attachment (its object is gone).
pub async fn attachment_deleted(db: &Db, id: &str) -> sqlx::Result<()> {
    const SQL: &str = "UPDATE analytics_events SET attachment_key = NULL WHERE id = $1";
    with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|_| ()))
}
