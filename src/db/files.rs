//! Files: the record of each presigned upload (`/api/data`).

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FileRow {
    pub id: String,
    pub user_id: String,
    pub organization_id: Option<String>,
    pub domain: Option<String>,
    pub object_key: String,
    pub filename: String,
    pub content_type: String,
    pub max_bytes: i64,
    pub provider: String,
    pub created_at: DateTime<Utc>,
}

pub struct NewFile<'a> {
    pub user_id: &'a str,
    pub organization_id: &'a str,
    pub object_key: &'a str,
    pub filename: &'a str,
    pub content_type: &'a str,
    pub max_bytes: i64,
    pub provider: &'a str,
}

macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT f.id, f.user_id, f.organization_id, o.domain, f.object_key, f.filename, \
             f.content_type, f.max_bytes, f.provider, f.created_at FROM files f \
             LEFT JOIN organizations o ON o.id = f.organization_id ",
            $tail
        )
    };
}

pub async fn create(db: &Db, n: &NewFile<'_>) -> sqlx::Result<String> {
    const SQL: &str = "INSERT INTO files (id, user_id, organization_id, object_key, filename, \
        content_type, max_bytes, provider, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query(SQL).bind(&id).bind(n.user_id).bind(n.organization_id)
        .bind(n.object_key).bind(n.filename).bind(n.content_type).bind(n.max_bytes)
        .bind(n.provider).bind(now()).execute(p).await.map(|_| ()))?;
    Ok(id)
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<FileRow>> {
    const SQL: &str = select!("WHERE f.id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The user's files, newest first.
pub async fn of_user(
    db: &Db,
    user_id: &str,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<FileRow>, i64)> {
    const SQL: &str =
        select!("WHERE f.user_id = $1 ORDER BY f.created_at DESC, f.id LIMIT $2 OFFSET $3");
    const COUNT: &str = "SELECT COUNT(*) FROM files WHERE user_id = $1";
    with_db!(db, p => {
        let rows = sqlx::query_as(SQL).bind(user_id).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(COUNT).bind(user_id).fetch_one(p).await?;
        Ok((rows, total))
    })
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM files WHERE id = $1";
    let n =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}
