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

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<LikeRow>> {
    const SQL: &str =
        "SELECT id, user_id, entity_id, data, created_at, updated_at FROM likes WHERE id = $1";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The user's like of the entity, if any.
pub async fn of(db: &Db, user_id: &str, entity_id: &str) -> sqlx::Result<Option<LikeRow>> {
    const SQL: &str = "SELECT id, user_id, entity_id, data, created_at, updated_at FROM likes \
        WHERE user_id = $1 AND entity_id = $2";
    with_db!(db, p => sqlx::query_as(SQL).bind(user_id).bind(entity_id).fetch_optional(p).await)
}

/// A new like; a second like of the same entity by the same user is a unique violation
/// (409).
pub async fn create(db: &Db, user_id: &str, entity_id: &str) -> sqlx::Result<LikeRow> {
    const SQL: &str = "INSERT INTO likes (id, user_id, entity_id, data, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $5) RETURNING id, user_id, entity_id, data, created_at, updated_at";
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query_as(SQL).bind(&id).bind(user_id).bind(entity_id)
        .bind(Json(Value::Object(Default::default()))).bind(crate::db::now()).fetch_one(p).await)
}

/// Moves the like to another entity.
pub async fn set_entity(db: &Db, id: &str, entity_id: &str) -> sqlx::Result<Option<LikeRow>> {
    const SQL: &str = "UPDATE likes SET entity_id = $2, updated_at = $3 WHERE id = $1 \
        RETURNING id, user_id, entity_id, data, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(entity_id).bind(crate::db::now()).fetch_optional(p).await)
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM likes WHERE id = $1";
    let done =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(done == 1)
}

/// Who liked an entity: the number, and the newest `limit` likers (id and username).
pub async fn of_entity(
    db: &Db,
    entity_id: &str,
    limit: i64,
) -> sqlx::Result<(i64, Vec<(String, Option<String>, DateTime<Utc>)>)> {
    const COUNT: &str = "SELECT COUNT(*) FROM likes l JOIN users u ON u.id = l.user_id \
        WHERE l.entity_id = $1 AND u.deleted_at IS NULL";
    const USERS: &str = "SELECT u.id, u.username, l.created_at FROM likes l \
        JOIN users u ON u.id = l.user_id WHERE l.entity_id = $1 AND u.deleted_at IS NULL \
        ORDER BY l.created_at DESC, l.id LIMIT $2";
    with_db!(db, p => {
        let count: i64 = sqlx::query_scalar(COUNT).bind(entity_id).fetch_one(p).await?;
        let users = sqlx::query_as(USERS).bind(entity_id).bind(limit).fetch_all(p).await?;
        Ok((count, users))
    })
}
