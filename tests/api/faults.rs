//! Fault drills (issue 36): the database goes away, hangs or restarts behind a TCP proxy
//! under credit writes (PostgreSQL), and the disk fills up and frees again (SQLite on a
//! small tmpfs, as root). Each asserts what a client and a load balancer see: a 503 with
//! `Retry-After` within the deadline, never a 500 or a hang; `/readyz` false while
//! writes fail and true once they work; no write applied after its client was told
//! nothing was (a 503 without `outcome_unknown`); retries under the same
//! `Idempotency-Key` move tokens once. (`kill -9` under write load is
//! `credits::sends_answered_200_survive_a_kill_9_and_the_total_holds`.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::common::*;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Bytes flow both ways.
    Pass,
    /// Connections stay open and new ones are accepted, but no byte moves (a database
    /// that hangs); bytes held move on once it passes again.
    Hang,
    /// Every connection is closed and new ones are closed at once (a database that is
    /// down or restarting).
    Refuse,
}

/// A TCP proxy in front of PostgreSQL whose behaviour the test switches.
struct Proxy {
    port: u16,
    mode: Arc<watch::Sender<Mode>>,
}

impl Proxy {
    /// On a thread and runtime of its own: the test's runtime blocks while a server
    /// starts, and the server's first connections go through the proxy.
    async fn start(upstream: String) -> Proxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = watch::channel(Mode::Pass);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        std::thread::spawn(move || {
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                while let Ok((client, _)) = listener.accept().await {
                    if *rx.borrow() == Mode::Refuse {
                        drop(client);
                        continue;
                    }
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        continue;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::spawn(pipe(cr, sw, rx.clone()));
                    tokio::spawn(pipe(sr, cw, rx.clone()));
                }
            })
        });
        Proxy {
            port,
            mode: Arc::new(tx),
        }
    }

    fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

/// Waits until bytes may move: `false` when the connection is to be closed.
async fn passing(mode: &mut watch::Receiver<Mode>) -> bool {
    loop {
        match *mode.borrow_and_update() {
            Mode::Pass => return true,
            Mode::Refuse => return false,
            Mode::Hang => {}
        }
        if mode.changed().await.is_err() {
            return false;
        }
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if !passing(&mut mode).await {
            return;
        }
        let n = tokio::select! {
            n = from.read(&mut buf) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            changed = mode.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        };
        // Read while passing; a hang that began since holds the bytes.
        if !passing(&mut mode).await || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// PostgreSQL's address from the test URL, or why the drill is skipped.
fn postgres_upstream() -> Option<String> {
    let Some(url) = pg_admin_url() else {
        eprintln!(
            "skipped: the database proxy drills need PostgreSQL (PLINTH_TEST_DATABASE_URL; \
             .ci/run sets it on its second pass)"
        );
        return None;
    };
    let at = url
        .rfind('@')
        .map_or_else(|| url.find("://").unwrap() + 3, |i| i + 1);
    let end = url[at..].find('/').map_or(url.len(), |i| at + i);
    let host = &url[at..end];
    Some(if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    })
}

/// A server whose database is reached through a proxy, with a 3 s request deadline.
async fn behind_proxy(upstream: String) -> (Proxy, Server) {
    let proxy = Proxy::start(upstream).await;
    let s = Server::start_with(
        Options::default()
            .db_port(proxy.port)
            .env("PLINTH_REQUEST_TIMEOUT", "3"),
    )
    .await;
    (proxy, s)
}

async fn readyz(s: &Server) -> (u16, Value) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    match client.get(format!("{}/readyz", s.base)).send().await {
        Ok(res) => {
            let status = res.status().as_u16();
            (status, res.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

/// Waits until `/readyz` answers `status`; how long it took.
async fn readyz_becomes(s: &Server, status: u16, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (got, body) = readyz(s).await;
        if got == status {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "/readyz still {got} after {within:?} (waiting for {status}): {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A keyed deduct retried as a client would: again after `Retry-After` while the first
/// try's claim on the key is still held (409), for up to 20 s.
async fn retried(s: &Server, key: &str, idem: &str, credit: i64) -> (u16, Value) {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body, _, _) = deduct(s, key, idem, credit).await;
        if status != 409 || Instant::now() > until {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One keyed deduct: (status, body, Retry-After, how long the answer took).
async fn deduct(s: &Server, key: &str, idem: &str, credit: i64) -> (u16, Value, bool, Duration) {
    let started = Instant::now();
    let res = s
        .raw(reqwest::Method::POST, "/api/credits/deduct")
        .header("x-api-key", key)
        .header("idempotency-key", idem)
        .timeout(Duration::from_secs(30))
        .json(&json!({"credit": credit}))
        .send()
        .await
        .expect("an answer, never a hang");
    let status = res.status().as_u16();
    let retry_after = res.headers().contains_key("retry-after");
    let body: Value = res.json().await.unwrap_or(Value::Null);
    (status, body, retry_after, started.elapsed())
}

async fn deducted_amounts(s: &Server, key: &str) -> Vec<i64> {
    let r = s.get("/api/credits?limit=200", Some(key)).await;
    r.assert_ok();
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == json!("deduct"))
        .map(|t| -t["amount"].as_i64().unwrap())
        .collect()
}

async fn balance(s: &Server, key: &str) -> i64 {
    let r = s.get("/api/credits/balance", Some(key)).await;
    r.assert_ok();
    r.body["balance"].as_i64().unwrap()
}

/// The database hangs (connections open, no bytes), then comes back: every deduct is
/// answered 503 with `Retry-After` within the deadline; `/readyz` fails and recovers;
/// none of the writes whose clients were told "nothing was changed" is applied when the
/// database comes back, and retrying all of them under their keys applies each once.
#[tokio::test]
async fn a_database_that_hangs_answers_503_within_the_deadline_and_retries_move_tokens_once() {
    let Some(upstream) = postgres_upstream() else {
        return;
    };
    let (proxy, s) = behind_proxy(upstream).await;
    let key = s.funded_user(&email("hang")).await;
    assert_eq!(balance(&s, &key).await, 100);

    proxy.set(Mode::Hang);
    let answers = futures::future::join_all((1..=10).map(|i| {
        let (s, key) = (&s, &key);
        async move { (i, deduct(s, key, &format!("hang-{i}"), i).await) }
    }))
    .await;
    for (i, (status, body, retry_after, took)) in &answers {
        assert_eq!(*status, 503, "deduct {i}: {body}");
        assert!(*retry_after, "deduct {i}: no Retry-After");
        assert!(*took < Duration::from_secs(6), "deduct {i} took {took:?}");
    }
    assert_eq!(readyz(&s).await.0, 503, "/readyz while the database hangs");

    proxy.set(Mode::Pass);
    readyz_becomes(&s, 200, Duration::from_secs(20)).await;
    let applied = deducted_amounts(&s, &key).await;
    for (i, (_, body, _, _)) in &answers {
        if body["outcome_unknown"] != json!(true) {
            assert!(
                !applied.contains(i),
                "deduct {i} was told nothing changed, but applied: {body}"
            );
        }
    }
    // Retries under the same keys: each deduct lands exactly once.
    for i in 1..=10 {
        let (status, body) = retried(&s, &key, &format!("hang-{i}"), i).await;
        assert_eq!(status, 200, "retry of deduct {i}: {body}");
        let (status, body, _, _) = deduct(&s, &key, &format!("hang-{i}"), i).await;
        assert_eq!(status, 200, "second retry of deduct {i}: {body}");
    }
    let mut applied = deducted_amounts(&s, &key).await;
    applied.sort();
    assert_eq!(applied, (1..=10).collect::<Vec<_>>());
    assert_eq!(balance(&s, &key).await, 100 - 55);
}

/// The database goes away (every connection closed, new ones refused) under a steady
/// stream of keyed deducts, and comes back: no answer is a 500, each 503 carries
/// `Retry-After` and comes within the deadline, `/readyz` turns false and then true,
/// requests succeed again within seconds, and the ledger holds each deduct once after
/// the failed ones are retried.
#[tokio::test]
async fn a_database_restart_under_load_gives_503s_never_500s_and_heals_by_itself() {
    let Some(upstream) = postgres_upstream() else {
        return;
    };
    let (proxy, s) = behind_proxy(upstream).await;
    let key = s.funded_user(&email("restart")).await;

    let down_at = Instant::now() + Duration::from_secs(1);
    let up_at = down_at + Duration::from_secs(3);
    let load = {
        let (s, key) = (&s, &key);
        async move {
            let mut answers = Vec::new();
            let mut i = 0;
            while answers.len() < 80 && Instant::now() < up_at + Duration::from_secs(6) {
                i += 1;
                let sent = Instant::now();
                let (status, body, retry_after, took) =
                    deduct(s, key, &format!("restart-{i}"), 1).await;
                answers.push((i, sent, status, body, retry_after, took));
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
            answers
        }
    };
    let drill = async {
        tokio::time::sleep_until(down_at.into()).await;
        proxy.set(Mode::Refuse);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (status, body) = readyz(&s).await;
        tokio::time::sleep_until(up_at.into()).await;
        proxy.set(Mode::Pass);
        (status, body)
    };
    let (answers, (ready_while_down, body)) = tokio::join!(load, drill);
    assert_eq!(
        ready_while_down, 503,
        "/readyz while the database is down: {body}"
    );

    let mut failed = Vec::new();
    for (i, sent, status, body, retry_after, took) in &answers {
        assert_ne!(*status, 500, "deduct {i}: {body}");
        if *status == 503 {
            assert!(*retry_after, "deduct {i}: 503 without Retry-After");
            assert!(*took < Duration::from_secs(6), "deduct {i} took {took:?}");
            failed.push(*i);
        } else {
            assert_eq!(*status, 200, "deduct {i}: {body}");
        }
        // Healed within seconds: everything sent 3 s after the database came back works.
        if *sent > up_at + Duration::from_secs(3) {
            assert_eq!(*status, 200, "deduct {i}, after recovery: {body}");
        }
    }
    assert!(!failed.is_empty(), "the outage was not seen: {answers:?}");
    readyz_becomes(&s, 200, Duration::from_secs(10)).await;
    for i in &failed {
        let (status, body) = retried(&s, &key, &format!("restart-{i}"), 1).await;
        assert_eq!(status, 200, "retry of deduct {i}: {body}");
    }
    let n = answers.len() as i64;
    assert_eq!(deducted_amounts(&s, &key).await.len() as i64, n);
    assert_eq!(balance(&s, &key).await, 100 - n);
}

/// Whether this process runs as root (mounting a tmpfs needs it).
fn root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A small tmpfs, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}

/// Fills the file system holding `dir` with a file: its path.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
    path
}

/// The disk fills up under SQLite and frees again: writes answer 503 (never 500) while
/// it is full and `/readyz` is false; once the space is back, `/readyz` is true and every
/// write works within seconds, without a restart (a connection left inside a failed
/// transaction used to break every later write).
#[tokio::test]
async fn a_full_disk_is_503_and_the_server_heals_when_space_comes_back() {
    if pg_admin_url().is_some() {
        eprintln!("skipped: the disk-full drill runs on SQLite (its data dir is on the tmpfs)");
        return;
    }
    if !root() {
        eprintln!(
            "skipped: the disk-full drill mounts a tmpfs, which needs root (CI runs as root)"
        );
        return;
    }
    let Some(fs) = Tmpfs::mount("48m") else {
        eprintln!("skipped: mounting a tmpfs failed (no CAP_SYS_ADMIN in this container?)");
        return;
    };
    // Only the database is on the small file system: the log stays readable.
    let mut s = Server::start_with(Options::default().sqlite_in(fs.0.path())).await;
    let key = s.funded_user(&email("diskfull")).await;
    for i in 0..5 {
        let (status, body, _, _) = deduct(&s, &key, &format!("before-{i}"), 1).await;
        assert_eq!(status, 200, "{body}");
    }

    let filler = fill(fs.0.path());
    let mut refused = 0;
    for i in 0..20 {
        // Writes big enough to need new pages: a post of 16 KB.
        let (status, body, retry_after, _) = deduct(&s, &key, &format!("full-{i}"), 1).await;
        assert_ne!(status, 500, "deduct while full: {body}");
        let post = s
            .raw(reqwest::Method::POST, "/api/posts/create")
            .header("x-api-key", &key)
            .json(
                &json!({"type": "note", "markdown": format!("full {i} {}", "x".repeat(16 * 1024))}),
            )
            .send()
            .await;
        let post = match post {
            Ok(r) => r.status().as_u16(),
            Err(e) => panic!(
                "post while full: {e}; server exit: {:?}",
                s.wait_exit(Duration::from_secs(2))
            ),
        };
        assert_ne!(post, 500, "post while full");
        if status == 503 {
            assert!(retry_after, "503 without Retry-After");
            refused += 1;
        }
    }
    assert!(refused > 0, "no write failed on a full disk");
    assert_eq!(readyz(&s).await.0, 503, "/readyz while the disk is full");

    std::fs::remove_file(&filler).unwrap();
    let healed = readyz_becomes(&s, 200, Duration::from_secs(15)).await;
    eprintln!("/readyz true {healed:?} after the space came back");
    for i in 0..30 {
        let (status, body, _, _) = deduct(&s, &key, &format!("after-{i}"), 1).await;
        assert_eq!(status, 200, "deduct {i} after the space came back: {body}");
    }
    let post = s
        .post(
            "/api/posts/create",
            Some(&key),
            json!({"type": "note", "markdown": format!("after {}", "y".repeat(16 * 1024))}),
        )
        .await;
    assert!(post.status.is_success(), "{:?}", post.body);
    drop(s);
}
