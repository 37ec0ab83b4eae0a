//! A fixed set of actors of one kind, keyed by a stable hash, under a supervisor that
//! restarts a stopped or failed shard in its slot. Mailboxes are unbounded in ractor, so
//! per-key state lives inside a bounded number of shards instead of one actor per key.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

type Table<M> = Arc<RwLock<Vec<ActorRef<M>>>>;

/// Messages waiting per shard slot, for the `plinth_actor_mailbox_length` gauge: ractor
/// does not expose its mailboxes, so `Shards::of` counts a message in (every caller sends
/// one message to the shard it gets) and `Counted` counts it out when handled. A shard's
/// messages to itself (flush ticks) are not counted in: the count saturates at zero, so
/// it can read low by the ticks queued, never drift.
type Depths = Arc<Vec<AtomicI64>>;

/// Every live set of shards by actor kind, read at each scrape (`mailbox_lengths`).
static ALL_DEPTHS: Mutex<Vec<(&'static str, WeakDepths)>> = Mutex::new(Vec::new());
type WeakDepths = Weak<Vec<AtomicI64>>;

/// Messages waiting in each kind of actor's mailboxes, summed over its shards.
pub fn mailbox_lengths() -> Vec<(&'static str, i64)> {
    let mut all = ALL_DEPTHS.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|(_, d)| d.strong_count() > 0);
    let mut out: Vec<(&'static str, i64)> = Vec::new();
    for (kind, depths) in all.iter() {
        let Some(depths) = depths.upgrade() else {
            continue;
        };
        let sum: i64 = depths
            .iter()
            .map(|d| d.load(Ordering::Relaxed).max(0))
            .sum();
        match out.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += sum,
            None => out.push((kind, sum)),
        }
    }
    out
}

/// An actor whose handled messages are counted out of its slot's depth.
struct Counted<A> {
    inner: A,
    depth: Depths,
    slot: usize,
}

impl<A: Actor> Actor for Counted<A> {
    type Msg = A::Msg;
    type State = A::State;
    type Arguments = A::Arguments;

    async fn pre_start(
        &self,
        myself: ActorRef<A::Msg>,
        args: A::Arguments,
    ) -> Result<A::State, ActorProcessingErr> {
        self.inner.pre_start(myself, args).await
    }

    async fn post_stop(
        &self,
        myself: ActorRef<A::Msg>,
        state: &mut A::State,
    ) -> Result<(), ActorProcessingErr> {
        self.inner.post_stop(myself, state).await
    }

    async fn handle(
        &self,
        myself: ActorRef<A::Msg>,
        message: A::Msg,
        state: &mut A::State,
    ) -> Result<(), ActorProcessingErr> {
        let _ = self.depth[self.slot].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            Some((n - 1).max(0))
        });
        self.inner.handle(myself, message, state).await
    }
}

struct Supervisor<A: Actor> {
    make: Arc<dyn Fn() -> (A, A::Arguments) + Send + Sync>,
    kind: &'static str,
    depth: Depths,
}

impl<A: Actor> Supervisor<A> {
    fn spawn_args(&self, slot: usize) -> (Counted<A>, A::Arguments) {
        let (inner, args) = (self.make)();
        // A new shard starts with an empty mailbox: what the old one held is gone.
        self.depth[slot].store(0, Ordering::Relaxed);
        let actor = Counted {
            inner,
            depth: self.depth.clone(),
            slot,
        };
        (actor, args)
    }
}

struct SupervisorState<M> {
    shards: Table<M>,
}

impl<A> Actor for Supervisor<A>
where
    A: Actor,
{
    type Msg = ();
    type State = SupervisorState<A::Msg>;
    type Arguments = (usize, Table<A::Msg>);

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        (count, shards): Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut started = Vec::with_capacity(count);
        for slot in 0..count {
            let (actor, args) = self.spawn_args(slot);
            let (shard, _) = Actor::spawn_linked(None, actor, args, myself.get_cell()).await?;
            started.push(shard);
        }
        *shards.write().unwrap_or_else(|e| e.into_inner()) = started;
        Ok(SupervisorState { shards })
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let dead = match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => cell,
            SupervisionEvent::ActorFailed(cell, err) => {
                tracing::warn!(error = %err, "shard failed; restarting it");
                cell
            }
            _ => return Ok(()),
        };
        let slot = {
            let shards = state.shards.read().unwrap_or_else(|e| e.into_inner());
            shards.iter().position(|s| s.get_id() == dead.get_id())
        };
        if let Some(slot) = slot {
            metrics::counter!("plinth_actor_restarts_total", "actor" => self.kind).increment(1);
            let (actor, args) = self.spawn_args(slot);
            let (shard, _) = Actor::spawn_linked(None, actor, args, myself.get_cell()).await?;
            state.shards.write().unwrap_or_else(|e| e.into_inner())[slot] = shard;
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<()>,
        _msg: (),
        _state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

/// Handle to the shards. Cheap to clone.
pub struct Shards<M: ractor::Message> {
    table: Table<M>,
    supervisor: ActorRef<()>,
    depth: Depths,
}

impl<M: ractor::Message> Clone for Shards<M> {
    fn clone(&self) -> Self {
        Self {
            table: self.table.clone(),
            supervisor: self.supervisor.clone(),
            depth: self.depth.clone(),
        }
    }
}

impl<M: ractor::Message> Shards<M> {
    /// Starts `count` shards of the actor kind `kind` (the metrics label), each built by
    /// `make` (also used for restarts).
    pub async fn start<A>(
        kind: &'static str,
        count: usize,
        make: impl Fn() -> (A, A::Arguments) + Send + Sync + 'static,
    ) -> Result<Self, ractor::SpawnErr>
    where
        A: Actor<Msg = M>,
    {
        let count = count.max(1);
        let table: Table<M> = Arc::new(RwLock::new(Vec::new()));
        let depth: Depths = Arc::new((0..count).map(|_| AtomicI64::new(0)).collect());
        let supervisor = Supervisor::<A> {
            make: Arc::new(make),
            kind,
            depth: depth.clone(),
        };
        let (supervisor, _) = Actor::spawn(None, supervisor, (count, table.clone())).await?;
        ALL_DEPTHS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((kind, Arc::downgrade(&depth)));
        Ok(Self {
            table,
            supervisor,
            depth,
        })
    }

    /// The shard that owns `key` (std's SipHash with fixed keys: stable for the process),
    /// for one message to it (counted into its mailbox depth).
    pub fn of(&self, key: &str) -> ActorRef<M> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let shards = self.table.read().unwrap_or_else(|e| e.into_inner());
        let slot = (h.finish() % shards.len() as u64) as usize;
        self.depth[slot].fetch_add(1, Ordering::Relaxed);
        shards[slot].clone()
    }

    /// Every shard, for one message to each (counted like [`Shards::of`]).
    pub fn each(&self) -> Vec<ActorRef<M>> {
        let shards = self.table.read().unwrap_or_else(|e| e.into_inner());
        for d in self.depth.iter().take(shards.len()) {
            d.fetch_add(1, Ordering::Relaxed);
        }
        shards.clone()
    }

    /// Current shard ids (changes when a shard is restarted).
    pub fn ids(&self) -> Vec<ractor::ActorId> {
        let shards = self.table.read().unwrap_or_else(|e| e.into_inner());
        shards.iter().map(|s| s.get_id()).collect()
    }

    pub fn stop(&self) {
        self.supervisor.stop(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes 20 ms per message, so that messages wait in its mailbox.
    struct Slow;

    impl Actor for Slow {
        type Msg = ();
        type State = ();
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }

        async fn handle(
            &self,
            _: ActorRef<()>,
            _: (),
            _: &mut (),
        ) -> Result<(), ActorProcessingErr> {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            Ok(())
        }
    }

    fn waiting(kind: &str) -> i64 {
        mailbox_lengths()
            .into_iter()
            .find(|(k, _)| *k == kind)
            .map_or(-1, |(_, n)| n)
    }

    #[tokio::test]
    async fn mailbox_length_counts_messages_waiting_and_returns_to_zero() {
        let shards = Shards::start("test-slow", 1, || (Slow, ())).await.unwrap();
        assert_eq!(waiting("test-slow"), 0);
        for _ in 0..10 {
            shards.of("k").cast(()).unwrap();
        }
        let queued = waiting("test-slow");
        assert!((8..=10).contains(&queued), "{queued} waiting");
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        assert_eq!(waiting("test-slow"), 0);
        shards.stop();
    }
}
