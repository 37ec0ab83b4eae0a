//! Documents: organization-scoped records of a `type` with a JSON `data` object.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DocumentRow {
    pub id: String,
    pub organization_id: String,
    pub domain: String,
    pub r#type: String,
    pub data: Json<Value>,
    pub created_by: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT d.id, d.organization_id, o.domain, d.type, d.data, d.created_by, d.version, \
             d.created_at, d.updated_at FROM documents d JOIN organizations o ON o.id = d.organization_id ",
            $tail
        )
    };
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<DocumentRow>> {
    const SQL: &str = select!("WHERE d.id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The organization's documents, newest first; of one `type` when given.
pub async fn list(
    db: &Db,
    org_id: &str,
    doc_type: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<DocumentRow>, i64)> {
    const SQL: &str = select!(
        "WHERE d.organization_id = $1 AND ($2 IS NULL OR d.type = $2) \
         ORDER BY d.created_at DESC, d.id LIMIT $3 OFFSET $4"
    );
    const COUNT: &str =
        "SELECT COUNT(*) FROM documents WHERE organization_id = $1 AND ($2 IS NULL OR type = $2)";
    with_db!(db, p => {
        let rows = sqlx::query_as(SQL).bind(org_id).bind(doc_type).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(COUNT).bind(org_id).bind(doc_type).fetch_one(p).await?;
        Ok((rows, total))
    })
}

pub async fn create(
    db: &Db,
    org_id: &str,
    doc_type: &str,
    data: &Value,
    created_by: &str,
) -> sqlx::Result<String> {
    const SQL: &str = "INSERT INTO documents (id, organization_id, type, data, created_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)";
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query(SQL).bind(&id).bind(org_id).bind(doc_type).bind(Json(data)).bind(created_by).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(id)
}

/// Replaces `data` if nobody wrote since `version`; `false` when somebody did (or the
/// document is gone).
pub async fn write_data(db: &Db, id: &str, version: i64, data: &Value) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE documents SET data = $3, version = version + 1, updated_at = $4 \
         WHERE id = $1 AND version = $2";
    let done = with_db!(db, p => sqlx::query(SQL).bind(id).bind(version).bind(Json(data)).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(done == 1)
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM documents WHERE id = $1";
    let done =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(done == 1)
}
