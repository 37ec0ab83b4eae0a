//! Deck versions: changes to one deck (and deck creations by one user) run one at a time,
//! in arrival order, so `expected_version` checks never race in this process; the
//! database's conditional update settles races between processes. The shard that owns a
//! scope only keeps the order: each change runs in a task of its own, so a slow change
//! (or slow storage) holds up its own deck, never the other decks of the shard.
//!
//! A change that carries an idempotency key first claims the key in the
//! [`IdempotencyStore`] (the database, shared by every process), then runs, then records
//! its answer (or gives the claim up when it was refused, so a corrected request may use
//! the key again). The same key with the same request replays the recorded answer, or,
//! while the first request still runs in some process, is refused as
//! [`ChangeError::InProgress`]; with a different request it is refused as
//! [`ChangeError::KeyReused`]. The shard caches only records the store holds, and its
//! per-scope order means a repeat inside one process waits for the first and replays it
//! instead of being refused.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;

use crate::shard::Shards;
use crate::StoreError;

/// A recorded answer to an idempotent change.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub request_hash: String,
    pub status: u16,
    pub body: Value,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key is now held by this change: run it, then `finish` or `abandon`.
    Claimed,
    /// Another request holds the key and has not answered yet.
    InProgress { request_hash: String },
    /// The key's recorded answer.
    Done(Recorded),
}

/// Where idempotency records live (the `idempotency_records` table). `claim` is atomic
/// across processes: of two claims of one key, one gets [`Claim::Claimed`]. A claim whose
/// holder never answers (its process died) may be taken over after a while by a claim
/// with the same request hash.
pub trait IdempotencyStore: Send + Sync + 'static {
    fn claim<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        request_hash: &'a str,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;
    /// Records the answer of a claimed key.
    fn finish<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        record: &'a Recorded,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Gives a claimed key up: nothing is recorded, the key may be used again.
    fn abandon<'a>(&'a self, scope: &'a str, key: &'a str)
        -> BoxFuture<'a, Result<(), StoreError>>;
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
    /// The same request under this key is still running (in this or another process).
    #[error(
        "a request with this idempotency_key is still running; retry shortly to get its answer"
    )]
    InProgress,
    #[error("the idempotency record could not be read: {0}")]
    Store(StoreError),
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
    /// A change still waiting at this instant is dropped unrun: its caller has stopped
    /// waiting (it times out after [`CHANGE_TIMEOUT`]) and must not see it apply later.
    pub start_by: std::time::Instant,
}

pub enum DeckMsg {
    Run(Change),
    /// A change of `scope` ended; `record` is its answer to cache under its key.
    Done {
        scope: String,
        record: Option<(String, Recorded)>,
    },
}

/// Records kept in memory per shard; older ones are read back from the store.
const CACHE_PER_SHARD: usize = 4096;
/// How long a record answers a retry: the store keeps (and the server's sweep prunes)
/// records for the same day.
pub const RECORD_TTL: Duration = Duration::from_secs(24 * 3600);
/// The longest a caller waits for a change (queue and transaction on a busy database).
const CHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// A change that has not started this long after it was sent is dropped unrun.
const START_WITHIN: Duration = Duration::from_secs(20);

struct DeckShard {
    store: Arc<dyn IdempotencyStore>,
}

#[derive(Default)]
struct Cache {
    map: HashMap<(String, String), (Recorded, std::time::Instant)>,
    order: VecDeque<(String, String)>,
}

/// A shard's state: the idempotency cache, and for every scope with a change running,
/// the changes waiting behind it.
#[derive(Default)]
pub struct ShardState {
    cache: Cache,
    busy: HashMap<String, VecDeque<Change>>,
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
    type State = ShardState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _: ActorRef<DeckMsg>,
        _: (),
    ) -> Result<ShardState, ActorProcessingErr> {
        Ok(ShardState::default())
    }

    async fn handle(
        &self,
        myself: ActorRef<DeckMsg>,
        msg: DeckMsg,
        state: &mut ShardState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            DeckMsg::Run(change) => match state.busy.get_mut(&change.scope) {
                Some(queue) => queue.push_back(change),
                None => {
                    state.busy.insert(change.scope.clone(), VecDeque::new());
                    self.start(myself, change, &state.cache);
                }
            },
            DeckMsg::Done { scope, record } => {
                if let Some((key, record)) = record {
                    state.cache.insert((scope.clone(), key), record);
                }
                let next = state.busy.get_mut(&scope).and_then(VecDeque::pop_front);
                match next {
                    Some(change) => self.start(myself, change, &state.cache),
                    None => {
                        state.busy.remove(&scope);
                    }
                }
            }
        }
        Ok(())
    }
}

impl DeckShard {
    /// Runs one change in a task of its own and reports `Done` to the shard whatever
    /// happens to it (a panicking change answers nobody, but frees its scope).
    fn start(&self, myself: ActorRef<DeckMsg>, change: Change, cache: &Cache) {
        if std::time::Instant::now() > change.start_by {
            let _ = change.reply.send(Err(ChangeError::Unavailable(
                "the deck was busy for too long; nothing was applied".into(),
            )));
            let _ = myself.cast(DeckMsg::Done {
                scope: change.scope,
                record: None,
            });
            return;
        }
        let cached = change
            .key
            .as_ref()
            .and_then(|k| cache.get(&(change.scope.clone(), k.clone())));
        let store = self.store.clone();
        let scope = change.scope.clone();
        let key = change.key.clone();
        tokio::spawn(async move {
            let record = match tokio::spawn(run(store.clone(), change, cached)).await {
                Ok(record) => record,
                Err(e) => {
                    tracing::error!(error = %e, scope, "deck change panicked");
                    // Only the work can panic, and it runs under this change's claim: free
                    // the key for a retry rather than answering 409 until it goes stale.
                    if let Some(key) = &key {
                        if let Err(e) = store.abandon(&scope, key).await {
                            tracing::warn!(error = %e, scope, "idempotency claim not released");
                        }
                    }
                    None
                }
            };
            let _ = myself.cast(DeckMsg::Done { scope, record });
        });
    }
}

/// The answer a record gives to a request with `request_hash`.
fn replay(r: Recorded, request_hash: &str) -> Result<Answer, ChangeError> {
    if r.request_hash != request_hash {
        Err(ChangeError::KeyReused)
    } else {
        Ok(Answer {
            status: r.status,
            body: r.body,
            replayed: true,
        })
    }
}

/// The idempotency claim, the work, and the record of its answer; returns the record to
/// cache (only one the store holds).
async fn run(
    store: Arc<dyn IdempotencyStore>,
    change: Change,
    cached: Option<Recorded>,
) -> Option<(String, Recorded)> {
    let Change {
        scope,
        key,
        request_hash,
        work,
        reply,
        ..
    } = change;
    if let Some(key) = &key {
        if let Some(r) = cached {
            let _ = reply.send(replay(r, &request_hash));
            return None;
        }
        match store.claim(&scope, key, &request_hash).await {
            Err(e) => {
                let _ = reply.send(Err(ChangeError::Store(e)));
                return None;
            }
            Ok(Claim::Done(r)) => {
                let _ = reply.send(replay(r.clone(), &request_hash));
                return Some((key.clone(), r));
            }
            Ok(Claim::InProgress { request_hash: held }) => {
                let _ = reply.send(Err(if held == request_hash {
                    ChangeError::InProgress
                } else {
                    ChangeError::KeyReused
                }));
                return None;
            }
            Ok(Claim::Claimed) => {}
        }
    }
    let (status, body) = work.await;
    let mut record = None;
    if let Some(key) = key {
        // Only successes are recorded: a refused request (a stale version, bad input) may
        // be corrected and sent again under the same key.
        if (200..300).contains(&status) {
            let r = Recorded {
                request_hash,
                status,
                body: body.clone(),
            };
            match store.finish(&scope, &key, &r).await {
                Ok(()) => record = Some((key, r)),
                // The claim stays "in progress" until it goes stale; then a repeat runs
                // again. Nothing else can be done with a store that does not answer.
                Err(e) => tracing::error!(error = %e, scope, "idempotency record not saved"),
            }
        } else if let Err(e) = store.abandon(&scope, &key).await {
            tracing::error!(error = %e, scope, "idempotency claim not released");
        }
    }
    let _ = reply.send(Ok(Answer {
        status,
        body,
        replayed: false,
    }));
    record
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
        let shards = Shards::start("decks", count, move || {
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
                        start_by: std::time::Instant::now() + START_WITHIN,
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

    /// Records by key; status 0 is a claim in progress, as in the table.
    #[derive(Default)]
    struct MemStore(Mutex<HashMap<(String, String), Recorded>>);

    impl IdempotencyStore for MemStore {
        fn claim<'a>(
            &'a self,
            s: &'a str,
            k: &'a str,
            h: &'a str,
        ) -> BoxFuture<'a, Result<Claim, StoreError>> {
            let mut map = self.0.lock().unwrap();
            let claim = match map.get(&(s.into(), k.into())) {
                None => {
                    let r = Recorded {
                        request_hash: h.into(),
                        status: 0,
                        body: Value::Null,
                    };
                    map.insert((s.into(), k.into()), r);
                    Claim::Claimed
                }
                Some(r) if r.status == 0 => Claim::InProgress {
                    request_hash: r.request_hash.clone(),
                },
                Some(r) => Claim::Done(r.clone()),
            };
            Box::pin(async move { Ok(claim) })
        }
        fn finish<'a>(
            &'a self,
            s: &'a str,
            k: &'a str,
            r: &'a Recorded,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            self.0
                .lock()
                .unwrap()
                .insert((s.into(), k.into()), r.clone());
            Box::pin(async { Ok(()) })
        }
        fn abandon<'a>(&'a self, s: &'a str, k: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
            self.0.lock().unwrap().remove(&(s.to_owned(), k.to_owned()));
            Box::pin(async { Ok(()) })
        }
    }

    /// Another process holds the key: the same request is told it is in progress, a
    /// different one that the key is taken; once the holder has answered, both see that.
    #[tokio::test]
    async fn a_key_claimed_elsewhere_is_in_progress_then_replays() {
        let store = Arc::new(MemStore::default());
        assert_eq!(
            store.claim("user:1", "k", "h1").await.unwrap(),
            Claim::Claimed
        );
        let actors = DeckActors::start(2, store.clone()).await.unwrap();
        let never: BoxFuture<'static, (u16, Value)> =
            Box::pin(async { panic!("a claimed key must not run again") });
        let r = actors
            .run("user:1".into(), Some("k".into()), "h1".into(), never)
            .await;
        assert!(matches!(r, Err(ChangeError::InProgress)), "{r:?}");
        let never: BoxFuture<'static, (u16, Value)> =
            Box::pin(async { panic!("a claimed key must not run again") });
        let r = actors
            .run("user:1".into(), Some("k".into()), "h2".into(), never)
            .await;
        assert!(matches!(r, Err(ChangeError::KeyReused)), "{r:?}");
        let answer = Recorded {
            request_hash: "h1".into(),
            status: 200,
            body: serde_json::json!({"id": "d1"}),
        };
        store.finish("user:1", "k", &answer).await.unwrap();
        let never: BoxFuture<'static, (u16, Value)> =
            Box::pin(async { panic!("a finished key must not run again") });
        let r = actors
            .run("user:1".into(), Some("k".into()), "h1".into(), never)
            .await
            .unwrap();
        assert!(r.replayed);
        assert_eq!(r.body, answer.body);
    }

    /// A refused request gives its claim up: the corrected request runs.
    #[tokio::test]
    async fn a_refused_request_frees_its_key() {
        let store = Arc::new(MemStore::default());
        let actors = DeckActors::start(1, store.clone()).await.unwrap();
        let refused: BoxFuture<'static, (u16, Value)> =
            Box::pin(async { (409, serde_json::json!({"error": true})) });
        let r = actors
            .run("deck:1".into(), Some("k".into()), "h".into(), refused)
            .await
            .unwrap();
        assert_eq!(r.status, 409);
        assert!(store.0.lock().unwrap().is_empty());
        let ok: BoxFuture<'static, (u16, Value)> = Box::pin(async { (200, serde_json::json!({})) });
        let r = actors
            .run("deck:1".into(), Some("k".into()), "h".into(), ok)
            .await
            .unwrap();
        assert!(!r.replayed && r.status == 200);
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

    /// One shard, two decks: a change of deck A that cannot finish until deck B's change
    /// has does not hold B up (serialization is per deck, not per shard), and two changes
    /// of one deck still run one after the other, in order.
    #[tokio::test]
    async fn decks_of_one_shard_do_not_wait_for_each_other() {
        let actors = DeckActors::start(1, Arc::new(MemStore::default()))
            .await
            .unwrap();
        let (release_a, gate) = tokio::sync::oneshot::channel::<()>();
        let order = Arc::new(Mutex::new(Vec::new()));
        let o = order.clone();
        let slow_a: BoxFuture<'static, (u16, Value)> = Box::pin(async move {
            let _ = gate.await;
            o.lock().unwrap().push("a1");
            (200, serde_json::json!({}))
        });
        let a1 = tokio::spawn({
            let actors = actors.clone();
            async move { actors.run("deck:a".into(), None, "h".into(), slow_a).await }
        });
        let o = order.clone();
        let a2 = tokio::spawn({
            let actors = actors.clone();
            async move {
                // Sent after a1: it must wait for it.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                let work: BoxFuture<'static, (u16, Value)> = Box::pin(async move {
                    o.lock().unwrap().push("a2");
                    (200, serde_json::json!({}))
                });
                actors.run("deck:a".into(), None, "h".into(), work).await
            }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let o = order.clone();
        let b: BoxFuture<'static, (u16, Value)> = Box::pin(async move {
            o.lock().unwrap().push("b");
            (200, serde_json::json!({}))
        });
        let answered = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            actors.run("deck:b".into(), None, "h".into(), b),
        )
        .await;
        assert!(answered.is_ok(), "deck b waited for deck a");
        release_a.send(()).unwrap();
        a1.await.unwrap().unwrap();
        a2.await.unwrap().unwrap();
        assert_eq!(*order.lock().unwrap(), ["b", "a1", "a2"]);
    }
}
