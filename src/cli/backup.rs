//! `plinth backup PATH`: a consistent copy of the database taken while plinth runs
//! (issue 36, "backups that restore"). SQLite: `VACUUM INTO`, one read transaction, so
//! it never blocks writers and never starts over (docs/operations.md, Backups);
//! PostgreSQL: `pg_dump --format=custom` without the disposable rate windows. The objects
//! and the master key are the operator's to keep: the command says so.

use std::path::Path;

use anyhow::Context;

use crate::config::Opts;
use crate::db::Db;

pub async fn backup(opts: Opts, path: &Path) -> anyhow::Result<()> {
    if path.exists() {
        anyhow::bail!(
            "{} exists; a backup never overwrites a file: name a new one",
            path.display()
        );
    }
    // Opens only a database a server set up, with the key it was set up with: a backup
    // taken under the wrong key would be one that cannot be restored.
    let (db, _) = crate::server::open_operator_database(&opts).await?;
    // Created empty first, readable by this user alone: a backup holds every secret of
    // the database (security review N-M2). SQLite's VACUUM INTO and pg_dump both write
    // into an empty file.
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("creating {}", path.display()))?;
    }
    let written = write_backup(&opts, &db, path).await;
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

async fn write_backup(opts: &Opts, db: &Db, path: &Path) -> anyhow::Result<()> {
    match db {
        Db::Sqlite(pool) => {
            let target = path
                .to_str()
                .context("the backup path must be valid UTF-8")?;
            sqlx::query("VACUUM INTO $1")
                .bind(target)
                .execute(pool)
                .await
                .with_context(|| format!("writing {}", path.display()))?;
            let check = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(path)
                .read_only(true);
            let mut conn = sqlx::ConnectOptions::connect(&check).await?;
            let (verdict,): (String,) = sqlx::query_as("PRAGMA quick_check")
                .fetch_one(&mut conn)
                .await?;
            if verdict != "ok" {
                anyhow::bail!("the backup {} fails its check: {verdict}", path.display());
            }
        }
        Db::Postgres(_) => {
            // The password goes through the environment, not the command line, where any
            // user of the machine could read it.
            let (url, password) = without_password(&opts.database.url())?;
            let mut dump = std::process::Command::new("pg_dump");
            dump.args(["--format=custom", "--no-unlogged-table-data", "--file"])
                .arg(path)
                .arg("--dbname")
                .arg(url);
            if let Some(p) = password {
                dump.env("PGPASSWORD", p);
            }
            let status = dump.status().context(
                "running pg_dump (install the PostgreSQL client tools of the server's \
                     major version or newer: apt-get install postgresql-client)",
            )?;
            if !status.success() {
                anyhow::bail!("pg_dump failed ({status}); nothing usable was written");
            }
        }
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!("backup written: {} ({size} bytes)", path.display());
    eprintln!(
        "plinth: keep with it the objects (<data-dir>/objects or the S3 bucket; copy them \
         now, after the database) and the master key (PLINTH_MASTER_KEY or \
         <data-dir>/master.key), stored apart from the backup: without the key it does not \
         open. Restore: docs/operations.md, Backups."
    );
    Ok(())
}

/// A PostgreSQL URL without its password, and the password (percent-decoded).
fn without_password(url: &str) -> anyhow::Result<(String, Option<String>)> {
    let mut parsed = reqwest::Url::parse(url).context("the database URL")?;
    let password = parsed.password().map(percent_decoded);
    let _ = parsed.set_password(None);
    Ok((parsed.to_string(), password))
}

fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_password_leaves_the_url_decoded() {
        let (url, password) =
            super::without_password("postgres://u:p%40ss%2Fw@db:5432/plinth?sslmode=require")
                .unwrap();
        assert_eq!(url, "postgres://u@db:5432/plinth?sslmode=require");
        assert_eq!(password.as_deref(), Some("p@ss/w"));
    }
}
