//! Wake-ups: a job this process queues wakes this process's idle workers of its queue at
//! once, after the job is committed ([`wake`]). Jobs of other processes wake them too: on
//! PostgreSQL through one LISTEN connection per process ([`listen_pg`]: apalis's NOTIFY on
//! every insert, which names the queue), on SQLite through one read for due jobs every
//! 100 ms ([`watch_due_sqlite`]). A worker's poll strategy ([`Wakes`]) turns these into
//! fetches (`gate::Gated` lets a worker fetch only then).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::task::{Context, Poll, Waker};

use apalis::prelude::{PollSnapshot, PollStrategy};

use crate::QueueName;

#[derive(Default)]
struct Signal {
    /// Bumped by every wake-up.
    generation: AtomicU64,
    /// The tasks of this process's workers of the queue that wait for one.
    wakers: Mutex<Vec<Waker>>,
}

static SIGNALS: LazyLock<Vec<Signal>> =
    LazyLock::new(|| QueueName::ALL.iter().map(|_| Signal::default()).collect());

fn signal(queue: QueueName) -> &'static Signal {
    let at = QueueName::ALL
        .iter()
        .position(|q| *q == queue)
        .unwrap_or_default();
    &SIGNALS[at]
}

/// Wakes this process's workers of `queue`: call it once the transaction that queued a
/// job has committed.
pub fn wake(queue: QueueName) {
    let s = signal(queue);
    s.generation.fetch_add(1, Ordering::SeqCst);
    let wakers = std::mem::take(&mut *s.wakers.lock().unwrap_or_else(|e| e.into_inner()));
    for w in wakers {
        w.wake();
    }
}

/// The poll strategy of one worker: ready whenever [`wake`] was called for its queue
/// since it last looked.
pub struct Wakes {
    queue: QueueName,
    seen: u64,
}

impl Wakes {
    pub fn new(queue: QueueName) -> Self {
        Self {
            queue,
            seen: signal(queue).generation.load(Ordering::SeqCst),
        }
    }
}

impl PollStrategy for Wakes {
    fn poll_drive(&mut self, cx: &mut Context<'_>, _: &PollSnapshot) -> Poll<Option<()>> {
        let s = signal(self.queue);
        let now = s.generation.load(Ordering::SeqCst);
        if now != self.seen {
            self.seen = now;
            return Poll::Ready(Some(()));
        }
        {
            let mut wakers = s.wakers.lock().unwrap_or_else(|e| e.into_inner());
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        // A wake-up between the first look and the registration is not lost.
        let now = s.generation.load(Ordering::SeqCst);
        if now != self.seen {
            self.seen = now;
            return Poll::Ready(Some(()));
        }
        Poll::Pending
    }
}

/// Finds the queues that have a job due (pending and free, or failed with attempts left,
/// and due by `run_at`) in apalis's SQLite table, with one read. A read takes no write
/// lock: apalis's own fetch is an UPDATE that takes the database's one write lock on
/// every poll, due job or not (ten times a second per queue), queued behind the API's
/// writes and the jobs' own.
const DUE_SQLITE: &str = "SELECT job_type FROM Jobs WHERE status = 'Pending' AND lock_by IS NULL \
    AND (run_at IS NULL OR run_at <= ?1) GROUP BY job_type \
    UNION SELECT job_type FROM Jobs WHERE status = 'Failed' AND attempts < max_attempts \
    AND (run_at IS NULL OR run_at <= ?1) GROUP BY job_type";

/// Wakes this process's idle SQLite workers of `queues` when a job of theirs is due, every
/// `every`: jobs queued by another process (`plinth worker`, the CLI), retries whose time
/// came, jobs handed back by a worker that died. Jobs queued by this process wake them at
/// once ([`wake`]).
pub async fn watch_due_sqlite(
    pool: sqlx::SqlitePool,
    queues: Vec<QueueName>,
    every: std::time::Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        match sqlx::query_scalar::<_, String>(DUE_SQLITE)
            .bind(now)
            .fetch_all(&pool)
            .await
        {
            Ok(due) => {
                for q in queues
                    .iter()
                    .filter(|q| due.iter().any(|d| d == q.table_name()))
                {
                    wake(*q);
                }
            }
            Err(e) => tracing::debug!(error = %e, "looking for due jobs failed; next time"),
        }
    }
}

/// The channel apalis's trigger notifies on every insert into its PostgreSQL table, with
/// `{"job_type": <queue>, "id": <job>}`.
const PG_INSERT_CHANNEL: &str = "apalis::job::insert";

/// Wakes this process's workers of `queues` when any process queues a job of theirs on
/// PostgreSQL: one LISTEN connection for every queue (apalis's own listener takes one
/// pooled connection per queue, and hands every queue's NOTIFY to every worker). A lost
/// connection is made again; jobs queued meanwhile are found by the workers' interval.
pub async fn listen_pg(
    pool: sqlx::PgPool,
    queues: Vec<QueueName>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    #[derive(serde::Deserialize)]
    struct Insert {
        job_type: String,
    }
    loop {
        let listening = async {
            let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
            listener.listen(PG_INSERT_CHANNEL).await?;
            let wake_all = || {
                for q in &queues {
                    wake(*q);
                }
            };
            // Jobs queued while no one listened.
            wake_all();
            loop {
                // `None`: the connection dropped and sqlx listens again on the next call;
                // what was queued meanwhile is fetched now rather than at the interval.
                let Some(n) = listener.try_recv().await? else {
                    wake_all();
                    continue;
                };
                let Ok(insert) = serde_json::from_str::<Insert>(n.payload()) else {
                    continue;
                };
                if let Some(q) = queues.iter().find(|q| q.table_name() == insert.job_type) {
                    wake(*q);
                }
            }
            #[allow(unreachable_code)]
            Ok::<(), sqlx::Error>(())
        };
        tokio::select! {
            r = listening => {
                if let Err(e) = r {
                    tracing::warn!(error = %e, "listening for new jobs failed; again in 1 s");
                }
            }
            _ = stop.wait_for(|s| *s) => return,
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_wake_reaches_a_waiting_worker_of_its_queue_only() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut images = Wakes::new(QueueName::Images);
        let snap = PollSnapshot::default();
        assert!(images.poll_drive(&mut cx, &snap).is_pending());
        // Registered once however often it is polled.
        assert!(images.poll_drive(&mut cx, &snap).is_pending());
        wake(QueueName::Expiry);
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        assert!(images.poll_drive(&mut cx, &snap).is_pending());
        wake(QueueName::Images);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(images.poll_drive(&mut cx, &snap).is_ready());
        assert!(images.poll_drive(&mut cx, &snap).is_pending());
    }
}
