//! Likes (the likes area adds writes; the viewer's list reads them here).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::Db;
use crate::with_db;

#[derive(Debug, sqlx::FromRow, serde::Serialize)]
pub struct LikeRow {
    pub id: String,
    pub user_id: String,
    pub entity_id: String,
    pub data: Json<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn by_user(db: &Db, user_id: &str) -> sqlx::Result<Vec<LikeRow>> {
    const SQL: &str = "SELECT id, user_id, entity_id, data, created_at, updated_at FROM likes \
        WHERE user_id = $1 ORDER BY created_at DESC, id";
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).fetch_all(p).await)
}
