//! Domain rules shared by handlers, the usage layer, periodic work and job adapters.
//! Nothing here knows about HTTP requests; handlers translate to and from the wire.

pub mod accounts;
pub mod analytics;
pub mod checkout;
pub mod decks;
pub mod downloads;
pub mod exports;
pub mod grants;
pub mod idp;
pub mod jwks;
pub mod ledger;
pub mod licenses;
pub mod orders;
pub mod posts;
pub mod prices;
pub mod records;
pub mod richtext;
pub mod sketch;
pub mod uploads;
pub mod validate;
