//! [`Tables`] on each backend's connection: the same statements (`Statements`, built
//! per dialect), run by one body per method (`tables!`).

use std::future::Future;

use chrono::DateTime;
use serde_json::json;

use super::{
    epoch, epoch_now, job_row, patterns, tally, Changed, Filter, JobRow, QueueCounts, RawJob,
    Throughput, WorkerSeen, CANCELLED_BY_OPERATOR, PG_SQL, SQLITE_SQL,
};
use crate::job::Registered;
use crate::QueueName;

/// apalis's tables on one connection (module comment of `tables`). Times are epoch
/// seconds.
pub trait Tables: Send {
    /// Counts per queue and status, every queue in `QueueName::ALL` order; `depth_only`
    /// skips the jobs that succeeded (the metrics gauges: they only pile up).
    fn counts(
        &mut self,
        depth_only: bool,
    ) -> impl Future<Output = sqlx::Result<Vec<QueueCounts>>> + Send;
    /// Finished jobs per minute and queue since `since`, oldest first.
    fn throughput(
        &mut self,
        since: i64,
    ) -> impl Future<Output = sqlx::Result<Vec<Throughput>>> + Send;
    /// Jobs, newest first.
    fn list(
        &mut self,
        filter: Filter<'_>,
    ) -> impl Future<Output = sqlx::Result<Vec<JobRow>>> + Send;
    /// The job with apalis's id `id`.
    fn job(&mut self, id: &str) -> impl Future<Output = sqlx::Result<Option<JobRow>>> + Send;
    /// Deletes up to `batch` finished jobs that ended before `before`; how many.
    fn prune(&mut self, before: i64, batch: i64) -> impl Future<Output = sqlx::Result<u64>> + Send;
    /// An operator's retry of a failed or cancelled job (it runs again now, with its
    /// queue's attempts); PostgreSQL's workers are told at once, as for a new job
    /// (apalis's trigger fires on inserts only).
    fn retry(&mut self, id: &str) -> impl Future<Output = sqlx::Result<Option<Changed>>> + Send;
    /// An operator's cancel of a waiting job.
    fn cancel(&mut self, id: &str) -> impl Future<Output = sqlx::Result<Option<Changed>>> + Send;
    /// A client's cancel of the waiting job of kind `J` with idempotency key `key`,
    /// recording `why` as its result; whether there was one.
    fn cancel_keyed<J: Registered>(
        &mut self,
        key: &str,
        why: &str,
    ) -> impl Future<Output = sqlx::Result<bool>> + Send;
    /// Deletes a finished job; whether it was.
    fn discard(&mut self, id: &str) -> impl Future<Output = sqlx::Result<bool>> + Send;
    /// Moves a failed run's job to `run_at` (a retry after its back-off), while `worker`
    /// still holds it.
    fn reschedule(
        &mut self,
        id: &str,
        worker: &str,
        run_at: i64,
    ) -> impl Future<Output = sqlx::Result<()>> + Send;
    /// Ends a job that failed for good: its attempts limit comes down to `attempts`,
    /// while `worker` still holds it.
    fn give_up(
        &mut self,
        id: &str,
        worker: &str,
        attempts: i64,
    ) -> impl Future<Output = sqlx::Result<()>> + Send;
    /// apalis's workers of our queues that beat since `since`.
    fn workers(&mut self, since: i64)
        -> impl Future<Output = sqlx::Result<Vec<WorkerSeen>>> + Send;
    /// The jobs `workers` hold back to pending (`Queue::release`).
    fn release(&mut self, workers: &[String]) -> impl Future<Output = sqlx::Result<u64>> + Send;
}

/// The result a stopping process leaves on the jobs it hands back.
const RETURNED: &str = r#"{"Err":"returned to the queue: its worker stopped"}"#;

macro_rules! tables {
    ($conn:ty, $sql:expr, $pg:expr, $workers:expr, $release:expr) => {
        impl Tables for $conn {
            async fn counts(&mut self, depth_only: bool) -> sqlx::Result<Vec<QueueCounts>> {
                let sql = if depth_only { &$sql.depth } else { &$sql.counts };
                let now = epoch_now();
                let rows = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                    .bind(now)
                    .fetch_all(&mut *self)
                    .await?;
                Ok(tally(rows, now))
            }

            async fn throughput(&mut self, since: i64) -> sqlx::Result<Vec<Throughput>> {
                let rows: Vec<(String, i64, i64, i64)> =
                    sqlx::query_as(sqlx::AssertSqlSafe($sql.throughput.as_str()))
                        .bind(since)
                        .fetch_all(&mut *self)
                        .await?;
                Ok(rows
                    .into_iter()
                    .filter_map(|(job_type, minute, succeeded, failed)| {
                        Some(Throughput {
                            minute: DateTime::from_timestamp(minute, 0)?,
                            queue: super::short_name(&job_type),
                            succeeded,
                            failed,
                        })
                    })
                    .collect())
            }

            async fn list(&mut self, f: Filter<'_>) -> sqlx::Result<Vec<JobRow>> {
                let pats = f.search.map(patterns);
                let pat = |i: usize| pats.as_ref().map(|p| p[i].clone());
                let rows: Vec<RawJob> = sqlx::query_as(sqlx::AssertSqlSafe($sql.list.as_str()))
                    .bind(f.queue.map(QueueName::table_name))
                    .bind(f.status.map(|s| s.as_str()))
                    .bind(f.search)
                    .bind(pat(0))
                    .bind(pat(1))
                    .bind(pat(2))
                    .bind(pat(3))
                    .bind(f.limit)
                    .bind(epoch_now())
                    .fetch_all(&mut *self)
                    .await?;
                Ok(rows.into_iter().map(job_row).collect())
            }

            async fn job(&mut self, id: &str) -> sqlx::Result<Option<JobRow>> {
                let row: Option<RawJob> = sqlx::query_as(sqlx::AssertSqlSafe($sql.one.as_str()))
                    .bind(id)
                    .bind(epoch_now())
                    .fetch_optional(&mut *self)
                    .await?;
                Ok(row.map(job_row))
            }

            async fn prune(&mut self, before: i64, batch: i64) -> sqlx::Result<u64> {
                Ok(sqlx::query(sqlx::AssertSqlSafe($sql.prune.as_str()))
                    .bind(before)
                    .bind(batch)
                    .execute(&mut *self)
                    .await?
                    .rows_affected())
            }

            async fn retry(&mut self, id: &str) -> sqlx::Result<Option<Changed>> {
                let sql = super::retry_sql(if $pg { &super::PG } else { &super::SQLITE });
                let row: Option<(String, Vec<u8>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .fetch_optional(&mut *self)
                    .await?;
                let Some((job_type, args)) = row else {
                    return Ok(None);
                };
                if $pg {
                    let payload = json!({"job_type": job_type, "id": id}).to_string();
                    sqlx::query("SELECT pg_notify('apalis::job::insert', $1)")
                        .bind(payload)
                        .execute(&mut *self)
                        .await?;
                }
                Ok(QueueName::parse(&job_type).map(|queue| Changed { queue, args }))
            }

            async fn cancel(&mut self, id: &str) -> sqlx::Result<Option<Changed>> {
                let row: Option<(String, Vec<u8>)> =
                    sqlx::query_as(sqlx::AssertSqlSafe($sql.cancel.as_str()))
                        .bind(id)
                        .bind(CANCELLED_BY_OPERATOR)
                        .fetch_optional(&mut *self)
                        .await?;
                Ok(row.and_then(|(job_type, args)| {
                    QueueName::parse(&job_type).map(|queue| Changed { queue, args })
                }))
            }

            async fn cancel_keyed<J: Registered>(&mut self, key: &str, why: &str) -> sqlx::Result<bool> {
                let result = json!({ "Err": why }).to_string();
                let row: Option<(String, Vec<u8>)> =
                    sqlx::query_as(sqlx::AssertSqlSafe($sql.cancel_by_key.as_str()))
                        .bind(key)
                        .bind(result)
                        .bind(J::TABLE)
                        .fetch_optional(&mut *self)
                        .await?;
                Ok(row.is_some())
            }

            async fn discard(&mut self, id: &str) -> sqlx::Result<bool> {
                Ok(sqlx::query(sqlx::AssertSqlSafe($sql.discard.as_str()))
                    .bind(id)
                    .execute(&mut *self)
                    .await?
                    .rows_affected()
                    > 0)
            }

            async fn reschedule(&mut self, id: &str, worker: &str, run_at: i64) -> sqlx::Result<()> {
                sqlx::query(sqlx::AssertSqlSafe($sql.reschedule.as_str()))
                    .bind(run_at)
                    .bind(id)
                    .bind(worker)
                    .execute(&mut *self)
                    .await
                    .map(|_| ())
            }

            async fn give_up(&mut self, id: &str, worker: &str, attempts: i64) -> sqlx::Result<()> {
                sqlx::query(sqlx::AssertSqlSafe($sql.give_up.as_str()))
                    .bind(attempts)
                    .bind(id)
                    .bind(worker)
                    .execute(&mut *self)
                    .await
                    .map(|_| ())
            }

            async fn workers(&mut self, since: i64) -> sqlx::Result<Vec<WorkerSeen>> {
                let rows: Vec<(String, String, Option<f64>, Option<f64>)> =
                    sqlx::query_as(sqlx::AssertSqlSafe($sql.workers.as_str()))
                        .bind($workers(since))
                        .fetch_all(&mut *self)
                        .await?;
                Ok(rows
                    .into_iter()
                    .filter_map(|(name, queue, seen, started)| {
                        let queue = QueueName::parse(&queue)?;
                        Some((name, queue, epoch(seen), epoch(started)))
                    })
                    .collect())
            }

            async fn release(&mut self, workers: &[String]) -> sqlx::Result<u64> {
                Ok(sqlx::query(sqlx::AssertSqlSafe($sql.release.as_str()))
                    .bind($release(workers))
                    .bind(RETURNED)
                    .execute(&mut *self)
                    .await?
                    .rows_affected())
            }
        }
    };
}

// SQLite matches the workers against a JSON list; PostgreSQL against an array, and
// compares last-seen times as floats.
tables!(
    sqlx::SqliteConnection,
    SQLITE_SQL,
    false,
    |since: i64| since,
    |w: &[String]| serde_json::to_string(w).unwrap_or_default()
);
tables!(
    sqlx::PgConnection,
    PG_SQL,
    true,
    |since: i64| since as f64,
    |w: &[String]| w.to_vec()
);
