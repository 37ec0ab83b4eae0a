//! Job control: plinth's own tables about jobs (the attempt history `job_attempts`, the
//! queue pauses `job_queues`, the processes `job_processes`), and the operator's view of
//! the queue over them. apalis's own tables are read and written by
//! `plinth_workers::queue` only (its status mapping is there, once); the functions here
//! run its statements on our database and, where a job's client has a row of ours (an
//! export, an image asset), change that row in the same transaction.
//!
//! Queues go by the names operators use (`email`, `export`, `images`, `expiry`,
//! `callbacks`: `plinth_workers::QueueName`). The client's id of a job (an export's job
//! id, an image check's asset id, an email's id) is its `client_id`: `find` and the
//! list's `search` take it as well as apalis's id.

use chrono::{DateTime, Utc};
use plinth_vocab::{AttemptOutcome, ProcessRole};
use plinth_workers::queue::tables::{Changed, Filter, Tables};
use plinth_workers::{QueueName, RunRecord};

pub use plinth_workers::queue::tables::{JobRow, QueueCounts, Throughput};

use crate::db::{now, BeginWrite, Db};
use crate::states::JobStatus;
use crate::with_db;

/// A queue by its short name or its apalis name (the one mapping is
/// `plinth_workers::QueueName`); the error is the message operators read.
pub fn queue(name: &str) -> Result<QueueName, String> {
    QueueName::parse(name).ok_or_else(|| {
        let names: Vec<_> = QueueName::ALL.iter().map(|q| q.name()).collect();
        format!("unknown queue `{name}`: use {}", or_list(&names))
    })
}

/// Every spelling [`queue`] takes (short names, then apalis's where they differ), as
/// the document lists them.
pub fn queue_spellings() -> Vec<&'static str> {
    let mut names: Vec<_> = QueueName::ALL.iter().map(|q| q.name()).collect();
    for q in QueueName::ALL {
        if q.table_name() != q.name() {
            names.push(q.table_name());
        }
    }
    names
}

/// Older names of statuses that filters still take.
const STATUS_ALIASES: [(&str, JobStatus); 3] = [
    ("done", JobStatus::Succeeded),
    ("killed", JobStatus::Cancelled),
    ("canceled", JobStatus::Cancelled),
];

/// One of the statuses operators see ([`JobStatus`]), in any case (the older `done` and
/// `killed` name `succeeded` and `cancelled`); the error is the message operators read.
pub fn status(name: &str) -> Result<JobStatus, String> {
    let word = name.trim().to_ascii_lowercase();
    STATUS_ALIASES
        .iter()
        .find(|(alias, _)| *alias == word)
        .map(|(_, status)| *status)
        .or_else(|| JobStatus::parse(&word))
        .ok_or_else(|| {
            let all: Vec<_> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown status `{name}`: use {}", or_list(&all))
        })
}

/// Every spelling [`status`] takes but `unknown` (no filter asks for it), as the
/// document lists them.
pub fn status_spellings() -> Vec<&'static str> {
    JobStatus::ALL
        .iter()
        .filter(|s| **s != JobStatus::Unknown)
        .map(|s| s.as_str())
        .chain(STATUS_ALIASES.iter().map(|(alias, _)| *alias))
        .collect()
}

/// `a, b or c`.
fn or_list(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => words.join(""),
    }
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

/// Runs of one queue that started in one minute, and how long their jobs waited.
#[derive(Clone, Debug, PartialEq)]
pub struct Latency {
    pub minute: DateTime<Utc>,
    pub queue: String,
    pub runs: i64,
    pub avg_wait_ms: f64,
    pub max_wait_ms: i64,
}

/// Runs that started per minute since `$1`, by queue, with how long their jobs waited
/// for a worker (average and longest, ms).
const SQLITE_LATENCY: &str = "SELECT queue, CAST(strftime('%s', started_at) AS INTEGER) / 60 * 60 \
     AS minute, COUNT(*), CAST(AVG(waited_ms) AS REAL), MAX(waited_ms) FROM job_attempts \
     WHERE started_at >= $1 GROUP BY queue, minute ORDER BY minute, queue";
const PG_LATENCY: &str = "SELECT queue, (FLOOR(EXTRACT(EPOCH FROM started_at) / 60) * 60)::int8 \
     AS minute, COUNT(*), AVG(waited_ms)::float8, MAX(waited_ms)::int8 FROM job_attempts \
     WHERE started_at >= $1 GROUP BY 1, 2 ORDER BY 2, 1";

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

/// Counts per queue and status (one grouped query), and which queues are paused.
pub async fn stats(db: &Db) -> sqlx::Result<Vec<QueueCounts>> {
    let mut out = with_db!(db, p => p.acquire().await?.counts(false).await)?;
    let paused = paused(db).await?;
    for c in &mut out {
        c.paused = paused.iter().any(|q| q.name() == c.queue);
    }
    Ok(out)
}

/// Queue depth for the metrics: one grouped query over the rows that are not done.
pub async fn depth(db: &Db) -> Result<Vec<QueueDepth>, sqlx::Error> {
    let counts = with_db!(db, p => p.acquire().await?.counts(true).await)?;
    Ok(counts
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
    with_db!(db, p => p.acquire().await?.throughput(since).await)
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

const PRUNE_BATCH: i64 = 5_000;

/// Deletes the finished jobs that ended more than `days` days ago, and the records of
/// runs that old (the upkeep's job retention, `PLINTH_JOB_RETENTION_DAYS`); how many
/// jobs. Pending, running and retrying jobs are never touched.
pub async fn prune(db: &Db, days: u64) -> sqlx::Result<u64> {
    let days = i64::try_from(days).unwrap_or(i64::MAX);
    let before = now()
        .timestamp()
        .saturating_sub(days.saturating_mul(86_400));
    let mut total = 0;
    loop {
        // Batches: the queue's writers never wait long on SQLite's one write lock.
        let n = with_db!(db, p => p.acquire().await?.prune(before, PRUNE_BATCH).await)?;
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

/// Jobs of a queue and/or status (our names, checked by the caller) and/or matching a
/// search term (`search_term`), newest first.
pub async fn list(
    db: &Db,
    queue: Option<QueueName>,
    status: Option<JobStatus>,
    search: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<JobRow>> {
    let filter = Filter {
        queue,
        status,
        search,
        limit: limit.clamp(1, LIST_MAX),
    };
    with_db!(db, p => p.acquire().await?.list(filter).await)
}

/// The job with apalis's id `id`.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<JobRow>> {
    with_db!(db, p => p.acquire().await?.job(id).await)
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
    pub outcome: AttemptOutcome,
    pub cause: Option<String>,
    pub error: Option<String>,
    pub next_at: Option<DateTime<Utc>>,
}

/// A mail relay that fails: the first refusal since its last delivery, and the latest
/// refusal's error.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayTrouble {
    pub since: DateTime<Utc>,
    pub error: Option<String>,
}

/// Causes of an email attempt that say the relay (or the outbox folder) did not take
/// it; a bad address (`invalid_email`) says nothing about the relay.
const RELAY_CAUSES: [&str; 3] = ["smtp", "smtp_rejected", "outbox"];

/// An email attempt as the relay check reads it: outcome, cause, when, error.
type AttemptSeen = (
    AttemptOutcome,
    Option<String>,
    DateTime<Utc>,
    Option<String>,
);

/// Whether the latest email attempts of the last day, on any process, failed at the
/// relay: `None` when the latest one that reached it delivered (or there was none).
pub async fn relay_trouble(db: &Db) -> sqlx::Result<Option<RelayTrouble>> {
    let since = now() - chrono::TimeDelta::days(1);
    let recent: Vec<AttemptSeen> = with_db!(db, p => sqlx::query_as(
            "SELECT outcome, cause, finished_at, error FROM job_attempts \
             WHERE queue = 'email' AND finished_at > $1 ORDER BY id DESC LIMIT 50"
        ).bind(since).fetch_all(p).await)?;
    let mut trouble: Option<RelayTrouble> = None;
    for (outcome, cause, at, error) in recent {
        if outcome == AttemptOutcome::Succeeded {
            break;
        }
        if cause.as_deref().is_some_and(|c| RELAY_CAUSES.contains(&c)) {
            match &mut trouble {
                Some(t) => t.since = at,
                None => trouble = Some(RelayTrouble { since: at, error }),
            }
        }
    }
    Ok(trouble)
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
    // Whole seconds, rounded up: SQLite's queue keeps `run_at` in seconds and a retry
    // must never come early.
    let next = match (run.outcome, run.next_at) {
        (AttemptOutcome::Retrying, Some(next)) => {
            Some((next.timestamp_millis() + 999).div_euclid(1000))
        }
        _ => None,
    };
    let give_up = run.outcome == AttemptOutcome::Failed;
    with_db!(db, p => {
        let record = sqlx::query(INSERT)
            .bind(&run.job_id).bind(run.queue.name()).bind(run.attempt).bind(&run.worker)
            .bind(run.started_at).bind(run.finished_at).bind(run.waited_ms)
            .bind(run.outcome).bind(run.cause).bind(run.error.as_deref()).bind(run.next_at);
        if next.is_none() && !give_up {
            // A run that went through only adds to the history: one statement, no
            // transaction (on SQLite a transaction holds the write lock across its round
            // trips, while every other writer waits).
            return record.execute(p).await.map(|_| ());
        }
        let mut tx = p.begin_write().await?;
        match next {
            Some(at) => tx.reschedule(&run.job_id, &run.worker, at).await?,
            None => tx.give_up(&run.job_id, &run.worker, run.attempt).await?,
        }
        record.execute(&mut *tx).await?;
        tx.commit().await
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
fn slide_ref(changed: &Changed, field: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&changed.args).ok()?;
    v.get(field)?.as_str().map(str::to_owned)
}

/// A failed or cancelled job back to pending and runnable now (one conditional update; a
/// retried export's own row is reset in the same transaction).
pub async fn retry(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let mut client = None;
    let changed = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let changed = tx.retry(id).await?;
        if let Some(c) = changed.as_ref().filter(|c| c.queue == QueueName::Export) {
            if let Some(job_id) = slide_ref(c, "job_id") {
                sqlx::query(SLIDE_RETRY).bind(&job_id).bind(now()).execute(&mut *tx).await?;
                client = Some(job_id);
            }
        }
        tx.commit().await?;
        changed.map(|c| c.queue)
    });
    if let Some(queue) = changed {
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
    let mut client = None;
    let mut call = false;
    let changed = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let changed = tx.cancel(id).await?;
        let (field, update) = match changed.as_ref().map(|c| c.queue) {
            Some(QueueName::Export) => ("job_id", Some(SLIDE_CANCEL)),
            Some(QueueName::Images) => ("asset_id", Some(ASSET_CANCEL)),
            _ => ("", None),
        };
        let target = changed.as_ref().and_then(|c| slide_ref(c, field));
        if let (Some(update), Some(target)) = (update, target) {
            let ended: Option<(Option<String>,)> = sqlx::query_as(update).bind(&target)
                .bind(now()).fetch_optional(&mut *tx).await?;
            if let Some((Some(_),)) = ended {
                use plinth_workers::Enqueue;
                tx.enqueue(plinth_workers::CallbackTask::new(&target)).await?;
                call = true;
            }
            client = Some(target);
        }
        tx.commit().await?;
        changed.is_some()
    });
    if call {
        plinth_workers::wake(QueueName::Callbacks);
    }
    if let Some(target) = client {
        crate::db::watch::changed(&target);
    }
    outcome(db, id, changed).await
}

/// Deletes a finished job (and its attempt records); `Changed` carries the job as it was.
pub async fn discard(db: &Db, id: &str) -> sqlx::Result<Outcome> {
    let Some(job) = get(db, id).await? else {
        return Ok(Outcome::NotFound);
    };
    let gone = with_db!(db, p => {
        let mut tx = p.begin_write().await?;
        let gone = tx.discard(id).await?;
        if gone {
            sqlx::query("DELETE FROM job_attempts WHERE job_id = $1").bind(id)
                .execute(&mut *tx).await?;
        }
        tx.commit().await?;
        gone
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
    pub const ALL: [Action; 3] = [Action::Retry, Action::Cancel, Action::Discard];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Cancel => "cancel",
            Action::Discard => "discard",
        }
    }

    /// In any case, surrounding blanks ignored.
    pub fn parse(s: &str) -> Option<Action> {
        let word = s.trim().to_ascii_lowercase();
        Action::ALL.into_iter().find(|a| a.as_str() == word)
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
    pub role: ProcessRole,
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
        ).bind(&p.name).bind(p.role).bind(&p.host).bind(p.pid).bind(&p.version)
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
    let rows = with_db!(db, p => p.acquire().await?.workers(since).await)?;
    let running = list(db, None, Some(JobStatus::Running), None, LIST_MAX).await?;
    Ok(rows
        .into_iter()
        .map(|(name, queue, last_seen, started_at)| WorkerRow {
            jobs: running
                .iter()
                .filter(|j| j.worker.as_deref() == Some(name.as_str()))
                .cloned()
                .collect(),
            queue: queue.name(),
            last_seen,
            started_at,
            name,
        })
        .collect())
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
    }

    #[test]
    fn statuses() {
        assert_eq!(status("FAILED"), Ok(JobStatus::Failed));
        assert_eq!(status("done"), Ok(JobStatus::Succeeded));
        assert_eq!(status("killed"), Ok(JobStatus::Cancelled));
        assert_eq!(status("retrying"), Ok(JobStatus::Retrying));
        let e = status("queued").unwrap_err();
        assert!(e.contains("`queued`") && e.contains("retrying"), "{e}");
    }

    #[test]
    fn search_terms_match_whole_ids_only() {
        assert!(search_term("01JD4Z8G4M7XW9Q2R3S4T5V6W7").is_ok());
        assert!(search_term("me@example.com").is_ok());
        for bad in ["ab", "?code=", "a%b", "x y", "\"id\""] {
            assert!(search_term(bad).is_err(), "{bad}");
        }
    }
}
