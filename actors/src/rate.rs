//! Fixed-window rate counters, sharded over N actors by a stable hash of the key.
//!
//! A window is `(key, category)`; every endpoint of a category shares it. Shards run under
//! a supervisor that restarts a crashed shard in place. A restart loses that shard's
//! windows, which the design accepts; while a shard is down, checks fail open.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};

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

pub enum ShardMsg {
    Check {
        key: String,
        category: u8,
        limit: u64,
        interval_ms: u64,
        reply: RpcReplyPort<Decision>,
    },
    /// Test hook: make the shard fail as a bug would, so supervision can be observed.
    Crash,
}

struct Window {
    started: Instant,
    count: u64,
    interval: Duration,
}

pub struct Shard;

pub struct ShardState {
    windows: HashMap<(String, u8), Window>,
    checks_since_sweep: u32,
}

impl ShardState {
    fn check(&mut self, key: String, category: u8, limit: u64, interval_ms: u64) -> Decision {
        let now = Instant::now();
        self.checks_since_sweep += 1;
        if self.checks_since_sweep >= 4096 {
            // Bounded memory: drop windows that have ended.
            self.checks_since_sweep = 0;
            self.windows
                .retain(|_, w| now.duration_since(w.started) < w.interval);
        }
        let interval = Duration::from_millis(interval_ms);
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
        if w.count >= limit {
            let left = w.interval.saturating_sub(now.duration_since(w.started));
            return Decision {
                allowed: false,
                limit,
                remaining: 0,
                interval_ms,
                retry_after_ms: (left.as_millis() as u64).max(1),
            };
        }
        w.count += 1;
        Decision {
            allowed: true,
            limit,
            remaining: limit - w.count,
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
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ShardMsg::Check {
                key,
                category,
                limit,
                interval_ms,
                reply,
            } => {
                let _ = reply.send(state.check(key, category, limit, interval_ms));
                Ok(())
            }
            ShardMsg::Crash => Err("rate shard asked to crash".into()),
        }
    }
}

type ShardTable = Arc<RwLock<Vec<ActorRef<ShardMsg>>>>;

/// Owns the shards; restarts any that stops or fails, in the same slot.
struct Supervisor;

struct SupervisorState {
    shards: ShardTable,
}

impl Actor for Supervisor {
    type Msg = ();
    type State = SupervisorState;
    type Arguments = (usize, ShardTable);

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        (count, shards): Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut started = Vec::with_capacity(count);
        for _ in 0..count {
            let (shard, _) = Actor::spawn_linked(None, Shard, (), myself.get_cell()).await?;
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
                tracing::warn!(error = %err, "rate shard failed; restarting it");
                cell
            }
            _ => return Ok(()),
        };
        let slot = {
            let shards = state.shards.read().unwrap_or_else(|e| e.into_inner());
            shards.iter().position(|s| s.get_id() == dead.get_id())
        };
        if let Some(slot) = slot {
            let (shard, _) = Actor::spawn_linked(None, Shard, (), myself.get_cell()).await?;
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

/// Handle used by the HTTP layer. Cheap to clone.
#[derive(Clone)]
pub struct RateLimiter {
    shards: ShardTable,
    supervisor: ActorRef<()>,
}

impl RateLimiter {
    pub async fn start(shard_count: usize) -> Result<Self, ractor::SpawnErr> {
        let shards: ShardTable = Arc::new(RwLock::new(Vec::new()));
        let (supervisor, _) =
            Actor::spawn(None, Supervisor, (shard_count.max(1), shards.clone())).await?;
        Ok(Self { shards, supervisor })
    }

    fn shard_for(&self, key: &str) -> (usize, ActorRef<ShardMsg>) {
        // std's SipHash with fixed keys: stable for the life of the process.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let shards = self.shards.read().unwrap_or_else(|e| e.into_inner());
        let i = (h.finish() % shards.len() as u64) as usize;
        (i, shards[i].clone())
    }

    /// Counts one request in `(key, category)`'s window.
    pub async fn check(&self, key: &str, category: u8, limit: u64, interval_ms: u64) -> Decision {
        let (_, shard) = self.shard_for(key);
        let key = key.to_owned();
        let res = shard
            .call(
                |reply| ShardMsg::Check {
                    key,
                    category,
                    limit,
                    interval_ms,
                    reply,
                },
                Some(Duration::from_secs(2)),
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

    /// The actor ids of the current shards (for tests and diagnostics).
    pub fn shard_ids(&self) -> Vec<ractor::ActorId> {
        let shards = self.shards.read().unwrap_or_else(|e| e.into_inner());
        shards.iter().map(|s| s.get_id()).collect()
    }

    /// Crash the shard that owns `key` (test hook for supervision).
    pub fn crash_shard_of(&self, key: &str) {
        let (_, shard) = self.shard_for(key);
        let _ = shard.cast(ShardMsg::Crash);
    }

    /// Kill the shard that owns `key` outright.
    pub fn kill_shard_of(&self, key: &str) {
        let (_, shard) = self.shard_for(key);
        shard.kill();
    }

    pub fn stop(&self) {
        self.supervisor.stop(None);
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
