//! Job control over apalis's own tables (`Jobs` on SQLite, `apalis.jobs` on PostgreSQL):
//! counts per queue, listing, an operator's retry and cancel, and the retention's delete.
//! Queues go by the names operators use (`email`, `export`, `images`, `expiry`:
//! `plinth_workers::QueueName`); the five statuses they see are defined here, once.
//!
//! apalis's statuses map to ours as follows (the SQL `CASE` in `state_sql!`):
//! - `Pending`, and `Failed` with attempts left (apalis fetches it again at once) →
//!   `pending`: no worker holds it; it runs when due;
//! - `Queued` (fetched into a worker's buffer) and `Running` → `running`: a worker holds it;
//! - `Done` → `done`; `Failed` with no attempts left → `failed`; `Killed` (aborted, or
//!   cancelled by an operator) → `killed`.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use plinth_workers::QueueName;

use crate::db::{now, BeginWrite, Db};
use crate::with_db;

/// A queue by its short name or its apalis name (the one mapping is
/// `plinth_workers::QueueName`); the error is the message operators read.
pub fn queue(name: &str) -> Result<QueueName, String> {
    QueueName::parse(name)
        .ok_or_else(|| format!("unknown queue `{name}`: use email, export, images or expiry"))
}

/// The short name of an apalis queue name.
fn short_name(apalis: &str) -> &'static str {
    QueueName::ALL
        .into_iter()
        .find(|q| q.table_name() == apalis)
        .map_or("unknown", QueueName::name)
}

/// The statuses operators see.
pub const STATUSES: [&str; 5] = ["pending", "running", "done", "failed", "killed"];

/// One of [`STATUSES`], in any case; the error is the message operators read.
pub fn status(name: &str) -> Result<&'static str, String> {
    let trimmed = name.trim();
    STATUSES
        .into_iter()
        .find(|s| s.eq_ignore_ascii_case(trimmed))
        .ok_or_else(|| {
            format!("unknown status `{name}`: use pending, running, done, failed or killed")
        })
}

/// The result an operator's cancel records (apalis's own `{"Err": ...}` shape).
pub const CANCELLED: &str = "cancelled by operator";

/// Our status of an apalis row: the one definition of the mapping (module comment).
macro_rules! state_sql {
    () => {
        "CASE WHEN status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts) THEN 'pending' \
         WHEN status IN ('Queued', 'Running') THEN 'running' \
         WHEN status = 'Done' THEN 'done' \
         WHEN status = 'Failed' THEN 'failed' \
         WHEN status = 'Killed' THEN 'killed' ELSE 'unknown' END"
    };
}

/// Rows that ended for good: done, failed with no attempts left, killed (`done`,
/// `failed`, `killed` in `state_sql!`).
macro_rules! finished_sql {
    () => {
        "(status IN ('Done', 'Killed') OR (status = 'Failed' AND attempts >= max_attempts))"
    };
}

/// The apalis rows of our queues only (a shared database may hold others); a literal for
/// `concat!`, checked against `QueueName` by a test.
macro_rules! our_queues {
    () => {
        "job_type IN ('email', 'slide-export', 'slide-images', 'expiry')"
    };
}

/// Counts by queue and status, with the oldest due pending `run_at` (epoch seconds) for
/// `$1` = now. `$table`, `$run_at`: the backend's table and `run_at` as epoch seconds;
/// `$only`: an extra filter (the gauges skip done rows, which only pile up).
macro_rules! counts_sql {
    ($table:literal, $run_at:literal, $only:literal) => {
        concat!(
            "SELECT job_type, state, COUNT(*) AS n, \
             MIN(CASE WHEN state = 'pending' AND run_at <= $1 THEN run_at END) AS oldest \
             FROM (SELECT job_type, ",
            $run_at,
            " AS run_at, ",
            state_sql!(),
            " AS state FROM ",
            $table,
            " WHERE ",
            our_queues!(),
            $only,
            ") AS j GROUP BY job_type, state"
        )
    };
}

const SQLITE_COUNTS: &str = counts_sql!("Jobs", "CAST(run_at AS REAL)", "");
const PG_COUNTS: &str = counts_sql!("apalis.jobs", "EXTRACT(EPOCH FROM run_at)::float8", "");
const SQLITE_DEPTH: &str = counts_sql!(
    "Jobs",
    "CAST(run_at AS REAL)",
    " AND status IN ('Pending', 'Queued', 'Running', 'Failed', 'Killed')"
);
const PG_DEPTH: &str = counts_sql!(
    "apalis.jobs",
    "EXTRACT(EPOCH FROM run_at)::float8",
    " AND status IN ('Pending', 'Queued', 'Running', 'Failed', 'Killed')"
);

/// Finished jobs per minute (epoch seconds of the minute) since `$1` (epoch seconds):
/// done, and failed or killed for good.
const SQLITE_THROUGHPUT: &str = concat!(
    "SELECT job_type, CAST(done_at / 60 AS INTEGER) * 60 AS minute, \
     SUM(CASE WHEN status = 'Done' THEN 1 ELSE 0 END) AS done, \
     SUM(CASE WHEN status = 'Done' THEN 0 ELSE 1 END) AS failed \
     FROM Jobs WHERE done_at >= $1 AND ",
    our_queues!(),
    " AND ",
    finished_sql!(),
    " GROUP BY job_type, minute ORDER BY minute, job_type"
);
const PG_THROUGHPUT: &str = concat!(
    "SELECT job_type, (FLOOR(EXTRACT(EPOCH FROM done_at) / 60) * 60)::int8 AS minute, \
     COUNT(*) FILTER (WHERE status = 'Done') AS done, \
     COUNT(*) FILTER (WHERE status <> 'Done') AS failed \
     FROM apalis.jobs WHERE done_at >= to_timestamp($1::float8) AND ",
    our_queues!(),
    " AND ",
    finished_sql!(),
    " GROUP BY 1, 2 ORDER BY 2, 1"
);

/// Jobs, newest first (apalis ids are ULIDs: they sort by creation), filtered by apalis
/// queue (`$1`), our status (`$2`) and id (`$3`), at most `$4`.
macro_rules! list_sql {
    ($table:literal, $cols:literal) => {
        concat!(
            "SELECT id, job_type, status, state, attempts, max_attempts, run_at, done_at, lock_by, \
             last_result, job FROM (SELECT ",
            $cols,
            ", ",
            state_sql!(),
            " AS state FROM ",
            $table,
            " WHERE ",
            our_queues!(),
            ") AS j WHERE ($1 IS NULL OR job_type = $1) AND ($2 IS NULL OR state = $2) \
             AND ($3 IS NULL OR id = $3) ORDER BY id DESC LIMIT $4"
        )
    };
}

const SQLITE_LIST: &str = list_sql!(
    "Jobs",
    "id, job_type, status, attempts, max_attempts, CAST(run_at AS REAL) AS run_at, \
     CAST(done_at AS REAL) AS done_at, lock_by, last_result, job"
);
const PG_LIST: &str = list_sql!(
    "apalis.jobs",
    "id, job_type, status, attempts::int8 AS attempts, max_attempts::int8 AS max_attempts, \
     EXTRACT(EPOCH FROM run_at)::float8 AS run_at, EXTRACT(EPOCH FROM done_at)::float8 AS done_at, \
     lock_by, last_result::text AS last_result, job"
);

/// Up to `$2` finished jobs (done, failed for good, killed) that ended before `$1` (epoch
/// seconds). Deleted in batches so that the queue's writers never wait long on SQLite's
/// one write lock.
macro_rules! prune_sql {
    ($table:literal, $before:literal) => {
        concat!(
            "DELETE FROM ",
            $table,
            " WHERE id IN (SELECT id FROM ",
            $table,
            " WHERE ",
            our_queues!(),
            " AND ",
            finished_sql!(),
            " AND done_at < ",
            $before,
            " LIMIT $2)"
        )
    };
}

const SQLITE_PRUNE: &str = prune_sql!("Jobs", "$1");
const PG_PRUNE: &str = prune_sql!("apalis.jobs", "to_timestamp($1::float8)");
const PRUNE_BATCH: i64 = 5_000;

/// Deletes the finished jobs that ended more than `days` days ago (the upkeep's job
/// retention, `PLINTH_JOB_RETENTION_DAYS`); how many. Pending, running and retrying
/// jobs are never touched.
pub async fn prune(db: &Db, days: u64) -> sqlx::Result<u64> {
    let days = i64::try_from(days).unwrap_or(i64::MAX);
    let before = now()
        .timestamp()
        .saturating_sub(days.saturating_mul(86_400));
    let sql = pick(db, SQLITE_PRUNE, PG_PRUNE);
    let mut total = 0;
    loop {
        let n = with_db!(db, p => sqlx::query(sql)
            .bind(before)
            .bind(PRUNE_BATCH)
            .execute(p)
            .await
            .map(|r| r.rows_affected()))?;
        total += n;
        if n < PRUNE_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// A failed or killed job back to pending, due now, with its attempts and lock cleared
/// (SQLite fetches pending jobs only with `lock_by` NULL; PostgreSQL with `run_at` past).
/// The last result stays until the next run replaces it.
macro_rules! retry_sql {
    ($table:literal, $now:literal) => {
        concat!(
            "UPDATE ",
            $table,
            " SET status = 'Pending', attempts = 0, run_at = ",
            $now,
            ", done_at = NULL, lock_by = NULL, lock_at = NULL WHERE id = $1 AND ",
            our_queues!(),
            " AND (status = 'Killed' OR (status = 'Failed' AND attempts >= max_attempts)) \
             RETURNING job_type, job"
        )
    };
}

const SQLITE_RETRY: &str = retry_sql!("Jobs", "strftime('%s', 'now')");
const PG_RETRY: &str = retry_sql!("apalis.jobs", "now()");

/// A pending job (no worker holds it: a worker's fetch makes it `Queued` first) killed
/// with the operator's result; apalis never fetches a killed job.
macro_rules! cancel_sql {
    ($table:literal, $now:literal, $result:literal) => {
        concat!(
            "UPDATE ",
            $table,
            " SET status = 'Killed', done_at = ",
            $now,
            ", last_result = ",
            $result,
            " WHERE id = $1 AND ",
            our_queues!(),
            " AND (status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts)) \
             RETURNING job_type, job"
        )
    };
}

const SQLITE_CANCEL: &str = cancel_sql!(
    "Jobs",
    "strftime('%s', 'now')",
    "'{\"Err\":\"cancelled by operator\"}'"
);
const PG_CANCEL: &str = cancel_sql!(
    "apalis.jobs",
    "now()",
    "'{\"Err\":\"cancelled by operator\"}'::jsonb"
);

/// A retried export runs again from the start: our row goes back to `pending` when it
/// ended in failure (or its run died holding it), else `start_export` would find it
/// ended and the client would keep seeing `failed`. A row the client cancelled, or one
/// that succeeded, stays as it is (the run then ends at once).
const SLIDE_RETRY: &str = "UPDATE slide_jobs SET status = 'pending', attempts = 0, error = NULL, \
    done = 0, lease_owner = NULL, lease_until = NULL, started_at = NULL, finished_at = NULL, \
    updated_at = $2 WHERE id = $1 AND (status = 'failed' OR (status = 'running' \
    AND (lease_until IS NULL OR lease_until < $2)))";
/// A cancelled export ends for the client too, instead of staying `pending` forever.
const SLIDE_CANCEL: &str = "UPDATE slide_jobs SET status = 'failed', \
    error = 'cancelled by an operator', lease_until = NULL, finished_at = $2, updated_at = $2 \
    WHERE id = $1 AND status IN ('pending', 'running')";
/// A cancelled image check: the asset is rejected as the sweep would, so the client can
/// call `assets/complete` again instead of waiting.
const ASSET_CANCEL: &str = "UPDATE slide_assets SET status = 'rejected', \
    reason = 'validation cancelled by an operator; call assets/complete to try again', \
    updated_at = $2 WHERE id = $1 AND status = 'validating'";

fn pick(db: &Db, sqlite: &'static str, postgres: &'static str) -> &'static str {
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
    pub running: i64,
    pub done: i64,
    pub failed: i64,
    pub killed: i64,
    /// Age of the oldest pending job that is due, if any.
    pub oldest_pending_secs: Option<f64>,
}

/// What the metrics gauges read: queue depth per queue (`failed` counts killed too).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueDepth {
    pub queue: &'static str,
    pub pending: i64,
    pub running: i64,
    pub failed: i64,
    /// 0 when nothing is pending and due.
    pub oldest_pending_secs: f64,
}

/// Finished jobs of one queue in one minute.
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    pub minute: DateTime<Utc>,
    pub queue: &'static str,
    pub done: i64,
    pub failed: i64,
}

/// Every queue, always all four, in `QueueName::ALL` order.
async fn counts(db: &Db, depth_only: bool) -> sqlx::Result<Vec<QueueCounts>> {
    let sql = if depth_only {
        pick(db, SQLITE_DEPTH, PG_DEPTH)
    } else {
        pick(db, SQLITE_COUNTS, PG_COUNTS)
    };
    let now = epoch_now();
    let rows: Vec<(String, String, i64, Option<f64>)> =
        with_db!(db, p => sqlx::query_as(sql).bind(now).fetch_all(p).await)?;
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
            "running" => c.running += n,
            "done" => c.done += n,
            "failed" => c.failed += n,
            "killed" => c.killed += n,
            _ => {}
        }
    }
    Ok(out)
}

/// Counts per queue and status (one grouped query).
pub async fn stats(db: &Db) -> sqlx::Result<Vec<QueueCounts>> {
    counts(db, false).await
}

/// Queue depth for the metrics: one grouped query over the rows that are not done.
pub async fn depth(db: &Db) -> Result<Vec<QueueDepth>, sqlx::Error> {
    Ok(counts(db, true)
        .await?
        .into_iter()
        .map(|c| QueueDepth {
            queue: c.queue,
            pending: c.pending,
            running: c.running,
            failed: c.failed + c.killed,
            oldest_pending_secs: c.oldest_pending_secs.unwrap_or(0.0),
        })
        .collect())
}

/// Finished jobs per minute and queue over the last `minutes` minutes (minutes without
/// a finished job are left out), oldest first.
pub async fn throughput(db: &Db, minutes: i64) -> sqlx::Result<Vec<Throughput>> {
    let since = now().timestamp() - minutes * 60;
    let rows: Vec<(String, i64, i64, i64)> = with_db!(db, p => sqlx::query_as(
        pick(db, SQLITE_THROUGHPUT, PG_THROUGHPUT)
    ).bind(since).fetch_all(p).await)?;
    Ok(rows
        .into_iter()
        .filter_map(|(job_type, minute, done, failed)| {
            Some(Throughput {
                minute: DateTime::from_timestamp(minute, 0)?,
                queue: short_name(&job_type),
                done,
                failed,
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
    /// Ours (`STATUSES`).
    pub status: String,
    /// apalis's own (`Queued`, `Failed`...), for the curious.
    pub apalis_status: String,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: Option<DateTime<Utc>>,
    pub done_at: Option<DateTime<Utc>>,
    /// The worker holding it (or that last held it).
    pub worker: Option<String>,
    /// The stored last result when it is an error.
    pub last_error: Option<String>,
    /// The job's arguments where they decode; an email shows its recipient only.
    pub args: Option<Value>,
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
    JobRow {
        args: args_of(queue, &job),
        id,
        queue,
        status: state,
        apalis_status,
        attempts,
        max_attempts,
        run_at: epoch(run_at),
        done_at: epoch(done_at),
        worker: lock_by,
        last_error: error_of(last.as_deref()),
    }
}

pub const LIST_DEFAULT: i64 = 50;
pub const LIST_MAX: i64 = 500;

/// Jobs of a queue and/or status (our names, checked by the caller), newest first.
pub async fn list(
    db: &Db,
    queue: Option<QueueName>,
    status: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<JobRow>> {
    let sql = pick(db, SQLITE_LIST, PG_LIST);
    let queue = queue.map(QueueName::table_name);
    let rows: Vec<RawJob> = with_db!(db, p => sqlx::query_as(sql)
        .bind(queue).bind(status).bind(None::<String>).bind(limit.clamp(1, LIST_MAX))
        .fetch_all(p).await)?;
    Ok(rows.into_iter().map(job_row).collect())
}

pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<JobRow>> {
    let sql = pick(db, SQLITE_LIST, PG_LIST);
    let row: Option<RawJob> = with_db!(db, p => sqlx::query_as(sql)
        .bind(None::<String>).bind(None::<String>).bind(id).bind(1_i64)
        .fetch_optional(p).await)?;
    Ok(row.map(job_row))
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

/// A failed or killed job back to pending and runnable now (one conditional update; a
/// retried export's own row is reset in the same transaction). On PostgreSQL the
/// workers are told at once, as for a new job (apalis's trigger fires on inserts only).
pub async fn retry(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let sql = pick(db, SQLITE_RETRY, PG_RETRY);
    let notify = matches!(db, Db::Postgres(_));
    let changed = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let row: Option<(String, Vec<u8>)> =
            sqlx::query_as(sql).bind(id).fetch_optional(&mut *tx).await?;
        if let Some((job_type, job)) = &row {
            if short_name(job_type) == "export" {
                if let Some(job_id) = slide_ref(job, "job_id") {
                    sqlx::query(SLIDE_RETRY).bind(job_id).bind(now()).execute(&mut *tx).await?;
                }
            }
            if notify {
                let payload = json!({"job_type": job_type, "id": id}).to_string();
                sqlx::query("SELECT pg_notify('apalis::job::insert', $1)")
                    .bind(payload).execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        row.is_some()
    });
    outcome(db, id, changed).await
}

/// A pending job killed before any worker takes it (one conditional update); a
/// cancelled export or image check ends for the client too, in the same transaction.
pub async fn cancel(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let sql = pick(db, SQLITE_CANCEL, PG_CANCEL);
    let changed = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let row: Option<(String, Vec<u8>)> =
            sqlx::query_as(sql).bind(id).fetch_optional(&mut *tx).await?;
        if let Some((job_type, job)) = &row {
            let (field, update) = match short_name(job_type) {
                "export" => ("job_id", Some(SLIDE_CANCEL)),
                "images" => ("asset_id", Some(ASSET_CANCEL)),
                _ => ("", None),
            };
            if let (Some(update), Some(target)) = (update, slide_ref(job, field)) {
                sqlx::query(update).bind(target).bind(now()).execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        row.is_some()
    });
    outcome(db, id, changed).await
}

#[cfg(test)]
mod tests {
    use super::*;

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
                our_queues!().contains(&format!("'{}'", q.table_name())),
                "{q:?}"
            );
        }
        assert_eq!(
            our_queues!().matches('\'').count(),
            2 * QueueName::ALL.len()
        );
    }

    #[test]
    fn statuses_and_results() {
        assert_eq!(status("FAILED"), Ok("failed"));
        assert!(status("queued").unwrap_err().contains("`queued`"));
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
        assert_eq!(
            args_of("export", br#"{"job_id":"j1"}"#),
            Some(json!({"job_id": "j1"}))
        );
        assert_eq!(args_of("export", b"\x00not json"), None);
    }

    #[test]
    fn the_cancel_result_is_the_constant() {
        assert!(SQLITE_CANCEL.contains(CANCELLED));
        assert!(PG_CANCEL.contains(CANCELLED));
    }
}
