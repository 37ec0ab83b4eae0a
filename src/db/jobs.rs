//! Job control over apalis's own tables (`Jobs` on SQLite, `apalis.jobs` on PostgreSQL)
//! and the attempt history (`job_attempts`): counts per queue, listing and search, one
//! job with every run, an operator's retry and cancel, the record of each run (written
//! by the workers' lifecycle layer) and the retention's delete. Queues go by the names
//! operators use (`email`, `export`, `images`, `expiry`: `plinth_workers::QueueName`);
//! the statuses they see are defined here, once.
//!
//! One vocabulary for clients and operators: a slide job's client sees `pending`,
//! `running`, `succeeded`, `failed` or `cancelled`; operators see the same words, with
//! `pending` told apart in two more ways. apalis's statuses map to ours as follows (the
//! SQL `CASE` of [`state_sql`]):
//! - `Pending`, due → `pending`; not due yet → `scheduled`;
//! - `Failed` with attempts left → `retrying` (apalis fetches it again when its `run_at`,
//!   the end of the back-off, is due);
//! - `Queued` (fetched into a worker's buffer) and `Running` → `running`;
//! - `Done` → `succeeded`; `Failed` with no attempts left → `failed`; `Killed` (cancelled
//!   by its client or an operator) → `cancelled`.
//!
//! The client's id of a job (an export's job id, an image check's asset id, an email's
//! id) is its `client_id`: `find` and the list's `search` take it as well as apalis's id.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use plinth_workers::{Outcome as RunOutcome, QueueName, RunRecord};

use crate::db::{now, BeginWrite, Db};
use crate::states::JobStatus;
use crate::with_db;

/// A queue by its short name or its apalis name (the one mapping is
/// `plinth_workers::QueueName`); the error is the message operators read.
pub fn queue(name: &str) -> Result<QueueName, String> {
    QueueName::parse(name).ok_or_else(|| {
        format!("unknown queue `{name}`: use email, export, images, expiry or callbacks")
    })
}

/// The short name of an apalis queue name.
fn short_name(apalis: &str) -> &'static str {
    QueueName::ALL
        .into_iter()
        .find(|q| q.table_name() == apalis)
        .map_or("unknown", QueueName::name)
}

/// One of the statuses operators see ([`JobStatus`]), in any case (the older `done` and
/// `killed` name `succeeded` and `cancelled`); the error is the message operators read.
pub fn status(name: &str) -> Result<JobStatus, String> {
    let trimmed = name.trim().to_ascii_lowercase();
    let word = match trimmed.as_str() {
        "done" => "succeeded",
        "killed" | "canceled" => "cancelled",
        other => other,
    };
    JobStatus::parse(word).ok_or_else(|| {
        let all: Vec<_> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!(
            "unknown status `{name}`: use {}",
            all.join(", ").replacen(", cancelled", " or cancelled", 1)
        )
    })
}

/// The SQL that differs between the backends' job tables.
struct Dialect {
    table: &'static str,
    /// `run_at` and `done_at` as epoch seconds (float).
    run_at: &'static str,
    done_at: &'static str,
    /// `$n` (epoch seconds) as the backend compares it with `run_at`.
    last_result: &'static str,
    /// The job's arguments (JSON bytes) as text, for the search.
    job_text: &'static str,
    /// Now, in the table's time type.
    now: &'static str,
    attempts: &'static str,
    max_attempts: &'static str,
}

const SQLITE: Dialect = Dialect {
    table: "Jobs",
    run_at: "CAST(run_at AS REAL)",
    done_at: "CAST(done_at AS REAL)",
    last_result: "last_result",
    job_text: "CAST(job AS TEXT)",
    now: "strftime('%s', 'now')",
    attempts: "attempts",
    max_attempts: "max_attempts",
};

const PG: Dialect = Dialect {
    table: "apalis.jobs",
    run_at: "EXTRACT(EPOCH FROM run_at)::float8",
    done_at: "EXTRACT(EPOCH FROM done_at)::float8",
    last_result: "last_result::text",
    job_text: "convert_from(job, 'UTF8')",
    now: "now()",
    attempts: "attempts::int8",
    max_attempts: "max_attempts::int8",
};

/// The apalis rows of our queues only (a shared database may hold others); checked
/// against `QueueName` by a test.
const OUR_QUEUES: &str =
    "job_type IN ('email', 'slide-export', 'slide-images', 'expiry', 'callbacks')";

/// Rows that ended for good: succeeded, failed with no attempts left, cancelled.
const FINISHED: &str =
    "(status IN ('Done', 'Killed') OR (status = 'Failed' AND attempts >= max_attempts))";

/// Rows waiting to run: pending, scheduled or retrying (what a cancel applies to).
const WAITING: &str = "(status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts))";

/// Our status of an apalis row, `$now` being the epoch seconds the query is about: the
/// one definition of the mapping (module comment).
fn state_sql(d: &Dialect, now: &str) -> String {
    format!(
        "CASE WHEN status = 'Pending' AND {run_at} > {now} THEN 'scheduled' \
         WHEN status = 'Pending' THEN 'pending' \
         WHEN status = 'Failed' AND attempts < max_attempts THEN 'retrying' \
         WHEN status IN ('Queued', 'Running') THEN 'running' \
         WHEN status = 'Done' THEN 'succeeded' \
         WHEN status = 'Failed' THEN 'failed' \
         WHEN status = 'Killed' THEN 'cancelled' ELSE 'unknown' END",
        run_at = d.run_at
    )
}

/// Counts by queue and state, with the oldest due pending `run_at` (epoch seconds) for
/// `$1` = now; `only` is an extra filter (the gauges skip finished rows, which only pile
/// up).
fn counts_sql(d: &Dialect, only: &str) -> String {
    format!(
        "SELECT job_type, state, COUNT(*) AS n, \
         MIN(CASE WHEN state = 'pending' THEN run_at END) AS oldest \
         FROM (SELECT job_type, {run_at} AS run_at, {state} AS state FROM {table} \
         WHERE {OUR_QUEUES}{only}) AS j GROUP BY job_type, state",
        run_at = d.run_at,
        state = state_sql(d, "$1"),
        table = d.table,
    )
}

const NOT_DONE: &str = " AND status IN ('Pending', 'Queued', 'Running', 'Failed', 'Killed')";

static SQLITE_COUNTS: LazyLock<String> = LazyLock::new(|| counts_sql(&SQLITE, ""));
static PG_COUNTS: LazyLock<String> = LazyLock::new(|| counts_sql(&PG, ""));
static SQLITE_DEPTH: LazyLock<String> = LazyLock::new(|| counts_sql(&SQLITE, NOT_DONE));
static PG_DEPTH: LazyLock<String> = LazyLock::new(|| counts_sql(&PG, NOT_DONE));

/// Finished jobs per minute (epoch seconds of the minute) since `$1` (epoch seconds):
/// succeeded, and failed or cancelled for good.
static SQLITE_THROUGHPUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT job_type, CAST(done_at / 60 AS INTEGER) * 60 AS minute, \
         SUM(CASE WHEN status = 'Done' THEN 1 ELSE 0 END) AS succeeded, \
         SUM(CASE WHEN status = 'Done' THEN 0 ELSE 1 END) AS failed \
         FROM Jobs WHERE done_at >= $1 AND {OUR_QUEUES} AND {FINISHED} \
         GROUP BY job_type, minute ORDER BY minute, job_type"
    )
});
static PG_THROUGHPUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT job_type, (FLOOR(EXTRACT(EPOCH FROM done_at) / 60) * 60)::int8 AS minute, \
         COUNT(*) FILTER (WHERE status = 'Done') AS succeeded, \
         COUNT(*) FILTER (WHERE status <> 'Done') AS failed \
         FROM apalis.jobs WHERE done_at >= to_timestamp($1::float8) AND {OUR_QUEUES} \
         AND {FINISHED} GROUP BY 1, 2 ORDER BY 2, 1"
    )
});

/// Runs that started per minute since `$1`, by queue, with how long their jobs waited
/// for a worker (average and longest, ms).
const SQLITE_LATENCY: &str = "SELECT queue, CAST(strftime('%s', started_at) AS INTEGER) / 60 * 60 \
     AS minute, COUNT(*), CAST(AVG(waited_ms) AS REAL), MAX(waited_ms) FROM job_attempts \
     WHERE started_at >= $1 GROUP BY queue, minute ORDER BY minute, queue";
const PG_LATENCY: &str = "SELECT queue, (FLOOR(EXTRACT(EPOCH FROM started_at) / 60) * 60)::int8 \
     AS minute, COUNT(*), AVG(waited_ms)::float8, MAX(waited_ms)::int8 FROM job_attempts \
     WHERE started_at >= $1 GROUP BY 1, 2 ORDER BY 2, 1";

/// The columns a job is read with (`RawJob`), from the subquery `j` of
/// [`jobs_from`].
const JOB_COLUMNS: &str = "id, job_type, status, state, attempts, max_attempts, run_at, \
    done_at, lock_by, last_result, job";

/// Our queues' jobs with their state for `now` (a placeholder, epoch seconds), as the
/// subquery `j`.
fn jobs_from(d: &Dialect, now: &str) -> String {
    format!(
        "(SELECT id, job_type, status, {attempts} AS attempts, \
         {max_attempts} AS max_attempts, {run_at} AS run_at, {done_at} AS done_at, lock_by, \
         {last_result} AS last_result, job, idempotency_key, {state} AS state FROM {table} \
         WHERE {OUR_QUEUES}) AS j",
        attempts = d.attempts,
        max_attempts = d.max_attempts,
        run_at = d.run_at,
        done_at = d.done_at,
        last_result = d.last_result,
        state = state_sql(d, now),
        table = d.table,
    )
}

/// Jobs, newest first (apalis ids are ULIDs: they sort by creation), filtered by apalis
/// queue (`$1`), our status (`$2`) and a search term (`$3`: apalis's id, or the client's
/// id of the job, `$4`..`$7` the patterns that find it in the arguments), at most `$8`;
/// `$9` is now (epoch seconds).
fn list_sql(d: &Dialect) -> String {
    let text = d.job_text.replace("job", "j.job");
    format!(
        "SELECT {JOB_COLUMNS} FROM {from} WHERE ($1 IS NULL OR job_type = $1) \
         AND ($2 IS NULL OR state = $2) \
         AND ($3 IS NULL OR id = $3 OR idempotency_key = $3 \
              OR {text} LIKE $4 ESCAPE '\\' OR {text} LIKE $5 ESCAPE '\\' \
              OR {text} LIKE $6 ESCAPE '\\' OR {text} LIKE $7 ESCAPE '\\') \
         ORDER BY id DESC LIMIT $8",
        from = jobs_from(d, "$9"),
    )
}

static SQLITE_LIST: LazyLock<String> = LazyLock::new(|| list_sql(&SQLITE));
static PG_LIST: LazyLock<String> = LazyLock::new(|| list_sql(&PG));

/// One job by apalis's id (`$1`; `$2` is now).
fn one_sql(d: &Dialect) -> String {
    format!(
        "SELECT {JOB_COLUMNS} FROM {from} WHERE id = $1",
        from = jobs_from(d, "$2")
    )
}

static SQLITE_ONE: LazyLock<String> = LazyLock::new(|| one_sql(&SQLITE));
static PG_ONE: LazyLock<String> = LazyLock::new(|| one_sql(&PG));

/// Up to `$2` finished jobs that ended before `$1` (epoch seconds). Deleted in batches so
/// that the queue's writers never wait long on SQLite's one write lock.
fn prune_sql(d: &Dialect, before: &str) -> String {
    format!(
        "DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {OUR_QUEUES} \
         AND {FINISHED} AND done_at < {before} LIMIT $2)",
        table = d.table
    )
}

static SQLITE_PRUNE: LazyLock<String> = LazyLock::new(|| prune_sql(&SQLITE, "$1"));
static PG_PRUNE: LazyLock<String> = LazyLock::new(|| prune_sql(&PG, "to_timestamp($1::float8)"));
const PRUNE_BATCH: i64 = 5_000;

/// Deletes the finished jobs that ended more than `days` days ago, and the records of
/// runs that old (the upkeep's job retention, `PLINTH_JOB_RETENTION_DAYS`); how many
/// jobs. Pending, running and retrying jobs are never touched.
pub async fn prune(db: &Db, days: u64) -> sqlx::Result<u64> {
    let days = i64::try_from(days).unwrap_or(i64::MAX);
    let before = now()
        .timestamp()
        .saturating_sub(days.saturating_mul(86_400));
    let sql = pick(db, &SQLITE_PRUNE, &PG_PRUNE);
    let mut total = 0;
    loop {
        let n = with_db!(db, p => sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(before)
            .bind(PRUNE_BATCH)
            .execute(p)
            .await
            .map(|r| r.rows_affected()))?;
        total += n;
        if n < PRUNE_BATCH as u64 {
            break;
        }
    }
    if let Some(cutoff) = DateTime::from_timestamp(before, 0) {
        with_db!(db, p => sqlx::query("DELETE FROM job_attempts WHERE finished_at < $1")
            .bind(cutoff)
            .execute(p)
            .await
            .map(|_| ()))?;
    }
    Ok(total)
}

/// A failed or cancelled job back to pending, due now, with its attempts reset (and its
/// limit back to its queue's: a job that failed for good at once had it lowered) and its
/// lock cleared (SQLite fetches pending jobs only with `lock_by` NULL; PostgreSQL with
/// `run_at` past). The last result stays until the next run replaces it.
fn retry_sql(d: &Dialect) -> String {
    format!(
        "UPDATE {table} SET status = 'Pending', attempts = 0, \
         max_attempts = CASE WHEN job_type = 'email' THEN $2 WHEN job_type = 'expiry' THEN 1 \
         WHEN job_type = 'callbacks' THEN $4 ELSE $3 END, run_at = {now}, done_at = NULL, lock_by = NULL, lock_at = NULL \
         WHERE id = $1 AND {OUR_QUEUES} \
         AND (status = 'Killed' OR (status = 'Failed' AND attempts >= max_attempts)) \
         RETURNING job_type, job",
        table = d.table,
        now = d.now
    )
}

static SQLITE_RETRY: LazyLock<String> = LazyLock::new(|| retry_sql(&SQLITE));
static PG_RETRY: LazyLock<String> = LazyLock::new(|| {
    retry_sql(&PG)
        .replace("THEN $2", "THEN $2::int4")
        .replace("ELSE $3", "ELSE $3::int4")
        .replace("THEN $4", "THEN $4::int4")
});

/// A waiting job (pending, scheduled or retrying: no worker holds it, a worker's fetch
/// makes it `Queued` first) cancelled with the operator's result; apalis never fetches
/// a killed job.
fn cancel_sql(d: &Dialect, result: &str) -> String {
    format!(
        "UPDATE {table} SET status = 'Killed', done_at = {now}, last_result = {result} \
         WHERE id = $1 AND {OUR_QUEUES} AND {WAITING} RETURNING job_type, job",
        table = d.table,
        now = d.now
    )
}

static SQLITE_CANCEL: LazyLock<String> =
    LazyLock::new(|| cancel_sql(&SQLITE, "'{\"Err\":\"cancelled by operator\"}'"));
static PG_CANCEL: LazyLock<String> =
    LazyLock::new(|| cancel_sql(&PG, "'{\"Err\":\"cancelled by operator\"}'::jsonb"));

/// A retried export runs again from the start: our row goes back to `pending` when it
/// ended in failure (or its run died holding it), else `start_export` would find it
/// ended and the client would keep seeing `failed`. A row the client cancelled, or one
/// that succeeded, stays as it is (the run then ends at once).
const SLIDE_RETRY: &str = "UPDATE slide_jobs SET status = 'pending', attempts = 0, error = NULL, \
    done = 0, lease_owner = NULL, lease_until = NULL, started_at = NULL, finished_at = NULL, \
    updated_at = $2 WHERE id = $1 AND (status = 'failed' OR (status IN ('running', 'pending') \
    AND (lease_until IS NULL OR lease_until < $2)))";
/// A cancelled export ends for the client too, instead of staying `pending` forever
/// (with its completion event, when it has a callback).
const SLIDE_CANCEL: &str = "UPDATE slide_jobs SET status = 'failed', \
    error = 'cancelled by an operator', lease_until = NULL, finished_at = $2, updated_at = $2 \
    WHERE id = $1 AND status IN ('pending', 'running') RETURNING callback_url";
/// A cancelled image check: the asset is rejected as the sweep would, so the client can
/// call `assets/complete` again instead of waiting.
const ASSET_CANCEL: &str = "UPDATE slide_assets SET status = 'rejected', \
    reason = 'validation cancelled by an operator; call assets/complete to try again', \
    updated_at = $2 WHERE id = $1 AND status = 'validating' RETURNING CAST(NULL AS TEXT)";

fn pick<'a>(db: &Db, sqlite: &'a str, postgres: &'a str) -> &'a str {
    match db {
        Db::Sqlite(_) => sqlite,
        Db::Postgres(_) => postgres,
    }
}

fn epoch_now() -> f64 {
    now().timestamp_millis() as f64 / 1000.0
}

/// One queue's counts by our status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueCounts {
    pub queue: &'static str,
    pub pending: i64,
    pub scheduled: i64,
    pub running: i64,
    pub retrying: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub cancelled: i64,
    /// Age of the oldest pending job that is due, if any.
    pub oldest_pending_secs: Option<f64>,
    /// No worker of any process starts a job of it (an operator paused it).
    pub paused: bool,
}

/// What the metrics gauges read: queue depth per queue (`failed` counts cancelled too).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueDepth {
    pub queue: &'static str,
    pub pending: i64,
    pub scheduled: i64,
    pub running: i64,
    pub retrying: i64,
    pub failed: i64,
    /// 0 when nothing is pending and due.
    pub oldest_pending_secs: f64,
}

/// Finished jobs of one queue in one minute.
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    pub minute: DateTime<Utc>,
    pub queue: &'static str,
    pub succeeded: i64,
    pub failed: i64,
}

/// Runs of one queue that started in one minute, and how long their jobs waited.
#[derive(Clone, Debug, PartialEq)]
pub struct Latency {
    pub minute: DateTime<Utc>,
    pub queue: String,
    pub runs: i64,
    pub avg_wait_ms: f64,
    pub max_wait_ms: i64,
}

/// Every queue, always all of them, in `QueueName::ALL` order.
async fn counts(db: &Db, depth_only: bool) -> sqlx::Result<Vec<QueueCounts>> {
    let sql = if depth_only {
        pick(db, &SQLITE_DEPTH, &PG_DEPTH)
    } else {
        pick(db, &SQLITE_COUNTS, &PG_COUNTS)
    };
    let now = epoch_now();
    let rows: Vec<(String, String, i64, Option<f64>)> = with_db!(db, p => sqlx::query_as(
        sqlx::AssertSqlSafe(sql)
    ).bind(now).fetch_all(p).await)?;
    let mut out: Vec<QueueCounts> = QueueName::ALL
        .iter()
        .map(|q| QueueCounts {
            queue: q.name(),
            ..Default::default()
        })
        .collect();
    for (job_type, state, n, oldest) in rows {
        let Some(c) = out.iter_mut().find(|c| c.queue == short_name(&job_type)) else {
            continue;
        };
        match state.as_str() {
            "pending" => {
                c.pending += n;
                c.oldest_pending_secs = oldest.map(|t| (now - t).max(0.0));
            }
            "scheduled" => c.scheduled += n,
            "running" => c.running += n,
            "retrying" => c.retrying += n,
            "succeeded" => c.succeeded += n,
            "failed" => c.failed += n,
            "cancelled" => c.cancelled += n,
            _ => {}
        }
    }
    Ok(out)
}

/// Counts per queue and status (one grouped query), and which queues are paused.
pub async fn stats(db: &Db) -> sqlx::Result<Vec<QueueCounts>> {
    let mut out = counts(db, false).await?;
    let paused = paused(db).await?;
    for c in &mut out {
        c.paused = paused.iter().any(|q| q.name() == c.queue);
    }
    Ok(out)
}

/// Queue depth for the metrics: one grouped query over the rows that are not done.
pub async fn depth(db: &Db) -> Result<Vec<QueueDepth>, sqlx::Error> {
    Ok(counts(db, true)
        .await?
        .into_iter()
        .map(|c| QueueDepth {
            queue: c.queue,
            pending: c.pending,
            scheduled: c.scheduled,
            running: c.running,
            retrying: c.retrying,
            failed: c.failed + c.cancelled,
            oldest_pending_secs: c.oldest_pending_secs.unwrap_or(0.0),
        })
        .collect())
}

/// Finished jobs per minute and queue over the last `minutes` minutes (minutes without
/// a finished job are left out), oldest first.
pub async fn throughput(db: &Db, minutes: i64) -> sqlx::Result<Vec<Throughput>> {
    let since = now().timestamp() - minutes * 60;
    let rows: Vec<(String, i64, i64, i64)> = with_db!(db, p => sqlx::query_as(
        sqlx::AssertSqlSafe(pick(db, &SQLITE_THROUGHPUT, &PG_THROUGHPUT))
    ).bind(since).fetch_all(p).await)?;
    Ok(rows
        .into_iter()
        .filter_map(|(job_type, minute, succeeded, failed)| {
            Some(Throughput {
                minute: DateTime::from_timestamp(minute, 0)?,
                queue: short_name(&job_type),
                succeeded,
                failed,
            })
        })
        .collect())
}

/// Runs per minute and queue over the last `minutes` minutes with their jobs' waits
/// (minutes without a run are left out), oldest first.
pub async fn latency(db: &Db, minutes: i64) -> sqlx::Result<Vec<Latency>> {
    let since = now() - chrono::TimeDelta::minutes(minutes);
    type Row = (String, i64, i64, Option<f64>, Option<i64>);
    let rows: Vec<Row> = with_db!(db, p => sqlx::query_as(
        pick(db, SQLITE_LATENCY, PG_LATENCY)
    ).bind(since).fetch_all(p).await)?;
    Ok(rows
        .into_iter()
        .filter_map(|(queue, minute, runs, avg, max)| {
            Some(Latency {
                minute: DateTime::from_timestamp(minute, 0)?,
                queue,
                runs,
                avg_wait_ms: avg.unwrap_or(0.0),
                max_wait_ms: max.unwrap_or(0),
            })
        })
        .collect())
}

/// One job as operators see it.
#[derive(Clone, Debug)]
pub struct JobRow {
    pub id: String,
    /// Short name.
    pub queue: &'static str,
    /// Ours.
    pub status: JobStatus,
    /// apalis's own (`Queued`, `Failed`...), for the curious.
    pub apalis_status: String,
    pub attempts: i64,
    pub max_attempts: i64,
    /// When the job was queued (the time in its ULID id).
    pub created_at: Option<DateTime<Utc>>,
    pub run_at: Option<DateTime<Utc>>,
    /// When it runs next, for a scheduled or retrying job.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub done_at: Option<DateTime<Utc>>,
    /// The worker holding it (or that last held it).
    pub worker: Option<String>,
    /// The stored last result when it is an error.
    pub last_error: Option<String>,
    /// The job's arguments where they decode; an email shows its recipient only.
    pub args: Option<Value>,
    /// The id its client holds: an export's job id, an image check's asset id, an
    /// email's id (its Message-ID and outbox file name).
    pub client_id: Option<String>,
}

type RawJob = (
    String,
    String,
    String,
    String,
    i64,
    i64,
    Option<f64>,
    Option<f64>,
    Option<String>,
    Option<String>,
    Vec<u8>,
);

fn epoch(t: Option<f64>) -> Option<DateTime<Utc>> {
    let t = t?;
    DateTime::from_timestamp_millis((t * 1000.0).round() as i64)
}

/// The creation time in a ULID (its first 10 Crockford base-32 characters, in ms).
fn ulid_time(id: &str) -> Option<DateTime<Utc>> {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if id.len() != 26 {
        return None;
    }
    let mut ms: i64 = 0;
    for c in id.bytes().take(10) {
        let v = ALPHABET.iter().position(|a| *a == c.to_ascii_uppercase())?;
        ms = ms.checked_mul(32)?.checked_add(v as i64)?;
    }
    DateTime::from_timestamp_millis(ms)
}

/// `{"Err": "..."}` (apalis's shape of a failed result) to its message.
fn error_of(last_result: Option<&str>) -> Option<String> {
    let v: Value = serde_json::from_str(last_result?).ok()?;
    match v.get("Err")? {
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// What a listing may show of a job's arguments: never an email's subject or text.
fn args_of(queue: &str, job: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(job).ok()?;
    if queue == "email" {
        let to = v.pointer("/email/to").cloned().unwrap_or(Value::Null);
        return Some(json!({ "to": to }));
    }
    Some(v)
}

/// The client's id of a job, from its arguments.
fn client_id_of(queue: &str, job: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(job).ok()?;
    let field = match queue {
        "export" | "callbacks" => "/job_id",
        "images" => "/asset_id",
        "email" => "/id",
        _ => return None,
    };
    v.pointer(field)?.as_str().map(str::to_owned)
}

fn job_row(r: RawJob) -> JobRow {
    let (
        id,
        job_type,
        apalis_status,
        state,
        attempts,
        max_attempts,
        run_at,
        done_at,
        lock_by,
        last,
        job,
    ) = r;
    let queue = short_name(&job_type);
    let run_at = epoch(run_at);
    JobRow {
        args: args_of(queue, &job),
        client_id: client_id_of(queue, &job),
        created_at: ulid_time(&id),
        next_attempt_at: matches!(
            JobStatus::parse(&state),
            Some(JobStatus::Scheduled | JobStatus::Retrying)
        )
        .then_some(run_at)
        .flatten(),
        id,
        queue,
        status: JobStatus::parse(&state).unwrap_or(JobStatus::Unknown),
        apalis_status,
        attempts,
        max_attempts,
        run_at,
        done_at: epoch(done_at),
        worker: lock_by,
        last_error: error_of(last.as_deref()),
    }
}

pub const LIST_DEFAULT: i64 = 50;
pub const LIST_MAX: i64 = 500;

/// A search term: apalis's id, or a client's id (an export's job id, an asset id, an
/// email's id) or an email's recipient. Only these exact values are matched, never text
/// inside an email (an administrator must not be able to fish codes out of them); the
/// error is the message operators read.
pub fn search_term(term: &str) -> Result<String, String> {
    let t = term.trim();
    let ok = (3..=254).contains(&t.len())
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@._+-".contains(c));
    if ok {
        Ok(t.to_owned())
    } else {
        Err(format!(
            "`{term}` is not a job id, a client's job id or an email address"
        ))
    }
}

/// The `LIKE` patterns that find `term` as the value of an argument that holds an id.
fn patterns(term: &str) -> [String; 4] {
    let t = term
        .replace('\\', "\\\\")
        .replace('_', "\\_")
        .replace('%', "\\%");
    ["job_id", "asset_id", "id", "to"].map(|field| format!("%\"{field}\":\"{t}\"%"))
}

/// Jobs of a queue and/or status (our names, checked by the caller) and/or matching a
/// search term (`search_term`), newest first.
pub async fn list(
    db: &Db,
    queue: Option<QueueName>,
    status: Option<JobStatus>,
    search: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<JobRow>> {
    let sql = pick(db, &SQLITE_LIST, &PG_LIST);
    let queue = queue.map(QueueName::table_name);
    let pats = search.map(patterns);
    let pat = |i: usize| pats.as_ref().map(|p| p[i].clone());
    let rows: Vec<RawJob> = with_db!(db, p => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(queue).bind(status.map(JobStatus::as_str)).bind(search)
        .bind(pat(0)).bind(pat(1)).bind(pat(2)).bind(pat(3))
        .bind(limit.clamp(1, LIST_MAX)).bind(epoch_now())
        .fetch_all(p).await)?;
    Ok(rows.into_iter().map(job_row).collect())
}

/// The job with apalis's id `id`.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<JobRow>> {
    let sql = pick(db, &SQLITE_ONE, &PG_ONE);
    let row: Option<RawJob> = with_db!(db, p => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id).bind(epoch_now()).fetch_optional(p).await)?;
    Ok(row.map(job_row))
}

/// The jobs a term names: the one with that apalis id, else those whose client's id (or
/// recipient) it is, newest first.
pub async fn find(db: &Db, term: &str) -> sqlx::Result<Vec<JobRow>> {
    if let Some(exact) = get(db, term).await? {
        return Ok(vec![exact]);
    }
    let mut found = list(db, None, None, Some(term), LIST_MAX).await?;
    // The job the client meant first: an export's id also names the callback jobs that
    // told its client about it (issue 45, O2), which come after it, newest first still.
    found.sort_by_key(|j| client_rank(j.queue));
    Ok(found)
}

/// The order in which a client id's jobs are meant: the client's own work (an export,
/// an image check, an email), then the callbacks that reported on it, then the rest.
fn client_rank(queue: &str) -> u8 {
    match QueueName::parse(queue) {
        Some(QueueName::Export | QueueName::Images | QueueName::Email) => 0,
        Some(QueueName::Callbacks) => 1,
        _ => 2,
    }
}

/// One recorded run of a job.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AttemptRow {
    pub attempt: i64,
    pub worker: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub waited_ms: i64,
    /// `succeeded`, `retrying`, `failed` or `cancelled`.
    pub outcome: String,
    pub cause: Option<String>,
    pub error: Option<String>,
    pub next_at: Option<DateTime<Utc>>,
}

/// Every recorded run of a job, first first.
pub async fn attempts(db: &Db, job_id: &str) -> sqlx::Result<Vec<AttemptRow>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT attempt, worker, started_at, finished_at, waited_ms, outcome, cause, error, next_at \
         FROM job_attempts WHERE job_id = $1 ORDER BY id"
    ).bind(job_id).fetch_all(p).await)
}

/// Records a run that ended (the workers' lifecycle layer). A retry's next attempt is
/// due at `next_at`; a run that failed for good leaves no attempt (its `max_attempts`
/// comes down to the attempts made). Both only while the run's worker still holds the
/// job, before apalis records the result, in one transaction with the record.
pub async fn finish_run(db: &Db, run: &RunRecord) -> sqlx::Result<()> {
    const INSERT: &str = "INSERT INTO job_attempts (job_id, queue, attempt, worker, started_at, \
        finished_at, waited_ms, outcome, cause, error, next_at) \
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
    let (reschedule, give_up) = match db {
        Db::Sqlite(_) => (
            "UPDATE Jobs SET run_at = $1 WHERE id = $2 AND lock_by = $3",
            "UPDATE Jobs SET max_attempts = $1 WHERE id = $2 AND lock_by = $3",
        ),
        Db::Postgres(_) => (
            "UPDATE apalis.jobs SET run_at = to_timestamp($1::float8) WHERE id = $2 AND lock_by = $3",
            "UPDATE apalis.jobs SET max_attempts = $1::int4 WHERE id = $2 AND lock_by = $3",
        ),
    };
    with_db!(db, p => {
        let change = match (run.outcome, run.next_at) {
            (RunOutcome::Retrying, Some(next)) => {
                // Whole seconds, rounded up: SQLite's queue keeps `run_at` in seconds and a
                // retry must never come early.
                let secs = (next.timestamp_millis() + 999).div_euclid(1000);
                Some(match db {
                    Db::Sqlite(_) => sqlx::query(reschedule).bind(secs),
                    Db::Postgres(_) => sqlx::query(reschedule).bind(secs as f64),
                })
            }
            (RunOutcome::Failed, _) => Some(sqlx::query(give_up).bind(run.attempt)),
            _ => None,
        };
        let record = sqlx::query(INSERT)
            .bind(&run.job_id).bind(run.queue.name()).bind(run.attempt).bind(&run.worker)
            .bind(run.started_at).bind(run.finished_at).bind(run.waited_ms)
            .bind(run.outcome.name()).bind(run.cause).bind(run.error.as_deref()).bind(run.next_at);
        match change {
            // A run that went through only adds to the history: one statement, no
            // transaction (on SQLite a transaction holds the write lock across its round
            // trips, while every other writer waits).
            None => record.execute(p).await.map(|_| ()),
            Some(change) => {
                let mut tx = p.begin_write().await?;
                change.bind(&run.job_id).bind(&run.worker).execute(&mut *tx).await?;
                record.execute(&mut *tx).await?;
                tx.commit().await
            }
        }
    })
}

/// What a retry or cancel did.
pub enum Outcome {
    /// Done; the job as it is now.
    Changed(JobRow),
    /// No such job (in our queues).
    NotFound,
    /// The job is in a status the operation does not apply to.
    Conflict(JobRow),
}

async fn outcome(db: &Db, id: &str, changed: bool) -> sqlx::Result<Outcome> {
    Ok(match get(db, id).await? {
        None => Outcome::NotFound,
        Some(job) if changed => Outcome::Changed(job),
        Some(job) => Outcome::Conflict(job),
    })
}

/// The id in a slide job's arguments (`{"job_id": ...}` / `{"asset_id": ...}`).
fn slide_ref(job: &[u8], field: &str) -> Option<String> {
    let v: Value = serde_json::from_slice(job).ok()?;
    v.get(field)?.as_str().map(str::to_owned)
}

/// A failed or cancelled job back to pending and runnable now (one conditional update; a
/// retried export's own row is reset in the same transaction). On PostgreSQL the
/// workers are told at once, as for a new job (apalis's trigger fires on inserts only).
pub async fn retry(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let sql = pick(db, &SQLITE_RETRY, &PG_RETRY);
    let mut client = None;
    let notify = matches!(db, Db::Postgres(_));
    let email_max = plinth_workers::backoff(QueueName::Email).max_attempts() as i64;
    let slide_max = plinth_workers::max_attempts(QueueName::Export) as i64;
    let callback_max = plinth_workers::max_attempts(QueueName::Callbacks) as i64;
    let changed = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let row: Option<(String, Vec<u8>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id).bind(email_max).bind(slide_max).bind(callback_max)
            .fetch_optional(&mut *tx).await?;
        if let Some((job_type, job)) = &row {
            if short_name(job_type) == "export" {
                if let Some(job_id) = slide_ref(job, "job_id") {
                    sqlx::query(SLIDE_RETRY).bind(&job_id).bind(now()).execute(&mut *tx).await?;
                    client = Some(job_id);
                }
            }
            if notify {
                let payload = json!({"job_type": job_type, "id": id}).to_string();
                sqlx::query("SELECT pg_notify('apalis::job::insert', $1)")
                    .bind(payload).execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        row.map(|(job_type, _)| job_type)
    });
    if let Some(queue) = changed.as_deref().and_then(QueueName::parse) {
        plinth_workers::wake(queue);
    }
    if let Some(job_id) = client {
        crate::db::watch::changed(&job_id);
    }
    outcome(db, id, changed.is_some()).await
}

/// A waiting job (pending, scheduled or retrying) cancelled before any worker takes it
/// (one conditional update); a cancelled export or image check ends for the client too,
/// in the same transaction.
pub async fn cancel(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let sql = pick(db, &SQLITE_CANCEL, &PG_CANCEL);
    let mut client = None;
    let mut call = false;
    let changed = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let row: Option<(String, Vec<u8>)> =
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&mut *tx).await?;
        if let Some((job_type, job)) = &row {
            let (field, update) = match short_name(job_type) {
                "export" => ("job_id", Some(SLIDE_CANCEL)),
                "images" => ("asset_id", Some(ASSET_CANCEL)),
                _ => ("", None),
            };
            if let (Some(update), Some(target)) = (update, slide_ref(job, field)) {
                let ended: Option<(Option<String>,)> = sqlx::query_as(update).bind(&target)
                    .bind(now()).fetch_optional(&mut *tx).await?;
                if let Some((Some(_),)) = ended {
                    use plinth_workers::Enqueue;
                    tx.push_callback(&target).await?;
                    call = true;
                }
                client = Some(target);
            }
        }
        tx.commit().await?;
        row.is_some()
    });
    if call {
        plinth_workers::wake(QueueName::Callbacks);
    }
    if let Some(target) = client {
        crate::db::watch::changed(&target);
    }
    outcome(db, id, changed).await
}

/// A finished job (succeeded, failed for good or cancelled) deleted with its attempt
/// records: an operator's discard.
fn discard_sql(d: &Dialect) -> String {
    format!(
        "DELETE FROM {table} WHERE id = $1 AND {OUR_QUEUES} AND {FINISHED}",
        table = d.table
    )
}

static SQLITE_DISCARD: LazyLock<String> = LazyLock::new(|| discard_sql(&SQLITE));
static PG_DISCARD: LazyLock<String> = LazyLock::new(|| discard_sql(&PG));

/// Deletes a finished job (and its attempt records); `Changed` carries the job as it was.
pub async fn discard(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let Some(job) = get(db, id).await? else {
        return Ok(Outcome::NotFound);
    };
    let sql = pick(db, &SQLITE_DISCARD, &PG_DISCARD);
    let gone = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let n = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).execute(&mut *tx).await?
            .rows_affected();
        if n > 0 {
            sqlx::query("DELETE FROM job_attempts WHERE job_id = $1").bind(id)
                .execute(&mut *tx).await?;
        }
        tx.commit().await?;
        n > 0
    });
    Ok(if gone {
        Outcome::Changed(job)
    } else {
        Outcome::Conflict(job)
    })
}

/// What an operator does to jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A failed or cancelled job runs again.
    Retry,
    /// A pending, scheduled or retrying job never runs.
    Cancel,
    /// A finished job is deleted.
    Discard,
}

impl Action {
    pub fn parse(s: &str) -> Option<Action> {
        match s.trim().to_ascii_lowercase().as_str() {
            "retry" => Some(Action::Retry),
            "cancel" => Some(Action::Cancel),
            "discard" => Some(Action::Discard),
            _ => None,
        }
    }

    /// The statuses it applies to, and its past participle, for messages.
    pub fn applies_to(self) -> (&'static str, &'static str) {
        match self {
            Action::Retry => ("failed or cancelled", "retried"),
            Action::Cancel => ("pending, scheduled or retrying", "cancelled"),
            Action::Discard => ("succeeded, failed or cancelled", "discarded"),
        }
    }
}

/// Applies `action` to the job with apalis's id `id` (one conditional change).
pub async fn act(db: &Db, action: Action, id: &str) -> sqlx::Result<Outcome> {
    match action {
        Action::Retry => retry(db, id).await,
        Action::Cancel => cancel(db, id).await,
        Action::Discard => discard(db, id).await,
    }
}

/// The job a term names: apalis's id, else the newest job whose client id (or
/// recipient) it is.
pub async fn resolve(db: &Db, term: &str) -> sqlx::Result<Option<JobRow>> {
    let term = term.trim();
    if let Some(job) = get(db, term).await? {
        return Ok(Some(job));
    }
    if search_term(term).is_err() {
        return Ok(None);
    }
    Ok(find(db, term).await?.into_iter().next())
}

// ---- queue pauses ----

/// The queues paused now (every process's workers honour them within a second).
pub async fn paused(db: &Db) -> sqlx::Result<Vec<QueueName>> {
    let rows: Vec<(String,)> = with_db!(db, p => sqlx::query_as(
        "SELECT queue FROM job_queues WHERE paused_at IS NOT NULL"
    ).fetch_all(p).await)?;
    Ok(rows.iter().filter_map(|(q,)| QueueName::parse(q)).collect())
}

/// Pauses a queue (`by` names who: an account id or `cli`); false when it already was.
pub async fn pause(db: &Db, queue: QueueName, by: &str) -> sqlx::Result<bool> {
    with_db!(db, p => sqlx::query(
        "INSERT INTO job_queues (queue, paused_at, paused_by) VALUES ($1, $2, $3) \
         ON CONFLICT (queue) DO UPDATE SET paused_at = excluded.paused_at, \
         paused_by = excluded.paused_by WHERE job_queues.paused_at IS NULL"
    ).bind(queue.name()).bind(now()).bind(by).execute(p).await.map(|r| r.rows_affected() > 0))
}

/// Resumes a paused queue; false when it was not paused.
pub async fn resume(db: &Db, queue: QueueName) -> sqlx::Result<bool> {
    with_db!(db, p => sqlx::query(
        "UPDATE job_queues SET paused_at = NULL, paused_by = NULL \
         WHERE queue = $1 AND paused_at IS NOT NULL"
    ).bind(queue.name()).execute(p).await.map(|r| r.rows_affected() > 0))
}

// ---- processes and workers ----

/// A process that runs workers, as it last reported itself.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ProcessRow {
    pub name: String,
    pub role: String,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub worker_prefix: String,
    /// `[{"queue": "email", "concurrency": 4}, ...]`
    pub pools: String,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
}

/// Records a process's heartbeat (and forgets processes silent for a day).
pub async fn beat(db: &Db, p: &ProcessRow) -> sqlx::Result<()> {
    let stale = now() - chrono::TimeDelta::days(1);
    with_db!(db, pool => {
        sqlx::query(
            "INSERT INTO job_processes (name, role, host, pid, version, worker_prefix, pools, \
             started_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (name) DO UPDATE SET pools = excluded.pools, last_seen = excluded.last_seen"
        ).bind(&p.name).bind(&p.role).bind(&p.host).bind(p.pid).bind(&p.version)
            .bind(&p.worker_prefix).bind(&p.pools).bind(p.started_at).bind(p.last_seen)
            .execute(pool).await?;
        sqlx::query("DELETE FROM job_processes WHERE last_seen < $1").bind(stale)
            .execute(pool).await.map(|_| ())
    })
}

/// A process that stops leaves the list.
pub async fn gone(db: &Db, name: &str) -> sqlx::Result<()> {
    with_db!(db, p => sqlx::query("DELETE FROM job_processes WHERE name = $1")
        .bind(name).execute(p).await.map(|_| ()))
}

/// Every process that reported in the last day, most recent first.
pub async fn processes(db: &Db) -> sqlx::Result<Vec<ProcessRow>> {
    with_db!(db, p => sqlx::query_as(
        "SELECT name, role, host, pid, version, worker_prefix, pools, started_at, last_seen \
         FROM job_processes ORDER BY last_seen DESC, name"
    ).fetch_all(p).await)
}

/// An apalis worker seen recently, with the jobs it holds.
#[derive(Clone, Debug)]
pub struct WorkerRow {
    pub name: String,
    pub queue: &'static str,
    pub last_seen: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
    /// The jobs it holds (running, or fetched into its buffer).
    pub jobs: Vec<JobRow>,
}

/// apalis's workers that beat in the last `secs` seconds, with the jobs each holds.
pub async fn workers(db: &Db, secs: i64) -> sqlx::Result<Vec<WorkerRow>> {
    let since = now().timestamp() - secs;
    let (sql, held) = match db {
        Db::Sqlite(_) => (
            "SELECT id, worker_type, CAST(last_seen AS REAL), CAST(started_at AS REAL) FROM Workers \
             WHERE last_seen >= $1 ORDER BY id",
            JobStatus::Running,
        ),
        Db::Postgres(_) => (
            "SELECT id, worker_type, EXTRACT(EPOCH FROM last_seen)::float8, \
             EXTRACT(EPOCH FROM started_at)::float8 FROM apalis.workers \
             WHERE last_seen >= to_timestamp($1::float8) ORDER BY id",
            JobStatus::Running,
        ),
    };
    let rows: Vec<(String, String, Option<f64>, Option<f64>)> = match db {
        Db::Sqlite(p) => sqlx::query_as(sql).bind(since).fetch_all(p).await?,
        Db::Postgres(p) => sqlx::query_as(sql).bind(since as f64).fetch_all(p).await?,
    };
    let running = list(db, None, Some(held), None, LIST_MAX).await?;
    Ok(rows
        .into_iter()
        .filter(|(_, queue, _, _)| QueueName::parse(queue).is_some())
        .map(|(name, queue, seen, started)| WorkerRow {
            jobs: running
                .iter()
                .filter(|j| j.worker.as_deref() == Some(name.as_str()))
                .cloned()
                .collect(),
            queue: short_name(&queue),
            last_seen: epoch(seen),
            started_at: epoch(started),
            name,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The result an operator's cancel records (apalis's own `{"Err": ...}` shape).
    const CANCELLED: &str = "cancelled by operator";

    #[test]
    fn queues_by_short_or_apalis_name() {
        assert_eq!(queue("export").unwrap().table_name(), "slide-export");
        assert_eq!(queue("slide-images").unwrap().name(), "images");
        assert_eq!(queue(" Email ").unwrap().name(), "email");
        assert!(queue("exports").unwrap_err().contains("`exports`"));
        assert_eq!(short_name("expiry"), "expiry");
    }

    #[test]
    fn the_sql_names_every_queue() {
        for q in QueueName::ALL {
            assert!(
                OUR_QUEUES.contains(&format!("'{}'", q.table_name())),
                "{q:?}"
            );
        }
        assert_eq!(OUR_QUEUES.matches('\'').count(), 2 * QueueName::ALL.len());
    }

    #[test]
    fn statuses_and_results() {
        assert_eq!(status("FAILED"), Ok(JobStatus::Failed));
        assert_eq!(status("done"), Ok(JobStatus::Succeeded));
        assert_eq!(status("killed"), Ok(JobStatus::Cancelled));
        assert_eq!(status("retrying"), Ok(JobStatus::Retrying));
        let e = status("queued").unwrap_err();
        assert!(e.contains("`queued`") && e.contains("retrying"), "{e}");
        assert_eq!(
            error_of(Some(r#"{"Err":"connection refused"}"#)).as_deref(),
            Some("connection refused")
        );
        assert_eq!(error_of(Some(r#"{"Ok":null}"#)), None);
        assert_eq!(error_of(None), None);
    }

    #[test]
    fn an_email_shows_its_recipient_only() {
        let job = br#"{"id":"x","email":{"to":"a@b.example","from":"f@p.example","subject":"Your code","text":"secret 123"}}"#;
        assert_eq!(args_of("email", job), Some(json!({"to": "a@b.example"})));
        assert_eq!(client_id_of("email", job).as_deref(), Some("x"));
        assert_eq!(
            args_of("export", br#"{"job_id":"j1"}"#),
            Some(json!({"job_id": "j1"}))
        );
        assert_eq!(
            client_id_of("export", br#"{"job_id":"j1"}"#).as_deref(),
            Some("j1")
        );
        assert_eq!(args_of("export", b"\x00not json"), None);
    }

    #[test]
    fn search_terms_match_whole_ids_only() {
        assert!(search_term("01JD4Z8G4M7XW9Q2R3S4T5V6W7").is_ok());
        assert!(search_term("me@example.com").is_ok());
        for bad in ["ab", "?code=", "a%b", "x y", "\"id\""] {
            assert!(search_term(bad).is_err(), "{bad}");
        }
        let p = patterns("a_b");
        assert_eq!(p[0], "%\"job_id\":\"a\\_b\"%");
        assert_eq!(p[3], "%\"to\":\"a\\_b\"%");
    }

    #[test]
    fn a_ulid_dates_its_job() {
        let t = ulid_time("01ARZ3NDEKTSV4RRFFQ69G5FAV").unwrap();
        assert_eq!(t.timestamp_millis(), 1_469_922_850_259);
        assert_eq!(ulid_time("x"), None);
    }

    #[test]
    fn the_cancel_result_is_the_constant() {
        assert!(SQLITE_CANCEL.contains(CANCELLED));
        assert!(PG_CANCEL.contains(CANCELLED));
    }
}
