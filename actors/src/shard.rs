//! A fixed set of actors of one kind, keyed by a stable hash, under a supervisor that
//! restarts a stopped or failed shard in its slot. Mailboxes are unbounded in ractor, so
//! per-key state lives inside a bounded number of shards instead of one actor per key.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

type Table<M> = Arc<RwLock<Vec<ActorRef<M>>>>;

struct Supervisor<A: Actor> {
    make: Arc<dyn Fn() -> (A, A::Arguments) + Send + Sync>,
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
        for _ in 0..count {
            let (actor, args) = (self.make)();
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
            let (actor, args) = (self.make)();
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
}

impl<M: ractor::Message> Clone for Shards<M> {
    fn clone(&self) -> Self {
        Self {
            table: self.table.clone(),
            supervisor: self.supervisor.clone(),
        }
    }
}

impl<M: ractor::Message> Shards<M> {
    /// Starts `count` shards, each built by `make` (also used for restarts).
    pub async fn start<A>(
        count: usize,
        make: impl Fn() -> (A, A::Arguments) + Send + Sync + 'static,
    ) -> Result<Self, ractor::SpawnErr>
    where
        A: Actor<Msg = M>,
    {
        let table: Table<M> = Arc::new(RwLock::new(Vec::new()));
        let supervisor = Supervisor::<A> {
            make: Arc::new(make),
        };
        let (supervisor, _) = Actor::spawn(None, supervisor, (count.max(1), table.clone())).await?;
        Ok(Self { table, supervisor })
    }

    /// The shard that owns `key` (std's SipHash with fixed keys: stable for the process).
    pub fn of(&self, key: &str) -> ActorRef<M> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let shards = self.table.read().unwrap_or_else(|e| e.into_inner());
        shards[(h.finish() % shards.len() as u64) as usize].clone()
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
