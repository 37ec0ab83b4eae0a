//! Adapters for outside services, each with an embedded default and a real backend chosen
//! by configuration (the database's is `crate::db`).

pub(crate) mod appstore;
pub(crate) mod callbacks;
pub(crate) mod gcs;
pub(crate) mod mail;
pub mod payments;
pub(crate) mod storage;
