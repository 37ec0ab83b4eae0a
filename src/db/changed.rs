//! What a write to a cached row made stale, as the data access returns it (the caches
//! themselves are `crate::db::cache`, which reads through `src/db/`; this module sits below
//! both).

use serde::{Deserialize, Serialize};

/// What changed. Serialised as JSON in the notification payload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Stale {
    /// An account's key, level or profile.
    User(String),
    /// A deleted account: its posts and namespaces went with it.
    Deleted(String),
    /// One KV entry.
    Kv { namespace: String, key: String },
    /// Every entry of a namespace (deleted).
    KvNamespace(String),
    /// Posts were changed or deleted (a delete cascades to replies): every cached post.
    Posts,
}

/// A write that changed rows the caches hold, as the data access returns it: the value
/// comes out through `Caches::announce`, so no write path can forget to announce
/// (issue 33). Dropping it unread is a compile warning (an error in CI).
#[must_use = "announce the change: `app.caches.announce(changed).await`"]
pub struct Changed<T> {
    value: T,
    stale: Stale,
}

impl<T> Changed<T> {
    pub fn new(value: T, stale: Stale) -> Self {
        Self { value, stale }
    }
    /// The value and what it made stale: for `Caches::announce`, and for a process
    /// with no caches (an operator command), which tells the servers itself
    /// (`cache::notify`).
    pub fn into_parts(self) -> (T, Stale) {
        (self.value, self.stale)
    }
}
