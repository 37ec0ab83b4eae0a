//! Credit accounts: every balance change of an account goes through the shard that owns
//! the account, one at a time, and the shard keeps the balance that `_usage` reports so
//! that no request pays a database read for it. The store (the database) stays the
//! source of truth: a change is answered only after it committed, and a restarted shard
//! starts with an empty cache and reloads.

use std::sync::Arc;

use dashmap::DashMap;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::shard::Shards;
use crate::StoreError;

/// One balance movement of a change.
#[derive(Debug, Clone)]
pub struct Entry {
    pub user_id: String,
    /// Negative to spend; the account may not go below zero.
    pub delta: i64,
    /// Why the balance moves (the ledger row's `kind`).
    pub kind: plinth_vocab::LedgerKind,
    /// Makes the entry happen at most once per account (`bonus:<name>`, `monthly:<month>`).
    pub idem_key: Option<String>,
    /// JSON details stored with the ledger row.
    pub data: serde_json::Value,
}

/// Entries applied together, all or nothing (a transfer is two entries).
#[derive(Debug, Clone)]
pub struct Change {
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Committed; the new balance of each entry's account and the ledger row ids.
    Done {
        balances: Vec<(String, i64)>,
        transaction_ids: Vec<String>,
    },
    /// Nothing written: this account's balance is short.
    Insufficient { user_id: String, balance: i64 },
    /// Nothing written: an entry's `idem_key` was applied before.
    Duplicate,
    /// Nothing written: the account does not exist.
    NoAccount { user_id: String },
}

/// What the actors need from storage.
pub trait CreditStore: Send + Sync + 'static {
    /// `None` when the user has no credit account.
    fn balance<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<Option<i64>, StoreError>>;
    /// Applies changes in one transaction, each all or nothing on its own; one outcome
    /// per change, in order. An error says whether the batch may still have committed
    /// (a connection lost or a deadline passed while the commit was in flight).
    fn apply_batch<'a>(
        &'a self,
        changes: &'a [Change],
    ) -> BoxFuture<'a, Result<Vec<Applied>, CreditError>>;
}

/// Why a change got no outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreditError {
    /// Certainly not applied (refused before its batch started, or the batch failed).
    NotApplied(String),
    /// The answer did not arrive in time: the change may still commit. Callers must not
    /// compensate as if it failed (no refund, no claim released) — finding M9.
    Unknown(String),
}

impl std::fmt::Display for CreditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreditError::NotApplied(m) => write!(f, "credit change not applied: {m}"),
            CreditError::Unknown(m) => write!(f, "credit change outcome unknown: {m}"),
        }
    }
}

pub enum CreditMsg {
    Balance {
        user_id: String,
        reply: RpcReplyPort<Result<Option<i64>, StoreError>>,
    },
    Apply {
        change: Change,
        /// A change still waiting when this passes is dropped unapplied: its caller has
        /// given up (or is about to), and must be able to trust that nothing happened.
        start_by: Instant,
        reply: RpcReplyPort<Result<Applied, CreditError>>,
    },
    /// Answer at once (readiness: the shard is alive and not stuck in a batch).
    Ping { reply: RpcReplyPort<()> },
    /// Drop a cached balance (changed through another shard).
    Forget { user_id: String },
    /// Commit the changes waiting in this shard (sent by the shard to itself).
    Flush,
    /// Test hook: fail as a bug would, to exercise supervision.
    Crash,
}

/// Balances as the shards last saw them, with when. Only shards write it (after the
/// store answered, while they own the account); requests read it without a round trip.
type Published = Arc<DashMap<String, (i64, Instant)>>;

/// A published balance older than this is reloaded from the store, which bounds how
/// long a change made by another process (a `plinth worker`, a second server) stays
/// unseen.
pub const PUBLISHED_TTL: Duration = Duration::from_secs(5);

fn fresh(published: &Published, user_id: &str) -> Option<i64> {
    published
        .get(user_id)
        .filter(|e| e.1.elapsed() < PUBLISHED_TTL)
        .map(|e| e.0)
}

pub struct CreditShard {
    store: Arc<dyn CreditStore>,
    published: Published,
}

/// A change waiting for its batch: when it arrived, and the port to answer it on.
type Pending = (Change, Instant, RpcReplyPort<Result<Applied, CreditError>>);

/// Changes received and not yet committed, with the ports to answer them on.
pub struct CreditShardState {
    pending: Vec<Pending>,
    flush_scheduled: bool,
}

/// Most changes committed in one transaction.
const BATCH_LIMIT: usize = 256;

/// Published balances before the map is reset (bounded memory).
const CACHE_LIMIT: usize = 200_000;

impl Actor for CreditShard {
    type Msg = CreditMsg;
    type State = CreditShardState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _args: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(CreditShardState {
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
        let balances = &self.published;
        match msg {
            CreditMsg::Balance { user_id, reply } => {
                if let Some(b) = fresh(balances, &user_id) {
                    let _ = reply.send(Ok(Some(b)));
                    return Ok(());
                }
                let loaded = self.store.balance(&user_id).await;
                if let Ok(Some(b)) = loaded {
                    if balances.len() >= CACHE_LIMIT {
                        balances.clear();
                    }
                    balances.insert(user_id, (b, Instant::now()));
                }
                let _ = reply.send(loaded);
            }
            // Group commit: changes queue up while a flush is on its way; the flush
            // commits everything that arrived before it in one transaction.
            CreditMsg::Apply {
                change,
                start_by,
                reply,
            } => {
                state.pending.push((change, start_by, reply));
                if !state.flush_scheduled {
                    state.flush_scheduled = true;
                    myself.cast(CreditMsg::Flush)?;
                }
            }
            CreditMsg::Flush => {
                state.flush_scheduled = false;
                while !state.pending.is_empty() {
                    let take = state.pending.len().min(BATCH_LIMIT);
                    let now = Instant::now();
                    let batch: Vec<_> = state
                        .pending
                        .drain(..take)
                        .filter_map(|(change, start_by, reply)| {
                            if now > start_by {
                                let _ = reply.send(Err(CreditError::NotApplied(EXPIRED.into())));
                                None
                            } else {
                                Some((change, reply))
                            }
                        })
                        .collect();
                    if !batch.is_empty() {
                        self.commit(batch).await;
                    }
                }
            }
            CreditMsg::Ping { reply } => {
                let _ = reply.send(());
            }
            CreditMsg::Forget { user_id } => {
                balances.remove(&user_id);
            }
            CreditMsg::Crash => return Err("credit shard asked to crash".into()),
        }
        Ok(())
    }
}

impl CreditShard {
    /// Commits a batch and answers each change; publishes the new balance of each
    /// change's owning account (the first entry's).
    async fn commit(&self, batch: Vec<(Change, RpcReplyPort<Result<Applied, CreditError>>)>) {
        let (changes, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
        match self.store.apply_batch(&changes).await {
            Ok(outcomes) => {
                for ((change, reply), outcome) in changes.iter().zip(replies).zip(outcomes) {
                    if let (Applied::Done { balances, .. }, Some(owner)) =
                        (&outcome, change.entries.first())
                    {
                        if let Some((_, b)) = balances.iter().find(|(u, _)| *u == owner.user_id) {
                            self.published
                                .insert(owner.user_id.clone(), (*b, Instant::now()));
                        }
                    }
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(e) => {
                // Not committed, or not known to be: reload these accounts next time.
                for (change, reply) in changes.iter().zip(replies) {
                    if let Some(owner) = change.entries.first() {
                        self.published.remove(&owner.user_id);
                    }
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Handle used by the HTTP layer. Cheap to clone.
#[derive(Clone)]
pub struct CreditAccounts {
    shards: Shards<CreditMsg>,
    published: Published,
    start_within: Duration,
}

/// A change that has not started committing this long after it was sent is dropped.
const START_WITHIN: Duration = Duration::from_secs(20);
/// The caller waits longer than that, so it hears "dropped" rather than timing out
/// while its change is still queued; past this, the outcome is unknown.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Balance reads (after every authenticated request) never wait long for a busy shard.
const BALANCE_TIMEOUT: Duration = Duration::from_secs(2);
const EXPIRED: &str = "not started within 20 s; nothing was applied";

impl CreditAccounts {
    pub async fn start(
        shard_count: usize,
        store: Arc<dyn CreditStore>,
    ) -> Result<Self, ractor::SpawnErr> {
        let published: Published = Arc::new(DashMap::new());
        let for_shards = published.clone();
        let shards = Shards::start("credits", shard_count, move || {
            // A restarted shard starts from the store again: drop what was published.
            for_shards.clear();
            (
                CreditShard {
                    store: store.clone(),
                    published: for_shards.clone(),
                },
                (),
            )
        })
        .await?;
        Ok(Self {
            shards,
            published,
            start_within: START_WITHIN,
        })
    }

    /// The balance: as published by the owning shard, or loaded through it.
    pub async fn balance(&self, user_id: &str) -> Result<Option<i64>, StoreError> {
        if let Some(b) = fresh(&self.published, user_id) {
            return Ok(Some(b));
        }
        let user = user_id.to_owned();
        match self
            .shards
            .of(user_id)
            .call(
                |reply| CreditMsg::Balance {
                    user_id: user,
                    reply,
                },
                // On every authenticated request: a stuck shard must not hang them all.
                Some(BALANCE_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            _ => Err(StoreError::new("credit account actor unavailable")),
        }
    }

    /// Applies a change through the shard of its first entry's account. Other accounts
    /// it touches drop their cached balance.
    pub async fn apply(&self, change: Change) -> Result<Applied, CreditError> {
        let Some(owner) = change.entries.first().map(|e| e.user_id.clone()) else {
            return Ok(Applied::Done {
                balances: vec![],
                transaction_ids: vec![],
            });
        };
        let others: Vec<String> = change
            .entries
            .iter()
            .map(|e| e.user_id.clone())
            .filter(|u| *u != owner)
            .collect();
        let result = match self
            .shards
            .of(&owner)
            .call(
                |reply| CreditMsg::Apply {
                    change,
                    start_by: Instant::now() + self.start_within,
                    reply,
                },
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            // Never delivered: the shard is gone, nothing was applied.
            Err(e) => Err(CreditError::NotApplied(format!(
                "credit shard unavailable: {e}"
            ))),
            // The shard died while holding it, or the answer is late: it may have committed.
            Ok(_) => {
                self.forget(&owner);
                Err(CreditError::Unknown(
                    "credit shard did not answer in time".into(),
                ))
            }
        };
        for user in others {
            self.forget(&user);
        }
        result
    }

    /// Whether every shard answers within `within` (`/readyz`: a shard held by a batch
    /// that does not commit cannot take changes).
    pub async fn responsive(&self, within: Duration) -> bool {
        let calls = self.shards.each().into_iter().map(|shard| async move {
            matches!(
                shard
                    .call(|reply| CreditMsg::Ping { reply }, Some(within))
                    .await,
                Ok(ractor::rpc::CallResult::Success(()))
            )
        });
        futures::future::join_all(calls)
            .await
            .into_iter()
            .all(|ok| ok)
    }

    /// Test hook: how long a change may wait for its batch before it is dropped.
    pub fn with_start_within(mut self, d: Duration) -> Self {
        self.start_within = d;
        self
    }

    /// Drops a cached balance (after a change made outside the actors, e.g. deletion).
    pub fn forget(&self, user_id: &str) {
        let _ = self.shards.of(user_id).cast(CreditMsg::Forget {
            user_id: user_id.to_owned(),
        });
    }

    /// Test hook: crash the shard that owns `user_id`.
    pub fn crash_shard_of(&self, user_id: &str) {
        let _ = self.shards.of(user_id).cast(CreditMsg::Crash);
    }

    pub fn shard_ids(&self) -> Vec<ractor::ActorId> {
        self.shards.ids()
    }

    pub fn stop(&self) {
        self.shards.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// An in-memory store with the same rules as the database one.
    #[derive(Default)]
    struct MemStore {
        balances: Mutex<HashMap<String, i64>>,
        keys: Mutex<std::collections::HashSet<(String, String)>>,
        loads: Mutex<usize>,
        /// Each batch takes this long (a slow or stuck database).
        delay: Mutex<Duration>,
    }

    impl CreditStore for MemStore {
        fn balance<'a>(
            &'a self,
            user_id: &'a str,
        ) -> BoxFuture<'a, Result<Option<i64>, StoreError>> {
            Box::pin(async move {
                *self.loads.lock().unwrap() += 1;
                Ok(self.balances.lock().unwrap().get(user_id).copied())
            })
        }
        fn apply_batch<'a>(
            &'a self,
            changes: &'a [Change],
        ) -> BoxFuture<'a, Result<Vec<Applied>, CreditError>> {
            Box::pin(async move {
                let delay = *self.delay.lock().unwrap();
                tokio::time::sleep(delay).await;
                Ok(changes.iter().map(|c| self.apply_one(c)).collect())
            })
        }
    }

    impl MemStore {
        fn apply_one(&self, change: &Change) -> Applied {
            {
                let mut b = self.balances.lock().unwrap();
                let mut keys = self.keys.lock().unwrap();
                let mut next = b.clone();
                for e in &change.entries {
                    if let Some(k) = &e.idem_key {
                        if keys.contains(&(e.user_id.clone(), k.clone())) {
                            return Applied::Duplicate;
                        }
                    }
                    let Some(cur) = next.get(&e.user_id).copied() else {
                        return Applied::NoAccount {
                            user_id: e.user_id.clone(),
                        };
                    };
                    if cur + e.delta < 0 {
                        return Applied::Insufficient {
                            user_id: e.user_id.clone(),
                            balance: cur,
                        };
                    }
                    next.insert(e.user_id.clone(), cur + e.delta);
                }
                for e in &change.entries {
                    if let Some(k) = &e.idem_key {
                        keys.insert((e.user_id.clone(), k.clone()));
                    }
                }
                let balances = change
                    .entries
                    .iter()
                    .map(|e| (e.user_id.clone(), next[&e.user_id]))
                    .collect();
                *b = next;
                Applied::Done {
                    balances,
                    transaction_ids: vec![],
                }
            }
        }
    }

    fn entry(user: &str, delta: i64, key: Option<&str>) -> Entry {
        Entry {
            user_id: user.into(),
            delta,
            kind: plinth_vocab::LedgerKind::Deduct,
            idem_key: key.map(Into::into),
            data: serde_json::Value::Null,
        }
    }

    #[tokio::test]
    async fn serializes_spends_and_caches_balances() {
        let store = Arc::new(MemStore::default());
        store.balances.lock().unwrap().insert("a".into(), 100);
        store.balances.lock().unwrap().insert("b".into(), 0);
        let accounts = CreditAccounts::start(4, store.clone()).await.unwrap();
        // 150 concurrent spends of 1 from 100: exactly 100 succeed.
        let mut tasks = Vec::new();
        for _ in 0..150 {
            let a = accounts.clone();
            tasks.push(tokio::spawn(async move {
                a.apply(Change {
                    entries: vec![entry("a", -1, None)],
                })
                .await
                .unwrap()
            }));
        }
        let mut done = 0;
        for t in tasks {
            if matches!(t.await.unwrap(), Applied::Done { .. }) {
                done += 1;
            }
        }
        assert_eq!(done, 100);
        assert_eq!(accounts.balance("a").await.unwrap(), Some(0));
        // Cached: a second read does not load.
        let loads = *store.loads.lock().unwrap();
        accounts.balance("a").await.unwrap();
        assert_eq!(*store.loads.lock().unwrap(), loads);
        // Idempotency keys.
        let c = Change {
            entries: vec![entry("b", 5, Some("bonus:x"))],
        };
        assert!(matches!(
            accounts.apply(c.clone()).await.unwrap(),
            Applied::Done { .. }
        ));
        assert_eq!(accounts.apply(c).await.unwrap(), Applied::Duplicate);
        assert_eq!(accounts.balance("b").await.unwrap(), Some(5));
        // A transfer refreshes the other side's cache.
        accounts.balance("a").await.unwrap();
        let t = Change {
            entries: vec![entry("b", -2, None), entry("a", 2, None)],
        };
        assert!(matches!(
            accounts.apply(t).await.unwrap(),
            Applied::Done { .. }
        ));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(accounts.balance("a").await.unwrap(), Some(2));
        assert_eq!(accounts.balance("b").await.unwrap(), Some(3));
    }

    /// Finding M9: a change that cannot start before its caller gives up is dropped
    /// unapplied and answered so, never committed behind the caller's back.
    #[tokio::test]
    async fn m9_changes_that_cannot_start_in_time_are_never_applied() {
        let store = Arc::new(MemStore::default());
        store.balances.lock().unwrap().insert("a".into(), 100);
        *store.delay.lock().unwrap() = Duration::from_millis(300);
        let accounts = CreditAccounts::start(1, store.clone())
            .await
            .unwrap()
            .with_start_within(Duration::from_millis(100));
        let first = {
            let a = accounts.clone();
            tokio::spawn(async move {
                a.apply(Change {
                    entries: vec![entry("a", -1, None)],
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Queued behind the slow batch for longer than they may wait.
        let mut late = Vec::new();
        for _ in 0..5 {
            let a = accounts.clone();
            late.push(tokio::spawn(async move {
                a.apply(Change {
                    entries: vec![entry("a", -1, None)],
                })
                .await
            }));
        }
        assert!(matches!(first.await.unwrap(), Ok(Applied::Done { .. })));
        for t in late {
            assert!(matches!(t.await.unwrap(), Err(CreditError::NotApplied(_))));
        }
        *store.delay.lock().unwrap() = Duration::ZERO;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(store.balances.lock().unwrap()["a"], 99);
    }

    #[tokio::test]
    async fn a_crashed_shard_restarts_and_reloads() {
        let store = Arc::new(MemStore::default());
        store.balances.lock().unwrap().insert("a".into(), 7);
        let accounts = CreditAccounts::start(2, store.clone()).await.unwrap();
        assert_eq!(accounts.balance("a").await.unwrap(), Some(7));
        let before = accounts.shard_ids();
        accounts.crash_shard_of("a");
        for _ in 0..100 {
            if accounts.shard_ids() != before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_ne!(accounts.shard_ids(), before);
        store.balances.lock().unwrap().insert("a".into(), 9); // changed meanwhile
        assert_eq!(accounts.balance("a").await.unwrap(), Some(9));
    }
}
