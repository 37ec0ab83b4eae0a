//! A worker fetches only when there may be a job to fetch.
//!
//! apalis 1.0's `PollWith` drives its poll strategy only to register wake-ups and then
//! fetches on every poll of the worker, whatever woke it: a NOTIFY for another queue
//! (every PostgreSQL worker listens on the one channel and filters by queue), a heartbeat
//! or an acknowledgement finishing. So one queued job made every queue of every process
//! run a fetch transaction (ten per export here on PostgreSQL, each a write on SQLite),
//! and those fetches competed with the one fetch that mattered (issue 34: pickup).
//!
//! [`Gated`] lets a poll reach the storage only when
//! - its strategy says a job may be there (this process queued one, a NOTIFY for this
//!   queue, the due-job watch on SQLite, the slow interval), or
//! - the storage's own work woke it (a fetch in flight finished; apalis wakes a worker
//!   whose last task ended, to look for more), or
//! - the last poll yielded a task (the batch may hold more, and the next fetch starts
//!   after any signal that came meanwhile).
//!
//! Otherwise the poll answers `Pending` with every waker still registered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use apalis::prelude::{Backend, PollSnapshot, PollStrategy, WorkerContext};
use apalis_core::backend::{BackendConfig, WireFormatBackend};

/// At most this many strategy signals are taken in one poll (a closed NOTIFY stream
/// answers ready for ever; then every poll fetches, as apalis alone would).
const DRAIN: usize = 16;

/// The waker the storage sees: it notes that the storage's own work woke the worker,
/// then wakes the worker's task.
#[derive(Default)]
struct StorageWake {
    woke: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl Wake for StorageWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woke.store(true, Ordering::SeqCst);
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = task.as_ref() {
            w.wake_by_ref();
        }
    }
}

/// A storage behind a poll strategy that decides when it is fetched (module comment).
pub struct Gated<B, S> {
    backend: B,
    strategy: S,
    /// A signal came that no fetch has answered yet. True at start: jobs queued while
    /// no worker ran are fetched at once.
    want: bool,
    /// The last poll that reached the storage yielded a task.
    yielded: bool,
    /// A signal is waiting for the fetch that was running (or started) when it came.
    fetching: bool,
    /// No fetch runs in the storage (at start, and after it yielded a task): the next
    /// poll that reaches it starts one, or hands out a task it holds.
    idle: bool,
    wake: Arc<StorageWake>,
    waker: Waker,
}

impl<B, S> Gated<B, S> {
    pub fn new(backend: B, strategy: S) -> Self {
        let wake = Arc::new(StorageWake::default());
        Self {
            backend,
            strategy,
            want: true,
            yielded: false,
            fetching: false,
            idle: true,
            waker: Waker::from(wake.clone()),
            wake,
        }
    }
}

impl<B, S> Backend for Gated<B, S>
where
    B: Backend,
    S: PollStrategy,
{
    type Task = B::Task;
    type Error = B::Error;

    fn poll_ready(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), Self::Error>> {
        self.backend.poll_ready(cx, worker)
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Option<Result<Self::Task, Self::Error>>> {
        {
            let mut task = self.wake.task.lock().unwrap_or_else(|e| e.into_inner());
            if !task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        // Take every signal, so that each source has registered its waker again.
        let snapshot = PollSnapshot::default();
        for _ in 0..DRAIN {
            match self.strategy.poll_drive(cx, &snapshot) {
                Poll::Ready(_) => self.want = true,
                Poll::Pending => break,
            }
        }
        let woke = self.wake.woke.swap(false, Ordering::SeqCst);
        if !(self.want || woke || self.yielded) {
            return Poll::Pending;
        }
        let mut storage_cx = Context::from_waker(&self.waker);
        let mut next = self.backend.poll_next(&mut storage_cx, worker);
        if next.is_pending() && self.want {
            if self.idle {
                // Nothing ran in the storage: this poll started a fetch, after the signal.
                self.want = false;
            } else if woke && self.fetching {
                // A fetch ended with nothing, but it may have started before the signal
                // came: one more, which starts after it.
                next = self.backend.poll_next(&mut storage_cx, worker);
                self.want = false;
            }
        }
        self.yielded = matches!(next, Poll::Ready(Some(Ok(_))));
        if self.yielded {
            // The next poll comes here and fetches again, after any signal so far.
            self.want = false;
        }
        self.idle = self.yielded;
        // A signal waits for the fetch that runs now: its end (the storage's wake-up)
        // settles it.
        self.fetching = next.is_pending() && self.want;
        next
    }

    fn poll_close(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), Self::Error>> {
        self.backend.poll_close(cx, worker)
    }
}

impl<B: BackendConfig, S> BackendConfig for Gated<B, S> {
    type Id = B::Id;
    type Args = B::Args;
    type Kind = B::Kind;
    type Config = B::Config;
    type Layer = B::Layer;

    fn config(&self) -> &Self::Config {
        self.backend.config()
    }

    fn middleware(&mut self, worker: &mut WorkerContext) -> Self::Layer {
        self.backend.middleware(worker)
    }
}

impl<B: WireFormatBackend, S> WireFormatBackend for Gated<B, S> {
    type Compact = B::Compact;
    type Codec = B::Codec;

    fn codec(&self) -> &Self::Codec {
        self.backend.codec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::atomic::AtomicUsize;

    /// A storage shaped like apalis's: a fetch runs across polls (it ends when the test
    /// says so, and wakes the waker of the poll that started it), sees the jobs queued
    /// when it started, then hands them out one per poll.
    #[derive(Default)]
    struct Storage {
        queued: Arc<Mutex<Vec<u32>>>,
        fetches: Arc<AtomicUsize>,
        running: Option<(Vec<u32>, Arc<AtomicBool>, Waker)>,
        buffer: VecDeque<u32>,
    }

    impl Backend for Storage {
        type Task = u32;
        type Error = std::io::Error;

        fn poll_ready(
            &mut self,
            _: &mut Context<'_>,
            _: &WorkerContext,
        ) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn poll_next(
            &mut self,
            cx: &mut Context<'_>,
            _: &WorkerContext,
        ) -> Poll<Option<Result<u32, Self::Error>>> {
            if let Some(job) = self.buffer.pop_front() {
                return Poll::Ready(Some(Ok(job)));
            }
            match self.running.take() {
                Some((seen, done, _)) if done.load(Ordering::SeqCst) => {
                    self.buffer.extend(seen);
                    match self.buffer.pop_front() {
                        Some(job) => Poll::Ready(Some(Ok(job))),
                        None => Poll::Pending,
                    }
                }
                Some(fetch) => {
                    self.running = Some((fetch.0, fetch.1, cx.waker().clone()));
                    Poll::Pending
                }
                None => {
                    self.fetches.fetch_add(1, Ordering::SeqCst);
                    let seen = std::mem::take(&mut *self.queued.lock().unwrap());
                    self.running = Some((seen, Arc::default(), cx.waker().clone()));
                    Poll::Pending
                }
            }
        }

        fn poll_close(
            &mut self,
            _: &mut Context<'_>,
            _: &WorkerContext,
        ) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
    }

    /// A signal the test raises (a NOTIFY, a wake of this process).
    #[derive(Clone, Default)]
    struct Signal(Arc<AtomicBool>);

    impl PollStrategy for Signal {
        fn poll_drive(&mut self, _: &mut Context<'_>, _: &PollSnapshot) -> Poll<Option<()>> {
            if self.0.swap(false, Ordering::SeqCst) {
                Poll::Ready(Some(()))
            } else {
                Poll::Pending
            }
        }
    }

    struct Rig {
        gate: Gated<Storage, Signal>,
        signal: Signal,
        queued: Arc<Mutex<Vec<u32>>>,
        fetches: Arc<AtomicUsize>,
        worker: WorkerContext,
    }

    impl Rig {
        fn new() -> Self {
            let storage = Storage::default();
            let (queued, fetches) = (storage.queued.clone(), storage.fetches.clone());
            let signal = Signal::default();
            Rig {
                gate: Gated::new(storage, signal.clone()),
                signal,
                queued,
                fetches,
                worker: WorkerContext::new("test"),
            }
        }

        fn poll(&mut self) -> Option<u32> {
            let mut cx = Context::from_waker(Waker::noop());
            match self.gate.poll_next(&mut cx, &self.worker) {
                Poll::Ready(Some(Ok(job))) => Some(job),
                _ => None,
            }
        }

        /// Ends the running fetch, as the database answering does: its waker fires.
        fn finish_fetch(&mut self) {
            let (_, done, waker) = self.gate.backend.running.as_ref().expect("a fetch runs");
            done.store(true, Ordering::SeqCst);
            waker.wake_by_ref();
        }

        fn queue(&mut self, job: u32) {
            self.queued.lock().unwrap().push(job);
            self.signal.0.store(true, Ordering::SeqCst);
        }

        fn fetches(&self) -> usize {
            self.fetches.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn polls_without_a_signal_fetch_nothing() {
        let mut rig = Rig::new();
        // The first poll fetches (jobs queued before the worker started).
        assert_eq!(rig.poll(), None);
        rig.finish_fetch();
        assert_eq!(rig.poll(), None);
        assert_eq!(rig.fetches(), 1);
        // Heartbeats, acknowledgements, other queues' NOTIFYs: the worker is polled, the
        // storage is not.
        for _ in 0..10 {
            assert_eq!(rig.poll(), None);
        }
        assert_eq!(rig.fetches(), 1);
    }

    #[test]
    fn a_signal_fetches_the_job_and_then_looks_once_more() {
        let mut rig = Rig::new();
        rig.poll();
        rig.finish_fetch();
        rig.poll();
        rig.queue(7);
        assert_eq!(rig.poll(), None);
        assert_eq!(rig.fetches(), 2);
        rig.finish_fetch();
        assert_eq!(rig.poll(), Some(7));
        // After a task, the next poll fetches again (the batch may not have been all).
        assert_eq!(rig.poll(), None);
        assert_eq!(rig.fetches(), 3);
        rig.finish_fetch();
        assert_eq!(rig.poll(), None);
        for _ in 0..5 {
            rig.poll();
        }
        assert_eq!(rig.fetches(), 3);
    }

    #[test]
    fn a_signal_during_a_fetch_that_started_before_it_is_not_lost() {
        let mut rig = Rig::new();
        rig.poll();
        rig.finish_fetch();
        rig.poll();
        // A fetch starts (the worker finished a task and looks for more)...
        rig.gate.wake.wake_by_ref();
        rig.poll();
        assert_eq!(rig.fetches(), 2);
        // ...a job is queued while it runs, so that fetch cannot see it.
        rig.queue(9);
        assert_eq!(rig.poll(), None);
        rig.finish_fetch();
        // It ends with nothing: the gate fetches once more, and that fetch finds the job.
        assert_eq!(rig.poll(), None);
        assert_eq!(rig.fetches(), 3);
        rig.finish_fetch();
        assert_eq!(rig.poll(), Some(9));
    }
}
