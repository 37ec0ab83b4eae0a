//! Copying a whole SQLite deployment into an empty PostgreSQL database (`plinth db
//! copy`, issue 45): every table of ours in the order of their foreign keys, then the
//! job queue, in one PostgreSQL transaction that commits only after the copy checks out
//! (row counts per table, the ledger's sums). The source is read in one read
//! transaction, so the copy is a consistent snapshot even while a server writes.
//!
//! Values travel as `COPY … FROM STDIN` text. SQLite stores timestamps as text (our
//! tables) or epoch seconds (apalis's), booleans as 0/1, JSON as text: each value is
//! written in the form the PostgreSQL column's type reads.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{bail, Context};
use futures::TryStreamExt;
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{AssertSqlSafe, Row, TypeInfo, ValueRef};

/// SQLite tables that have no counterpart to copy: SQLite's own, the migration history
/// (the target has its own), the full-text indexes (PostgreSQL derives them from
/// generated columns) and apalis's worker registrations (processes register again).
fn skipped(table: &str) -> bool {
    table.starts_with("sqlite_")
        || table == "_sqlx_migrations"
        || table.starts_with("things_fts")
        || table.starts_with("inventory_fts")
        || table == "Workers"
}

/// PostgreSQL tables that a copy leaves alone: the rate windows are disposable and
/// exist only there.
const TARGET_ONLY: &[&str] = &["rate_windows"];

/// What a migration puts in a new database; a target holding only this is empty.
const SEEDED: &[&str] = &["settings", "analytics_rollup_state"];

/// apalis's job table on each side.
const SQLITE_JOBS: &str = "Jobs";
const PG_JOBS: &str = "apalis.jobs";

/// The copy's numbers, for the operator.
#[derive(Debug, Default)]
pub struct Report {
    /// Rows per table, in the order copied (the job queue last).
    pub tables: Vec<(String, u64)>,
    pub ledger: Ledger,
}

/// The ledger's sums, equal on both sides or the copy does not commit.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct Ledger {
    pub accounts: i64,
    pub balances: i64,
    pub transactions: i64,
    pub amounts: i64,
    /// Accounts whose balance differs from the sum of their transactions.
    pub unbalanced: i64,
}

const LEDGER_SQL: &str = "SELECT (SELECT COUNT(*) FROM credit_accounts), \
     CAST((SELECT COALESCE(SUM(balance), 0) FROM credit_accounts) AS BIGINT), \
     (SELECT COUNT(*) FROM credit_transactions), \
     CAST((SELECT COALESCE(SUM(amount), 0) FROM credit_transactions) AS BIGINT), \
     (SELECT COUNT(*) FROM credit_accounts a WHERE a.balance <> \
        (SELECT COALESCE(SUM(t.amount), 0) FROM credit_transactions t WHERE t.account_id = a.id))";

fn ledger_of(row: (i64, i64, i64, i64, i64)) -> Ledger {
    Ledger {
        accounts: row.0,
        balances: row.1,
        transactions: row.2,
        amounts: row.3,
        unbalanced: row.4,
    }
}

/// A PostgreSQL column: its name and type (`udt_name`: `int8`, `timestamptz`, …).
struct Column {
    name: String,
    udt: String,
}

/// Refuses a target that holds anything: rows in any table of ours beyond what the
/// migrations seed, a master key check other than the source's, or queued jobs.
/// `master_check` is the source's stored check value.
pub async fn check_empty(dst: &PgPool, master_check: &str) -> anyhow::Result<()> {
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' \
         AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations' ORDER BY 1",
    )
    .fetch_all(dst)
    .await?;
    let mut full = Vec::new();
    for (t,) in tables {
        if TARGET_ONLY.contains(&t.as_str()) {
            continue;
        }
        let n: i64 =
            match t.as_str() {
                "settings" => {
                    let other: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM settings WHERE name <> 'master_key_check' OR value <> $1",
                )
                .bind(master_check)
                .fetch_one(dst)
                .await?;
                    if other > 0 {
                        let key_differs: bool = sqlx::query_scalar(
                        "SELECT EXISTS (SELECT 1 FROM settings WHERE name = 'master_key_check' \
                         AND value <> $1)",
                    )
                    .bind(master_check)
                    .fetch_one(dst)
                    .await?;
                        if key_differs {
                            bail!(
                                "the target database was set up with another master key than the \
                             SQLite deployment's; copy into a new database, and start its \
                             servers with the source's key"
                            );
                        }
                    }
                    other
                }
                "analytics_rollup_state" => sqlx::query_scalar(
                    "SELECT COUNT(*) FROM analytics_rollup_state WHERE rolled_until IS NOT NULL",
                )
                .fetch_one(dst)
                .await?,
                _ => {
                    sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM \"{t}\"")))
                        .fetch_one(dst)
                        .await?
                }
            };
        if n > 0 {
            full.push(format!("{t} ({n} rows)"));
        }
    }
    let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM apalis.jobs")
        .fetch_one(dst)
        .await
        .unwrap_or(0);
    if jobs > 0 {
        full.push(format!("{PG_JOBS} ({jobs} rows)"));
    }
    if !full.is_empty() {
        let shown: Vec<_> = full.iter().take(6).cloned().collect();
        bail!(
            "the target database is not empty: {}{}. db copy writes only into an empty \
             database (createdb a new one); nothing was written",
            shown.join(", "),
            if full.len() > shown.len() {
                format!(" and {} more tables", full.len() - shown.len())
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// Copies every table of `src` into `dst` (migrated, checked empty) and verifies the
/// copy before it commits. `progress` hears each table as it is done.
pub async fn copy(
    src: &SqlitePool,
    dst: &PgPool,
    mut progress: impl FnMut(&str, u64),
) -> anyhow::Result<Report> {
    // One read transaction: every table from the same snapshot.
    let mut read = src.begin().await?;
    let source_tables: BTreeSet<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut *read)
            .await?
            .into_iter()
            .collect();

    let columns = target_columns(dst).await?;
    let order = insert_order(dst, &columns).await?;
    for t in &source_tables {
        if !skipped(t) && t != SQLITE_JOBS && !columns.contains_key(t) {
            bail!(
                "the SQLite table {t} has no table in the PostgreSQL schema: are both on \
                 the same plinth version? Nothing was written"
            );
        }
    }

    let mut write = dst.begin().await?;
    // What the migrations seeded (checked to be only that) makes way for the source's.
    for t in SEEDED {
        sqlx::query(AssertSqlSafe(format!("DELETE FROM {t}")))
            .execute(&mut *write)
            .await?;
    }
    let mut report = Report::default();
    for table in &order {
        if !source_tables.contains(table) {
            continue;
        }
        let n = copy_plinth_table(&mut read, &mut write, table, &columns[table]).await?;
        progress(table, n);
        report.tables.push((table.clone(), n));
    }
    if source_tables.contains(SQLITE_JOBS) {
        let n = copy_jobs(dst, &mut read, &mut write).await?;
        progress(PG_JOBS, n);
        report.tables.push((PG_JOBS.to_owned(), n));
    }
    continue_serials(&mut write).await?;
    report.ledger = verify(&mut read, &mut write, &report).await?;
    write.commit().await.context("committing the copy")?;
    read.rollback().await?;
    Ok(report)
}

type ReadTx = sqlx::Transaction<'static, sqlx::Sqlite>;
type WriteTx = sqlx::Transaction<'static, sqlx::Postgres>;

/// One of plinth's own tables, by the columns both schemas have (a source column the
/// target lacks is refused).
async fn copy_plinth_table(
    read: &mut ReadTx,
    write: &mut WriteTx,
    table: &str,
    cols: &[Column],
) -> anyhow::Result<u64> {
    let source_cols = sqlite_columns(read, table).await?;
    if let Some(lost) = source_cols
        .iter()
        .find(|c| !cols.iter().any(|p| &p.name == *c))
    {
        bail!(
            "the column {table}.{lost} has no column in the PostgreSQL schema; nothing was \
             written"
        );
    }
    let cols: Vec<&Column> = cols
        .iter()
        .filter(|c| source_cols.contains(&c.name))
        .collect();
    let select: Vec<String> = cols.iter().map(|c| format!("\"{}\"", c.name)).collect();
    copy_table(read, write, table, &format!("\"{table}\""), &cols, &select).await
}

/// The job queue: apalis's columns, times as epoch seconds on SQLite. A job a worker
/// held when the source stopped waits again (no worker of the target holds it).
async fn copy_jobs(dst: &PgPool, read: &mut ReadTx, write: &mut WriteTx) -> anyhow::Result<u64> {
    let cols = apalis_columns(dst).await?;
    let source_cols = sqlite_columns(read, SQLITE_JOBS).await?;
    let cols: Vec<&Column> = cols
        .iter()
        .filter(|c| source_cols.contains(&c.name))
        .collect();
    let select: Vec<String> = cols
        .iter()
        .map(|c| match c.name.as_str() {
            "status" => "CASE WHEN status IN ('Queued', 'Running') THEN 'Pending' ELSE status END"
                .to_owned(),
            "lock_by" | "lock_at" => "NULL".to_owned(),
            other => format!("\"{other}\""),
        })
        .collect();
    copy_table(read, write, SQLITE_JOBS, PG_JOBS, &cols, &select).await
}

/// Serial columns continue after the copied ids.
async fn continue_serials(write: &mut WriteTx) -> anyhow::Result<()> {
    let serials: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND column_default LIKE 'nextval(%'",
    )
    .fetch_all(&mut **write)
    .await?;
    for (t, c) in serials {
        sqlx::query(AssertSqlSafe(format!(
            "SELECT setval(pg_get_serial_sequence('{t}', '{c}'), \
             COALESCE((SELECT MAX(\"{c}\") FROM \"{t}\"), 0) + 1, false)"
        )))
        .execute(&mut **write)
        .await?;
    }
    Ok(())
}

/// Verifies the copy: every table's rows, and the ledger (returned).
async fn verify(read: &mut ReadTx, write: &mut WriteTx, report: &Report) -> anyhow::Result<Ledger> {
    for (table, copied) in &report.tables {
        let source = if table == PG_JOBS {
            SQLITE_JOBS
        } else {
            table.as_str()
        };
        let (from,): (i64,) =
            sqlx::query_as(AssertSqlSafe(format!("SELECT COUNT(*) FROM \"{source}\"")))
                .fetch_one(&mut **read)
                .await?;
        let target = if table == PG_JOBS {
            PG_JOBS.to_owned()
        } else {
            format!("\"{table}\"")
        };
        let (to,): (i64,) = sqlx::query_as(AssertSqlSafe(format!("SELECT COUNT(*) FROM {target}")))
            .fetch_one(&mut **write)
            .await?;
        if from != to || to as u64 != *copied {
            bail!(
                "{table}: {from} rows in SQLite, {to} in PostgreSQL after copying {copied}; \
                 nothing was written"
            );
        }
    }
    let from = ledger_of(sqlx::query_as(LEDGER_SQL).fetch_one(&mut **read).await?);
    let to = ledger_of(sqlx::query_as(LEDGER_SQL).fetch_one(&mut **write).await?);
    if from != to {
        bail!("the ledger differs after the copy (SQLite {from:?}, PostgreSQL {to:?}); nothing was written");
    }
    Ok(to)
}

async fn copy_table(
    read: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    write: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    source: &str,
    target: &str,
    cols: &[&Column],
    select: &[String],
) -> anyhow::Result<u64> {
    let names: Vec<String> = cols.iter().map(|c| format!("\"{}\"", c.name)).collect();
    let mut sink = write
        .copy_in_raw(&format!("COPY {target} ({}) FROM STDIN", names.join(", ")))
        .await
        .with_context(|| format!("starting the copy of {target}"))?;
    let query = format!("SELECT {} FROM \"{source}\"", select.join(", "));
    let mut rows = sqlx::query(AssertSqlSafe(query)).fetch(&mut **read);
    let mut buf = Vec::with_capacity(1 << 20);
    let mut sent = 0u64;
    let pending = async {
        while let Some(row) = rows.try_next().await? {
            for (i, col) in cols.iter().enumerate() {
                if i > 0 {
                    buf.push(b'\t');
                }
                copy_value(&row, i, col, &mut buf)
                    .with_context(|| format!("{source}.{}", col.name))?;
            }
            buf.push(b'\n');
            sent += 1;
            if buf.len() >= 1 << 20 {
                sink.send(std::mem::take(&mut buf)).await?;
            }
        }
        if !buf.is_empty() {
            sink.send(buf).await?;
        }
        anyhow::Ok(())
    }
    .await;
    if let Err(e) = pending {
        let _ = sink.abort("plinth db copy failed").await;
        return Err(e.context(format!("copying {source}")));
    }
    let copied = sink
        .finish()
        .await
        .with_context(|| format!("copying {source} into {target}"))?;
    if copied != sent {
        bail!("{target}: sent {sent} rows, PostgreSQL took {copied}");
    }
    Ok(copied)
}

/// One value of a SQLite row in `COPY` text form for the PostgreSQL column `col`.
fn copy_value(row: &SqliteRow, i: usize, col: &Column, out: &mut Vec<u8>) -> anyhow::Result<()> {
    let raw = row.try_get_raw(i)?;
    if raw.is_null() {
        out.extend_from_slice(b"\\N");
        return Ok(());
    }
    let kind = raw.type_info().name().to_owned();
    match (kind.as_str(), col.udt.as_str()) {
        ("INTEGER", "bool") => {
            let v: i64 = row.try_get_unchecked(i)?;
            out.extend_from_slice(if v != 0 { b"t" } else { b"f" });
        }
        ("INTEGER" | "REAL", "timestamptz") => {
            let v: f64 = match kind.as_str() {
                "INTEGER" => row.try_get_unchecked::<i64, _>(i)? as f64,
                _ => row.try_get_unchecked(i)?,
            };
            let at = chrono::DateTime::from_timestamp_micros((v * 1e6) as i64)
                .context("a time out of range")?;
            out.extend_from_slice(at.to_rfc3339().as_bytes());
        }
        ("INTEGER", _) => {
            let v: i64 = row.try_get_unchecked(i)?;
            out.extend_from_slice(v.to_string().as_bytes());
        }
        ("REAL", _) => {
            let v: f64 = row.try_get_unchecked(i)?;
            let text = if v.is_nan() {
                "NaN".to_owned()
            } else if v.is_infinite() {
                if v > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
            } else {
                format!("{v:?}")
            };
            out.extend_from_slice(text.as_bytes());
        }
        ("BLOB", "bytea") | ("TEXT", "bytea") => {
            let v: Vec<u8> = row.try_get_unchecked(i)?;
            out.extend_from_slice(b"\\\\x");
            out.extend_from_slice(hex::encode(v).as_bytes());
        }
        ("TEXT", "hstore") => {
            let v: String = row.try_get_unchecked(i)?;
            escape(&hstore_of_json(&v)?, out);
        }
        ("TEXT", "jsonb" | "json") if col.name == "last_result" => {
            // apalis's last result: JSON as written by apalis-sqlite, or a bare message.
            let v: String = row.try_get_unchecked(i)?;
            if serde_json::from_str::<serde::de::IgnoredAny>(&v).is_ok() {
                escape(&v, out);
            } else {
                escape(&serde_json::to_string(&v)?, out);
            }
        }
        ("TEXT", _) => {
            let v: String = row.try_get_unchecked(i)?;
            escape(&v, out);
        }
        ("BLOB", _) => {
            let v: Vec<u8> = row.try_get_unchecked(i)?;
            let v = String::from_utf8(v).context("binary data in a text column")?;
            escape(&v, out);
        }
        (other, udt) => bail!("a SQLite {other} value for a PostgreSQL {udt} column"),
    }
    Ok(())
}

/// `COPY` text escaping.
fn escape(v: &str, out: &mut Vec<u8>) {
    for b in v.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.push(b),
        }
    }
}

/// apalis-sqlite keeps a job's metadata as a JSON object; apalis-postgres as hstore.
fn hstore_of_json(json: &str) -> anyhow::Result<String> {
    let map: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(json).context("job metadata that is not a JSON object")?;
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    Ok(map
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::Null => "NULL".to_owned(),
                serde_json::Value::String(s) => quote(s),
                other => quote(&other.to_string()),
            };
            format!("{}=>{v}", quote(k))
        })
        .collect::<Vec<_>>()
        .join(", "))
}

async fn sqlite_columns(
    read: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    table: &str,
) -> anyhow::Result<Vec<String>> {
    Ok(sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT name FROM pragma_table_info('{table}')"
    )))
    .fetch_all(&mut **read)
    .await?)
}

/// Every public table's copyable columns (generated ones are derived, not copied).
async fn target_columns(dst: &PgPool) -> anyhow::Result<HashMap<String, Vec<Column>>> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.table_name::text, c.column_name::text, c.udt_name::text \
         FROM information_schema.columns c JOIN information_schema.tables t \
         ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
         WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' \
         AND c.is_generated = 'NEVER' AND c.table_name <> '_sqlx_migrations' \
         ORDER BY c.table_name, c.ordinal_position",
    )
    .fetch_all(dst)
    .await?;
    let mut out: HashMap<String, Vec<Column>> = HashMap::new();
    for (t, name, udt) in rows {
        out.entry(t).or_default().push(Column { name, udt });
    }
    for t in TARGET_ONLY {
        out.remove(*t);
    }
    Ok(out)
}

async fn apalis_columns(dst: &PgPool) -> anyhow::Result<Vec<Column>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT column_name::text, udt_name::text FROM information_schema.columns \
         WHERE table_schema = 'apalis' AND table_name = 'jobs' ORDER BY ordinal_position",
    )
    .fetch_all(dst)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, udt)| Column { name, udt })
        .collect())
}

/// The tables in an order where every row's foreign keys point at rows already copied
/// (a table referring to itself is copied in one statement, which PostgreSQL checks at
/// its end).
async fn insert_order(
    dst: &PgPool,
    columns: &HashMap<String, Vec<Column>>,
) -> anyhow::Result<Vec<String>> {
    let edges: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c \
         JOIN pg_namespace n ON n.oid = c.connamespace \
         WHERE c.contype = 'f' AND n.nspname = 'public'",
    )
    .fetch_all(dst)
    .await?;
    let mut needs: BTreeMap<&str, BTreeSet<&str>> = columns
        .keys()
        .map(|t| (t.as_str(), BTreeSet::new()))
        .collect();
    for (from, to) in &edges {
        let from = from.trim_matches('"');
        let to = to.trim_matches('"');
        if from != to && needs.contains_key(to) {
            if let Some(set) = needs.get_mut(from) {
                set.insert(to);
            }
        }
    }
    let mut order = Vec::with_capacity(needs.len());
    while !needs.is_empty() {
        let ready: Vec<&str> = needs
            .iter()
            .filter(|(_, n)| n.is_empty())
            .map(|(t, _)| *t)
            .collect();
        if ready.is_empty() {
            bail!(
                "the foreign keys between {:?} form a cycle; db copy cannot order them",
                needs.keys().collect::<Vec<_>>()
            );
        }
        for t in ready {
            needs.remove(t);
            for n in needs.values_mut() {
                n.remove(t);
            }
            order.push(t.to_owned());
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    #[test]
    fn copy_text_escapes_what_copy_reads_specially() {
        let mut out = Vec::new();
        super::escape("a\tb\nc\\d\re", &mut out);
        assert_eq!(out, b"a\\tb\\nc\\\\d\\re");
    }

    #[test]
    fn job_metadata_becomes_hstore_text() {
        let h = super::hstore_of_json(r#"{"b":"x\"y","a":1,"c":null}"#).unwrap();
        assert_eq!(h, r#""a"=>"1", "b"=>"x\"y", "c"=>NULL"#);
    }
}
