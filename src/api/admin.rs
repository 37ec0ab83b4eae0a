//! Job control for operators (Admin100; additions beyond the spec, docs/api.md): queue
//! counts and throughput, failed jobs, retry and cancel. `plinth jobs` does the same from
//! the command line (`src/jobs_cli.rs`); both read `db::jobs`.

use axum::extract::{Query, State};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::db::jobs::{self as store, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::extract::{IdBody, JsonBody};
use crate::reply::Answer;
use crate::state::AppState;

/// One queue's jobs by status.
#[derive(Serialize, schemars::JsonSchema)]
pub struct QueueView {
    /// `email`, `export`, `images` or `expiry`.
    queue: &'static str,
    pending: i64,
    running: i64,
    done: i64,
    failed: i64,
    killed: i64,
    /// Seconds since the oldest pending job was due; null when none is.
    oldest_pending_secs: Option<f64>,
}

/// Jobs that finished in one minute.
#[derive(Serialize, schemars::JsonSchema)]
pub struct MinuteView {
    /// The start of the minute.
    minute: DateTime<Utc>,
    queue: &'static str,
    done: i64,
    /// Failed for good or killed.
    failed: i64,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct StatsAnswer {
    /// All four queues, always.
    queues: Vec<QueueView>,
    /// The last 60 minutes, oldest first; minutes without a finished job are left out.
    throughput: Vec<MinuteView>,
}

/// `GET /api/admin/jobs/stats` (Admin100).
pub async fn stats(State(app): State<AppState>) -> ApiResult<Answer<StatsAnswer>> {
    let queues = store::stats(&app.db)
        .await?
        .into_iter()
        .map(|c| QueueView {
            queue: c.queue,
            pending: c.pending,
            running: c.running,
            done: c.done,
            failed: c.failed,
            killed: c.killed,
            oldest_pending_secs: c.oldest_pending_secs,
        })
        .collect();
    let throughput = store::throughput(&app.db, 60)
        .await?
        .into_iter()
        .map(|t| MinuteView {
            minute: t.minute,
            queue: t.queue,
            done: t.done,
            failed: t.failed,
        })
        .collect();
    Ok(Answer(StatsAnswer { queues, throughput }))
}

/// A job as operators see it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct JobView {
    id: String,
    queue: &'static str,
    /// `pending`, `running`, `done`, `failed` or `killed`.
    status: String,
    /// apalis's own status (`Pending`, `Queued`, `Running`, `Done`, `Failed`, `Killed`).
    apalis_status: String,
    attempts: i64,
    max_attempts: i64,
    /// When it is (or was) due.
    run_at: Option<DateTime<Utc>>,
    done_at: Option<DateTime<Utc>>,
    /// The worker that holds (or last held) it.
    worker: Option<String>,
    /// The last run's error, if it failed.
    last_error: Option<String>,
    /// The job's arguments; an email shows its recipient (`to`) only.
    args: Option<Value>,
}

impl From<store::JobRow> for JobView {
    fn from(j: store::JobRow) -> Self {
        Self {
            id: j.id,
            queue: j.queue,
            status: j.status,
            apalis_status: j.apalis_status,
            attempts: j.attempts,
            max_attempts: j.max_attempts,
            run_at: j.run_at,
            done_at: j.done_at,
            worker: j.worker,
            last_error: j.last_error,
            args: j.args,
        }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    /// `email`, `export`, `images` or `expiry` (apalis's names are accepted too).
    queue: Option<String>,
    /// `pending`, `running`, `done`, `failed` or `killed`.
    status: Option<String>,
    /// 1 to 500; 50 when absent.
    #[serde(default, deserialize_with = "crate::extract::lenient_i64")]
    #[schemars(with = "Option<i64>")]
    limit: Option<i64>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct JobList {
    /// Newest first.
    jobs: Vec<JobView>,
}

/// `GET /api/admin/jobs` (Admin100): jobs by queue and status, newest first.
pub async fn list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Answer<JobList>> {
    let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
    let queue = given(&q.queue)
        .map(|name| store::queue(&name))
        .transpose()
        .map_err(ApiError::bad_request)?;
    let status = given(&q.status)
        .map(|name| store::status(&name))
        .transpose()
        .map_err(ApiError::bad_request)?;
    let limit = q.limit.unwrap_or(store::LIST_DEFAULT);
    if !(1..=store::LIST_MAX).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "`limit` must be between 1 and {}",
            store::LIST_MAX
        )));
    }
    let jobs = store::list(&app.db, queue, status, limit).await?;
    Ok(Answer(JobList {
        jobs: jobs.into_iter().map(JobView::from).collect(),
    }))
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct JobAnswer {
    /// The job after the change.
    job: JobView,
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
        .with("status", job.status)),
    }
}

fn job_id(body: &IdBody) -> ApiResult<&str> {
    let id = body.id.trim();
    if id.is_empty() {
        return Err(ApiError::bad_request("`id` must not be empty"));
    }
    Ok(id)
}

/// `POST /api/admin/jobs/retry` (Admin100): a failed or killed job runs again, now, with
/// its attempts reset.
pub async fn retry(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<JobAnswer>> {
    let id = job_id(&body)?;
    let outcome = store::retry(&app.db, id).await?;
    answer(id, outcome, "failed or killed", "retried")
}

/// `POST /api/admin/jobs/cancel` (Admin100): a pending job is killed and never runs.
pub async fn cancel(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<JobAnswer>> {
    let id = job_id(&body)?;
    let outcome = store::cancel(&app.db, id).await?;
    answer(id, outcome, "pending", "cancelled")
}
