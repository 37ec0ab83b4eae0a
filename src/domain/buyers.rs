//! Who buys: an account, or a guest session of an organization that takes guest
//! checkouts (the extractors that find them are `crate::http::auth`'s).

use std::sync::Arc;

use crate::caller::Caller;

/// A live guest session: its id and its organization's id and domain.
pub struct Guest {
    pub id: String,
    pub org_id: String,
    pub domain: String,
}

/// Whether the organization's `data.guest_checkout_enabled` is true (checked at every
/// guest request: turning it off stops live sessions too).
pub fn takes_guests(org: &crate::db::organizations::OrgRow) -> bool {
    org.data.0.get("guest_checkout_enabled") == Some(&serde_json::Value::Bool(true))
}

/// "Key or guest session" (purchases): the caller when a valid API key was sent, else
/// a live guest session (401 with neither).
pub enum Purchaser {
    User(Arc<Caller>),
    Guest(Guest),
}

impl Purchaser {
    /// Where this buyer's records of `what` live (idempotency scopes):
    /// `<what>:<user id>` or `<what>:guest:<session id>`.
    pub fn scope(&self, what: &str) -> String {
        match self {
            Purchaser::User(c) => format!("{what}:{}", c.id),
            Purchaser::Guest(g) => format!("{what}:guest:{}", g.id),
        }
    }
}
