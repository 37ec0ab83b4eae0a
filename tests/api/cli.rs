//! The operator contract of the binary.

use std::process::Command;

use crate::common::BIN;

#[test]
fn help_documents_every_option() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "serve",
        "worker",
        "migrate",
        "users",
        "--listen",
        "--data-dir",
        "--database-url",
        "PLINTH_LISTEN",
        "PLINTH_DATA_DIR",
        "PLINTH_DATABASE_URL",
        "PLINTH_PUBLIC_URL",
        "PLINTH_MASTER_KEY",
        "PLINTH_SMTP_URL",
        "PLINTH_EXEMPT_DOMAINS",
        "PLINTH_ADMIN_DOMAINS",
        "PLINTH_TELEMETRY_PRODUCTS",
        "PLINTH_STRIPE_WEBHOOK_SECRET",
        "PLINTH_RATE_LIMIT_MULTIPLIER",
        "PLINTH_TOKEN_COSTS",
        "PLINTH_LOG_FORMAT",
    ] {
        assert!(
            help.contains(needle),
            "--help does not mention {needle}:\n{help}"
        );
    }
    let out = Command::new(BIN)
        .args(["users", "set-level", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--email") && help.contains("--level"));
}

#[test]
fn migrate_creates_the_database_and_is_repeatable() {
    if crate::common::pg_admin_url().is_some() {
        return; // covered by every server start on PostgreSQL
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["migrate", "--data-dir"])
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("plinth.db").exists());
    // Twice is fine (with the same key: the generated master.key of the data dir).
    let again = Command::new(BIN)
        .args(["migrate", "--data-dir"])
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn a_bad_master_key_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env("PLINTH_MASTER_KEY", "abc")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("PLINTH_MASTER_KEY"));
}

/// The commands `--help` lists, and those of each command group.
fn commands(args: &[&str]) -> Vec<String> {
    let out = Command::new(BIN).args(args).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

/// README's "Every command" table names every command and subcommand the binary has
/// (issue 45: `slides`, `db copy`, `jobs show/pause/workers` were missing).
#[test]
fn the_readme_lists_every_command() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = readme
        .split("## Every command")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README has an \"Every command\" section");
    let top = commands(&[]);
    assert!(top.len() >= 10, "{top:?}");
    for command in top {
        let subs = commands(&[&command]);
        if subs.is_empty() {
            assert!(
                table.contains(&format!("`plinth {command}")),
                "README lacks `plinth {command}`"
            );
        }
        for sub in subs {
            let named = table.contains(&format!("`plinth {command} {sub}"))
                || table.contains(&format!("/ `{sub}"))
                || table.contains(&format!("/ `{command} {sub}"));
            assert!(named, "README lacks `plinth {command} {sub}`");
        }
    }
}
