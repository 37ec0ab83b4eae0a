//! Fixed-window rate counters, sharded over N actors by a stable hash of the key.
//!
//! A window is `(key, category)`; every endpoint of a category shares it. Shards run under
//! a supervisor that restarts a crashed shard in place. A restart loses that shard's
//! windows, which the design accepts; while a shard is down, checks fail open.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::shard::Shards;

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

/// Handle used by the HTTP layer. Cheap to clone.
#[derive(Clone)]
pub struct RateLimiter {
    shards: Shards<ShardMsg>,
}

impl RateLimiter {
    pub async fn start(shard_count: usize) -> Result<Self, ractor::SpawnErr> {
        Ok(Self {
            shards: Shards::start(shard_count, || (Shard, ())).await?,
        })
    }

    /// Counts one request in `(key, category)`'s window.
    pub async fn check(&self, key: &str, category: u8, limit: u64, interval_ms: u64) -> Decision {
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
