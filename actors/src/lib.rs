//! Supervised ractor actors that own hot, per-key state.
//!
//! Today: the rate-limit windows ([`rate`]). Credit accounts and deck versions join here
//! as their areas land; each depends on storage only through small traits.

pub mod rate;
