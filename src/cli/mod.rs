//! Commands besides `serve` and `worker`: job control, backups, and the author's
//! `plinth slides`.

pub mod backup;
pub mod jobs;
pub mod slides;
