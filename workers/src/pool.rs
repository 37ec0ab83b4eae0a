//! The render pool: CPU-bound slide work (rasterising, PDF and HTML writing, image
//! checks) runs on threads of its own, one per core, never on tokio's blocking pool,
//! where password hashing and file reads would wait behind it (security review N-H3).
//! Work is queued in order; each task is bounded by the render budget it carries.

use std::sync::mpsc;
use std::sync::{Arc, LazyLock, Mutex};

type Task = Box<dyn FnOnce() + Send>;

pub struct RenderPool {
    tx: Mutex<mpsc::Sender<Task>>,
    threads: usize,
}

/// The pool dropped the task: its thread panicked.
#[derive(Debug, thiserror::Error)]
#[error("the render thread failed")]
pub struct PoolFailed;

static POOL: LazyLock<RenderPool> = LazyLock::new(|| {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    RenderPool::new(threads)
});

/// The process's render pool (started on first use).
pub fn render_pool() -> &'static RenderPool {
    &POOL
}

impl RenderPool {
    pub fn new(threads: usize) -> RenderPool {
        let (tx, rx) = mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        for n in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("plinth-render-{n}"))
                .spawn(move || loop {
                    let task = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    match task {
                        // A panic ends the task (its caller sees `PoolFailed`), not the
                        // thread.
                        Ok(task) => {
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                        }
                        Err(_) => return,
                    }
                })
                .expect("spawning a render thread");
        }
        RenderPool {
            tx: Mutex::new(tx),
            threads: threads.max(1),
        }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `work` on a render thread; its result when it ends.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PoolFailed> {
        let (done, result) = tokio::sync::oneshot::channel();
        let task: Task = Box::new(move || {
            let _ = done.send(work());
        });
        self.tx
            .lock()
            .map_err(|_| PoolFailed)?
            .send(task)
            .map_err(|_| PoolFailed)?;
        result.await.map_err(|_| PoolFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_runs_on_the_pool_threads_and_a_panic_fails_only_its_task() {
        let pool = RenderPool::new(2);
        let name = pool
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert!(name.unwrap().starts_with("plinth-render-"));
        assert!(pool.run(|| panic!("boom")).await.is_err());
        assert_eq!(pool.run(|| 2 + 2).await.unwrap(), 4);
    }
}
