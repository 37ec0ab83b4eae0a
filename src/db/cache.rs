//! Read caches of hot rows (API keys, KV entries, posts by slug) and their invalidation
//! in every process.
//!
//! A change is announced once, after it commits: the data access returns every write to
//! a cached row as a [`Changed`] whose value only [`Caches::announce`] hands out, so no
//! write path can forget. This process drops what it cached at once, and on PostgreSQL
//! the announcement goes out with
//! `pg_notify('plinth_invalidate', …)` to every other `plinth` process on the database,
//! whose listener ([`listen`]) drops the same entries (well under a second). A listener
//! that lost its connection may have missed announcements, so it clears every cache when
//! it reconnects; each entry also expires after [`TTL`] as the last safety net (this is
//! also what a CLI command on SQLite relies on, which has no other process to tell).
//!
//! A read that misses fills the cache only if no change to its key was announced while
//! it read the database ([`Ticket`]), so a slow read cannot put back a row that a
//! concurrent change already replaced.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::db::Db;

/// How long any cached row is served without an announcement reaching this process.
pub const TTL: Duration = Duration::from_secs(5);

/// The PostgreSQL notification channel of [`Stale`] announcements.
pub const CHANNEL: &str = "plinth_invalidate";

pub use crate::db::changed::{Changed, Stale};

/// Stripes of change counters: a reader notes its key's stripe before reading the
/// database and fills the cache only if the stripe did not move meanwhile.
const STRIPES: usize = 64;

/// A bounded, expiring cache whose fills cannot race with invalidations.
///
/// `quick_cache` rather than moka: a hit is one shard read lock and a clone, where moka
/// also records the read for its policy; on the key and KV read paths the lookups were
/// ~5 % of the CPU of a request (docs/benchmarks.md, issue 15). Expiry is checked on
/// read (each entry keeps when it was filled); an expired entry stays until it is
/// replaced or evicted, within the same capacity.
pub struct ReadCache<K, V> {
    map: quick_cache::sync::Cache<K, Timed<V>, Weigh<K, V>>,
    epochs: Arc<[AtomicU64; STRIPES]>,
}

#[derive(Clone)]
struct Timed<V> {
    filled: Instant,
    value: V,
}

/// The weigher given to [`ReadCache::new`].
struct Weigh<K, V>(fn(&K, &V) -> u32);

impl<K, V> Clone for Weigh<K, V> {
    fn clone(&self) -> Self {
        Self(self.0)
    }
}

impl<K, V> quick_cache::Weighter<K, Timed<V>> for Weigh<K, V> {
    fn weight(&self, k: &K, v: &Timed<V>) -> u64 {
        // Never 0: a weightless entry would never be evicted.
        u64::from((self.0)(k, &v.value)).max(1)
    }
}

/// Taken before a read of the database; see [`ReadCache::fill`].
#[derive(Clone, Copy)]
pub struct Ticket {
    stripe: usize,
    epoch: u64,
}

impl<K, V> ReadCache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// At most `capacity` by `weigh` (entries, or bytes), each for at most [`TTL`];
    /// `items` is about how many entries fit (it sizes the policy's memory of evicted keys).
    pub fn new(capacity: u64, items: usize, weigh: fn(&K, &V) -> u32) -> Self {
        Self {
            map: quick_cache::sync::Cache::with_weighter(items, capacity, Weigh(weigh)),
            epochs: Arc::new(std::array::from_fn(|_| AtomicU64::new(0))),
        }
    }

    pub fn get<Q>(&self, k: &Q) -> Option<V>
    where
        Q: Hash + quick_cache::Equivalent<K> + ?Sized,
    {
        self.map
            .get(k)
            .filter(|t| t.filled.elapsed() < TTL)
            .map(|t| t.value)
    }

    fn insert(&self, k: K, value: V) {
        let filled = Instant::now();
        self.map.insert(k, Timed { filled, value });
    }

    /// `Q` hashes as `K` does (the `Equivalent` contract), so both find one stripe.
    fn stripe<Q: Hash + ?Sized>(k: &Q) -> usize {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        k.hash(&mut h);
        (h.finish() % STRIPES as u64) as usize
    }

    /// Take before reading the row from the database.
    pub fn ticket<Q: Hash + ?Sized>(&self, k: &Q) -> Ticket {
        let stripe = Self::stripe(k);
        Ticket {
            stripe,
            epoch: self.epochs[stripe].load(SeqCst),
        }
    }

    /// Caches what was read under `t`, unless a change to the stripe was announced since.
    /// Checked again after the insert: an invalidation that ran between the check and
    /// the insert would otherwise miss the new entry.
    pub fn fill(&self, t: Ticket, k: K, v: V) {
        if self.epochs[t.stripe].load(SeqCst) != t.epoch {
            return;
        }
        let stripe = t.stripe;
        self.insert(k, v);
        if self.epochs[stripe].load(SeqCst) != t.epoch {
            // Dropping a few good entries of the stripe is fine; a stale one is not.
            self.clear();
        }
    }

    /// Drops one key (its stripe moves first, so a concurrent fill gives up).
    pub fn forget<Q>(&self, k: &Q)
    where
        Q: Hash + quick_cache::Equivalent<K> + ?Sized,
    {
        self.epochs[Self::stripe(k)].fetch_add(1, SeqCst);
        self.map.remove(k);
    }

    /// Drops every entry matching `pred`.
    pub fn forget_if(&self, pred: impl Fn(&K, &V) -> bool) {
        self.bump_all();
        self.map.retain(|k, t| !pred(k, &t.value));
    }

    pub fn clear(&self) {
        self.bump_all();
        self.map.clear();
    }

    fn bump_all(&self) {
        for e in self.epochs.iter() {
            e.fetch_add(1, SeqCst);
        }
    }
}

/// A post as read, with its answer (`{data: …}`, the same for every reader) serialised
/// on first use.
pub struct CachedPost {
    pub row: crate::db::posts::PostRow,
    pub answer: std::sync::OnceLock<bytes::Bytes>,
}

impl CachedPost {
    pub fn new(row: crate::db::posts::PostRow) -> Arc<Self> {
        Arc::new(Self {
            row,
            answer: Default::default(),
        })
    }
}

/// Every read cache of the process and the announcer of changes.
pub struct Caches {
    /// sha256(API key) → caller.
    pub callers: ReadCache<[u8; 32], Arc<crate::caller::Caller>>,
    /// (namespace, key) → (owner id, the entry's answer body).
    pub kv: ReadCache<(String, String), Arc<(String, bytes::Bytes)>>,
    /// Lower-cased slug → post.
    pub posts: ReadCache<String, Arc<CachedPost>>,
    credits: plinth_actors::credits::CreditAccounts,
    db: Db,
}

impl Caches {
    pub fn new(db: Db, credits: plinth_actors::credits::CreditAccounts) -> Self {
        Self {
            callers: ReadCache::new(100_000, 100_000, |_, _| 1),
            // Values are up to 256 KiB: bounded by bytes.
            kv: ReadCache::new(64 << 20, 100_000, |k, v| {
                (k.0.len() + k.1.len() + v.1.len() + 64).min(u32::MAX as usize) as u32
            }),
            posts: ReadCache::new(10_000, 10_000, |_, _| 1),
            credits,
            db,
        }
    }

    /// Announces a committed change: drops it here at once, and on PostgreSQL tells
    /// every other process. A failed notification is logged; the TTL still bounds it.
    /// Announces a [`Changed`] write and hands back its value.
    pub async fn announce<T>(&self, changed: Changed<T>) -> T {
        let (value, stale) = changed.into_parts();
        self.stale(stale).await;
        value
    }

    async fn stale(&self, what: Stale) {
        self.apply(&what);
        if let Db::Postgres(pool) = &self.db {
            if let Err(e) = notify(pool, &what).await {
                tracing::warn!(error = %e, ?what, "cache invalidation not announced");
            }
        }
    }

    /// Drops what `what` names from this process's caches.
    pub fn apply(&self, what: &Stale) {
        match what {
            Stale::User(id) => {
                let id = id.clone();
                self.callers.forget_if(move |_, c| c.id == id);
            }
            Stale::Deleted(id) => {
                self.apply(&Stale::User(id.clone()));
                self.credits.forget(id);
                self.posts.clear();
                self.kv.clear();
            }
            Stale::Kv { namespace, key } => self.kv.forget(&(namespace.clone(), key.clone())),
            Stale::KvNamespace(n) => {
                let n = n.clone();
                self.kv.forget_if(move |k, _| k.0 == n);
            }
            Stale::Posts => self.posts.clear(),
        }
    }

    /// After a gap in the announcements: nothing cached can be trusted.
    pub fn clear_all(&self) {
        self.callers.clear();
        self.kv.clear();
        self.posts.clear();
    }
}

/// Sends one announcement on PostgreSQL (also used by CLI commands, which have no
/// caches of their own).
pub async fn notify(pool: &sqlx::PgPool, what: &Stale) -> sqlx::Result<()> {
    let payload = serde_json::to_string(what).unwrap_or_default();
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(pool)
        .await
        .map(|_| ())
}

/// Applies the announcements of other processes (PostgreSQL only) until the process
/// ends. Runs as its own task; reconnects by itself.
pub async fn listen(pool: sqlx::PgPool, caches: Arc<Caches>) {
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cache listener cannot connect; retrying");
                caches.clear_all();
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(CHANNEL).await {
            tracing::warn!(error = %e, "cache listener cannot LISTEN; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        // Anything announced before LISTEN took effect was missed.
        caches.clear_all();
        loop {
            match listener.try_recv().await {
                Ok(Some(n)) => match serde_json::from_str::<Stale>(n.payload()) {
                    Ok(what) => caches.apply(&what),
                    Err(_) => caches.clear_all(),
                },
                // The connection dropped: sqlx reconnects on the next call, and what was
                // sent meanwhile is lost.
                Ok(None) => caches.clear_all(),
                Err(e) => {
                    tracing::warn!(error = %e, "cache listener failed; reconnecting");
                    caches.clear_all();
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_after_an_invalidation_is_refused() {
        let c: ReadCache<String, u32> = ReadCache::new(100, 100, |_, _| 1);
        let k = "a".to_owned();
        let t = c.ticket(&k);
        c.forget(&k); // a change announced while the reader was at the database
        c.fill(t, k.clone(), 1);
        assert_eq!(c.get(&k), None);
        let t = c.ticket(&k);
        c.fill(t, k.clone(), 2);
        assert_eq!(c.get(&k), Some(2));
        c.forget(&k);
        assert_eq!(c.get(&k), None);
    }

    #[test]
    fn an_entry_older_than_the_ttl_is_not_served() {
        let c: ReadCache<String, u32> = ReadCache::new(100, 100, |_, _| 1);
        c.fill(c.ticket("fresh"), "fresh".into(), 1);
        let filled = Instant::now() - TTL - Duration::from_millis(1);
        c.map.insert("old".into(), Timed { filled, value: 2 });
        assert_eq!(c.get("fresh"), Some(1));
        assert_eq!(c.get("old"), None);
    }

    #[test]
    fn forget_if_drops_only_the_matching_entries_and_weights_bound_the_size() {
        let c: ReadCache<(String, String), String> =
            ReadCache::new(1_000, 100, |_, v| v.len() as u32);
        for (n, k) in [("a", "1"), ("a", "2"), ("b", "1")] {
            let id = (n.to_owned(), k.to_owned());
            c.fill(c.ticket(&id), id, "v".repeat(10));
        }
        c.forget_if(|k, _| k.0 == "a");
        assert_eq!(c.get(&("a".to_owned(), "1".to_owned())), None);
        assert_eq!(c.get(&("a".to_owned(), "2".to_owned())), None);
        assert!(c.get(&("b".to_owned(), "1".to_owned())).is_some());
        // 200 values of weight 10 in a capacity of 1,000: most are evicted.
        for i in 0..200 {
            let id = ("c".to_owned(), i.to_string());
            c.fill(c.ticket(&id), id, "v".repeat(10));
        }
        let kept = (0..200)
            .filter(|i| c.get(&("c".to_owned(), i.to_string())).is_some())
            .count();
        assert!(kept <= 100, "{kept} entries of weight 10 kept in 1,000");
    }

    #[test]
    fn announcements_round_trip_as_json() {
        for s in [
            Stale::User("u1".into()),
            Stale::Deleted("u1".into()),
            Stale::Kv {
                namespace: "ns".into(),
                key: "k\t\"x".into(),
            },
            Stale::KvNamespace("ns".into()),
            Stale::Posts,
        ] {
            let j = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<Stale>(&j).unwrap(), s);
        }
    }
}
