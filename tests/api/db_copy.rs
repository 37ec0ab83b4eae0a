//! Moving a SQLite deployment onto PostgreSQL (issue 45, O1): `plinth db copy` copies
//! every table into an empty PostgreSQL database, checks the copy, and a server started
//! on it with the same data dir answers as the SQLite one did: the same accounts and
//! keys, balances, decks, finished exports with their artifacts, idempotent replays.
//! A target that holds anything is refused and left as it was.
//!
//! Needs PostgreSQL (`PLINTH_TEST_DATABASE_URL`); without it the test says so and passes.

use serde_json::{json, Value};

use crate::common::*;
use crate::slide_helpers::{create_md, download, export, id};

const MASTER_KEY: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

/// The answers a client of the deployment relies on, from whichever server.
async fn answers(s: &Server, keys: &[String], deck: &str, job: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let v = s.get("/api/users/viewer", Some(k)).await;
        v.assert_ok();
        assert!(v.body["user"]["email"].is_string(), "{}", v.body);
        out.push(v.body["user"].clone());
        // The admin's allotment is the new server's periodic round's to pay (it runs at
        // start), not the copy's: only the members' balances are compared.
        if i < 2 {
            let b = s.get("/api/credits/balance", Some(k)).await;
            b.assert_ok();
            out.push(b.body["balance"].clone());
        }
    }
    let d = s.get(&format!("/api/slides/{deck}"), Some(&keys[0])).await;
    d.assert_ok();
    let mut deck_body = d.body.clone();
    deck_body.as_object_mut().unwrap().remove("_usage");
    out.push(deck_body);
    let list = s.get("/api/slides", Some(&keys[0])).await;
    list.assert_ok();
    assert_eq!(
        list.body["data"].as_array().map(Vec::len),
        Some(1),
        "{}",
        list.body
    );
    out.push(list.body["data"].clone());
    let j = s
        .get(
            &format!("/api/slides/jobs/{job}?deck_id={deck}"),
            Some(&keys[0]),
        )
        .await;
    j.assert_ok();
    out.push(json!({
        "status": j.body["status"],
        "format": j.body["format"],
        "finished_at": j.body["finished_at"],
        "artifacts": j.body["artifacts"].as_array().map(|a| a.len()),
    }));
    out.iter().map(micros).collect()
}

/// PostgreSQL keeps times to the microsecond, SQLite's text to the nanosecond: times
/// compare rounded to the microsecond, as PostgreSQL rounds them.
fn micros(v: &Value) -> Value {
    match v {
        Value::String(s) => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(t) => {
                let t = t.with_timezone(&chrono::Utc);
                let us = (t.timestamp_nanos_opt().unwrap() + 500).div_euclid(1000);
                json!(chrono::DateTime::from_timestamp_micros(us)
                    .unwrap()
                    .to_rfc3339())
            }
            Err(_) => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(micros).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), micros(v))).collect()),
        other => other.clone(),
    }
}

async fn create_database(admin: &str) -> String {
    let name = format!("plinth_copy_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::PgPool::connect(admin).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    name
}

fn db_copy(data_dir: &std::path::Path, to: &str) -> std::process::Output {
    std::process::Command::new(BIN)
        .args(["db", "copy", "--data-dir"])
        .arg(data_dir)
        .arg("--to")
        .arg(to)
        .env_remove("PLINTH_DATABASE_URL")
        .env("PLINTH_MASTER_KEY", MASTER_KEY)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

#[tokio::test]
async fn a_sqlite_deployment_copied_to_postgresql_serves_the_same_answers() {
    let Some(admin) = pg_admin_url() else {
        eprintln!(
            "skipped: db copy needs PostgreSQL; set PLINTH_TEST_DATABASE_URL=postgres://… to run it"
        );
        return;
    };
    let opts = || Options::default().env("PLINTH_MASTER_KEY", MASTER_KEY);
    let mut sqlite = Server::start_with(opts().sqlite()).await;
    assert!(sqlite.database_url.starts_with("sqlite:"));

    // Accounts with keys and balances that moved; a deck with revisions; an export
    // that finished (artifacts in the objects); an idempotent create; an admin.
    let alice = sqlite.funded_user(&email("copy-alice")).await;
    let bob = sqlite.funded_user(&email("copy-bob")).await;
    let bob_email = sqlite.get("/api/users/viewer", Some(&bob)).await.body["user"]["email"]
        .as_str()
        .unwrap()
        .to_owned();
    for amount in [7, 11] {
        sqlite
            .post(
                "/api/credits/send",
                Some(&alice),
                json!({"amount": amount, "email": bob_email}),
            )
            .await
            .assert_ok();
    }
    let carol_email = email("copy-carol");
    let carol = sqlite.admin(&carol_email).await;
    let deck = id(&create_md(
        &sqlite,
        &alice,
        "# Moving\n\nto PostgreSQL\n\n---\n\n## Two\n\n- a\n- b",
    )
    .await);
    let upd = sqlite
        .post(
            "/api/slides/update",
            Some(&alice),
            json!({"id": deck, "expected_version": 1, "markdown": "# Moved\n\nwith its revisions\n\n---\n\n## Two\n\n- a\n- b\n- c"}),
        )
        .await;
    upd.assert_ok();
    let done = export(&sqlite, &alice, &deck, "pdf").await;
    assert_eq!(done["status"], json!("succeeded"), "{done}");
    let job = id(&done);
    let idem = sqlite
        .raw(reqwest::Method::POST, "/api/slides/exports/create")
        .header("x-api-key", &alice)
        .header("Idempotency-Key", "moved-1")
        .json(&json!({"deck_id": deck, "format": "html"}))
        .send()
        .await
        .unwrap();
    let idem = Server::read(idem).await;
    idem.assert_ok();
    let idem_job = id(&idem.body);
    export_done(&sqlite, &alice, &deck, &idem_job).await;

    let keys = vec![alice.clone(), bob.clone(), carol.clone()];
    let before = answers(&sqlite, &keys, &deck, &job).await;
    // Stopped first, as docs/operations.md says.
    sqlite.kill();
    let data_dir = sqlite.data_dir();

    let name = create_database(&admin).await;
    let to = replace_db_name(&admin, &name);
    let out = db_copy(&data_dir, &to);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "db copy: {stdout}\n{stderr}");
    assert!(
        stdout.contains("checked them") && stdout.contains("0 accounts off their ledger"),
        "{stdout}"
    );
    assert!(stderr.contains("users:"), "per-table progress: {stderr}");

    // Copying again into the now full database is refused and changes nothing.
    let again = db_copy(&data_dir, &to);
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("not empty") && err.contains("nothing was written"),
        "{err}"
    );

    // A server on the copy, with the same data dir (objects) and key.
    let pg = Server::start_with(opts().pg_database(&name).data_dir(&data_dir)).await;
    assert!(pg.database_url.starts_with("postgres"));
    let after = answers(&pg, &keys, &deck, &job).await;
    assert_eq!(before, after);
    // Every table of the SQLite file is there with its rows.
    for table in [
        "users",
        "credit_transactions",
        "slide_revisions",
        "slide_jobs",
        "idempotency_records",
        "job_attempts",
    ] {
        assert!(
            stderr.contains(&format!("  {table}: ")),
            "{table} not copied: {stderr}"
        );
        assert!(
            pg.sql_count(&format!("SELECT COUNT(*) FROM {table}")).await > 0,
            "{table}"
        );
    }
    assert!(pg.sql_count("SELECT COUNT(*) FROM apalis.jobs").await >= 2);
    // The finished export's artifacts download from the same objects.
    let j = pg
        .get(
            &format!("/api/slides/jobs/{job}?deck_id={deck}"),
            Some(&alice),
        )
        .await;
    let pdf = download(j.body["artifacts"][0]["url"].as_str().unwrap()).await;
    assert!(pdf.starts_with(b"%PDF"));
    // The idempotency record came along: the same key replays the same job.
    let replay = pg
        .raw(reqwest::Method::POST, "/api/slides/exports/create")
        .header("x-api-key", &alice)
        .header("Idempotency-Key", "moved-1")
        .json(&json!({"deck_id": deck, "format": "html"}))
        .send()
        .await
        .unwrap();
    let replay = Server::read(replay).await;
    replay.assert_ok();
    assert_eq!(
        replay.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(id(&replay.body), idem_job);
    // New writes work on the copy (serial ids and constraints in place): a send, a new
    // export run by the PostgreSQL workers.
    pg.post(
        "/api/credits/send",
        Some(&alice),
        json!({"amount": 1, "email": bob_email}),
    )
    .await
    .assert_ok();
    let fresh = export(&pg, &alice, &deck, "pdf").await;
    assert_eq!(fresh["status"], json!("succeeded"), "{fresh}");
    // The admin is still one.
    let errs = pg.get("/api/admin/errors", Some(&carol)).await;
    assert_eq!(errs.status, 200, "{}", errs.body);
}

#[tokio::test]
async fn db_copy_refuses_a_target_that_is_not_postgresql_or_not_empty() {
    let Some(admin) = pg_admin_url() else {
        eprintln!(
            "skipped: db copy needs PostgreSQL; set PLINTH_TEST_DATABASE_URL=postgres://… to run it"
        );
        return;
    };
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_MASTER_KEY", MASTER_KEY)
            .sqlite(),
    )
    .await;
    s.verified_user(&email("copy-refused")).await;
    let out = db_copy(&s.data_dir(), "sqlite:///tmp/elsewhere.db");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("postgres:// URL"));

    // A database with someone's rows in a table: refused before anything is written.
    let name = create_database(&admin).await;
    let url = replace_db_name(&admin, &name);
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("CREATE TABLE notes (body TEXT)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO notes VALUES ('keep me')")
        .execute(&pool)
        .await
        .unwrap();
    let out = db_copy(&s.data_dir(), &url);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes (1 rows)"), "{err}");
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(tables, 1, "nothing was created in a refused target");
    pool.close().await;
    let admin_pool = sqlx::PgPool::connect(&admin).await.unwrap();
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&admin_pool)
    .await;
}

async fn export_done(s: &Server, key: &str, deck: &str, job: &str) {
    crate::slide_helpers::poll(
        s,
        &format!("/api/slides/jobs/{job}?deck_id={deck}"),
        key,
        crate::slide_helpers::ended,
    )
    .await;
}
