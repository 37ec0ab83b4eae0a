//! Several `plinth` processes on the harness server's data dir and database (the issue
//! 17 tests): `serve` processes on free ports and `worker` processes, killed when dropped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{wait_for_line, Resp, Server, BIN};

/// A `plinth` process next to the harness's server (same data dir and database), killed
/// when dropped.
pub struct Process {
    pub child: Child,
    /// The base URL of a `serve` process.
    pub base: Option<String>,
}

impl Process {
    /// `plinth serve --no-workers` on a free port.
    pub fn serve(s: &Server, env: &[(&str, &str)]) -> Process {
        let mut child = Command::new(BIN)
            .args(["serve", "--no-workers", "--listen", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(s.data_dir())
            .arg("--database-url")
            .arg(&s.database_url)
            .env_remove("PLINTH_DATABASE_URL")
            .env("PLINTH_RATE_LIMIT_MULTIPLIER", "1000")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = wait_for_line(&mut child, "plinth listening on ", Duration::from_secs(60))
            .expect("second server started");
        Process {
            child,
            base: Some(base),
        }
    }

    /// `plinth worker` (export concurrency 1, so each worker holds one export at a time).
    pub fn worker(s: &Server, name: &str) -> Process {
        Process::worker_with(s, name, &[])
    }

    /// `plinth worker` with more arguments (`--queues`, `--shutdown-timeout`...).
    pub fn worker_with(s: &Server, name: &str, args: &[&str]) -> Process {
        Process::worker_env(s, name, args, &[])
    }

    /// `plinth worker` with more arguments and environment (e.g. `PLINTH_SMTP_URL`).
    pub fn worker_env(s: &Server, name: &str, args: &[&str], env: &[(&str, &str)]) -> Process {
        let child = Command::new(BIN)
            .arg("worker")
            .args(args)
            .arg("--data-dir")
            .arg(s.data_dir())
            .arg("--database-url")
            .arg(&s.database_url)
            .env_remove("PLINTH_DATABASE_URL")
            .env("PLINTH_WORKER_NAME", name)
            .env("PLINTH_RENDER_CONCURRENCY", "1")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Process { child, base: None }
    }

    /// Waits for the process to exit on its own: its exit status, or None after `within`.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn post_to(base: &str, path: &str, key: &str, body: &Value) -> Resp {
    let res = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("x-api-key", key)
        .json(body)
        .send()
        .await
        .expect("request");
    Server::read(res).await
}
