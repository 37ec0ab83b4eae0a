//! Data access. One pool type per backend, chosen at run time from the URL scheme
//! (vaultwarden's shape). Queries are written once as `$n`-numbered SQL, which both
//! sqlx-sqlite and sqlx-postgres accept, and run through [`with_db!`], which compiles the
//! body once per backend so each gets its own row and argument types.

pub mod analytics;
pub mod cache;
pub mod callbacks;
pub mod changed;
pub mod copy;
pub mod credits;
pub mod documents;
pub mod downloads;
pub mod events;
pub mod files;
pub mod grants;
pub mod idempotency;
pub mod inventory;
pub mod jobs;
pub mod kv;
pub mod licenses;
pub mod likes;
pub mod localizations;
pub mod marketplace;
pub mod office;
pub mod orders;
pub mod organizations;
pub mod payments;
pub mod posts;
pub mod public_access;
pub mod rate;
pub mod settings;
pub mod sketch;
pub mod slides;
pub mod telemetry;
pub mod things;
pub mod users;
pub mod waitlist;
pub mod watch;

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// Begins a transaction that writes. SQLite's plain `BEGIN` is deferred: the write lock
/// is taken at the first write, and if another connection committed since this one
/// started reading, that upgrade fails at once with "database is locked" (the busy
/// timeout does not apply), a 500 under concurrent writes. `BEGIN IMMEDIATE` takes the
/// write lock up front, waiting out the busy timeout like any other writer. PostgreSQL
/// needs nothing special.
pub trait BeginWrite {
    type Database: sqlx::Database;
    fn begin_write(
        &self,
    ) -> impl std::future::Future<Output = sqlx::Result<sqlx::Transaction<'static, Self::Database>>> + Send;
}

impl BeginWrite for SqlitePool {
    type Database = sqlx::Sqlite;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

impl BeginWrite for PgPool {
    type Database = sqlx::Postgres;
    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        self.begin().await
    }
}

/// How long a request waits for a pooled connection before it is told the database is
/// unavailable (503, `Retry-After`): an unreachable or exhausted database answers within
/// seconds instead of holding every request (issue 36).
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the background checkpointer copies SQLite's log back: a page changed by
/// many commits in between is copied once.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// How long a SQLite writer waits for the write lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a pooled connection may be handed out: not inside a transaction. A statement
/// that fails with a full disk or an I/O error makes SQLite roll its transaction back by
/// itself; sqlx's own `ROLLBACK` then fails ("no transaction is active") and its
/// transaction depth stays at one, so every later `BEGIN` on that connection failed
/// ("begin_with at non-zero transaction depth") until a restart (issue 36). Such a
/// connection is closed and replaced instead of reused.
fn clean<C: sqlx::Connection>(conn: &C) -> bool {
    let clean = !conn.is_in_transaction();
    if !clean {
        tracing::warn!("a pooled connection was left inside a transaction; replaced");
    }
    clean
}

#[derive(Clone)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the concrete pool of whichever backend is in use.
#[macro_export]
macro_rules! with_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite($pool) => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}

impl Db {
    /// `process` names the process's sessions on PostgreSQL (`application_name`, seen in
    /// `pg_stat_activity`): `plinth-serve:<host>:<pid>` and the like (docs/scaling.md).
    pub async fn connect(url: &str, process: &str) -> anyhow::Result<Db> {
        Self::open(url, process, true).await
    }

    /// Like [`Db::connect`], but a SQLite file that does not exist is an error, never
    /// created (operator commands).
    pub async fn connect_existing(url: &str, process: &str) -> anyhow::Result<Db> {
        Self::open(url, process, false).await
    }

    async fn open(url: &str, process: &str, create: bool) -> anyhow::Result<Db> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // A hung statement must not hold a credit shard (and the requests behind it)
            // indefinitely: 30 s is far above any query plinth makes (finding M9).
            // NOTICEs ("relation already exists, skipping" from idempotent migrations)
            // are not news to an operator: only warnings and errors reach the log.
            let opts = sqlx::postgres::PgConnectOptions::from_str(url)?
                .options([
                    ("statement_timeout", "30s"),
                    ("client_min_messages", "warning"),
                ])
                .application_name(process);
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .before_acquire(|conn, _| Box::pin(async move { Ok(clean(&*conn)) }))
                .connect_with(opts)
                .await?;
            Ok(Db::Postgres(pool))
        } else if url.starts_with("sqlite:") {
            let opts = SqliteConnectOptions::from_str(url)?
                .create_if_missing(create)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(BUSY_TIMEOUT)
                // Pages of the database file are read through a mapping instead of one
                // `pread` each; temporary tables and statement journals stay in memory
                // instead of files made and unlinked per statement (issue 46).
                .pragma("mmap_size", "268435456")
                .pragma("temp_store", "memory");
            // A SQLite connection is a local file handle that cannot go stale: no ping
            // (a round trip to the connection's thread) before every use, only the check
            // that it is not left inside a transaction (an atomic load).
            let pool = SqlitePoolOptions::new()
                .max_connections(8)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .test_before_acquire(false)
                .before_acquire(|conn, _| Box::pin(async move { Ok(clean(&*conn)) }))
                .connect_with(opts)
                .await?;
            Ok(Db::Sqlite(pool))
        } else {
            anyhow::bail!("unsupported database URL (expected sqlite:// or postgres://): {url}")
        }
    }

    /// A handle for one serial writer (the credit ledger): on SQLite, a pool of one
    /// connection over the same file and settings, so the pages that writer touches stay
    /// in its connection's cache from one transaction to the next (a pooled connection's
    /// cache is dropped whenever another connection wrote, and each batch then read its
    /// pages again); on PostgreSQL, the shared pool (the server keeps the cache).
    pub fn serial_writer(&self) -> Db {
        match self {
            Db::Sqlite(pool) => Db::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .test_before_acquire(false)
                    .before_acquire(|conn, _| Box::pin(async move { Ok(clean(&*conn)) }))
                    // Room for the ledger's working set (accounts and the newest index
                    // pages) beside SQLite's 2 MB default; filled only as it is used.
                    .connect_lazy_with(
                        (*pool.connect_options())
                            .clone()
                            .pragma("cache_size", "-16384"),
                    ),
            ),
            Db::Postgres(_) => self.clone(),
        }
    }

    /// Checkpoints SQLite's write-ahead log in the background, so the commit that
    /// crosses the log's size limit does not pay for copying pages back and syncing
    /// both files while every writer behind it waits (issue 46). A passive checkpoint
    /// takes no lock a writer needs; the automatic one stays as the backstop.
    pub fn spawn_checkpointer(&self) {
        let Db::Sqlite(pool) = self else {
            return;
        };
        let pool = pool.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if pool.is_closed() {
                    return;
                }
                if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                    .execute(&pool)
                    .await
                {
                    tracing::debug!(error = %e, "background checkpoint failed");
                }
            }
        });
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Our own migrations. The job queue keeps its own migration history next to ours
    /// (apalis uses sqlx's default table too), so each migrator ignores the other's rows.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(pool) => {
                let mut m = sqlx::migrate!("./migrations/sqlite");
                m.set_ignore_missing(true);
                m.run(pool).await?;
            }
            Db::Postgres(pool) => {
                let mut m = sqlx::migrate!("./migrations/postgres");
                m.set_ignore_missing(true);
                m.run(pool).await?;
            }
        }
        Ok(())
    }

    /// This process's pool: (open connections, idle ones).
    pub fn pool_use(&self) -> (usize, usize) {
        match self {
            Db::Sqlite(p) => (p.size() as usize, p.num_idle()),
            Db::Postgres(p) => (p.size() as usize, p.num_idle()),
        }
    }

    pub async fn ping(&self) -> bool {
        with_db!(self, p => sqlx::query("SELECT 1").execute(p).await.is_ok())
    }

    /// Whether a write commits now: this process's row of `readiness_probe` updated
    /// (rows of processes gone for a day are dropped on the way).
    pub async fn probe_write(&self, process: &str) -> bool {
        let now = now();
        let written = with_db!(self, p => sqlx::query(
            "INSERT INTO readiness_probe (process, at) VALUES ($1, $2) \
             ON CONFLICT (process) DO UPDATE SET at = excluded.at"
        ).bind(process).bind(now).execute(p).await.map(|_| ()));
        let _ = with_db!(self, p => sqlx::query("DELETE FROM readiness_probe WHERE at < $1")
            .bind(now - chrono::TimeDelta::days(1)).execute(p).await.map(|_| ()));
        match written {
            Ok(()) => true,
            Err(e) => {
                if outage(&e).is_some() {
                    note_outage();
                }
                false
            }
        }
    }
}

/// The name of the unique constraint or column a violation is about, if the error is one.
/// Callers turn it into a 409 (realworld-axum-sqlx's `on_constraint`), instead of
/// checking first and inserting after.
pub fn unique_violation(err: &sqlx::Error) -> Option<String> {
    let db = err.as_database_error()?;
    if !matches!(db.kind(), sqlx::error::ErrorKind::UniqueViolation) {
        return None;
    }
    // PostgreSQL names the constraint (users_username_key); SQLite names the column
    // in the message ("UNIQUE constraint failed: users.username").
    Some(
        db.constraint()
            .map(str::to_owned)
            .unwrap_or_else(|| db.message().to_owned()),
    )
}

/// The change refers to a row that is gone (a deck deleted while an image was being
/// uploaded to it), or deletes one that rows still refer to: a race between two clients,
/// not a fault of ours. Answered 409 (`ApiError::from`).
pub fn foreign_key_violation(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .is_some_and(|db| matches!(db.kind(), sqlx::error::ErrorKind::ForeignKeyViolation))
}

/// A failure of the database itself, not of the request nor a bug of ours: unreachable,
/// restarting, full, read-only, locked too long, or slower than its deadline. Answered
/// 503 with `Retry-After` (`ApiError::from`), noted for `/readyz` ([`health`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// Nothing was applied: the request failed before or while its transaction ran, and
    /// the database rolled it back.
    NotApplied,
    /// The connection broke while a statement was in flight: a commit may have landed.
    Unknown,
}

/// Which [`Outage`] an error is, if it is one.
pub fn outage(err: &sqlx::Error) -> Option<Outage> {
    use sqlx::Error as E;
    match err {
        E::PoolTimedOut | E::PoolClosed | E::BeginFailed | E::InvalidSavePointStatement => {
            Some(Outage::NotApplied)
        }
        E::Io(_) | E::Tls(_) | E::Protocol(_) | E::WorkerCrashed => Some(Outage::Unknown),
        // A PostgreSQL SQLSTATE has five characters; SQLite's extended codes at most four
        // digits.
        E::Database(db) => match db.code()? {
            code if code.len() == 5 => postgres_outage(&code),
            code => sqlite_outage(&code),
        },
        _ => None,
    }
}

/// When this process last saw the database fail as an [`Outage`] (Unix milliseconds; 0:
/// never). `/readyz` stays unready while outages are recent, since a probe's small write
/// can succeed where requests fail (a full disk with room left in SQLite's WAL).
static LAST_OUTAGE_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Notes that the database just failed as an outage.
pub fn note_outage() {
    let ms = chrono::Utc::now().timestamp_millis();
    LAST_OUTAGE_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the database failed as an outage within `window`.
pub fn outage_within(window: Duration) -> bool {
    let last = LAST_OUTAGE_MS.load(std::sync::atomic::Ordering::Relaxed);
    let window = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    last > 0 && chrono::Utc::now().timestamp_millis() - last < window
}

/// PostgreSQL: 08 connection exception and 57P01/57P02 shutdown (a commit may have been
/// in flight); 53 insufficient resources (53100 disk full), 58 system error, 57P03 not
/// yet accepting connections, 25006 read-only, 57014 statement timeout, 40001 and 40P01
/// serialization failure and deadlock (rolled back: nothing applied).
fn postgres_outage(code: &str) -> Option<Outage> {
    match code {
        c if c.starts_with("08") => Some(Outage::Unknown),
        "57P01" | "57P02" => Some(Outage::Unknown),
        c if c.starts_with("53") || c.starts_with("58") => Some(Outage::NotApplied),
        "57P03" | "25006" | "57014" | "40001" | "40P01" => Some(Outage::NotApplied),
        _ => None,
    }
}

/// SQLite: the extended result code's primary code. BUSY (5), LOCKED (6), NOMEM (7),
/// READONLY (8), IOERR (10), CORRUPT (11), FULL (13), CANTOPEN (14), PROTOCOL (15). A
/// failed SQLite transaction is rolled back whole: nothing applied.
fn sqlite_outage(code: &str) -> Option<Outage> {
    let code: i64 = code.parse().ok()?;
    matches!(code & 0xff, 5..=8 | 10 | 11 | 13..=15).then_some(Outage::NotApplied)
}

/// Whether the database refused text it cannot store: PostgreSQL takes no NUL character
/// in `TEXT` (22021) or `\u0000` in `JSONB` (22P05). The client sent it: a 400, not ours.
pub fn unstorable_text(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|db| db.code())
        .is_some_and(|code| code == "22021" || code == "22P05")
}

/// The `VALUES` of a multi-row insert: `rows` rows of `cols` numbered placeholders each
/// (`($1, $2), ($3, $4)`; the same text on both databases), `extra` naming a placeholder
/// of the row repeated at its end (the orders' `updated_at`).
pub fn values_sql(rows: usize, cols: usize, extra: Option<usize>) -> String {
    (0..rows)
        .map(|r| {
            let mut ps: Vec<String> = (1..=cols).map(|c| format!("${}", r * cols + c)).collect();
            if let Some(e) = extra {
                ps.push(format!("${}", r * cols + e));
            }
            format!("({})", ps.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

#[cfg(test)]
mod violation_tests {
    /// A real violation of each kind, from SQLite, is recognised (and `ApiError::from`
    /// answers it 409, never 500).
    #[tokio::test]
    async fn unique_and_foreign_key_violations_are_recognised() {
        use sqlx::sqlite::SqliteConnectOptions;
        use std::str::FromStr;
        let opts = SqliteConnectOptions::from_str("sqlite::memory:")
            .unwrap()
            .foreign_keys(true);
        let pool = sqlx::SqlitePool::connect_with(opts).await.unwrap();
        for sql in [
            "CREATE TABLE decks (id TEXT PRIMARY KEY)",
            "CREATE TABLE assets (id TEXT PRIMARY KEY, deck_id TEXT NOT NULL REFERENCES decks(id))",
            "INSERT INTO decks VALUES ('d')",
        ] {
            sqlx::query(sql).execute(&pool).await.unwrap();
        }
        let orphan = sqlx::query("INSERT INTO assets VALUES ('a', 'gone')")
            .execute(&pool)
            .await
            .unwrap_err();
        assert!(super::foreign_key_violation(&orphan));
        assert!(super::unique_violation(&orphan).is_none());
        let api = crate::http::error::ApiError::from(orphan);
        assert_eq!(api.status, axum::http::StatusCode::CONFLICT);
        let twice = sqlx::query("INSERT INTO decks VALUES ('d')")
            .execute(&pool)
            .await
            .unwrap_err();
        assert!(!super::foreign_key_violation(&twice));
        assert!(super::unique_violation(&twice).is_some());
    }
}

#[cfg(test)]
mod values_tests {
    #[test]
    fn values_numbers_placeholders_row_by_row() {
        assert_eq!(super::values_sql(2, 2, None), "($1, $2), ($3, $4)");
        assert_eq!(
            super::values_sql(2, 3, Some(3)),
            "($1, $2, $3, $3), ($4, $5, $6, $6)"
        );
    }
}

/// A JSON column that holds what callers wrote (post `data`), selected as text
/// (`CAST(col AS TEXT)`, the same SQL on both backends) and parsed leniently: a row
/// nested beyond what serde_json reads (written before the depth checks, security round
/// 2, H1) still reads, lists and deletes, with its too-deep parts as `null`.
#[derive(Debug, Clone)]
pub struct StoredJson(pub serde_json::Value);

macro_rules! stored_json_for {
    ($db:ty, $value:ty) => {
        impl sqlx::Type<$db> for StoredJson {
            fn type_info() -> <$db as sqlx::Database>::TypeInfo {
                <String as sqlx::Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as sqlx::Database>::TypeInfo) -> bool {
                <String as sqlx::Type<$db>>::compatible(ty)
            }
        }
        impl<'r> sqlx::Decode<'r, $db> for StoredJson {
            fn decode(value: $value) -> Result<Self, sqlx::error::BoxDynError> {
                let text = <&str as sqlx::Decode<$db>>::decode(value)?;
                Ok(StoredJson(crate::json_depth::parse_lenient(text)?))
            }
        }
    };
}
stored_json_for!(sqlx::Sqlite, sqlx::sqlite::SqliteValueRef<'r>);
stored_json_for!(sqlx::Postgres, sqlx::postgres::PgValueRef<'r>);
