//! Waitlist entries of an organization: `pending` or `accepted`.

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::states::WaitlistStatus;
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Entry {
    pub id: String,
    pub organization_id: String,
    pub email: String,
    pub status: WaitlistStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Adds a pending entry; a duplicate changes nothing. `true` when it was new.
pub async fn add(db: &Db, org_id: &str, email: &str) -> sqlx::Result<bool> {
    let now = now();
    let n = with_db!(db, p => sqlx::query(
        "INSERT INTO waitlist_entries (id, organization_id, email, status, created_at, updated_at) \
         VALUES ($1, $2, $3, 'pending', $4, $4) ON CONFLICT (organization_id, email) DO NOTHING"
    ).bind(uuid::Uuid::new_v4().to_string()).bind(org_id).bind(email).bind(now)
     .execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

/// Newest first.
pub async fn list(db: &Db, org_id: &str, limit: i64, offset: i64) -> sqlx::Result<Vec<Entry>> {
    const SQL: &str = "SELECT id, organization_id, email, status, created_at, updated_at \
        FROM waitlist_entries WHERE organization_id = $1 \
        ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3";
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).bind(limit).bind(offset).fetch_all(p).await)
}

pub async fn get(db: &Db, org_id: &str, email: &str) -> sqlx::Result<Option<Entry>> {
    const SQL: &str = "SELECT id, organization_id, email, status, created_at, updated_at \
        FROM waitlist_entries WHERE organization_id = $1 AND email = $2";
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).bind(email).fetch_optional(p).await)
}

/// Moves an entry from `from` to `to`; `None` when it was not in `from` (already moved,
/// or no entry), so a repeat is detected atomically.
pub async fn transition(
    db: &Db,
    org_id: &str,
    email: &str,
    from: WaitlistStatus,
    to: WaitlistStatus,
) -> sqlx::Result<Option<Entry>> {
    const SQL: &str = "UPDATE waitlist_entries SET status = $4, updated_at = $5 \
        WHERE organization_id = $1 AND email = $2 AND status = $3 \
        RETURNING id, organization_id, email, status, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(org_id).bind(email).bind(from).bind(to).bind(now())
        .fetch_optional(p).await)
}

pub async fn pending_emails(db: &Db, org_id: &str) -> sqlx::Result<Vec<String>> {
    let rows: Vec<(String,)> = with_db!(db, p => sqlx::query_as(
        "SELECT email FROM waitlist_entries WHERE organization_id = $1 AND status = 'pending' ORDER BY created_at, id"
    ).bind(org_id).fetch_all(p).await)?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

pub async fn count(db: &Db, org_id: &str) -> sqlx::Result<i64> {
    let (n,): (i64,) = with_db!(db, p => sqlx::query_as(
        "SELECT COUNT(*) FROM waitlist_entries WHERE organization_id = $1"
    ).bind(org_id).fetch_one(p).await)?;
    Ok(n)
}
