//! Deployment facts every process checks at start (`settings`), the claims that make
//! periodic work run once per round across processes (`periodic_leases`, `periodic_runs`),
//! and the plinth processes connected to a PostgreSQL database.

use crate::db::{BeginWrite, Db};
use crate::with_db;

pub async fn get(db: &Db, name: &str) -> sqlx::Result<Option<String>> {
    with_db!(db, p => sqlx::query_scalar("SELECT value FROM settings WHERE name = $1")
        .bind(name).fetch_optional(p).await)
}

/// Stores `value` unless the setting exists; the first of processes starting together
/// wins, and every one of them then reads the winner's value back.
pub async fn put_if_absent(db: &Db, name: &str, value: &str) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query(
        "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"
    ).bind(name).bind(value).execute(p).await.map(|_| ()))
}

/// The holder of the periodic task `name` and the end of the round it claimed.
pub async fn lease(db: &Db, name: &str) -> sqlx::Result<Option<(String, i64)>> {
    with_db!(db, p => sqlx::query_as("SELECT holder, until_ms FROM periodic_leases WHERE name = $1")
        .bind(name).fetch_optional(p).await)
}

/// Claims round `until_ms` of the periodic task `name` for `holder`: true for exactly one
/// caller per round whatever the number of processes, because the one conditional upsert
/// succeeds only while the previous claim's round has ended, or is still held by
/// `dead_holder` (a process known to have died; its round is taken over). PostgreSQL
/// re-checks the condition on the row a concurrent claim just wrote; SQLite has one
/// writer. The run is recorded, and that task's runs older than `keep_from_ms` are pruned.
pub async fn claim_round(
    db: &Db,
    name: &str,
    holder: &str,
    now_ms: i64,
    until_ms: i64,
    keep_from_ms: i64,
    dead_holder: Option<&str>,
) -> sqlx::Result<bool> {
    with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let claimed = sqlx::query(
            "INSERT INTO periodic_leases (name, holder, until_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms \
             WHERE periodic_leases.until_ms <= $4 OR periodic_leases.holder = $5",
        )
        .bind(name).bind(holder).bind(until_ms).bind(now_ms).bind(dead_holder)
        .execute(&mut *tx).await?
        .rows_affected() == 1;
        if !claimed {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query("INSERT INTO periodic_runs (name, until_ms, holder, ran_ms) VALUES ($1, $2, $3, $4)")
            .bind(name).bind(until_ms).bind(holder).bind(now_ms)
            .execute(&mut *tx).await?;
        sqlx::query("DELETE FROM periodic_runs WHERE name = $1 AND ran_ms < $2")
            .bind(name).bind(keep_from_ms)
            .execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    })
}

/// Whether the process named `process` (`plinth-worker:<host>:<pid>`) still has a session
/// on this PostgreSQL database; `None` on SQLite, which has no sessions to list.
pub async fn connected(db: &Db, process: &str) -> sqlx::Result<Option<bool>> {
    match db {
        Db::Sqlite(_) => Ok(None),
        Db::Postgres(p) => sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity \
             WHERE datname = current_database() AND application_name = $1)",
        )
        .bind(process)
        .fetch_one(p)
        .await
        .map(Some),
    }
}

/// Hosts with a `plinth serve` or `plinth worker` connected to this PostgreSQL database,
/// from the `application_name` each sets (`plinth-serve:<host>:<pid>`). Command-line
/// runs (`plinth-cli:…`) touch no objects and are not counted. SQLite has no sessions to
/// list: every process on a SQLite file shares its host, so the list is empty there.
/// How many `plinth serve` processes have sessions on the database (0 on SQLite).
pub async fn serve_processes(db: &Db) -> sqlx::Result<i64> {
    match db {
        Db::Sqlite(_) => Ok(0),
        Db::Postgres(p) => {
            sqlx::query_scalar(
                "SELECT COUNT(DISTINCT application_name) FROM pg_stat_activity \
                 WHERE datname = current_database() AND application_name LIKE 'plinth-serve:%'",
            )
            .fetch_one(p)
            .await
        }
    }
}

pub async fn plinth_hosts(db: &Db) -> sqlx::Result<Vec<String>> {
    match db {
        Db::Sqlite(_) => Ok(Vec::new()),
        Db::Postgres(p) => {
            sqlx::query_scalar(
                "SELECT DISTINCT split_part(application_name, ':', 2) FROM pg_stat_activity \
                 WHERE datname = current_database() \
                 AND (application_name LIKE 'plinth-serve:%' OR application_name LIKE 'plinth-worker:%') \
                 ORDER BY 1",
            )
            .fetch_all(p)
            .await
        }
    }
}

/// How many accounts are platform administrators (level 100): none on a fresh
/// deployment, which `serve` then says how to make.
pub async fn administrators(db: &Db) -> sqlx::Result<i64> {
    with_db!(db, p => sqlx::query_scalar(
        "SELECT COUNT(*) FROM users WHERE level >= 100 AND deleted_at IS NULL"
    ).fetch_one(p).await)
}
