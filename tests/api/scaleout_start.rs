//! Scale-out (issue 17): the start-up checks (one master key per database, local object
//! storage on one host only) and periodic work that runs once per round across several
//! processes on one database. Runs on SQLite (processes share the data dir) and on
//! PostgreSQL (`PLINTH_TEST_DATABASE_URL`). docs/scaling.md describes the behaviour.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{email, wait_for_line, Options, Server, BIN};

const K1: &str = "a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0";
const K2: &str = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";

/// A `plinth` command on the server's data dir and database, with `env` added and the
/// caller's PLINTH_* variables that would change the outcome removed.
fn command(s: &Server, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .arg("--data-dir")
        .arg(s.data_dir())
        .arg("--database-url")
        .arg(&s.database_url)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .env_remove("PLINTH_PRODUCTION")
        .env("RUST_LOG", "info,sqlx=warn");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs a command that must exit within 30 s; returns whether it succeeded and its
/// stderr.
fn run_to_exit(mut cmd: Command) -> (bool, String) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                status.success(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command was still running after 30 s (it should have exited)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `plinth worker` next to the server, stopped when dropped; its log goes to
/// `<data-dir>/<name>.log`.
struct Worker {
    child: Child,
    log: std::path::PathBuf,
}

impl Worker {
    fn start(s: &Server, name: &str, env: &[(&str, &str)]) -> Worker {
        let log = s.data_dir().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let mut child = command(s, &["worker"], env)
            .env("PLINTH_WORKER_NAME", name)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(file))
            .spawn()
            .unwrap();
        if wait_for_line(&mut child, "plinth worker running", Duration::from_secs(30)).is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "worker {name} did not start:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        Worker { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The recorded runs of `task` since `since_ms` (round end, holder), for failure messages.
async fn runs_of(s: &Server, task: &str, since_ms: i64) -> Vec<(i64, String)> {
    let sql = "SELECT until_ms, holder FROM periodic_runs WHERE name = $1 AND ran_ms >= $2 \
               ORDER BY ran_ms";
    if s.database_url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(&s.database_url).await.unwrap();
        let rows = sqlx::query_as(sql)
            .bind(task)
            .bind(since_ms)
            .fetch_all(&pool)
            .await
            .unwrap();
        pool.close().await;
        rows
    } else {
        let pool = sqlx::SqlitePool::connect(&s.database_url).await.unwrap();
        let rows = sqlx::query_as(sql)
            .bind(task)
            .bind(since_ms)
            .fetch_all(&pool)
            .await
            .unwrap();
        pool.close().await;
        rows
    }
}

fn server_log(s: &Server) -> String {
    std::fs::read_to_string(s.data_dir().join("server.log")).unwrap_or_default()
}

fn assert_refused_for_the_key(ok: bool, stderr: &str) {
    assert!(!ok, "started with another master key:\n{stderr}");
    assert!(
        stderr.contains("PLINTH_MASTER_KEY")
            && stderr.contains("the database was set up with another key"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_database_refuses_a_process_with_another_master_key() {
    let mut s = Server::start_with(Options::default().env("PLINTH_MASTER_KEY", K1)).await;
    let addr = email("keycheck");
    let (key, _) = s.signup(&addr).await;
    let (_, clean) = s.terminate();
    assert!(clean);

    // Another key: serve, worker, migrate and the CLI all refuse, naming the variable.
    for args in [
        &["serve", "--listen", "127.0.0.1:0"][..],
        &["worker"],
        &["migrate"],
        &[
            "users",
            "set-level",
            "--email",
            "x@example.com",
            "--level",
            "20",
        ],
    ] {
        let (ok, err) = run_to_exit(command(&s, args, &[("PLINTH_MASTER_KEY", K2)]));
        assert_refused_for_the_key(ok, &err);
    }
    // No PLINTH_MASTER_KEY: a key file is generated in the data dir, and it is refused too.
    let (ok, err) = run_to_exit(command(&s, &["migrate"], &[]));
    assert_refused_for_the_key(ok, &err);
    assert!(err.contains("master.key"), "{err}");

    // The right key starts, and what was encrypted under it still decrypts.
    let (ok, err) = run_to_exit(command(&s, &["migrate"], &[("PLINTH_MASTER_KEY", K1)]));
    assert!(ok, "{err}");
    s.restart();
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["key"], json!(key), "{}", r.body);
}

/// Several processes with periodic work on one database: every paying account is paid
/// once, and each periodic task runs at most once per round (not once per process).
#[tokio::test]
async fn periodic_work_runs_once_per_round_across_processes() {
    let interval = [("PLINTH_MONTHLY_INTERVAL_SECS", "1")];
    let s = Server::start_with(Options::default().env(interval[0].0, interval[0].1)).await;
    let mut users = Vec::new();
    for i in 0..5 {
        let addr = email(&format!("round{i}"));
        let (key, _) = s.signup(&addr).await;
        users.push((addr, key));
    }
    let workers = [
        Worker::start(&s, "wa", &interval),
        Worker::start(&s, "wb", &interval),
    ];
    // Three processes tick every second from here on.
    let since_ms = chrono::Utc::now().timestamp_millis();
    let started = Instant::now();
    for (addr, _) in &users {
        let out = s.set_level(addr, 20);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for (_, key) in &users {
        loop {
            let r = s.get("/api/credits/balance", Some(key)).await;
            if r.body["balance"] == json!(1500) {
                break;
            }
            assert!(Instant::now() < deadline, "not paid: {}", r.body);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    // More rounds go by: nobody is paid twice.
    tokio::time::sleep(Duration::from_secs(4)).await;
    for (_, key) in &users {
        let r = s.get("/api/credits/balance", Some(key)).await;
        assert_eq!(r.body["balance"], json!(1500), "{}", r.body);
        let h = s.get("/api/credits", Some(key)).await;
        assert_eq!(h.body["total"], json!(1), "{}", h.body);
        assert_eq!(h.body["data"][0]["kind"], json!("monthly"));
    }
    // Each task: at most one run per round (no round end recorded twice), and about one
    // round per second in all, not one per process.
    for task in [
        "monthly-credits",
        "slide-upkeep",
        "order-holds",
        "analytics-rollup",
        "attachment-expiry",
    ] {
        let runs = runs_of(&s, task, since_ms).await;
        let elapsed = started.elapsed().as_secs() as usize;
        let rounds: std::collections::HashSet<i64> = runs.iter().map(|r| r.0).collect();
        assert_eq!(
            runs.len(),
            rounds.len(),
            "{task}: a round ran more than once: {runs:?}"
        );
        assert!(
            runs.len() >= 3 && runs.len() <= elapsed + 2,
            "{task}: {} runs in {elapsed} s by 3 processes: {runs:?}",
            runs.len()
        );
    }
    // One host: no warning about local object storage.
    for log in [server_log(&s), workers[0].log(), workers[1].log()] {
        assert!(!log.contains("UNSAFE DEPLOYMENT"), "{log}");
    }
    if s.database_url.starts_with("postgres") {
        // Every process names its sessions.
        let named = s
            .sql_count(
                "SELECT COUNT(DISTINCT split_part(application_name, ':', 3)) FROM pg_stat_activity \
                 WHERE datname = current_database() \
                 AND (application_name LIKE 'plinth-serve:%' OR application_name LIKE 'plinth-worker:%')",
            )
            .await;
        assert_eq!(named, 3, "three processes by pid");
    }
}

/// Local object storage with processes on two hosts: a loud warning, and `--production`
/// refuses to start. Only PostgreSQL lists its sessions' hosts (on SQLite every process
/// shares the database file's host).
#[tokio::test]
async fn local_storage_on_several_hosts_is_refused_in_production() {
    if crate::common::pg_admin_url().is_none() {
        return;
    }
    let s = Server::start().await;
    // A plinth process on another host, as PostgreSQL sees it.
    let other = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_with(
            s.database_url
                .parse::<sqlx::postgres::PgConnectOptions>()
                .unwrap()
                .application_name("plinth-worker:other-host:4242"),
        )
        .await
        .unwrap();
    sqlx::query("SELECT 1").execute(&other).await.unwrap();

    let worker = Worker::start(&s, "wc", &[]);
    let log = worker.log();
    assert!(
        log.contains("UNSAFE DEPLOYMENT") && log.contains("other-host"),
        "{log}"
    );
    // An operator command on a migrated database, at the default log level, prints no
    // PostgreSQL NOTICEs ("… already exists, skipping") before its output (issue 45).
    let key = std::fs::read_to_string(s.data_dir().join("master.key")).unwrap();
    let (ok, err) = run_to_exit(command(
        &s,
        &["jobs", "stats"],
        &[("PLINTH_MASTER_KEY", key.trim()), ("RUST_LOG", "info")],
    ));
    assert!(ok, "{err}");
    assert!(
        !err.contains("notice") && !err.contains("already exists"),
        "{err}"
    );

    let key = std::fs::read_to_string(s.data_dir().join("master.key")).unwrap();
    for args in [
        &["serve", "--production", "--listen", "127.0.0.1:0"][..],
        &["worker", "--production"],
    ] {
        let (ok, err) = run_to_exit(command(
            &s,
            args,
            &[
                ("PLINTH_MASTER_KEY", key.trim()),
                ("PLINTH_STRIPE_SECRET_KEY", "sk_test_x"),
            ],
        ));
        assert!(!ok, "{err}");
        // Refused from the configuration alone, before the hosts are counted.
        assert!(
            err.contains("--production refuses to start (1 problem)")
                && err.contains("local object storage with PostgreSQL")
                && err.contains("PLINTH_S3_"),
            "{err}"
        );
    }
    other.close().await;
}
