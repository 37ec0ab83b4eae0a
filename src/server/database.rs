//! Opening the database: the master key and its check, the SQLite path, what operator
//! commands may open (nothing is created), URLs without their passwords in messages.

use anyhow::Context;
use plinth_workers::Queue;

use crate::config::{Database, Opts};
use crate::crypto::MasterKey;
use crate::db::Db;

/// `PLINTH_MASTER_KEY`, or `<data-dir>/master.key`, generated once with mode 0600.
/// Under `--production` a key file is refused: a key that lives only next to the data
/// is lost with the disk and differs on every host.
pub fn master_key(database: &Database, production: bool) -> anyhow::Result<MasterKey> {
    if production && database.master_key.is_none() {
        anyhow::bail!(
            "--production needs PLINTH_MASTER_KEY (64 hex characters, kept outside the data \
             directory); a generated master key file is refused"
        );
    }
    if let Some(hex) = &database.master_key {
        return MasterKey::from_hex(hex).context("PLINTH_MASTER_KEY");
    }
    private_dir(&database.data_dir)?;
    let path = database.master_key_file();
    let (key, generated) = MasterKey::load_or_create(&path)?;
    if generated {
        tracing::info!(path = %path.display(), "generated a new master key");
    }
    Ok(key)
}

/// The name of the setting that holds `MasterKey::check_value`.
pub const MASTER_KEY_CHECK: &str = "master_key_check";

/// Refuses a master key other than the one the database was set up with: data encrypted
/// under one key does not decrypt under another (sign-in would answer 500), and signed
/// URLs and the derived webhook secret would differ between processes. The first process
/// stores the key's check value; every later one compares with it.
pub(super) async fn check_master_key(
    database: &Database,
    db: &Db,
    key: &MasterKey,
) -> anyhow::Result<()> {
    let mine = key.check_value();
    crate::db::settings::put_if_absent(db, MASTER_KEY_CHECK, &mine).await?;
    let stored = crate::db::settings::get(db, MASTER_KEY_CHECK)
        .await?
        .context("the master key check value is missing after storing it")?;
    if !crate::crypto::ct_eq(stored.as_bytes(), mine.as_bytes()) {
        let source = match database.master_key {
            Some(_) => "PLINTH_MASTER_KEY".to_owned(),
            None => format!(
                "{} (PLINTH_MASTER_KEY is unset)",
                database.master_key_file().display()
            ),
        };
        anyhow::bail!(
            "the master key from {source} does not match this database: the database was set \
             up with another key. Start every plinth process on this database with the \
             PLINTH_MASTER_KEY it was set up with"
        );
    }
    Ok(())
}

/// Database with migrations applied and the master key checked, and the job queue in it.
/// `process` names this process's database sessions (`config::process_name`).
pub async fn open_database(
    database: &Database,
    process: &str,
    key: &MasterKey,
) -> anyhow::Result<(Db, Queue)> {
    private_dir(&database.data_dir)?;
    let url = database.url();
    let db = Db::connect(&url, process)
        .await
        .context("connecting to the database")?;
    db.migrate().await.context("running migrations")?;
    check_master_key(database, &db, key).await?;
    let queue = match &db {
        Db::Sqlite(p) => Queue::sqlite(p).await,
        Db::Postgres(p) => Queue::postgres(p).await,
    }
    .map_err(|e| anyhow::anyhow!("setting up the job queue: {e}"))?;
    Ok((db, queue))
}

/// Where a SQLite URL's file is (`sqlite://PATH`, `sqlite:PATH`, with any `?options`).
pub(super) fn sqlite_path(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| std::path::PathBuf::from(path))
}

/// What operator commands (`users set-level`, `jobs`, `analytics rebuild-rollups`) work
/// on: the database and master key a server already made. Nothing is created: no data
/// directory, no database file, no key file, no binding of a key to the database. Says
/// on stderr which database it opened, and what it looked for when there is none.
pub async fn open_operator_database(opts: &Opts) -> anyhow::Result<(Db, Queue)> {
    let database = &opts.database;
    let url = database.url();
    let shown = redact_url(&url);
    let from = match &database.database_url {
        Some(_) => "--database-url (PLINTH_DATABASE_URL)".to_owned(),
        None => format!("--data-dir {}", database.data_dir.display()),
    };
    if let Some(path) = sqlite_path(&url) {
        if !path.exists() {
            anyhow::bail!(
                "no database at {} (from {from}); nothing was created. Run this with the \
                 server's --data-dir or --database-url",
                path.display()
            );
        }
    }
    let key = match &database.master_key {
        Some(hex) => MasterKey::from_hex(hex).context("PLINTH_MASTER_KEY")?,
        None => {
            let path = database.master_key_file();
            if !path.exists() {
                anyhow::bail!(
                    "no master key: PLINTH_MASTER_KEY is unset and {} does not exist; set \
                     PLINTH_MASTER_KEY, or run this with the server's --data-dir",
                    path.display()
                );
            }
            MasterKey::load_or_create(&path)?.0
        }
    };
    let db = Db::connect_existing(&url, &crate::config::process_name("cli"))
        .await
        .with_context(|| format!("opening the database {shown}"))?;
    eprintln!("plinth: database {shown}");
    db.migrate().await.context("running migrations")?;
    // Compare with the key the database was set up with, never set one.
    match crate::db::settings::get(&db, MASTER_KEY_CHECK).await? {
        None => anyhow::bail!(
            "the database {shown} was never set up by a plinth server (it has no master key \
             check); start `plinth serve` or run `plinth migrate` on it first"
        ),
        Some(stored) if !crate::crypto::ct_eq(stored.as_bytes(), key.check_value().as_bytes()) => {
            anyhow::bail!(
                "the master key does not match the database {shown}: the database was set up with \
                 another key. Use the PLINTH_MASTER_KEY (or --data-dir with master.key) its \
                 server uses"
            )
        }
        Some(_) => {}
    }
    let queue = match &db {
        Db::Sqlite(p) => Queue::sqlite(p).await,
        Db::Postgres(p) => Queue::postgres(p).await,
    }
    .map_err(|e| anyhow::anyhow!("opening the job queue: {e}"))?;
    Ok((db, queue))
}

/// A database URL without its password, for messages.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Creates the data directory, or tightens an existing one, to its user alone (0700):
/// the database, outbox and objects in it hold secrets and live links, whatever mode an
/// older version or a `StateDirectory=` gave them (security review N-M2).
pub(crate) fn private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
    let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        if let Err(e) = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)) {
            tracing::warn!(dir = %dir.display(), error = %e, "the data directory is readable by other users and could not be made private");
        }
    }
    Ok(())
}
