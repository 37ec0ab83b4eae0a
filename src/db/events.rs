//! Calendar events: organization-scoped, with a time range, a status and a visibility.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{now, Db};
use crate::states::Visibility;
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: String,
    pub organization_id: String,
    pub domain: String,
    pub begins_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// Free text (the spec names no set): `pending` by default, `approved` to publish.
    pub status: String,
    pub visibility: Visibility,
    pub data: Json<Value>,
    pub created_by: Option<String>,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The fields of a new event or of an event's next state.
pub struct EventFields<'a> {
    pub begins_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub status: &'a str,
    pub visibility: Visibility,
    pub data: &'a Value,
}

macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT e.id, e.organization_id, o.domain, e.begins_at, e.ends_at, e.status, \
             e.visibility, e.data, e.created_by, e.version, e.created_at, e.updated_at \
             FROM calendar_events e JOIN organizations o ON o.id = e.organization_id ",
            $tail
        )
    };
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<EventRow>> {
    const SQL: &str = select!("WHERE e.id = $1");
    with_db!(db, p => sqlx::query_as(SQL).bind(id).fetch_optional(p).await)
}

/// The organization's events in start order; `public_only` keeps approved public ones.
pub async fn list(
    db: &Db,
    org_id: &str,
    public_only: bool,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<EventRow>, i64)> {
    const SQL: &str = select!(
        "WHERE e.organization_id = $1 \
         AND (NOT $2 OR (e.status = 'approved' AND e.visibility = 'public')) \
         ORDER BY e.begins_at, e.id LIMIT $3 OFFSET $4"
    );
    const COUNT: &str = "SELECT COUNT(*) FROM calendar_events WHERE organization_id = $1 \
         AND (NOT $2 OR (status = 'approved' AND visibility = 'public'))";
    with_db!(db, p => {
        let rows = sqlx::query_as(SQL).bind(org_id).bind(public_only).bind(limit).bind(offset).fetch_all(p).await?;
        let total: i64 = sqlx::query_scalar(COUNT).bind(org_id).bind(public_only).fetch_one(p).await?;
        Ok((rows, total))
    })
}

/// Events of the organization whose time range overlaps `[begins_at, ends_at)` (ranges
/// that only touch do not), cancelled and rejected ones aside.
pub async fn overlapping(
    db: &Db,
    org_id: &str,
    begins_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
) -> sqlx::Result<Vec<EventRow>> {
    const SQL: &str = select!(
        "WHERE e.organization_id = $1 AND e.begins_at < $3 AND e.ends_at > $2 \
         AND e.status NOT IN ('cancelled', 'rejected') ORDER BY e.begins_at, e.id LIMIT 500"
    );
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).bind(begins_at).bind(ends_at).fetch_all(p).await)
}

pub async fn create(
    db: &Db,
    org_id: &str,
    f: &EventFields<'_>,
    created_by: &str,
) -> sqlx::Result<String> {
    const SQL: &str = "INSERT INTO calendar_events (id, organization_id, begins_at, ends_at, status, \
         visibility, data, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)";
    let id = uuid::Uuid::new_v4().to_string();
    with_db!(db, p => sqlx::query(SQL).bind(&id).bind(org_id).bind(f.begins_at).bind(f.ends_at)
        .bind(f.status).bind(f.visibility).bind(Json(f.data)).bind(created_by).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(id)
}

/// Writes the event's next state if nobody wrote since `version`.
pub async fn write(db: &Db, id: &str, version: i64, f: &EventFields<'_>) -> sqlx::Result<bool> {
    const SQL: &str = "UPDATE calendar_events SET begins_at = $3, ends_at = $4, status = $5, \
         visibility = $6, data = $7, version = version + 1, updated_at = $8 WHERE id = $1 AND version = $2";
    let done = with_db!(db, p => sqlx::query(SQL).bind(id).bind(version).bind(f.begins_at).bind(f.ends_at)
        .bind(f.status).bind(f.visibility).bind(Json(f.data)).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(done == 1)
}

pub async fn delete(db: &Db, id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "DELETE FROM calendar_events WHERE id = $1";
    let done =
        with_db!(db, p => sqlx::query(SQL).bind(id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(done == 1)
}
