//! Every read and write of apalis's tables other than a push: `Jobs` and `Workers` on
//! SQLite, `apalis.jobs` and `apalis.workers` on PostgreSQL. [`Tables`] runs them on a
//! connection of either backend, alone or inside a caller's transaction (a cancelled
//! export's own row ends in the same one).
//!
//! One vocabulary for clients and operators ([`JobStatus`]): a slide job's client sees
//! `pending`, `running`, `succeeded`, `failed` or `cancelled`; operators see the same
//! words, with `pending` told apart in two more ways. apalis's statuses map to ours as
//! follows (the SQL `CASE` of [`state_sql`], the one definition):
//! - `Pending`, due → `pending`; not due yet → `scheduled`;
//! - `Failed` with attempts left → `retrying` (apalis fetches it again when its `run_at`,
//!   the end of the back-off, is due);
//! - `Queued` (fetched into a worker's buffer) and `Running` → `running`;
//! - `Done` → `succeeded`; `Failed` with no attempts left → `failed`; `Killed` (cancelled
//!   by its client or an operator) → `cancelled`.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use plinth_vocab::JobStatus;
use serde_json::{json, Value};

use crate::queue::Queue;
use crate::QueueName;

/// The SQL that differs between the backends' job tables.
struct Dialect {
    table: &'static str,
    workers: &'static str,
    /// `run_at` and `done_at` as epoch seconds (float).
    run_at: &'static str,
    done_at: &'static str,
    last_result: &'static str,
    /// The job's arguments (JSON bytes) as text, for the search.
    job_text: &'static str,
    /// Now, in the table's time type.
    now: &'static str,
    /// Epoch seconds (a parameter) in the table's time type.
    at: &'static str,
    attempts: &'static str,
    max_attempts: &'static str,
    /// A JSON text parameter as `last_result`'s type.
    result: &'static str,
    int: &'static str,
}

const SQLITE: Dialect = Dialect {
    table: "Jobs",
    workers: "Workers",
    run_at: "CAST(run_at AS REAL)",
    done_at: "CAST(done_at AS REAL)",
    last_result: "last_result",
    job_text: "CAST(job AS TEXT)",
    now: "strftime('%s', 'now')",
    at: "",
    attempts: "attempts",
    max_attempts: "max_attempts",
    result: "",
    int: "",
};

const PG: Dialect = Dialect {
    table: "apalis.jobs",
    workers: "apalis.workers",
    run_at: "EXTRACT(EPOCH FROM run_at)::float8",
    done_at: "EXTRACT(EPOCH FROM done_at)::float8",
    last_result: "last_result::text",
    job_text: "convert_from(job, 'UTF8')",
    now: "now()",
    at: "to_timestamp",
    attempts: "attempts::int8",
    max_attempts: "max_attempts::int8",
    result: "::jsonb",
    int: "::int4",
};

impl Dialect {
    /// Epoch seconds in `param` (a float) as the table's time.
    fn time(&self, param: &str) -> String {
        match self.at {
            "" => param.to_owned(),
            f => format!("{f}({param}::float8)"),
        }
    }
}

/// The apalis rows of our queues only (a shared database may hold others).
static OUR_QUEUES: LazyLock<String> = LazyLock::new(|| {
    let names: Vec<String> = QueueName::ALL
        .iter()
        .map(|q| format!("'{}'", q.table_name()))
        .collect();
    format!("job_type IN ({})", names.join(", "))
});

/// Rows that ended for good: succeeded, failed with no attempts left, cancelled.
const FINISHED: &str =
    "(status IN ('Done', 'Killed') OR (status = 'Failed' AND attempts >= max_attempts))";

/// Rows waiting to run: pending, scheduled or retrying (what a cancel applies to).
const WAITING: &str = "(status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts))";

/// The result an operator's cancel records (apalis's own `{"Err": ...}` shape).
const CANCELLED_BY_OPERATOR: &str = r#"{"Err":"cancelled by operator"}"#;

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
         WHERE {our}{only}) AS j GROUP BY job_type, state",
        run_at = d.run_at,
        state = state_sql(d, "$1"),
        table = d.table,
        our = *OUR_QUEUES,
    )
}

const NOT_DONE: &str = " AND status IN ('Pending', 'Queued', 'Running', 'Failed', 'Killed')";

/// Finished jobs per minute (epoch seconds of the minute) since `$1` (epoch seconds):
/// succeeded, and failed or cancelled for good.
fn throughput_sql(d: &Dialect) -> String {
    let minute = match d.at {
        "" => "CAST(done_at / 60 AS INTEGER) * 60",
        _ => "(FLOOR(EXTRACT(EPOCH FROM done_at) / 60) * 60)::int8",
    };
    format!(
        "SELECT job_type, {minute} AS minute, \
         SUM(CASE WHEN status = 'Done' THEN 1 ELSE 0 END) AS succeeded, \
         SUM(CASE WHEN status = 'Done' THEN 0 ELSE 1 END) AS failed \
         FROM {table} WHERE done_at >= {since} AND {our} AND {FINISHED} \
         GROUP BY job_type, minute ORDER BY minute, job_type",
        table = d.table,
        since = d.time("$1"),
        our = *OUR_QUEUES,
    )
}

/// The columns a job is read with (`RawJob`), from the subquery `j` of [`jobs_from`].
const JOB_COLUMNS: &str = "id, job_type, status, state, attempts, max_attempts, run_at, \
    done_at, lock_by, last_result, job";

/// Our queues' jobs with their state for `now` (a placeholder, epoch seconds), as the
/// subquery `j`.
fn jobs_from(d: &Dialect, now: &str) -> String {
    format!(
        "(SELECT id, job_type, status, {attempts} AS attempts, \
         {max_attempts} AS max_attempts, {run_at} AS run_at, {done_at} AS done_at, lock_by, \
         {last_result} AS last_result, job, idempotency_key, {state} AS state FROM {table} \
         WHERE {our}) AS j",
        attempts = d.attempts,
        max_attempts = d.max_attempts,
        run_at = d.run_at,
        done_at = d.done_at,
        last_result = d.last_result,
        state = state_sql(d, now),
        table = d.table,
        our = *OUR_QUEUES,
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

/// One job by apalis's id (`$1`; `$2` is now).
fn one_sql(d: &Dialect) -> String {
    format!(
        "SELECT {JOB_COLUMNS} FROM {from} WHERE id = $1",
        from = jobs_from(d, "$2")
    )
}

/// Up to `$2` finished jobs that ended before `$1` (epoch seconds). Deleted in batches so
/// that the queue's writers never wait long on SQLite's one write lock.
fn prune_sql(d: &Dialect) -> String {
    format!(
        "DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {our} \
         AND {FINISHED} AND done_at < {before} LIMIT $2)",
        table = d.table,
        before = d.time("$1"),
        our = *OUR_QUEUES,
    )
}

/// A failed or cancelled job back to pending, due now, with its attempts reset (and its
/// limit back to its queue's: a job that failed for good at once had it lowered) and its
/// lock cleared (SQLite fetches pending jobs only with `lock_by` NULL; PostgreSQL with
/// `run_at` past). The last result stays until the next run replaces it. The limits are
/// this process's (`--email-backoff`...): numbers, not input.
fn retry_sql(d: &Dialect) -> String {
    let limits: Vec<String> = QueueName::ALL
        .iter()
        .map(|q| format!("WHEN '{}' THEN {}", q.table_name(), q.retry().max_attempts))
        .collect();
    format!(
        "UPDATE {table} SET status = 'Pending', attempts = 0, \
         max_attempts = CASE job_type {limits} ELSE max_attempts END, run_at = {now}, \
         done_at = NULL, lock_by = NULL, lock_at = NULL \
         WHERE id = $1 AND {our} \
         AND (status = 'Killed' OR (status = 'Failed' AND attempts >= max_attempts)) \
         RETURNING job_type, job",
        table = d.table,
        now = d.now,
        limits = limits.join(" "),
        our = *OUR_QUEUES,
    )
}

/// A waiting job (pending, scheduled or retrying: no worker holds it, a worker's fetch
/// makes it `Queued` first) cancelled with `$2` as its result; apalis never fetches a
/// killed job. By apalis's id (`$1`), or by queue (`$3`) and idempotency key (`$1`).
fn cancel_sql(d: &Dialect, by_key: bool) -> String {
    let which = match by_key {
        false => format!("id = $1 AND {}", *OUR_QUEUES),
        true => "job_type = $3 AND idempotency_key = $1".to_owned(),
    };
    format!(
        "UPDATE {table} SET status = 'Killed', done_at = {now}, last_result = $2{result} \
         WHERE {which} AND {WAITING} RETURNING job_type, job",
        table = d.table,
        now = d.now,
        result = d.result,
    )
}

/// A finished job (succeeded, failed for good or cancelled) deleted: an operator's
/// discard.
fn discard_sql(d: &Dialect) -> String {
    format!(
        "DELETE FROM {table} WHERE id = $1 AND {our} AND {FINISHED}",
        table = d.table,
        our = *OUR_QUEUES,
    )
}

/// The statements of one backend, built once.
struct Statements {
    counts: String,
    depth: String,
    throughput: String,
    list: String,
    one: String,
    prune: String,
    cancel: String,
    cancel_by_key: String,
    discard: String,
    reschedule: String,
    give_up: String,
    workers: String,
    release: String,
}

fn statements(d: &Dialect) -> Statements {
    let sqlite = d.at.is_empty();
    Statements {
        counts: counts_sql(d, ""),
        depth: counts_sql(d, NOT_DONE),
        throughput: throughput_sql(d),
        list: list_sql(d),
        one: one_sql(d),
        prune: prune_sql(d),
        cancel: cancel_sql(d, false),
        cancel_by_key: cancel_sql(d, true),
        discard: discard_sql(d),
        reschedule: format!(
            "UPDATE {} SET run_at = {} WHERE id = $2 AND lock_by = $3",
            d.table,
            d.time("$1")
        ),
        give_up: format!(
            "UPDATE {} SET max_attempts = $1{} WHERE id = $2 AND lock_by = $3",
            d.table, d.int
        ),
        workers: format!(
            "SELECT id, worker_type, {seen}, {started} FROM {table} \
             WHERE last_seen >= {since} ORDER BY id",
            seen = d.run_at.replace("run_at", "last_seen"),
            started = d.run_at.replace("run_at", "started_at"),
            table = d.workers,
            since = d.time("$1"),
        ),
        release: format!(
            "UPDATE {table} SET status = 'Pending', lock_by = NULL, lock_at = NULL, \
             done_at = NULL, last_result = $2{result} \
             WHERE status IN ('Running', 'Queued') AND {held}",
            table = d.table,
            result = d.result,
            held = match sqlite {
                true => "lock_by IN (SELECT value FROM json_each($1))",
                false => "lock_by = ANY($1)",
            },
        ),
    }
}

static SQLITE_SQL: LazyLock<Statements> = LazyLock::new(|| statements(&SQLITE));
static PG_SQL: LazyLock<Statements> = LazyLock::new(|| statements(&PG));

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

/// Finished jobs of one queue in one minute.
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    pub minute: DateTime<Utc>,
    pub queue: &'static str,
    pub succeeded: i64,
    pub failed: i64,
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

/// An apalis worker that beat recently: name, queue, last seen, started.
pub type WorkerSeen = (
    String,
    QueueName,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
);

/// A job an operator's retry or cancel changed: its queue and arguments (the caller
/// ends or restarts the client's side of it in the same transaction).
pub struct Changed {
    pub queue: QueueName,
    pub args: Vec<u8>,
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

pub fn epoch(t: Option<f64>) -> Option<DateTime<Utc>> {
    let t = t?;
    DateTime::from_timestamp_millis((t * 1000.0).round() as i64)
}

/// The short name of an apalis queue name.
pub fn short_name(apalis: &str) -> &'static str {
    QueueName::ALL
        .into_iter()
        .find(|q| q.table_name() == apalis)
        .map_or("unknown", QueueName::name)
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
    if queue == QueueName::Email.name() {
        let to = v.pointer("/email/to").cloned().unwrap_or(Value::Null);
        return Some(json!({ "to": to }));
    }
    Some(v)
}

/// The client's id of a job, from its arguments (`Job::CLIENT_ID`).
fn client_id_of(queue: &str, job: &[u8]) -> Option<String> {
    let field = QueueName::parse(queue)?.client_id()?;
    let v: Value = serde_json::from_slice(job).ok()?;
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
    let status = JobStatus::parse(&state).unwrap_or(JobStatus::Unknown);
    JobRow {
        args: args_of(queue, &job),
        client_id: client_id_of(queue, &job),
        created_at: ulid_time(&id),
        next_attempt_at: matches!(status, JobStatus::Scheduled | JobStatus::Retrying)
            .then_some(run_at)
            .flatten(),
        id,
        queue,
        status,
        apalis_status,
        attempts,
        max_attempts,
        run_at,
        done_at: epoch(done_at),
        worker: lock_by,
        last_error: error_of(last.as_deref()),
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

/// One queue's counts from the grouped rows (job type, state, count, oldest pending).
fn tally(rows: Vec<(String, String, i64, Option<f64>)>, now: f64) -> Vec<QueueCounts> {
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
        match JobStatus::parse(&state) {
            Some(JobStatus::Pending) => {
                c.pending += n;
                c.oldest_pending_secs = oldest.map(|t| (now - t).max(0.0));
            }
            Some(JobStatus::Scheduled) => c.scheduled += n,
            Some(JobStatus::Running) => c.running += n,
            Some(JobStatus::Retrying) => c.retrying += n,
            Some(JobStatus::Succeeded) => c.succeeded += n,
            Some(JobStatus::Failed) => c.failed += n,
            Some(JobStatus::Cancelled) => c.cancelled += n,
            _ => {}
        }
    }
    out
}

/// Now in epoch seconds, to the millisecond.
fn epoch_now() -> f64 {
    Utc::now().timestamp_millis() as f64 / 1000.0
}

/// What a listing asks for: a queue, one of our statuses, a search term (checked by the
/// caller), at most `limit` jobs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'a> {
    pub queue: Option<QueueName>,
    pub status: Option<JobStatus>,
    pub search: Option<&'a str>,
    pub limit: i64,
}

mod backends;

pub use backends::Tables;

impl Queue {
    /// Hands the jobs that `workers` fetched or were running back to their queue, as
    /// apalis does for a worker whose heartbeats stopped. The attempt stays counted.
    pub(crate) async fn release(&self, workers: &[String]) -> Result<u64, sqlx::Error> {
        if workers.is_empty() {
            return Ok(0);
        }
        match self {
            Queue::Sqlite(p) => p.acquire().await?.release(workers).await,
            Queue::Postgres(p) => p.acquire().await?.release(workers).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sql_names_every_queue() {
        for q in QueueName::ALL {
            assert!(
                OUR_QUEUES.contains(&format!("'{}'", q.table_name())),
                "{q:?}"
            );
        }
        assert_eq!(OUR_QUEUES.matches('\'').count(), 2 * QueueName::ALL.len());
        assert!(SQLITE_SQL.cancel.contains("$2"));
        assert!(PG_SQL.cancel.contains("$2::jsonb"));
        assert!(retry_sql(&PG).contains("WHEN 'slide-export' THEN 4"));
    }

    #[test]
    fn results_and_arguments() {
        assert_eq!(
            error_of(Some(r#"{"Err":"connection refused"}"#)).as_deref(),
            Some("connection refused")
        );
        assert_eq!(error_of(Some(r#"{"Ok":null}"#)), None);
        assert_eq!(error_of(None), None);
        assert_eq!(
            error_of(Some(CANCELLED_BY_OPERATOR)).as_deref(),
            Some("cancelled by operator")
        );
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
        assert_eq!(short_name("expiry"), "expiry");
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
}
