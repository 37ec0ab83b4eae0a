//! `Database`: where the data lives and the key it is encrypted under (the `Storage`
//! heading of `--help`, with the object stores).

use std::path::PathBuf;

use clap::Args;

/// The data directory, the database URL and the master key.
#[derive(Args, Debug, Clone)]
pub struct Database {
    /// Directory for the SQLite database, objects, outbox and master key (created by
    /// serve, worker and migrate; operator commands only open what is there).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Database URL: sqlite://PATH or postgres://... [default: sqlite://<data-dir>/plinth.db]
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_DATABASE_URL",
        global = true
    )]
    pub database_url: Option<String>,
    /// AES-256 key for data encrypted at rest, 64 hex characters [default: generated once
    /// into <data-dir>/master.key]
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_MASTER_KEY",
        hide_env_values = true,
        global = true
    )]
    pub master_key: Option<String>,
}

impl Database {
    /// `--database-url`, else the SQLite file in the data directory.
    pub fn url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("plinth.db").display()))
    }

    /// The generated key file's path, used when `--master-key` is unset.
    pub fn master_key_file(&self) -> PathBuf {
        self.data_dir.join("master.key")
    }
}
