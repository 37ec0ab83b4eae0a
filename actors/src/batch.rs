//! Group commit: a request hands its rows to a shard, which writes everything that
//! arrived while its previous write was running in one transaction and answers each
//! request with its own outcome (a count of rows written, the row as stored, an order
//! placed or refused). A request waits for at most the write in flight plus its own;
//! nothing is answered before it committed, so a success never stands for lost rows.
//! Telemetry events, analytics hits, and on SQLite (one writer at a time) post creates
//! and marketplace orders go through it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::shard::Shards;
use crate::StoreError;

/// What the writer needs from storage.
pub trait BatchStore<R, O = u64>: Send + Sync + 'static {
    /// Writes the groups in one transaction; one outcome per group, in order (for rows,
    /// the count written, duplicates not counted). An error means nothing was written.
    fn write<'a>(&'a self, groups: &'a [Vec<R>]) -> BoxFuture<'a, Result<Vec<O>, StoreError>>;
}

pub enum BatchMsg<R, O> {
    Submit {
        rows: Vec<R>,
        reply: RpcReplyPort<Result<O, StoreError>>,
    },
    /// Write what is waiting (sent by the shard to itself).
    Flush,
}

pub struct BatchShard<R, O> {
    store: Arc<dyn BatchStore<R, O>>,
    max_rows: usize,
}

/// A request's rows and the port to answer it on.
type Pending<R, O> = (Vec<R>, RpcReplyPort<Result<O, StoreError>>);

pub struct BatchShardState<R, O> {
    pending: Vec<Pending<R, O>>,
    flush_scheduled: bool,
}

/// A request that gets no answer in this time gives up (its rows may still commit).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

impl<R: Send + Sync + 'static, O: Send + 'static> Actor for BatchShard<R, O> {
    type Msg = BatchMsg<R, O>;
    type State = BatchShardState<R, O>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _args: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(BatchShardState {
            pending: Vec::new(),
            flush_scheduled: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            BatchMsg::Submit { rows, reply } => {
                state.pending.push((rows, reply));
                if !state.flush_scheduled {
                    state.flush_scheduled = true;
                    myself.cast(BatchMsg::Flush)?;
                }
            }
            BatchMsg::Flush => {
                state.flush_scheduled = false;
                while !state.pending.is_empty() {
                    let mut rows = 0;
                    let take = state
                        .pending
                        .iter()
                        .take_while(|(r, _)| {
                            rows += r.len();
                            rows <= self.max_rows
                        })
                        .count()
                        .max(1);
                    let (groups, replies): (Vec<_>, Vec<_>) = state.pending.drain(..take).unzip();
                    match self.store.write(&groups).await {
                        Ok(outcomes) => {
                            for (reply, o) in replies.into_iter().zip(outcomes) {
                                let _ = reply.send(Ok(o));
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "batch not written");
                            for reply in replies {
                                let _ = reply.send(Err(e.clone()));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Handle used by the HTTP layer. Cheap to clone.
pub struct BatchWriter<R: Send + Sync + 'static, O: Send + 'static = u64> {
    shards: Shards<BatchMsg<R, O>>,
}

impl<R: Send + Sync + 'static, O: Send + 'static> Clone for BatchWriter<R, O> {
    fn clone(&self) -> Self {
        Self {
            shards: self.shards.clone(),
        }
    }
}

impl<R: Send + Sync + 'static, O: Send + 'static> BatchWriter<R, O> {
    /// `shard_count` writers run side by side (one is right for SQLite's single writer);
    /// a transaction takes at most `max_rows` rows (a request's rows are never split).
    /// `kind` names the writer in metrics (`plinth_actor_mailbox_length{actor=...}`).
    pub async fn start(
        kind: &'static str,
        shard_count: usize,
        max_rows: usize,
        store: Arc<dyn BatchStore<R, O>>,
    ) -> Result<Self, ractor::SpawnErr> {
        let shards = Shards::start(kind, shard_count, move || {
            (
                BatchShard {
                    store: store.clone(),
                    max_rows,
                },
                (),
            )
        })
        .await?;
        Ok(Self { shards })
    }

    /// Writes `rows` with whatever else is waiting; answers the store's outcome for them
    /// once they committed. `key` picks the shard, so one client's batches stay in order.
    pub async fn write(&self, key: &str, rows: Vec<R>) -> Result<O, StoreError> {
        let shard = self.shards.of(key);
        match ractor::call_t!(
            shard,
            |reply| BatchMsg::Submit { rows, reply },
            CALL_TIMEOUT.as_millis() as u64
        ) {
            Ok(r) => r,
            Err(e) => Err(StoreError::new(format!("batch writer: {e}"))),
        }
    }

    pub fn stop(&self) {
        self.shards.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records each transaction's groups; skips rows it has seen (like ON CONFLICT).
    #[derive(Default)]
    struct Memory {
        seen: Mutex<std::collections::HashSet<u32>>,
        transactions: Mutex<Vec<usize>>,
    }

    impl BatchStore<u32> for Memory {
        fn write<'a>(
            &'a self,
            groups: &'a [Vec<u32>],
        ) -> BoxFuture<'a, Result<Vec<u64>, StoreError>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                self.transactions.lock().unwrap().push(groups.len());
                let mut seen = self.seen.lock().unwrap();
                Ok(groups
                    .iter()
                    .map(|g| g.iter().filter(|r| seen.insert(**r)).count() as u64)
                    .collect())
            })
        }
    }

    #[tokio::test]
    async fn concurrent_requests_share_transactions_and_each_hears_its_own_count() {
        let store = Arc::new(Memory::default());
        let writer = BatchWriter::start("test", 1, 2_000, store.clone())
            .await
            .unwrap();
        let calls = (0..100u32).map(|i| {
            let w = writer.clone();
            tokio::spawn(async move { w.write("k", vec![i * 2, i * 2 + 1]).await })
        });
        let counts: Vec<u64> = futures::future::join_all(calls)
            .await
            .into_iter()
            .map(|r| r.unwrap().unwrap())
            .collect();
        assert_eq!(counts, vec![2; 100]);
        // Rows 0 and 1 were written by the first request: only 200 is new.
        assert_eq!(writer.write("k", vec![0, 1, 200]).await, Ok(1));
        let transactions = store.transactions.lock().unwrap().clone();
        assert!(
            transactions.len() < 50,
            "100 concurrent requests took {} transactions",
            transactions.len()
        );
        writer.stop();
    }
}
