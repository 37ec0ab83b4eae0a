//! Backups that restore (issue 36): `plinth backup` taken while sends go on, restored as
//! docs/operations.md says (SQLite: the file as `plinth.db`; PostgreSQL: `pg_restore`
//! into a new database), opens under the same master key, its ledger balances, and
//! every send acknowledged before the backup began is in it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

const MASTER_KEY: &str = "5f1c0a3e9b7d4c2a8e6f0b1d3c5a7e9f2b4d6c8a0e1f3b5d7c9a2e4f6b8d0c1a";

#[tokio::test]
async fn a_backup_taken_under_writes_restores_with_every_acknowledged_write() {
    let s = Server::start_with(Options::default().env("PLINTH_MASTER_KEY", MASTER_KEY)).await;
    let mut keys = Vec::new();
    let mut addrs = Vec::new();
    for i in 0..3 {
        let addr = email(&format!("backup{i}"));
        keys.push(s.funded_user(&addr).await);
        addrs.push(addr);
    }
    let backup = s.data_dir().join("backup.db");
    let started = std::sync::Mutex::new(None::<Instant>);

    // Sends around the ring until the backup is done: (transaction id, answered at).
    let done = std::sync::atomic::AtomicBool::new(false);
    let writes = async {
        let mut acked = Vec::new();
        let mut i = 0usize;
        while !done.load(std::sync::atomic::Ordering::Relaxed) || acked.len() < 5 {
            let (from, to) = (i % 3, (i + 1) % 3);
            let r = s
                .post(
                    "/api/credits/send",
                    Some(&keys[from]),
                    json!({"amount": 1, "email": addrs[to]}),
                )
                .await;
            r.assert_ok();
            acked.push((
                r.body["transaction_id"].as_str().unwrap().to_owned(),
                Instant::now(),
            ));
            i += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        acked
    };
    let take = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        *started.lock().unwrap() = Some(Instant::now());
        let mut cmd = std::process::Command::new(BIN);
        cmd.arg("backup")
            .arg(&backup)
            .arg("--data-dir")
            .arg(s.data_dir())
            .arg("--database-url")
            .arg(&s.database_url)
            .env("PLINTH_MASTER_KEY", MASTER_KEY)
            .env("RUST_LOG", "warn");
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    };
    let (acked, out) = tokio::join!(writes, take);
    assert!(
        out.status.success(),
        "plinth backup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("master key"), "the key reminder: {stderr}");
    let began = started.lock().unwrap().unwrap();
    let before: Vec<&String> = acked
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(id, _)| id)
        .collect();
    assert!(
        !before.is_empty() && before.len() < acked.len(),
        "writes before and during"
    );
    // A second backup to the same file is refused, never overwrites.
    let again = std::process::Command::new(BIN)
        .arg("backup")
        .arg(&backup)
        .arg("--database-url")
        .arg(&s.database_url)
        .env("PLINTH_MASTER_KEY", MASTER_KEY)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));

    // Restore as docs/operations.md says, and start a server on it.
    let restored = match pg_admin_url() {
        None => {
            let dir = tempfile::tempdir().unwrap();
            std::fs::copy(&backup, dir.path().join("plinth.db")).unwrap();
            let r = Server::start_with(
                Options::default()
                    .env("PLINTH_MASTER_KEY", MASTER_KEY)
                    .sqlite_in(dir.path()),
            )
            .await;
            (r, Some(dir))
        }
        Some(admin) => {
            let name = format!("plinth_r_{}", uuid::Uuid::new_v4().simple());
            let pool = sqlx::PgPool::connect(&admin).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
            let out = std::process::Command::new("pg_restore")
                .args(["--no-owner", "-d"])
                .arg(replace_db_name(&admin, &name))
                .arg(&backup)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "pg_restore: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r = Server::start_with(
                Options::default()
                    .env("PLINTH_MASTER_KEY", MASTER_KEY)
                    .pg_database(&name),
            )
            .await;
            (r, None)
        }
    };
    let r = &restored.0;
    // Every balance equals its ledger.
    let unbalanced = r
        .sql_count(
            "SELECT COUNT(*) FROM credit_accounts a WHERE a.balance <> \
             (SELECT COALESCE(SUM(t.amount), 0) FROM credit_transactions t WHERE t.account_id = a.id)",
        )
        .await;
    assert_eq!(unbalanced, 0);
    // Every send acknowledged before the backup began is in it.
    let ids = before
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    let found = r
        .sql_count(&format!(
            "SELECT COUNT(*) FROM credit_transactions WHERE id IN ({ids})"
        ))
        .await;
    assert_eq!(found, before.len() as i64);
    // The restored copy serves the same accounts: their keys decrypt under the key.
    let total: i64 = {
        let mut sum = 0;
        for k in &keys {
            let b = r.get("/api/credits/balance", Some(k)).await;
            b.assert_ok();
            sum += b.body["balance"].as_i64().unwrap();
        }
        sum
    };
    assert_eq!(total, 300, "the tokens of a ring of sends stay 300");
}
