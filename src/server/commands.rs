//! The one-shot operator commands: `migrate`, `users set-level`, `grants mint`,
//! `analytics rebuild-rollups`.

use anyhow::Context;
use plinth_workers::Queue;

use super::database::{master_key, open_database, open_operator_database, MASTER_KEY_CHECK};
use crate::config::{Accounts, Opts};
use crate::crypto::{GrantKey, MasterKey};
use crate::db::Db;

/// `plinth grants mint`: prints a grant sealed with PLINTH_AUTH_TOKEN_KEY.
pub fn mint_grant(
    accounts: &Accounts,
    email: &str,
    ttl: i64,
    source: Option<String>,
) -> anyhow::Result<()> {
    let hex = accounts
        .auth_token_key
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .context("PLINTH_AUTH_TOKEN_KEY is not set")?;
    let key = GrantKey::new(&MasterKey::from_hex(hex).context("PLINTH_AUTH_TOKEN_KEY")?);
    if !(1..=crate::domain::grants::MAX_TTL_SECS).contains(&ttl) {
        anyhow::bail!(
            "--ttl must be 1 to {} seconds",
            crate::domain::grants::MAX_TTL_SECS
        );
    }
    let email = email.trim().to_lowercase();
    println!("{}", crate::domain::grants::mint(&key, &email, ttl, source));
    Ok(())
}

/// `plinth migrate`. On PostgreSQL it never binds the database to a generated key file:
/// without `PLINTH_MASTER_KEY` it works only on a database already set up with the key
/// file in `--data-dir` (a key generated here would differ from the one the servers get
/// from their secret store, and they would all be refused).
pub async fn migrate(opts: Opts) -> anyhow::Result<()> {
    let url = opts.database.url();
    let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
    if postgres && opts.database.master_key.is_none() {
        let path = opts.database.master_key_file();
        let db = Db::connect(&url, &crate::config::process_name("migrate"))
            .await
            .context("connecting to the database")?;
        db.migrate().await.context("running migrations")?;
        let stored = crate::db::settings::get(&db, MASTER_KEY_CHECK).await?;
        let file_key = path
            .exists()
            .then(|| MasterKey::load_or_create(&path).map(|(k, _)| k))
            .transpose()?;
        match (stored, file_key) {
            (Some(stored), Some(key))
                if crate::crypto::ct_eq(stored.as_bytes(), key.check_value().as_bytes()) => {}
            (Some(_), file_key) => anyhow::bail!(
                "the database was set up with another key than {}: run plinth migrate with \
                 the PLINTH_MASTER_KEY its servers use",
                match file_key {
                    Some(_) => format!("{} (PLINTH_MASTER_KEY is unset)", path.display()),
                    None => "none (PLINTH_MASTER_KEY is unset and there is no master.key)".into(),
                }
            ),
            (None, _) => anyhow::bail!(
                "plinth migrate on PostgreSQL needs PLINTH_MASTER_KEY (64 hex characters, the \
                 one every server will use): without it the database would be bound to a key \
                 generated here, and servers started with their own key would be refused. \
                 The migrations ran; no key was bound"
            ),
        }
        let queue = match &db {
            Db::Postgres(p) => Queue::postgres(p).await,
            Db::Sqlite(p) => Queue::sqlite(p).await,
        };
        queue.map_err(|e| anyhow::anyhow!("setting up the job queue: {e}"))?;
        println!("migrations applied ({})", db.backend());
        return Ok(());
    }
    let key = master_key(&opts.database, opts.server.production)?;
    let (db, _) = open_database(
        &opts.database,
        &crate::config::process_name("migrate"),
        &key,
    )
    .await?;
    println!("migrations applied ({})", db.backend());
    Ok(())
}

pub async fn rebuild_rollups(opts: Opts) -> anyhow::Result<()> {
    let (db, _) = open_operator_database(&opts).await?;
    let until = crate::domain::analytics::hour_of(chrono::Utc::now());
    let read = crate::db::analytics::rebuild_rollups(&db, until).await?;
    println!("analytics rollups rebuilt from {read} events (up to {until})");
    Ok(())
}

pub async fn set_level(opts: Opts, email: &str, level: i64) -> anyhow::Result<()> {
    if ![0, 10, 20, 30, 40, 100].contains(&level) {
        anyhow::bail!("level must be one of 0, 10, 20, 30, 40, 100");
    }
    let (db, _) = open_operator_database(&opts).await?;
    let email = email.trim().to_lowercase();
    let Some(changed) = crate::db::users::set_level_by_email(&db, &email, level).await? else {
        anyhow::bail!("no account with email {email}");
    };
    // Running servers drop the account's cached key at once (PostgreSQL); on SQLite
    // their 5 s cache expiry keeps the operator contract's 10 s.
    let (_, stale) = changed.into_parts();
    if let Db::Postgres(pool) = &db {
        crate::db::cache::notify(pool, &stale).await?;
    }
    println!("{email} is now level {level}");
    Ok(())
}
