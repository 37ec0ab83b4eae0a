//! The identity provider's signing keys as last fetched, held by the state (apart from
//! `idp.rs`, which takes the state).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;

/// Fetched signing keys with when they were fetched.
#[derive(Default)]
pub struct JwksCache(Mutex<Option<(Instant, JwkSet)>>);

impl JwksCache {
    pub(crate) fn cached(&self, max_age: Duration) -> Option<JwkSet> {
        let guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .as_ref()
            .filter(|(at, _)| at.elapsed() < max_age)
            .map(|(_, set)| set.clone())
    }

    pub(crate) fn store(&self, set: JwkSet) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), set));
    }
}
