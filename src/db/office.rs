//! Office (workspace-access) applications.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct Application {
    pub id: String,
    pub user_id: String,
    pub status: crate::states::ApplicationStatus,
    pub data: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One application per user: a second apply surfaces as a unique violation.
pub async fn create(db: &Db, user_id: &str, data: &Value) -> sqlx::Result<Application> {
    const SQL: &str = "INSERT INTO office_applications (id, user_id, status, data, created_at, updated_at) \
        VALUES ($1, $2, 'pending', $3, $4, $4) RETURNING id, user_id, status, data, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL)
        .bind(uuid::Uuid::new_v4().to_string()).bind(user_id).bind(Json(data)).bind(now())
        .fetch_one(p).await)
}

pub async fn by_user(db: &Db, user_id: &str) -> sqlx::Result<Option<Application>> {
    const SQL: &str = "SELECT id, user_id, status, data, created_at, updated_at \
        FROM office_applications WHERE user_id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).fetch_optional(p).await)
}

pub async fn by_id(db: &Db, id: &str) -> sqlx::Result<Option<Application>> {
    const SQL: &str = "SELECT id, user_id, status, data, created_at, updated_at \
        FROM office_applications WHERE id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// Newest first.
pub async fn list(db: &Db) -> sqlx::Result<Vec<Application>> {
    const SQL: &str = "SELECT id, user_id, status, data, created_at, updated_at \
        FROM office_applications ORDER BY created_at DESC, id";
    with_db!(db, p => sqlx::query_as(SQL).fetch_all(p).await)
}

pub async fn update(
    db: &Db,
    id: &str,
    status: crate::states::ApplicationStatus,
    data: &Value,
) -> sqlx::Result<Option<Application>> {
    const SQL: &str = "UPDATE office_applications SET status = $2, data = $3, updated_at = $4 \
        WHERE id = $1 RETURNING id, user_id, status, data, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(status).bind(Json(data)).bind(now())
        .fetch_optional(p).await)
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query("DELETE FROM office_applications WHERE id = $1")
        .bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}
