//! Localizations: one translated `value` per entity, language tag and name.

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LocalizationRow {
    pub id: String,
    pub entity_id: String,
    pub language_tag: String,
    pub name: String,
    pub value: String,
    pub user_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

macro_rules! columns {
    () => {
        "id, entity_id, language_tag, name, value, user_id, created_at, updated_at"
    };
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<LocalizationRow>> {
    const SQL: &str = concat!("SELECT ", columns!(), " FROM localizations WHERE id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// Every translation of an entity, by language then name (at most 1,000).
pub async fn of_entity(db: &Db, entity_id: &str) -> sqlx::Result<Vec<LocalizationRow>> {
    const SQL: &str = concat!(
        "SELECT ",
        columns!(),
        " FROM localizations WHERE entity_id = $1 ORDER BY language_tag, name LIMIT 1000"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(entity_id).fetch_all(p).await)
}

/// A new translation; the same entity, language and name twice is a unique violation.
pub async fn create(
    db: &Db,
    entity_id: &str,
    language_tag: &str,
    name: &str,
    value: &str,
    user_id: &str,
) -> sqlx::Result<LocalizationRow> {
    const SQL: &str = concat!(
        "INSERT INTO localizations (id, entity_id, language_tag, name, value, user_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING ",
        columns!()
    );
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query_as(SQL).bind(&id).bind(entity_id).bind(language_tag)
        .bind(name).bind(value).bind(user_id).bind(now()).fetch_one(p).await)
}

pub async fn set_value(db: &Db, id: &str, value: &str) -> sqlx::Result<Option<LocalizationRow>> {
    const SQL: &str = concat!(
        "UPDATE localizations SET value = $2, updated_at = $3 WHERE id = $1 RETURNING ",
        columns!()
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(id).bind(value).bind(now()).fetch_optional(p).await)
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM localizations WHERE id = $1";
    let n =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n == 1)
}
