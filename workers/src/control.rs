//! Queue pauses and process heartbeats, across processes. Operators pause a queue in the
//! database (`plinth jobs pause`, the console); every process that runs workers reads the
//! paused queues every second ([`Control::paused`]) and pauses or resumes its own
//! workers of them through apalis (`WorkerContext::pause`: a paused worker takes no new
//! job, finishes the ones it runs and keeps its heartbeat). It also says every 5 s that
//! it is alive and what it runs ([`Control::beat`]), for the console's process list.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apalis::prelude::{BoxDynError, Event, WorkerContext};
use futures::future::BoxFuture;

use crate::QueueName;

/// The server's side: where pauses are kept and processes report.
pub trait Control: Send + Sync + 'static {
    /// The queues paused now.
    fn paused(&self) -> BoxFuture<'_, Result<Vec<QueueName>, BoxDynError>>;
    /// This process is alive and runs these pools.
    fn beat<'a>(
        &'a self,
        pools: &'a [(QueueName, usize)],
    ) -> BoxFuture<'a, Result<(), BoxDynError>>;
    /// This process stops.
    fn gone(&self) -> BoxFuture<'_, Result<(), BoxDynError>>;
}

pub type Env = Arc<dyn Control>;

/// How often a process reads the paused queues.
pub const PAUSE_CHECK: Duration = Duration::from_secs(1);
/// How often a process says it is alive.
pub const BEAT: Duration = Duration::from_secs(5);

/// This process's running workers by name, with their queue, and the paused queues as
/// last read.
#[derive(Clone, Default)]
pub struct Registry {
    workers: Arc<Mutex<HashMap<String, (QueueName, WorkerContext)>>>,
    paused: Arc<Mutex<HashSet<QueueName>>>,
}

impl Registry {
    fn is_paused(&self, queue: QueueName) -> bool {
        self.paused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&queue)
    }

    /// A worker's events (the monitor's listener): a worker that starts is registered and
    /// paused at once if its queue is; one that exits is forgotten.
    pub fn on_event(&self, ctx: &WorkerContext, event: &Event, queue: Option<QueueName>) {
        match event {
            Event::Start => {
                let Some(queue) = queue else { return };
                if self.is_paused(queue) {
                    let _ = ctx.pause();
                }
                self.workers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(ctx.name().to_owned(), (queue, ctx.clone()));
            }
            Event::Exit => {
                self.workers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(ctx.name());
            }
            _ => {}
        }
    }

    /// Reads the paused queues (before the workers start).
    pub async fn load(&self, control: &Env) {
        match control.paused().await {
            Ok(list) => self.apply(list.into_iter().collect()),
            Err(e) => tracing::warn!(error = %e, "reading the paused queues failed"),
        }
    }

    /// Jobs this process's workers are running now.
    pub fn running(&self) -> usize {
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        workers.values().map(|(_, ctx)| ctx.task_count()).sum()
    }

    /// Applies the paused queues to this process's workers.
    fn apply(&self, paused: HashSet<QueueName>) {
        let before = std::mem::replace(
            &mut *self.paused.lock().unwrap_or_else(|e| e.into_inner()),
            paused.clone(),
        );
        for q in paused.difference(&before) {
            tracing::info!(
                queue = q.name(),
                "queue paused: its workers here take no new job"
            );
        }
        for q in before.difference(&paused) {
            tracing::info!(queue = q.name(), "queue resumed");
        }
        let workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        for (queue, ctx) in workers.values() {
            if ctx.is_shutting_down() {
                continue;
            }
            if paused.contains(queue) {
                if ctx.is_running() {
                    let _ = ctx.pause();
                }
            } else if ctx.is_paused() {
                let _ = ctx.resume();
                // The jobs queued during the pause are there to fetch.
                crate::wake::wake(*queue);
            }
        }
    }
}

/// Runs until `stop`: reads the paused queues every second and applies them, reports the
/// process every 5 s, and says it is gone at the end.
pub async fn run(
    control: Env,
    registry: Registry,
    pools: Vec<(QueueName, usize)>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut last_beat: Option<tokio::time::Instant> = None;
    loop {
        match control.paused().await {
            Ok(list) => registry.apply(list.into_iter().collect()),
            Err(e) => tracing::warn!(error = %e, "reading the paused queues failed; retrying"),
        }
        if last_beat.is_none_or(|at| at.elapsed() >= BEAT) {
            if let Err(e) = control.beat(&pools).await {
                tracing::warn!(error = %e, "process heartbeat failed; retrying");
            }
            last_beat = Some(tokio::time::Instant::now());
        }
        tokio::select! {
            _ = tokio::time::sleep(PAUSE_CHECK) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    if let Err(e) = control.gone().await {
        tracing::debug!(error = %e, "could not remove this process from the process list");
    }
}
