//! plinth: the HTTP API, configuration, data access and adapters, as layers (each may
//! import only the layers below it; `tests/api/architecture.rs` checks):
//!
//! - `server` (composition root) and `cli` (operator and author commands);
//! - `http` (the edge: assembly, usage layer, auth, errors, pages) with `api` (handlers)
//!   and `wire` (answers);
//! - `jobs` (what the API process runs in the background and the workers' ports);
//! - `domain` (the rules);
//! - `db` (data access) and `adapters` (object storage, mail, payments, App Store, GCS,
//!   completion callbacks);
//! - below them: `config`, `state`, `states` (stored vocabularies), `caller`, `crypto`,
//!   `json_depth`, `observe`.

pub mod adapters;
pub(crate) mod api;
pub(crate) mod caller;
pub mod cli;
pub mod config;
pub mod crypto;
pub(crate) mod db;
pub(crate) mod domain;
pub mod http;
pub(crate) mod jobs;
pub mod json_depth;
pub(crate) mod observe;
pub(crate) mod route_spec;
pub mod server;
pub mod state;
pub(crate) mod states;
pub(crate) mod wire;

pub use http::{app, BODY_LIMIT};
// `crate::text_enum!`, as when the macro was defined in `states`.
pub(crate) use plinth_vocab::text_enum;
