//! Deck versions: every change to a deck (and every deck creation by a user) runs inside
//! the shard that owns its scope, one at a time, so `expected_version` checks never race
//! in this process; the database's conditional update settles races between processes.
//!
//! The shard also keeps the idempotency cache. A change that carries an idempotency key
//! is recorded (request hash and answer) after it succeeds; the same key with the same
//! request replays the recorded answer, with a different request it is refused. Records
//! are persisted through [`IdempotencyStore`], so keys survive a restart.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;

use crate::shard::Shards;

/// A recorded answer to an idempotent change.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub request_hash: String,
    pub status: u16,
    pub body: Value,
}

/// Where idempotency records live (the `slide_idempotency` table).
pub trait IdempotencyStore: Send + Sync + 'static {
    fn load<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Recorded>, String>>;
    fn save<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        record: &'a Recorded,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// The answer to a change: what the work produced, or the replay of a recorded answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("this idempotency_key was already used with a different request")]
    KeyReused,
    #[error("the idempotency record could not be read: {0}")]
    Store(String),
    #[error("the deck actor did not answer: {0}")]
    Unavailable(String),
}

pub struct Change {
    /// `deck:<id>` for changes to a deck, `user:<id>` for creations.
    pub scope: String,
    pub key: Option<String>,
    pub request_hash: String,
    /// The change itself: checks `expected_version` and writes, in one transaction.
    pub work: BoxFuture<'static, (u16, Value)>,
    pub reply: RpcReplyPort<Result<Answer, ChangeError>>,
}

pub enum DeckMsg {
    Run(Change),
}

/// Records kept in memory per shard; older ones are read back from the store.
const CACHE_PER_SHARD: usize = 4096;
/// How long a record answers a retry: the store keeps (and the server's sweep prunes)
/// records for the same day.
pub const RECORD_TTL: Duration = Duration::from_secs(24 * 3600);
/// The longest a change may take (a transaction on a busy database).
const CHANGE_TIMEOUT: Duration = Duration::from_secs(30);

struct DeckShard {
    store: Arc<dyn IdempotencyStore>,
}

#[derive(Default)]
struct Cache {
    map: HashMap<(String, String), (Recorded, std::time::Instant)>,
    order: VecDeque<(String, String)>,
}

impl Cache {
    /// A record cached less than [`RECORD_TTL`] ago.
    fn get(&self, k: &(String, String)) -> Option<Recorded> {
        self.map
            .get(k)
            .filter(|(_, at)| at.elapsed() < RECORD_TTL)
            .map(|(r, _)| r.clone())
    }

    fn insert(&mut self, k: (String, String), v: Recorded) {
        let entry = (v, std::time::Instant::now());
        if self.map.insert(k.clone(), entry).is_none() {
            self.order.push_back(k);
            while self.order.len() > CACHE_PER_SHARD {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }
}

impl Actor for DeckShard {
    type Msg = DeckMsg;
    type State = Cache;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<DeckMsg>, _: ()) -> Result<Cache, ActorProcessingErr> {
        Ok(Cache::default())
    }

    async fn handle(
        &self,
        _myself: ActorRef<DeckMsg>,
        msg: DeckMsg,
        cache: &mut Cache,
    ) -> Result<(), ActorProcessingErr> {
        let DeckMsg::Run(change) = msg;
        let answer = self
            .run(
                change.scope,
                change.key,
                change.request_hash,
                change.work,
                cache,
            )
            .await;
        let _ = change.reply.send(answer);
        Ok(())
    }
}

impl DeckShard {
    async fn run(
        &self,
        scope: String,
        key: Option<String>,
        request_hash: String,
        work: BoxFuture<'static, (u16, Value)>,
        cache: &mut Cache,
    ) -> Result<Answer, ChangeError> {
        if let Some(key) = &key {
            let slot = (scope.clone(), key.clone());
            let known = match cache.get(&slot) {
                Some(r) => Some(r),
                None => self
                    .store
                    .load(&scope, key)
                    .await
                    .map_err(ChangeError::Store)?,
            };
            if let Some(r) = known {
                if r.request_hash != request_hash {
                    return Err(ChangeError::KeyReused);
                }
                return Ok(Answer {
                    status: r.status,
                    body: r.body,
                    replayed: true,
                });
            }
        }
        let (status, body) = work.await;
        // Only successes are recorded: a refused request (a stale version, bad input)
        // may be corrected and sent again under the same key.
        if let Some(key) = key.filter(|_| (200..300).contains(&status)) {
            let record = Recorded {
                request_hash,
                status,
                body: body.clone(),
            };
            if let Err(e) = self.store.save(&scope, &key, &record).await {
                tracing::error!(error = %e, scope, "idempotency record not saved");
            }
            cache.insert((scope, key), record);
        }
        Ok(Answer {
            status,
            body,
            replayed: false,
        })
    }
}

/// Handle to the deck shards. Cheap to clone.
#[derive(Clone)]
pub struct DeckActors {
    shards: Shards<DeckMsg>,
}

impl DeckActors {
    pub async fn start(
        count: usize,
        store: Arc<dyn IdempotencyStore>,
    ) -> Result<Self, ractor::SpawnErr> {
        let shards = Shards::start(count, move || {
            (
                DeckShard {
                    store: store.clone(),
                },
                (),
            )
        })
        .await?;
        Ok(Self { shards })
    }

    /// Runs `work` in the shard that owns `scope`, behind the idempotency check.
    pub async fn run(
        &self,
        scope: String,
        key: Option<String>,
        request_hash: String,
        work: BoxFuture<'static, (u16, Value)>,
    ) -> Result<Answer, ChangeError> {
        let shard = self.shards.of(&scope);
        let call = shard
            .call(
                |reply| {
                    DeckMsg::Run(Change {
                        scope,
                        key,
                        request_hash,
                        work,
                        reply,
                    })
                },
                Some(CHANGE_TIMEOUT),
            )
            .await;
        match call {
            Ok(ractor::rpc::CallResult::Success(answer)) => answer,
            Ok(ractor::rpc::CallResult::Timeout) => {
                Err(ChangeError::Unavailable("timed out".into()))
            }
            Ok(ractor::rpc::CallResult::SenderError) => {
                Err(ChangeError::Unavailable("the shard stopped".into()))
            }
            Err(e) => Err(ChangeError::Unavailable(e.to_string())),
        }
    }

    pub fn stop(&self) {
        self.shards.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[derive(Default)]
    struct MemStore(Mutex<HashMap<(String, String), Recorded>>);

    impl IdempotencyStore for MemStore {
        fn load<'a>(
            &'a self,
            s: &'a str,
            k: &'a str,
        ) -> BoxFuture<'a, Result<Option<Recorded>, String>> {
            let r = self.0.lock().unwrap().get(&(s.into(), k.into())).cloned();
            Box::pin(async move { Ok(r) })
        }
        fn save<'a>(
            &'a self,
            s: &'a str,
            k: &'a str,
            r: &'a Recorded,
        ) -> BoxFuture<'a, Result<(), String>> {
            self.0
                .lock()
                .unwrap()
                .insert((s.into(), k.into()), r.clone());
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test]
    async fn replays_refuses_and_survives_restart() {
        let store = Arc::new(MemStore::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let work = |runs: Arc<AtomicUsize>| -> BoxFuture<'static, (u16, Value)> {
            Box::pin(async move {
                let n = runs.fetch_add(1, Ordering::SeqCst);
                (200, serde_json::json!({ "n": n }))
            })
        };
        let actors = DeckActors::start(2, store.clone()).await.unwrap();
        let a = actors
            .run(
                "deck:1".into(),
                Some("k".into()),
                "h1".into(),
                work(runs.clone()),
            )
            .await
            .unwrap();
        let b = actors
            .run(
                "deck:1".into(),
                Some("k".into()),
                "h1".into(),
                work(runs.clone()),
            )
            .await
            .unwrap();
        assert!(!a.replayed && b.replayed);
        assert_eq!(a.body, b.body);
        assert!(matches!(
            actors
                .run(
                    "deck:1".into(),
                    Some("k".into()),
                    "h2".into(),
                    work(runs.clone())
                )
                .await,
            Err(ChangeError::KeyReused)
        ));
        actors.stop();
        // A fresh set of shards (a restarted process) reads the record back.
        let actors = DeckActors::start(2, store).await.unwrap();
        let c = actors
            .run(
                "deck:1".into(),
                Some("k".into()),
                "h1".into(),
                work(runs.clone()),
            )
            .await
            .unwrap();
        assert!(c.replayed);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
