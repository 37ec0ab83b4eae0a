//! Supervised ractor actors that own hot, per-key state.
//!
//! The rate-limit windows ([`rate`]) and credit accounts ([`credits`]), each a fixed set
//! of shards under a restarting supervisor ([`shard`]). Deck versions join here with their
//! area, and the group-commit writer of append-only rows ([`batch`]); every actor depends on storage only through small traits.

pub mod batch;
pub mod credits;
pub mod decks;
pub mod rate;
pub mod shard;
mod store;

pub use store::StoreError;
