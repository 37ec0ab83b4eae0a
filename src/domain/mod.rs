//! Domain rules shared by handlers, the usage layer, periodic work and job adapters.
//! Nothing here knows about HTTP requests; handlers translate to and from the wire.

pub mod accounts;
pub mod analytics;
pub mod buyers;
pub mod checkout;
pub mod decks;
pub mod downloads;
pub mod grants;
pub mod idp;
pub mod ledger;
pub mod licenses;
pub mod orders;
pub mod orgs;
pub mod posts;
pub mod prices;
pub mod records;
pub mod richtext;
pub mod uploads;
pub mod validate;

/// Input that breaks one of the rules (a 400): the message names the field and the rule.
/// Each area's error enum carries it; `src/http/error/domain.rs` gives them all their status.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
