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

/// One balance movement of a change.
#[derive(Debug, Clone)]
pub struct Entry {
    pub user_id: String,
    /// Negative to spend; the account may not go below zero.
    pub delta: i64,
    /// Ledger kind: `usage`, `deduct`, `bonus`, `monthly`, `transfer_out`, ...
    pub kind: String,
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
    fn balance<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<Option<i64>, String>>;
    /// Applies a change in one transaction.
    fn apply<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<Applied, String>>;
}

pub enum CreditMsg {
    Balance {
        user_id: String,
        reply: RpcReplyPort<Result<Option<i64>, String>>,
    },
    Apply {
        change: Change,
        reply: RpcReplyPort<Result<Applied, String>>,
    },
    /// Drop a cached balance (changed through another shard).
    Forget { user_id: String },
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

pub struct CreditShardState;

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
        Ok(CreditShardState)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        _state: &mut Self::State,
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
            CreditMsg::Apply { change, reply } => {
                let owner = change.entries.first().map(|e| e.user_id.clone());
                let result = self.store.apply(&change).await;
                match (&result, owner) {
                    (Ok(Applied::Done { balances, .. }), Some(owner)) => {
                        for (user, balance) in balances {
                            if *user == owner {
                                self.published
                                    .insert(user.clone(), (*balance, Instant::now()));
                            }
                        }
                    }
                    // Unknown outcome (store error): reload next time.
                    (Err(_), Some(owner)) => {
                        self.published.remove(&owner);
                    }
                    _ => {}
                }
                let _ = reply.send(result);
            }
            CreditMsg::Forget { user_id } => {
                balances.remove(&user_id);
            }
            CreditMsg::Crash => return Err("credit shard asked to crash".into()),
        }
        Ok(())
    }
}

/// Handle used by the HTTP layer. Cheap to clone.
#[derive(Clone)]
pub struct CreditAccounts {
    shards: Shards<CreditMsg>,
    published: Published,
}

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

impl CreditAccounts {
    pub async fn start(
        shard_count: usize,
        store: Arc<dyn CreditStore>,
    ) -> Result<Self, ractor::SpawnErr> {
        let published: Published = Arc::new(DashMap::new());
        let for_shards = published.clone();
        let shards = Shards::start(shard_count, move || {
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
        Ok(Self { shards, published })
    }

    /// The balance: as published by the owning shard, or loaded through it.
    pub async fn balance(&self, user_id: &str) -> Result<Option<i64>, String> {
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
                // On every authenticated request: no timer (a dead shard fails at once).
                None,
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            _ => Err("credit account actor unavailable".into()),
        }
    }

    /// Applies a change through the shard of its first entry's account. Other accounts
    /// it touches drop their cached balance.
    pub async fn apply(&self, change: Change) -> Result<Applied, String> {
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
                |reply| CreditMsg::Apply { change, reply },
                Some(CALL_TIMEOUT),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(r)) => r,
            // The change may or may not have committed: every cache reloads.
            _ => {
                self.forget(&owner);
                Err("credit account actor unavailable".into())
            }
        };
        for user in others {
            self.forget(&user);
        }
        result
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
    }

    impl CreditStore for MemStore {
        fn balance<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<Option<i64>, String>> {
            Box::pin(async move {
                *self.loads.lock().unwrap() += 1;
                Ok(self.balances.lock().unwrap().get(user_id).copied())
            })
        }
        fn apply<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<Applied, String>> {
            Box::pin(async move {
                let mut b = self.balances.lock().unwrap();
                let mut keys = self.keys.lock().unwrap();
                let mut next = b.clone();
                for e in &change.entries {
                    if let Some(k) = &e.idem_key {
                        if keys.contains(&(e.user_id.clone(), k.clone())) {
                            return Ok(Applied::Duplicate);
                        }
                    }
                    let Some(cur) = next.get(&e.user_id).copied() else {
                        return Ok(Applied::NoAccount {
                            user_id: e.user_id.clone(),
                        });
                    };
                    if cur + e.delta < 0 {
                        return Ok(Applied::Insufficient {
                            user_id: e.user_id.clone(),
                            balance: cur,
                        });
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
                Ok(Applied::Done {
                    balances,
                    transaction_ids: vec![],
                })
            })
        }
    }

    fn entry(user: &str, delta: i64, key: Option<&str>) -> Entry {
        Entry {
            user_id: user.into(),
            delta,
            kind: "test".into(),
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
