//! The key-value store: namespaces (owned by the admin who made them) and entries.

use chrono::{DateTime, Utc};

use crate::db::changed::{Changed, Stale};
use crate::db::{now, Db};
use crate::with_db;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Namespace {
    pub name: String,
    pub created_at: DateTime<Utc>,
}

pub async fn namespaces(db: &Db, owner_id: &str) -> sqlx::Result<Vec<Namespace>> {
    const SQL: &str =
        "SELECT name, created_at FROM kv_namespaces WHERE owner_id = $1 ORDER BY name LIMIT 10000";
    with_db!(db, p => sqlx::query_as(SQL).bind(owner_id).fetch_all(p).await)
}

/// A new namespace; a taken name is a unique violation (409).
pub async fn create_namespace(db: &Db, name: &str, owner_id: &str) -> sqlx::Result<Namespace> {
    const SQL: &str = "INSERT INTO kv_namespaces (name, owner_id, created_at) VALUES ($1, $2, $3) \
        RETURNING name, created_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(name).bind(owner_id).bind(now()).fetch_one(p).await)
}

/// Whether `owner_id` owns the namespace.
pub async fn owns(db: &Db, name: &str, owner_id: &str) -> sqlx::Result<bool> {
    const SQL: &str = "SELECT COUNT(*) FROM kv_namespaces WHERE name = $1 AND owner_id = $2";
    let n: i64 =
        with_db!(db, p => sqlx::query_scalar(SQL).bind(name).bind(owner_id).fetch_one(p).await)?;
    Ok(n > 0)
}

/// Deletes the owner's namespace if it has no entries (one statement, so an entry
/// written meanwhile keeps it); `false` when it was not deleted.
pub async fn delete_namespace(db: &Db, name: &str, owner_id: &str) -> sqlx::Result<Changed<bool>> {
    const SQL: &str = "DELETE FROM kv_namespaces WHERE name = $1 AND owner_id = $2 \
        AND NOT EXISTS (SELECT 1 FROM kv_entries WHERE namespace = $1)";
    let n = with_db!(db, p => sqlx::query(SQL).bind(name).bind(owner_id).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(Changed::new(n == 1, Stale::KvNamespace(name.to_owned())))
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Entry {
    pub namespace: String,
    pub key: String,
    pub value: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A new entry; a taken key is a unique violation (409).
pub async fn create(db: &Db, namespace: &str, key: &str, value: &str) -> sqlx::Result<Entry> {
    const SQL: &str = "INSERT INTO kv_entries (namespace, key, value, created_at, updated_at) \
        VALUES ($1, $2, $3, $4, $4) RETURNING namespace, key, value, created_at, updated_at";
    with_db!(db, p => sqlx::query_as(SQL).bind(namespace).bind(key).bind(value).bind(now()).fetch_one(p).await)
}

/// The entry, if the namespace is `owner_id`'s (one query for the read path).
pub async fn get_owned(
    db: &Db,
    namespace: &str,
    key: &str,
    owner_id: &str,
) -> sqlx::Result<Option<Entry>> {
    const SQL: &str = "SELECT e.namespace, e.key, e.value, e.created_at, e.updated_at \
        FROM kv_entries e JOIN kv_namespaces n ON n.name = e.namespace \
        WHERE e.namespace = $1 AND e.key = $2 AND n.owner_id = $3";
    with_db!(db, p => sqlx::query_as(SQL).bind(namespace).bind(key).bind(owner_id).fetch_optional(p).await)
}

/// Replaces an existing value; `None` when there is no such entry (never creates).
pub async fn update(
    db: &Db,
    namespace: &str,
    key: &str,
    value: &str,
) -> sqlx::Result<Option<Changed<Entry>>> {
    const SQL: &str = "UPDATE kv_entries SET value = $3, updated_at = $4 \
        WHERE namespace = $1 AND key = $2 RETURNING namespace, key, value, created_at, updated_at";
    let entry: Option<Entry> = with_db!(db, p => sqlx::query_as(SQL).bind(namespace).bind(key).bind(value).bind(now()).fetch_optional(p).await)?;
    Ok(entry.map(|e| Changed::new(e, stale(namespace, key))))
}

pub async fn delete(db: &Db, namespace: &str, key: &str) -> sqlx::Result<Changed<bool>> {
    const SQL: &str = "DELETE FROM kv_entries WHERE namespace = $1 AND key = $2";
    let n = with_db!(db, p => sqlx::query(SQL).bind(namespace).bind(key).execute(p).await.map(|r| r.rows_affected()))?;
    Ok(Changed::new(n == 1, stale(namespace, key)))
}

/// What a change to one entry makes stale.
fn stale(namespace: &str, key: &str) -> Stale {
    Stale::Kv {
        namespace: namespace.to_owned(),
        key: key.to_owned(),
    }
}
