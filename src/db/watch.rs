//! Waiting for a slide job to change, without polling: `GET /api/slides/jobs/{id}?wait=N`
//! and the job's event stream wait here, woken by the job's own writes.
//!
//! Every write that changes what a job's client reads (its status or progress, in
//! `db::slides` and `db::jobs`) calls [`changed`] once it committed, which wakes this
//! process's waiters on that job. Writes made by other processes reach this one through
//! PostgreSQL: a trigger on `slide_jobs` sends `NOTIFY plinth_jobs '<job id>'` with the
//! write (migration 0026), and [`listen`] hears it. On SQLite only the process that wrote
//! knows at once; a waiter also reads its job again every [`fallback`] interval, so a
//! `plinth worker` process on the same file is seen within half a second.
//!
//! The waiters of one job share their reads ([`Watch::latest`]): a change that wakes a
//! thousand clients waiting on one job reads it once, not a thousand times (all at the
//! moment the job's queue is busiest).

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// A read of a job that its waiters share: made once `changes` had reached `.0`,
/// started at `.1`.
type Read = (u64, Instant, Arc<dyn Any + Send + Sync>);

/// One job's waiters: how to wake them, and the last read of the job they share.
#[derive(Default)]
struct Entry {
    notify: Arc<Notify>,
    /// Changes heard so far (bumped before the waiters are woken).
    changes: AtomicU64,
    latest: tokio::sync::Mutex<Option<Read>>,
}

/// The waiters of each job that has any: its entry and how many hold it.
type Waiters = HashMap<String, (Arc<Entry>, usize)>;
static WAITERS: LazyLock<Mutex<Waiters>> = LazyLock::new(Default::default);

/// Wakes this process's waiters on `job_id` (call it after the change committed).
pub fn changed(job_id: &str) {
    let map = WAITERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((entry, _)) = map.get(job_id) {
        entry.changes.fetch_add(1, Ordering::SeqCst);
        entry.notify.notify_waiters();
    }
}

/// A waiter's hold on a job's entry; dropping it lets the entry go.
pub struct Watch {
    job_id: String,
    entry: Arc<Entry>,
}

/// Starts watching `job_id`: create the [`Watch`] first, then read the job, then wait on
/// [`Watch::notifier`] (enabled before the read), so no change between the read and the
/// wait is missed.
pub fn watch(job_id: &str) -> Watch {
    let mut map = WAITERS.lock().unwrap_or_else(|e| e.into_inner());
    let entry = map.entry(job_id.to_owned()).or_default();
    entry.1 += 1;
    Watch {
        job_id: job_id.to_owned(),
        entry: entry.0.clone(),
    }
}

impl Watch {
    /// The notifier itself, for a waiter that must not borrow the watch.
    pub fn notifier(&self) -> Arc<Notify> {
        self.entry.notify.clone()
    }

    /// The job as read after every change this process heard of before the call, and,
    /// with `since`, by a read that started after that instant: one waiter reads (`read`)
    /// while the others of the job wait for its answer and share it.
    pub async fn latest<T, E, F>(&self, since: Option<Instant>, read: F) -> Result<Arc<T>, E>
    where
        T: Any + Send + Sync,
        F: Future<Output = Result<T, E>>,
    {
        let heard = self.entry.changes.load(Ordering::SeqCst);
        let mut latest = self.entry.latest.lock().await;
        if let Some((changes, started, value)) = latest.as_ref() {
            let fresh = *changes >= heard && since.is_none_or(|s| *started >= s);
            if let (true, Ok(value)) = (fresh, value.clone().downcast::<T>()) {
                return Ok(value);
            }
        }
        let (changes, started) = (self.entry.changes.load(Ordering::SeqCst), Instant::now());
        let value = Arc::new(read.await?);
        let shared: Arc<dyn Any + Send + Sync> = value.clone();
        *latest = Some((changes, started, shared));
        Ok(value)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut map = WAITERS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = map.get_mut(&self.job_id) {
            entry.1 = entry.1.saturating_sub(1);
            if entry.1 == 0 {
                map.remove(&self.job_id);
            }
        }
    }
}

/// How many clients of this process wait on a job now (`plinth_job_waiters`).
pub fn waiting() -> usize {
    let map = WAITERS.lock().unwrap_or_else(|e| e.into_inner());
    map.values().map(|(_, holders)| holders).sum()
}

/// How often a waiter reads its job again although nothing woke it: often where another
/// process may change the job unheard (SQLite, this process running no export workers),
/// else rarely (a safety net only).
pub fn fallback(sqlite: bool, exports_here: bool) -> Duration {
    if sqlite && !exports_here {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(10)
    }
}

/// The channel the `slide_jobs` trigger notifies.
pub const CHANNEL: &str = "plinth_jobs";

/// Listens for job changes made by any process on PostgreSQL and wakes this process's
/// waiters; reconnects after a lost connection (the waiters' fallback reads cover the
/// gap).
pub async fn listen(pool: sqlx::PgPool) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen(CHANNEL).await {
                    tracing::warn!(error = %e, "LISTEN plinth_jobs failed; retrying");
                } else {
                    loop {
                        match listener.recv().await {
                            Ok(n) => changed(n.payload()),
                            Err(e) => {
                                tracing::warn!(error = %e, "job notifications lost; reconnecting");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "job notifications: cannot connect; retrying"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many jobs this process's clients are waiting on.
    fn watched() -> usize {
        WAITERS.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    #[tokio::test]
    async fn a_change_wakes_the_waiters_of_that_job_and_entries_go_with_them() {
        let before = watched();
        let a = watch("job-a");
        let b = watch("job-a");
        let other = watch("job-b");
        assert_eq!(watched(), before + 2);
        let notify = a.notifier();
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        changed("job-b");
        changed("job-c");
        assert!(
            tokio::time::timeout(Duration::from_millis(20), notified.as_mut())
                .await
                .is_err(),
            "woken by another job"
        );
        changed("job-a");
        tokio::time::timeout(Duration::from_millis(200), notified)
            .await
            .expect("woken");
        drop((a, b, other));
        assert_eq!(watched(), before);
    }

    #[tokio::test]
    async fn the_waiters_of_a_job_share_one_read_per_change() {
        let reads = AtomicU64::new(0);
        let read = || async { Ok::<_, ()>(reads.fetch_add(1, Ordering::SeqCst) + 1) };
        let (a, b) = (watch("job-shared"), watch("job-shared"));
        assert_eq!(*a.latest(None, read()).await.unwrap(), 1);
        // Nothing changed since: the other waiter gets the same read.
        assert_eq!(*b.latest(None, read()).await.unwrap(), 1);
        changed("job-shared");
        assert_eq!(*b.latest(None, read()).await.unwrap(), 2);
        assert_eq!(*a.latest(None, read()).await.unwrap(), 2);
        // A read that must have started after an instant is made again.
        let now = Instant::now();
        assert_eq!(*a.latest(Some(now), read()).await.unwrap(), 3);
        assert_eq!(*b.latest(Some(now), read()).await.unwrap(), 3);
        assert_eq!(reads.load(Ordering::SeqCst), 3);
    }
}
