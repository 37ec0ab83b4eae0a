//! Things: titled, categorized records with a unique slug, listed newest first (by
//! offset or by keyset cursor) and searched through the database's own full-text index
//! (SQLite FTS5 ranked by bm25; PostgreSQL tsvector/GIN ranked by ts_rank).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ThingRow {
    pub id: String,
    pub title: String,
    pub category: String,
    pub slug: String,
    pub organization_id: Option<String>,
    pub domain: Option<String>,
    pub user_id: Option<String>,
    pub data: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub struct ThingFields<'a> {
    pub title: &'a str,
    pub category: &'a str,
    pub slug: &'a str,
    pub data: &'a Value,
}

macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT t.id, t.title, t.category, t.slug, t.organization_id, o.domain, t.user_id, \
             t.data, t.created_at, t.updated_at FROM things t \
             LEFT JOIN organizations o ON o.id = t.organization_id ",
            $tail
        )
    };
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<ThingRow>> {
    const SQL: &str = select!("WHERE t.id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// A new thing; a taken slug is a unique violation (409).
pub async fn create(
    db: &Db,
    f: &ThingFields<'_>,
    organization_id: Option<&str>,
    user_id: &str,
) -> sqlx::Result<String> {
    const SQL: &str = "INSERT INTO things (id, title, category, slug, organization_id, user_id, \
        data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)";
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query(SQL).bind(&id).bind(f.title).bind(f.category).bind(f.slug)
        .bind(organization_id).bind(user_id).bind(Json(f.data)).bind(now()).execute(p).await.map(|_| ()))?;
    Ok(id)
}

/// Writes the thing's next state unless it changed since `updated_at` was read.
pub async fn write(
    db: &Db,
    id: &str,
    read_at: DateTime<Utc>,
    f: &ThingFields<'_>,
) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE things SET title = $3, category = $4, slug = $5, data = $6, \
        updated_at = $7 WHERE id = $1 AND updated_at = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(id).bind(read_at).bind(f.title).bind(f.category)
        .bind(f.slug).bind(Json(f.data)).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM things WHERE id = $1";
    let n =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}

/// Newest first: a page by `offset`, or the page after the keyset `after` (the
/// `created_at` and `id` of the last thing of the previous page).
pub async fn list(
    db: &Db,
    limit: i64,
    offset: i64,
    after: Option<(DateTime<Utc>, &str)>,
) -> sqlx::Result<Vec<ThingRow>> {
    const SQL: &str = select!(
        "WHERE ($3 IS NULL OR t.created_at < $3 OR (t.created_at = $3 AND t.id < $4)) \
         ORDER BY t.created_at DESC, t.id DESC LIMIT $1 OFFSET $2"
    );
    let (at, id) = match after {
        Some((at, id)) => (Some(at), Some(id)),
        None => (None, None),
    };
    with_db!(db, p => sqlx::query_as(SQL).bind(limit).bind(offset).bind(at).bind(id).fetch_all(p).await)
}

pub async fn count(db: &Db) -> sqlx::Result<i64> {
    with_db!(db, p => sqlx::query_scalar("SELECT COUNT(*) FROM things").fetch_one(p).await)
}

/// Things matching every keyword (each also as a prefix), best match first. `words`
/// are plain alphanumeric tokens (the handler strips the rest), so neither index's
/// query syntax can be injected.
pub async fn search(
    db: &Db,
    words: &[String],
    limit: i64,
    offset: i64,
) -> sqlx::Result<Vec<ThingRow>> {
    match db {
        Db::Sqlite(p) => {
            // The page of matches first (FTS5 ranks them by itself), then their rows.
            const SQL: &str = concat!(
                "WITH hits AS (SELECT rowid, bm25(things_fts, 10.0, 3.0) AS score FROM things_fts \
                 WHERE things_fts MATCH $1 ORDER BY score LIMIT $2 OFFSET $3) ",
                select!("JOIN hits h ON h.rowid = t.rowid ORDER BY h.score, t.created_at DESC")
            );
            let query = words
                .iter()
                .map(|w| format!("\"{w}\"*"))
                .collect::<Vec<_>>()
                .join(" ");
            sqlx::query_as(SQL)
                .bind(query)
                .bind(limit)
                .bind(offset)
                .fetch_all(p)
                .await
        }
        Db::Postgres(p) => {
            const SQL: &str = select!(
                "WHERE t.search @@ to_tsquery('simple', $1) \
                 ORDER BY ts_rank(t.search, to_tsquery('simple', $1)) DESC, t.created_at DESC \
                 LIMIT $2 OFFSET $3"
            );
            let query = words
                .iter()
                .map(|w| format!("{w}:*"))
                .collect::<Vec<_>>()
                .join(" & ");
            sqlx::query_as(SQL)
                .bind(query)
                .bind(limit)
                .bind(offset)
                .fetch_all(p)
                .await
        }
    }
}
