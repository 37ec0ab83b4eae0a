//! Team-preview partner domains.

use chrono::{DateTime, Utc};

use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, sqlx::FromRow)]
pub struct Granted {
    pub domain: String,
    pub added_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

pub async fn list(db: &Db) -> sqlx::Result<Vec<Granted>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT domain, added_by, created_at FROM public_access_domains ORDER BY domain"
    ).fetch_all(p).await)
}

pub async fn contains(db: &Db, domain: &str) -> sqlx::Result<bool> {
    let row: Option<(String,)> = with_db!(db, p => sqlx::query_as(
        "SELECT domain FROM public_access_domains WHERE domain = $1"
    ).bind(domain).fetch_optional(p).await)?;
    Ok(row.is_some())
}

/// `true` when newly added.
pub async fn add(db: &Db, domain: &str, by: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query(
        "INSERT INTO public_access_domains (domain, added_by, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (domain) DO NOTHING"
    ).bind(domain).bind(by).bind(now()).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}

pub async fn remove(db: &Db, domain: &str) -> sqlx::Result<bool> {
    let n = with_db!(db, p => sqlx::query("DELETE FROM public_access_domains WHERE domain = $1")
        .bind(domain).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(n > 0)
}
