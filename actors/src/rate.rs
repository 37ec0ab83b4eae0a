//! Fixed-window rate counters, sharded over N actors by a stable hash of the key.
//!
//! A window is `(key, category)`; every endpoint of a category shares it. Shards run under
//! a supervisor that restarts a crashed shard in place. A restart loses that shard's
//! windows, which the design accepts; while a shard is down, checks fail open.
//!
//! Without a shared store a shard also hands out **leases**: when it counts a request it
//! may count a slice of the window's remaining requests too (a quarter, at most 256) and
//! publish them as permits that the next requests of that window take with one atomic
//! decrement, without a round trip to the shard. Only the shard moves a window's count,
//! so a window never allows more than its limit; a lease ends with its window, and a
//! full window is published as such, so refusals need no round trip either. A request
//! that finds no permit (or another limit: the caller's tier changed) asks the shard.
//!
//! With a shared [`RateStore`] (several processes on one PostgreSQL) the windows are
//! counted there instead: a shard gathers the checks that arrive while its previous
//! flush runs, adds them to the store in one statement (one count per window), and
//! decides each request in arrival order from the count the store returns, so a limit
//! of R is at most R across all processes. A window refused once is refused from memory
//! until it ends (a flood costs the store nothing). If the store fails, the shard counts
//! in its own windows meanwhile (limits then hold per process, as without a store).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::shard::Shards;
use crate::StoreError;

/// The outcome of one check, enough to fill `_usage.rate_limit` and a 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    pub interval_ms: u64,
    /// Milliseconds until the window resets (0 when allowed).
    pub retry_after_ms: u64,
}

/// Hits of one window to add in a shared store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hits {
    pub key: String,
    pub category: u8,
    pub n: u64,
    pub interval_ms: u64,
}

/// A window after the hits were added: its count (including them) and the time left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub count: u64,
    pub left_ms: u64,
}

/// Windows shared by every process (PostgreSQL's `rate_windows`).
pub trait RateStore: Send + Sync + 'static {
    /// Adds each window's hits at once (a window that ended starts again with them);
    /// one answer per item, in order.
    fn add<'a>(&'a self, hits: &'a [Hits]) -> BoxFuture<'a, Result<Vec<Counted>, StoreError>>;
}

pub enum ShardMsg {
    Check {
        key: String,
        category: u8,
        limit: u64,
        interval_ms: u64,
        reply: RpcReplyPort<Decision>,
    },
    /// What a window has left, counting nothing (a replayed answer reports it).
    Peek {
        key: String,
        category: u8,
        limit: u64,
        interval_ms: u64,
        reply: RpcReplyPort<Decision>,
    },
    /// Count what is waiting in the shared store (sent by the shard to itself).
    Flush,
    /// Test hook: make the shard fail as a bug would, so supervision can be observed.
    Crash,
}

/// A check waiting for the shared store.
struct Waiting {
    key: String,
    category: u8,
    limit: u64,
    interval_ms: u64,
    reply: RpcReplyPort<Decision>,
}

struct Window {
    started: Instant,
    count: u64,
    interval: Duration,
}

pub struct Shard {
    store: Option<Arc<dyn RateStore>>,
    shared: Shared,
    leases: Option<Arc<Leases>>,
}

/// The categories counted in the shared store (when there is one); the others are counted
/// in this process with leases. A small abuse-prone category (sign-in, say) can then hold
/// across processes while the high-volume ones stay local.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shared(u64);

impl Shared {
    pub const ALL: Shared = Shared(u64::MAX);

    /// Only these categories (each below 64).
    pub fn only(categories: &[u8]) -> Shared {
        Shared(
            categories
                .iter()
                .fold(0, |bits, c| bits | 1u64.checked_shl(*c as u32).unwrap_or(0)),
        )
    }

    pub fn has(self, category: u8) -> bool {
        1u64.checked_shl(category as u32)
            .is_some_and(|bit| self.0 & bit != 0)
    }
}

/// Permits of one window counted by its shard ahead of the requests that take them.
pub struct Lease {
    /// The window's end; the lease is void from then on.
    end: Instant,
    limit: u64,
    interval_ms: u64,
    /// Permits left (goes below zero when requests race for the last one).
    permits: std::sync::atomic::AtomicI64,
    /// What the window has left once every permit is taken.
    base: u64,
    /// The window is full: refuse until `end`.
    full: bool,
}

/// Published leases, per category, by key.
pub struct Leases(Vec<dashmap::DashMap<String, Arc<Lease>>>);

impl Leases {
    fn new() -> Self {
        Self((0..=u8::MAX).map(|_| dashmap::DashMap::new()).collect())
    }

    /// The published lease of a key's window while it holds for these limits: `Err` with
    /// the refusal when the window is full, `None` when no lease answers.
    fn open(
        &self,
        key: &str,
        category: u8,
        limit: u64,
        interval_ms: u64,
    ) -> Option<Result<Arc<Lease>, Decision>> {
        let lease = self.0[category as usize].get(key)?.value().clone();
        let now = Instant::now();
        if lease.limit != limit || lease.interval_ms != interval_ms || now >= lease.end {
            return None;
        }
        if lease.full {
            return Some(Err(refused(limit, interval_ms, lease.end - now)));
        }
        Some(Ok(lease))
    }

    /// The decision for a request that a lease answers, if one does.
    fn take(&self, key: &str, category: u8, limit: u64, interval_ms: u64) -> Option<Decision> {
        let lease = match self.open(key, category, limit, interval_ms)? {
            Ok(lease) => lease,
            Err(full) => return Some(full),
        };
        let left = lease
            .permits
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        (left > 0).then(|| Decision {
            allowed: true,
            limit,
            remaining: lease.base + (left - 1) as u64,
            interval_ms,
            retry_after_ms: 0,
        })
    }

    /// What a published lease says is left, taking no permit.
    fn peek(&self, key: &str, category: u8, limit: u64, interval_ms: u64) -> Option<Decision> {
        let lease = match self.open(key, category, limit, interval_ms)? {
            Ok(lease) => lease,
            Err(full) => return Some(full),
        };
        let left = lease
            .permits
            .load(std::sync::atomic::Ordering::Acquire)
            .max(0) as u64;
        Some(Decision {
            allowed: true,
            limit,
            remaining: lease.base + left,
            interval_ms,
            retry_after_ms: 0,
        })
    }

    fn publish(&self, key: &str, category: u8, lease: Option<Lease>) {
        let map = &self.0[category as usize];
        match lease {
            Some(l) => {
                map.insert(key.to_owned(), Arc::new(l));
            }
            None => {
                map.remove(key);
            }
        }
    }

    fn sweep(&self, now: Instant) {
        for map in &self.0 {
            if !map.is_empty() {
                map.retain(|_, l| l.end > now);
            }
        }
    }
}

/// Most permits one lease carries.
const MAX_LEASE: u64 = 256;

pub struct ShardState {
    windows: HashMap<(String, u8), Window>,
    checks_since_sweep: u32,
    /// Shared store only: checks of the next flush, and windows known full until then.
    waiting: Vec<Waiting>,
    flush_scheduled: bool,
    full_until: HashMap<(String, u8), Instant>,
}

fn refused(limit: u64, interval_ms: u64, left: Duration) -> Decision {
    Decision {
        allowed: false,
        limit,
        remaining: 0,
        interval_ms,
        retry_after_ms: (left.as_millis() as u64).max(1),
    }
}

impl ShardState {
    /// A window's state without counting (a window not begun has its whole limit left).
    fn peek(&self, key: String, category: u8, limit: u64, interval_ms: u64) -> Decision {
        let now = Instant::now();
        let open = Decision {
            allowed: true,
            limit,
            remaining: limit,
            interval_ms,
            retry_after_ms: 0,
        };
        let Some(w) = self.windows.get(&(key, category)) else {
            return open;
        };
        let end = w.started + w.interval;
        if now >= end {
            return open;
        }
        if w.count >= limit {
            return refused(limit, interval_ms, end - now);
        }
        Decision {
            remaining: limit - w.count,
            ..open
        }
    }

    fn check(
        &mut self,
        key: String,
        category: u8,
        limit: u64,
        interval_ms: u64,
        leases: Option<&Leases>,
    ) -> Decision {
        let now = Instant::now();
        self.checks_since_sweep += 1;
        if self.checks_since_sweep >= 4096 {
            // Bounded memory: drop windows that have ended.
            self.checks_since_sweep = 0;
            self.windows
                .retain(|_, w| now.duration_since(w.started) < w.interval);
            if let Some(l) = leases {
                l.sweep(now);
            }
        }
        let interval = Duration::from_millis(interval_ms);
        let lease_key = leases.map(|_| key.clone());
        let w = self.windows.entry((key, category)).or_insert(Window {
            started: now,
            count: 0,
            interval,
        });
        if now.duration_since(w.started) >= w.interval {
            w.started = now;
            w.count = 0;
            w.interval = interval;
        }
        let end = w.started + w.interval;
        let lease = |permits: u64, base: u64, full: bool| Lease {
            end,
            limit,
            interval_ms,
            permits: std::sync::atomic::AtomicI64::new(permits as i64),
            base,
            full,
        };
        if w.count >= limit {
            if let (Some(l), Some(k)) = (leases, &lease_key) {
                l.publish(k, category, Some(lease(0, 0, true)));
            }
            return refused(limit, interval_ms, end.saturating_duration_since(now));
        }
        w.count += 1;
        let remaining = limit - w.count;
        if let (Some(l), Some(k)) = (leases, &lease_key) {
            // Count a slice ahead for the next requests (never more than is left).
            let permits = (remaining / 4).min(MAX_LEASE);
            w.count += permits;
            let next = (permits > 0).then(|| lease(permits, remaining - permits, false));
            l.publish(k, category, next);
        }
        Decision {
            allowed: true,
            limit,
            remaining,
            interval_ms,
            retry_after_ms: 0,
        }
    }
}

impl Actor for Shard {
    type Msg = ShardMsg;
    type State = ShardState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        _args: (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ShardState {
            windows: HashMap::new(),
            checks_since_sweep: 0,
            waiting: Vec::new(),
            flush_scheduled: false,
            full_until: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ShardMsg::Peek {
                key,
                category,
                limit,
                interval_ms,
                reply,
            } => {
                let _ = reply.send(state.peek(key, category, limit, interval_ms));
                Ok(())
            }
            ShardMsg::Check {
                key,
                category,
                limit,
                interval_ms,
                reply,
            } => {
                if self.store.is_none() || !self.shared.has(category) {
                    let d = state.check(key, category, limit, interval_ms, self.leases.as_deref());
                    let _ = reply.send(d);
                    return Ok(());
                }
                let now = Instant::now();
                if let Some(until) = state.full_until.get(&(key.clone(), category)) {
                    if *until > now {
                        let _ = reply.send(refused(limit, interval_ms, *until - now));
                        return Ok(());
                    }
                }
                state.waiting.push(Waiting {
                    key,
                    category,
                    limit,
                    interval_ms,
                    reply,
                });
                if !state.flush_scheduled {
                    state.flush_scheduled = true;
                    myself.cast(ShardMsg::Flush)?;
                }
                Ok(())
            }
            ShardMsg::Flush => {
                state.flush_scheduled = false;
                if let Some(store) = &self.store {
                    flush(store.as_ref(), state).await;
                }
                Ok(())
            }
            ShardMsg::Crash => Err("rate shard asked to crash".into()),
        }
    }
}

/// Counts the waiting checks in the shared store and answers them in arrival order.
async fn flush(store: &dyn RateStore, state: &mut ShardState) {
    let waiting = std::mem::take(&mut state.waiting);
    if waiting.is_empty() {
        return;
    }
    let now = Instant::now();
    state.full_until.retain(|_, until| *until > now);
    // One item per window, in order of first arrival.
    let mut index: HashMap<(&str, u8), usize> = HashMap::new();
    let mut hits: Vec<Hits> = Vec::new();
    let mut slot = Vec::with_capacity(waiting.len());
    for w in &waiting {
        let i = *index
            .entry((w.key.as_str(), w.category))
            .or_insert_with(|| {
                hits.push(Hits {
                    key: w.key.clone(),
                    category: w.category,
                    n: 0,
                    interval_ms: w.interval_ms,
                });
                hits.len() - 1
            });
        hits[i].n += 1;
        slot.push(i);
    }
    drop(index);
    let counted = match store.add(&hits).await {
        Ok(c) if c.len() == hits.len() => c,
        Ok(_) | Err(_) => {
            tracing::warn!("shared rate store unavailable; counting in this process meanwhile");
            for w in waiting {
                let d = state.check(w.key, w.category, w.limit, w.interval_ms, None);
                let _ = w.reply.send(d);
            }
            return;
        }
    };
    // The i-th check of a window in this batch saw the count before the batch plus i.
    let mut seen = vec![0u64; hits.len()];
    for (w, i) in waiting.into_iter().zip(slot) {
        seen[i] += 1;
        let c = counted[i];
        let at = c.count.saturating_sub(hits[i].n) + seen[i];
        let left = Duration::from_millis(c.left_ms);
        let d = if at <= w.limit {
            Decision {
                allowed: true,
                limit: w.limit,
                remaining: w.limit - at,
                interval_ms: w.interval_ms,
                retry_after_ms: 0,
            }
        } else {
            state
                .full_until
                .insert((w.key.clone(), w.category), now + left);
            refused(w.limit, w.interval_ms, left)
        };
        let _ = w.reply.send(d);
    }
}

/// Handle used by the HTTP layer. Cheap to clone.
#[derive(Clone)]
pub struct RateLimiter {
    shards: Shards<ShardMsg>,
    /// The shards' leases of the categories counted in this process (see the module
    /// documentation); `None` when every category is counted in a shared store.
    leases: Option<Arc<Leases>>,
    /// The categories counted in the shared store, when there is one.
    shared: Option<Shared>,
}

impl RateLimiter {
    /// Windows in this process only.
    pub async fn start(shard_count: usize) -> Result<Self, ractor::SpawnErr> {
        Self::start_with(shard_count, None).await
    }

    /// Windows of every category in `store` (shared by every process) when given.
    pub async fn start_with(
        shard_count: usize,
        store: Option<Arc<dyn RateStore>>,
    ) -> Result<Self, ractor::SpawnErr> {
        Self::start_sharing(shard_count, store.map(|s| (s, Shared::ALL))).await
    }

    /// Windows of the `Shared` categories in the store, the others in this process.
    pub async fn start_sharing(
        shard_count: usize,
        store: Option<(Arc<dyn RateStore>, Shared)>,
    ) -> Result<Self, ractor::SpawnErr> {
        let shared = store.as_ref().map(|(_, s)| *s);
        let store = store.map(|(s, _)| s);
        let leases = (shared != Some(Shared::ALL)).then(|| Arc::new(Leases::new()));
        let shard_leases = leases.clone();
        Ok(Self {
            shards: Shards::start("rate", shard_count, move || {
                (
                    Shard {
                        store: store.clone(),
                        shared: shared.unwrap_or(Shared(0)),
                        leases: shard_leases.clone(),
                    },
                    (),
                )
            })
            .await?,
            leases,
            shared,
        })
    }

    /// Counts one request in `(key, category)`'s window.
    pub async fn check(&self, key: &str, category: u8, limit: u64, interval_ms: u64) -> Decision {
        let local = !self.shared.is_some_and(|s| s.has(category));
        if let Some(d) = self
            .leases
            .as_ref()
            .filter(|_| local)
            .and_then(|l| l.take(key, category, limit, interval_ms))
        {
            return d;
        }
        let key_owned = key.to_owned();
        let res = self
            .shards
            .of(key)
            .call(
                |reply| ShardMsg::Check {
                    key: key_owned,
                    category,
                    limit,
                    interval_ms,
                    reply,
                },
                // No timeout: a timer per check costs more than the check; a dead shard
                // fails the call at once instead.
                None,
            )
            .await;
        match res {
            Ok(ractor::rpc::CallResult::Success(d)) => d,
            // Shard restarting or overloaded: fail open rather than refuse service.
            _ => Decision {
                allowed: true,
                limit,
                remaining: limit,
                interval_ms,
                retry_after_ms: 0,
            },
        }
    }

    /// What `(key, category)`'s window has left, counting nothing; `None` for a category
    /// counted in the shared store (its count is not held here).
    pub async fn peek(
        &self,
        key: &str,
        category: u8,
        limit: u64,
        interval_ms: u64,
    ) -> Option<Decision> {
        if self.shared.is_some_and(|s| s.has(category)) {
            return None;
        }
        if let Some(d) = self
            .leases
            .as_ref()
            .and_then(|l| l.peek(key, category, limit, interval_ms))
        {
            return Some(d);
        }
        let key = key.to_owned();
        let res = self
            .shards
            .of(&key)
            .call(
                |reply| ShardMsg::Peek {
                    key: key.clone(),
                    category,
                    limit,
                    interval_ms,
                    reply,
                },
                None,
            )
            .await;
        match res {
            Ok(ractor::rpc::CallResult::Success(d)) => Some(d),
            _ => None,
        }
    }

    /// The actor ids of the current shards (for tests and diagnostics).
    pub fn shard_ids(&self) -> Vec<ractor::ActorId> {
        self.shards.ids()
    }

    /// Crash the shard that owns `key` (test hook for supervision).
    pub fn crash_shard_of(&self, key: &str) {
        let _ = self.shards.of(key).cast(ShardMsg::Crash);
    }

    /// Kill the shard that owns `key` outright.
    pub fn kill_shard_of(&self, key: &str) {
        self.shards.of(key).kill();
    }

    pub fn stop(&self) {
        self.shards.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_and_denies_per_key_and_category() {
        let rl = RateLimiter::start(4).await.unwrap();
        for i in 0..3 {
            let d = rl.check("k", 1, 3, 60_000).await;
            assert!(d.allowed);
            assert_eq!(d.remaining, 2 - i);
        }
        let d = rl.check("k", 1, 3, 60_000).await;
        assert!(!d.allowed);
        assert!(d.retry_after_ms > 0 && d.retry_after_ms <= 60_000);
        // Another category and another key have their own windows.
        assert!(rl.check("k", 2, 3, 60_000).await.allowed);
        assert!(rl.check("other", 1, 3, 60_000).await.allowed);
    }

    #[tokio::test]
    async fn window_resets_after_interval() {
        let rl = RateLimiter::start(1).await.unwrap();
        assert!(rl.check("k", 0, 1, 50).await.allowed);
        assert!(!rl.check("k", 0, 1, 50).await.allowed);
        tokio::time::sleep(Duration::from_millis(70)).await;
        assert!(rl.check("k", 0, 1, 50).await.allowed);
    }

    #[tokio::test]
    async fn leases_never_allow_more_than_the_limit() {
        let rl = RateLimiter::start(4).await.unwrap();
        let checks = (0..3000).map(|_| {
            let rl = rl.clone();
            tokio::spawn(async move { rl.check("u:1", 1, 1000, 60_000).await })
        });
        let mut remaining = Vec::new();
        for c in checks {
            let d = c.await.unwrap();
            if d.allowed {
                remaining.push(d.remaining);
            } else {
                assert!(d.retry_after_ms > 0);
            }
        }
        remaining.sort_unstable();
        // Exactly the limit, each request with its own place in the window.
        assert_eq!(remaining, (0..1000).collect::<Vec<u64>>());
        // A caller whose tier changed is not answered by the old lease.
        assert!(rl.check("u:1", 1, 2000, 60_000).await.allowed);
        assert!(!rl.check("u:1", 1, 1000, 60_000).await.allowed);
    }

    /// A shared store in memory, standing in for PostgreSQL's table.
    #[derive(Default)]
    struct MemStore(std::sync::Mutex<HashMap<(String, u8), (Instant, u64)>>);

    impl RateStore for MemStore {
        fn add<'a>(&'a self, hits: &'a [Hits]) -> BoxFuture<'a, Result<Vec<Counted>, StoreError>> {
            Box::pin(async move {
                let mut m = self.0.lock().unwrap();
                let now = Instant::now();
                Ok(hits
                    .iter()
                    .map(|h| {
                        let iv = Duration::from_millis(h.interval_ms);
                        let w = m.entry((h.key.clone(), h.category)).or_insert((now, 0));
                        if now.duration_since(w.0) >= iv {
                            *w = (now, 0);
                        }
                        w.1 += h.n;
                        Counted {
                            count: w.1,
                            left_ms: iv.saturating_sub(now.duration_since(w.0)).as_millis() as u64,
                        }
                    })
                    .collect())
            })
        }
    }

    #[tokio::test]
    async fn a_shared_store_holds_the_limit_across_processes() {
        let store: Arc<dyn RateStore> = Arc::new(MemStore::default());
        // Two "processes", each with its own shards, one store.
        let a = RateLimiter::start_with(3, Some(store.clone()))
            .await
            .unwrap();
        let b = RateLimiter::start_with(2, Some(store)).await.unwrap();
        let checks = (0..90).map(|i| {
            let rl = if i % 2 == 0 { a.clone() } else { b.clone() };
            async move { rl.check("u:1", 1, 30, 60_000).await }
        });
        let decisions = futures::future::join_all(checks).await;
        let allowed = decisions.iter().filter(|d| d.allowed).count();
        assert_eq!(allowed, 30);
        let mut remaining: Vec<u64> = decisions
            .iter()
            .filter(|d| d.allowed)
            .map(|d| d.remaining)
            .collect();
        remaining.sort_unstable();
        assert_eq!(
            remaining,
            (0..30).collect::<Vec<u64>>(),
            "each allowed check saw its own count"
        );
        assert!(decisions
            .iter()
            .filter(|d| !d.allowed)
            .all(|d| d.retry_after_ms > 0));
        // Refused from memory afterwards, still refused.
        assert!(!a.check("u:1", 1, 30, 60_000).await.allowed);
        assert!(b.check("u:2", 1, 30, 60_000).await.allowed);
    }

    #[tokio::test]
    async fn only_the_shared_categories_hold_across_processes() {
        let store: Arc<dyn RateStore> = Arc::new(MemStore::default());
        let (auth, read) = (3u8, 0u8);
        let shared = Some((store, Shared::only(&[auth])));
        let a = RateLimiter::start_sharing(2, shared.clone()).await.unwrap();
        let b = RateLimiter::start_sharing(2, shared).await.unwrap();
        let mut allowed = 0;
        for i in 0..12 {
            let rl = if i % 2 == 0 { &a } else { &b };
            allowed += rl.check("ip:1", auth, 5, 60_000).await.allowed as usize;
        }
        assert_eq!(allowed, 5, "one window of 5 over both processes");
        // The other categories are each process's own (and use leases).
        let mut allowed = 0;
        for i in 0..12 {
            let rl = if i % 2 == 0 { &a } else { &b };
            allowed += rl.check("ip:1", read, 5, 60_000).await.allowed as usize;
        }
        assert_eq!(allowed, 10, "5 per process");
        assert!(
            Shared::only(&[3]).has(3) && !Shared::only(&[3]).has(0) && !Shared::only(&[3]).has(200)
        );
    }

    async fn wait_for_restart(rl: &RateLimiter, before: &[ractor::ActorId]) {
        for _ in 0..100 {
            if rl.shard_ids() != before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("shard was not restarted");
    }

    #[tokio::test]
    async fn crashed_shard_is_restarted_and_serves_again() {
        let rl = RateLimiter::start(2).await.unwrap();
        assert!(!rl.check("k", 0, 0, 60_000).await.allowed);
        let before = rl.shard_ids();
        rl.crash_shard_of("k");
        wait_for_restart(&rl, &before).await;
        // A fresh shard answers for real (deny with limit 0), not the fail-open fallback.
        let d = rl.check("k", 0, 0, 60_000).await;
        assert!(!d.allowed);

        let before = rl.shard_ids();
        rl.kill_shard_of("k");
        wait_for_restart(&rl, &before).await;
        assert!(!rl.check("k", 0, 0, 60_000).await.allowed);
        assert_eq!(rl.shard_ids().len(), 2);
    }
}
