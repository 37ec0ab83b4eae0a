//! Job control for operators (Admin100; additions beyond the spec, docs/api.md): queue
//! counts, throughput and latency, jobs by status with search, one job with every
//! attempt, retry and cancel. `plinth jobs` does the same from the command line
//! (`src/cli/jobs.rs`); both read `db::jobs`.

use axum::extract::{Path, Query, State};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::db::jobs::{self as store, Outcome};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::Answer;
use crate::http::request::{Limit, NonBlank};
use crate::state::AppState;
use crate::states::JobStatus;
use crate::wire::names_schema;

/// One queue's jobs by status (docs/api.md, "Job control").
#[derive(Serialize, schemars::JsonSchema)]
pub struct QueueView {
    /// `email`, `export`, `images`, `expiry` or `callbacks`.
    queue: &'static str,
    /// Due, waiting for a worker.
    pending: i64,
    /// Waiting for their time (not due yet).
    scheduled: i64,
    /// Held by a worker.
    running: i64,
    /// Failed, waiting out the back-off before their next attempt.
    retrying: i64,
    succeeded: i64,
    /// Failed for good.
    failed: i64,
    cancelled: i64,
    /// Seconds since the oldest pending job was due; null when none is.
    oldest_pending_secs: Option<f64>,
    /// Paused by an operator: no worker of any process starts a job of it.
    paused: bool,
}

/// Jobs that finished in one minute.
#[derive(Serialize, schemars::JsonSchema)]
pub struct MinuteView {
    /// The start of the minute.
    minute: DateTime<Utc>,
    queue: &'static str,
    succeeded: i64,
    /// Failed for good, or cancelled.
    failed: i64,
}

/// Runs that started in one minute and how long their jobs waited for a worker.
#[derive(Serialize, schemars::JsonSchema)]
pub struct LatencyView {
    /// The start of the minute.
    minute: DateTime<Utc>,
    queue: String,
    runs: i64,
    /// Average wait from due to started, in milliseconds.
    avg_wait_ms: f64,
    /// Longest wait, in milliseconds.
    max_wait_ms: i64,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct StatsAnswer {
    /// Every queue, always.
    queues: Vec<QueueView>,
    /// The last 60 minutes, oldest first; minutes without a finished job are left out.
    throughput: Vec<MinuteView>,
    /// The last 60 minutes, oldest first; minutes without a run are left out.
    latency: Vec<LatencyView>,
}

/// `GET /api/admin/jobs/stats` (Admin100).
pub async fn stats(State(app): State<AppState>) -> ApiResult<Answer<StatsAnswer>> {
    let queues = store::stats(&app.db)
        .await?
        .into_iter()
        .map(|c| QueueView {
            queue: c.queue,
            pending: c.pending,
            scheduled: c.scheduled,
            running: c.running,
            retrying: c.retrying,
            succeeded: c.succeeded,
            failed: c.failed,
            cancelled: c.cancelled,
            oldest_pending_secs: c.oldest_pending_secs,
            paused: c.paused,
        })
        .collect();
    let throughput = store::throughput(&app.db, 60)
        .await?
        .into_iter()
        .map(|t| MinuteView {
            minute: t.minute,
            queue: t.queue,
            succeeded: t.succeeded,
            failed: t.failed,
        })
        .collect();
    let latency = store::latency(&app.db, 60)
        .await?
        .into_iter()
        .map(|l| LatencyView {
            minute: l.minute,
            queue: l.queue,
            runs: l.runs,
            avg_wait_ms: l.avg_wait_ms,
            max_wait_ms: l.max_wait_ms,
        })
        .collect();
    Ok(Answer(StatsAnswer {
        queues,
        throughput,
        latency,
    }))
}

/// A job as operators see it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct QueueJob {
    /// apalis's id (a ULID).
    id: String,
    queue: &'static str,
    status: JobStatus,
    /// apalis's own status (`Pending`, `Queued`, `Running`, `Done`, `Failed`, `Killed`).
    apalis_status: String,
    /// Runs so far.
    attempts: i64,
    /// Runs it may have in all.
    max_attempts: i64,
    /// When it was queued.
    created_at: Option<DateTime<Utc>>,
    /// When it is (or was) due.
    run_at: Option<DateTime<Utc>>,
    /// When its next attempt runs (a scheduled or retrying job).
    next_attempt_at: Option<DateTime<Utc>>,
    done_at: Option<DateTime<Utc>>,
    /// The worker that holds (or last held) it.
    worker: Option<String>,
    /// The last run's error, if it failed.
    last_error: Option<String>,
    /// The job's arguments; an email shows its recipient (`to`) only.
    args: Option<Value>,
    /// The id the job's client holds: an export's job id (`GET /api/slides/jobs/{id}`),
    /// an image check's asset id, an email's id (its Message-ID).
    client_id: Option<String>,
}

impl From<store::JobRow> for QueueJob {
    fn from(j: store::JobRow) -> Self {
        Self {
            id: j.id,
            queue: j.queue,
            status: j.status,
            apalis_status: j.apalis_status,
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            created_at: j.created_at,
            run_at: j.run_at,
            next_attempt_at: j.next_attempt_at,
            done_at: j.done_at,
            worker: j.worker,
            last_error: j.last_error,
            args: j.args,
            client_id: j.client_id,
        }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// `email`, `export`, `images`, `expiry` or `callbacks` (apalis's names are accepted
    /// too). Empty: every queue (the console's "all").
    #[serde(default)]
    #[schemars(schema_with = "queue_filter")]
    queue: Option<String>,
    /// `pending`, `scheduled`, `running`, `retrying`, `succeeded`, `failed` or
    /// `cancelled` (`done` and `killed` are read as `succeeded` and `cancelled`). Empty:
    /// every status.
    #[serde(default)]
    #[schemars(schema_with = "status_filter")]
    status: Option<String>,
    /// A job's id, the id its client holds (an export's job id, an asset id, an email's
    /// id) or an email's recipient: exact values only.
    #[schemars(regex(pattern = r"^\s*([A-Za-z0-9@._+-]{3,254}\s*)?$"))]
    search: Option<String>,
    /// 1 to 500; 50 when absent.
    #[serde(default, deserialize_with = "crate::http::extract::lenient")]
    limit: Limit<{ store::LIST_DEFAULT }, { store::LIST_MAX }>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct JobList {
    /// Newest first.
    jobs: Vec<QueueJob>,
}

/// `GET /api/admin/jobs` (Admin100): jobs by queue, status and search, newest first.
pub async fn list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Answer<JobList>> {
    // An empty filter is "any" (the console sends one); any other value must be a name.
    let chosen = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
    let queue = chosen(&q.queue)
        .map(|name| store::queue(&name))
        .transpose()
        .map_err(ApiError::bad_request)?;
    let status = chosen(&q.status)
        .map(|name| store::status(&name))
        .transpose()
        .map_err(ApiError::bad_request)?;
    let search = given(&q.search)
        .map(|t| store::search_term(&t))
        .transpose()
        .map_err(ApiError::bad_request)?;
    let limit = q.limit.get();
    let jobs = store::list(&app.db, queue, status, search.as_deref(), limit).await?;
    Ok(Answer(JobList {
        jobs: jobs.into_iter().map(QueueJob::from).collect(),
    }))
}

/// One run of a job.
#[derive(Serialize, schemars::JsonSchema)]
pub struct AttemptView {
    /// 1 for the first run.
    attempt: i64,
    worker: String,
    started_at: DateTime<Utc>,
    finished_at: DateTime<Utc>,
    /// How long the job waited for a worker before this run (from due to started).
    waited_ms: i64,
    /// `succeeded`, `retrying` (failed; another attempt follows), `failed` (for good) or
    /// `cancelled`.
    outcome: String,
    /// A short label of the failure: `smtp`, `smtp_rejected`, `render`, `asset`,
    /// `storage`, `timeout`, `panic`...
    cause: Option<String>,
    error: Option<String>,
    /// When the next attempt was due (a retry).
    next_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct JobDetail {
    job: QueueJob,
    /// Every recorded run, first first.
    attempts: Vec<AttemptView>,
    /// Other jobs the same client id names (an image checked again), newest first.
    others: Vec<String>,
}

/// The job `id` names: apalis's id, else the newest job of that client id; 404 when none.
async fn resolve(app: &AppState, id: &str) -> ApiResult<(store::JobRow, Vec<String>)> {
    let term = id.trim();
    if term.is_empty() {
        return Err(ApiError::bad_request("`id` must not be empty"));
    }
    let found = if let Some(job) = store::get(&app.db, term).await? {
        vec![job]
    } else if store::search_term(term).is_ok() {
        store::find(&app.db, term).await?
    } else {
        Vec::new()
    };
    let mut found = found.into_iter();
    let job = found
        .next()
        .ok_or_else(|| ApiError::not_found(format!("no job with id `{term}`")))?;
    Ok((job, found.map(|j| j.id).collect()))
}

/// `GET /api/admin/jobs/{id}` (Admin100): one job, by apalis's id or its client's id,
/// with every recorded attempt.
pub async fn show(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Answer<JobDetail>> {
    let (job, others) = resolve(&app, &id).await?;
    let attempts = store::attempts(&app.db, &job.id)
        .await?
        .into_iter()
        .map(|a| AttemptView {
            attempt: a.attempt,
            worker: a.worker,
            started_at: a.started_at,
            finished_at: a.finished_at,
            waited_ms: a.waited_ms,
            outcome: a.outcome.to_string(),
            cause: a.cause,
            error: a.error,
            next_at: a.next_at,
        })
        .collect();
    Ok(Answer(JobDetail {
        job: job.into(),
        attempts,
        others,
    }))
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct JobAnswer {
    /// The job after the change.
    job: QueueJob,
}

/// 404 for an unknown id, 409 (with the job's `status`) for one in the wrong state.
fn answer(id: &str, outcome: Outcome, allowed: &str, verb: &str) -> ApiResult<Answer<JobAnswer>> {
    match outcome {
        Outcome::Changed(job) => Ok(Answer(JobAnswer { job: job.into() })),
        Outcome::NotFound => Err(ApiError::not_found(format!("no job with id `{id}`"))),
        Outcome::Conflict(job) => Err(ApiError::conflict(format!(
            "the job is {}; only {allowed} jobs can be {verb}",
            job.status
        ))
        .with("status", job.status.as_str())),
    }
}

/// A job named by apalis's id or its client's id.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct JobIdBody {
    id: NonBlank,
}

/// `POST /api/admin/jobs/retry` (Admin100): a failed or cancelled job runs again, now,
/// with its attempts reset. `id` is apalis's id or the client's.
pub async fn retry(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<JobIdBody>,
) -> ApiResult<Answer<JobAnswer>> {
    let (job, _) = resolve(&app, &body.id).await?;
    let outcome = store::retry(&app.db, &job.id).await?;
    answer(&job.id, outcome, "failed or cancelled", "retried")
}

/// `POST /api/admin/jobs/cancel` (Admin100): a pending, scheduled or retrying job is
/// cancelled and never runs. `id` is apalis's id or the client's.
pub async fn cancel(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<JobIdBody>,
) -> ApiResult<Answer<JobAnswer>> {
    let (job, _) = resolve(&app, &body.id).await?;
    let outcome = store::cancel(&app.db, &job.id).await?;
    answer(
        &job.id,
        outcome,
        "pending, scheduled or retrying",
        "cancelled",
    )
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct QueueBody {
    /// `email`, `export`, `images`, `expiry` or `callbacks`.
    #[schemars(schema_with = "queue_names")]
    queue: String,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct QueueAnswer {
    queue: &'static str,
    /// Paused now.
    paused: bool,
    /// False when it already was as asked.
    changed: bool,
}

fn queue_of(body: &QueueBody) -> ApiResult<plinth_workers::QueueName> {
    store::queue(&body.queue).map_err(ApiError::bad_request)
}

/// `POST /api/admin/queues/pause` (Admin100): no worker of any process starts a job of
/// the queue (each process sees it within a second); running jobs finish; new jobs wait.
pub async fn pause(
    State(app): State<AppState>,
    crate::http::auth::Viewer(caller): crate::http::auth::Viewer,
    JsonBody(body): JsonBody<QueueBody>,
) -> ApiResult<Answer<QueueAnswer>> {
    let queue = queue_of(&body)?;
    let changed = store::pause(&app.db, queue, &caller.id).await?;
    Ok(Answer(QueueAnswer {
        queue: queue.name(),
        paused: true,
        changed,
    }))
}

/// `POST /api/admin/queues/resume` (Admin100): the queue's workers take jobs again.
pub async fn resume(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<QueueBody>,
) -> ApiResult<Answer<QueueAnswer>> {
    let queue = queue_of(&body)?;
    let changed = store::resume(&app.db, queue).await?;
    Ok(Answer(QueueAnswer {
        queue: queue.name(),
        paused: false,
        changed,
    }))
}

/// A pool of a process.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub struct PoolView {
    queue: String,
    /// Jobs it runs at once.
    concurrency: i64,
}

/// An apalis worker of a process.
#[derive(Serialize, schemars::JsonSchema)]
pub struct WorkerView {
    name: String,
    queue: &'static str,
    /// Its last heartbeat (every 5 s).
    last_seen: Option<DateTime<Utc>>,
    started_at: Option<DateTime<Utc>>,
    /// Paused with its queue.
    paused: bool,
    /// The jobs it holds (running, or fetched to run next).
    jobs: Vec<QueueJob>,
}

/// A process that runs workers (`plinth serve` with workers, or `plinth worker`).
#[derive(Serialize, schemars::JsonSchema)]
pub struct ProcessView {
    /// `plinth-<role>:<host>:<pid>`.
    name: String,
    /// `serve` or `worker`.
    role: String,
    host: String,
    pid: i64,
    version: String,
    started_at: DateTime<Utc>,
    /// Its last heartbeat (every 5 s).
    last_seen: DateTime<Utc>,
    /// Heard from in the last 20 s.
    alive: bool,
    pools: Vec<PoolView>,
    /// Its workers that beat in the last minute.
    workers: Vec<WorkerView>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct WorkersAnswer {
    processes: Vec<ProcessView>,
    /// Workers seen in the last minute that belong to no listed process (an older
    /// version's, or one whose process stopped).
    other_workers: Vec<WorkerView>,
}

/// `GET /api/admin/workers` (Admin100): every process that runs workers, its pools and
/// workers, and the jobs each worker holds now.
pub async fn workers(State(app): State<AppState>) -> ApiResult<Answer<WorkersAnswer>> {
    let processes = store::processes(&app.db).await?;
    let paused = store::paused(&app.db).await?;
    let mut workers: Vec<Option<store::WorkerRow>> = store::workers(&app.db, 60)
        .await?
        .into_iter()
        .map(Some)
        .collect();
    let view = |w: store::WorkerRow| WorkerView {
        paused: paused.iter().any(|q| q.name() == w.queue),
        name: w.name,
        queue: w.queue,
        last_seen: w.last_seen,
        started_at: w.started_at,
        jobs: w.jobs.into_iter().map(QueueJob::from).collect(),
    };
    let now = Utc::now();
    let mut out = Vec::new();
    for p in processes {
        let prefix = format!("{}-", p.worker_prefix);
        let mine: Vec<WorkerView> = workers
            .iter_mut()
            .filter(|w| w.as_ref().is_some_and(|w| w.name.starts_with(&prefix)))
            .filter_map(Option::take)
            .map(view)
            .collect();
        out.push(ProcessView {
            alive: now - p.last_seen < chrono::TimeDelta::seconds(20),
            pools: serde_json::from_str(&p.pools).unwrap_or_default(),
            name: p.name,
            role: p.role.to_string(),
            host: p.host,
            pid: p.pid,
            version: p.version,
            started_at: p.started_at,
            last_seen: p.last_seen,
            workers: mine,
        });
    }
    Ok(Answer(WorkersAnswer {
        processes: out,
        other_workers: workers.into_iter().flatten().map(view).collect(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("oneOf" = [{"required": ["ids"], "properties": {"ids": {"type": "array", "items": {"type": "string"}}, "queue": {"type": "null"}, "status": {"type": "null"}}}, {"properties": {"ids": {"type": "null"}}, "anyOf": [{"required": ["queue"], "properties": {"queue": {"type": "string"}}}, {"required": ["status"], "properties": {"status": {"type": "string"}}}]}]))]
pub struct BulkBody {
    /// `retry` (failed or cancelled jobs), `cancel` (pending, scheduled or retrying ones)
    /// or `discard` (delete finished ones: succeeded, failed, cancelled).
    #[schemars(schema_with = "action_names")]
    action: String,
    /// The jobs (apalis's ids or clients'), at most 500. Or, instead, a selection:
    #[schemars(length(min = 1, max = 500))]
    ids: Option<Vec<String>>,
    /// With `status`: every job of this queue in that status (at most 500, newest first).
    // `default`: schemars takes a `schema_with` field as required unless it has one.
    #[serde(default)]
    #[schemars(schema_with = "queue_names_or_null")]
    queue: Option<String>,
    /// With `queue`, or alone (every queue).
    #[serde(default)]
    #[schemars(schema_with = "status_names_or_null")]
    status: Option<String>,
}

// The document's lists are the parsers' own (`store::queue`, `store::status`,
// `store::Action`), so the two cannot drift apart.
fn queue_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(store::queue_spellings(), false)
}

fn queue_names_or_null(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(store::queue_spellings(), true)
}

fn status_names_or_null(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(store::status_spellings(), true)
}

/// A list filter: one of the names, or empty for any (`list` reads a blank as absent).
fn queue_filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(store::queue_spellings().into_iter().chain([""]), true)
}

fn status_filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(store::status_spellings().into_iter().chain([""]), true)
}

fn action_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    names_schema(store::Action::ALL.iter().map(|a| a.as_str()), false)
}

/// A job a bulk action left as it was.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Skipped {
    id: String,
    /// Its status, or null when there is no such job.
    status: Option<JobStatus>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct BulkAnswer {
    action: String,
    /// apalis's ids of the jobs the action applied to.
    changed: Vec<String>,
    /// The others: unknown ids, or jobs in a status the action does not apply to.
    skipped: Vec<Skipped>,
}

/// `POST /api/admin/jobs/bulk` (Admin100): retry, cancel or discard many jobs at once,
/// named (`ids`) or selected (`queue` and/or `status`): each one conditional, as the
/// single actions are.
pub async fn bulk(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<BulkBody>,
) -> ApiResult<Answer<BulkAnswer>> {
    let Some(act) = store::Action::parse(&body.action) else {
        return Err(ApiError::bad_request(
            "`action` must be retry, cancel or discard",
        ));
    };
    let action = act.as_str().to_owned();
    let ids: Vec<String> = match (&body.ids, &body.queue, &body.status) {
        (Some(ids), None, None) => {
            if ids.is_empty() || ids.len() > store::LIST_MAX as usize {
                return Err(ApiError::bad_request(format!(
                    "`ids` must list 1 to {} jobs",
                    store::LIST_MAX
                )));
            }
            ids.clone()
        }
        (None, queue, status) if queue.is_some() || status.is_some() => {
            let queue = queue
                .as_deref()
                .map(store::queue)
                .transpose()
                .map_err(ApiError::bad_request)?;
            let status = status
                .as_deref()
                .map(store::status)
                .transpose()
                .map_err(ApiError::bad_request)?;
            store::list(&app.db, queue, status, None, store::LIST_MAX)
                .await?
                .into_iter()
                .map(|j| j.id)
                .collect()
        }
        _ => {
            return Err(ApiError::bad_request(
                "send either `ids`, or `queue` and/or `status`",
            ))
        }
    };
    let mut changed = Vec::new();
    let mut skipped = Vec::new();
    for id in ids {
        let Some(job) = store::resolve(&app.db, &id).await? else {
            skipped.push(Skipped { id, status: None });
            continue;
        };
        let outcome = store::act(&app.db, act, &job.id).await?;
        match outcome {
            Outcome::Changed(_) => changed.push(job.id),
            Outcome::NotFound => skipped.push(Skipped { id, status: None }),
            Outcome::Conflict(j) => skipped.push(Skipped {
                id: j.id,
                status: Some(j.status),
            }),
        }
    }
    Ok(Answer(BulkAnswer {
        action,
        changed,
        skipped,
    }))
}
