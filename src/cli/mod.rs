//! Commands besides `serve` and `worker`: job control, backups, moving a deployment
//! onto PostgreSQL, and the author's `plinth slides`.

pub mod backup;
pub mod db;
pub mod jobs;
pub mod slides;
