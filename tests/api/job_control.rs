//! Job control for operators: `GET /api/admin/jobs/stats`, `GET /api/admin/jobs`,
//! `POST /api/admin/jobs/retry|cancel` (Admin100 additions) and `plinth jobs`, on one
//! server that runs no workers, with `plinth worker` processes started and stopped
//! around it: one whose SMTP relay refuses (jobs fail), then one with the outbox (a
//! retried job succeeds, a cancelled one never runs); and the retention of finished jobs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::Process;
use crate::common::{email, Options, Resp, Server};
use crate::slide_helpers::{create_md, ended, id, poll, start_export};

async fn jobs(s: &Server, key: &str, query: &str) -> Vec<Value> {
    let r = s.get(&format!("/api/admin/jobs{query}"), Some(key)).await;
    r.assert_ok();
    r.body["jobs"].as_array().unwrap().clone()
}

/// The email job to `to` (its arguments show the recipient only).
async fn email_job(s: &Server, key: &str, to: &str) -> Value {
    jobs(s, key, "?queue=email&limit=500")
        .await
        .into_iter()
        .find(|j| j["args"] == json!({ "to": to }))
        .unwrap_or_else(|| panic!("no email job to {to}"))
}

async fn job(s: &Server, key: &str, id: &str) -> Value {
    jobs(s, key, "?limit=500")
        .await
        .into_iter()
        .find(|j| j["id"] == json!(id))
        .unwrap_or_else(|| panic!("no job {id}"))
}

/// Polls the job until `done` holds (a worker is at it).
async fn wait_job(s: &Server, key: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let j = job(s, key, id).await;
        if done(&j) {
            return j;
        }
        assert!(Instant::now() < deadline, "job {id} stuck at {j}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `POST /api/admin/jobs/{op}` (retry or cancel) of job `id`.
async fn act(s: &Server, key: &str, op: &str, id: impl serde::Serialize) -> Resp {
    s.post(
        &format!("/api/admin/jobs/{op}"),
        Some(key),
        json!({ "id": id }),
    )
    .await
}

fn queue<'a>(stats: &'a Resp, name: &str) -> &'a Value {
    stats.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["queue"] == json!(name))
        .unwrap_or_else(|| panic!("no queue {name} in {}", stats.body))
}

fn cli_ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cli_err(out: &std::process::Output) -> String {
    assert!(
        !out.status.success(),
        "expected a failure: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn operators_list_retry_and_cancel_jobs_over_http_and_the_cli() {
    // Emails get 3 attempts, 5 s then 1 s apart (the real back-off is minutes to hours).
    // The first wait is long enough for the test to see `retrying` on a loaded machine,
    // where one listing can take over a second.
    let backoff = ("PLINTH_EMAIL_BACKOFF", "5s,1s");
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_NO_WORKERS", "true")
            .env(backoff.0, backoff.1),
    )
    .await;
    // An admin without a delivered email: signed up (its verification email waits in the
    // queue), raised by the CLI.
    let admin_email = email("jobadmin");
    let (admin, _) = s.signup(&admin_email).await;
    cli_ok(&s.set_level(&admin_email, 100));
    let deadline = Instant::now() + Duration::from_secs(12);
    while s.get("/api/users/viewer", Some(&admin)).await.body["user"]["level"] != json!(100) {
        assert!(Instant::now() < deadline, "level change not seen");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let user_email = email("jobuser");
    let (user, _) = s.signup(&user_email).await;

    // Admin100 only.
    for (method, path) in [
        ("GET", "/api/admin/jobs/stats"),
        ("GET", "/api/admin/jobs"),
        ("POST", "/api/admin/jobs/retry"),
        ("POST", "/api/admin/jobs/cancel"),
    ] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let body = (method == "POST").then(|| json!({"id": "x"}));
        s.request(m.clone(), path, None, body.clone())
            .await
            .assert_error(401);
        s.request(m, path, Some(&user), body)
            .await
            .assert_error(403);
    }

    // A slide export waiting for a worker too.
    let deck = id(&create_md(&s, &admin, "# One\n\n---\n\n# Two").await);
    let export = start_export(&s, &admin, &deck, "html").await;
    let export_path = format!("/api/slides/jobs/{export}?deck_id={deck}");

    // Stats: every queue, the two emails and the export pending.
    let stats = s.get("/api/admin/jobs/stats", Some(&admin)).await;
    stats.assert_ok();
    let names: Vec<&str> = stats.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queue"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["email", "export", "images", "expiry", "callbacks"]);
    let mail = queue(&stats, "email");
    assert!(mail["pending"].as_i64().unwrap() >= 2, "{mail}");
    assert_eq!(mail["running"], json!(0));
    assert!(
        mail["oldest_pending_secs"].as_f64().unwrap() >= 0.0,
        "{mail}"
    );
    let ex = queue(&stats, "export");
    assert_eq!(ex["pending"], json!(1), "{ex}");
    assert_eq!(queue(&stats, "images")["oldest_pending_secs"], json!(null));
    assert!(stats.body["throughput"].is_array());

    // Listing: by queue (either name) and status; an email shows its recipient only.
    let pending = jobs(&s, &admin, "?queue=email&status=pending").await;
    assert!(pending.len() >= 2);
    assert!(pending.iter().all(|j| j["queue"] == json!("email")
        && j["status"] == json!("pending")
        && j["args"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .eq(["to"])));
    assert!(
        !serde_json::to_string(&pending).unwrap().contains("code="),
        "an email's text is never shown"
    );
    let admin_job = email_job(&s, &admin, &admin_email).await;
    let user_job = email_job(&s, &admin, &user_email).await;
    assert_eq!(admin_job["attempts"], json!(0));
    assert_eq!(admin_job["max_attempts"], json!(3));
    // The client's id of an email is its own id (its Message-ID): it finds the job too.
    let client_id = admin_job["client_id"].as_str().unwrap();
    let found = jobs(&s, &admin, &format!("?search={client_id}")).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["id"], admin_job["id"]);
    let by_recipient = jobs(&s, &admin, &format!("?search={admin_email}")).await;
    assert!(by_recipient.iter().any(|j| j["id"] == admin_job["id"]));
    // Only whole ids are searched, never text inside an email.
    s.get("/api/admin/jobs?search=%3Fcode%3D", Some(&admin))
        .await
        .assert_error(400);
    assert!(jobs(&s, &admin, "?search=code").await.is_empty());
    let exports = jobs(&s, &admin, "?queue=slide-export").await;
    assert_eq!(exports.len(), 1);
    assert_eq!(exports[0]["args"], json!({ "job_id": export }));
    assert_eq!(exports[0]["client_id"], json!(export));
    let export_job = exports[0]["id"].as_str().unwrap().to_owned();
    // One id: the job is found by the id its client holds.
    let shown = s
        .get(&format!("/api/admin/jobs/{export}"), Some(&admin))
        .await;
    shown.assert_ok();
    assert_eq!(shown.body["job"]["id"], json!(export_job));
    assert_eq!(shown.body["attempts"], json!([]));
    s.get("/api/admin/jobs/01NOSUCHJOB0000000000000000", Some(&admin))
        .await
        .assert_error(404);
    assert!(jobs(&s, &admin, "?status=done").await.is_empty());
    assert_eq!(jobs(&s, &admin, "?limit=1").await.len(), 1);
    for (query, needle) in [
        ("?queue=mail", "unknown queue"),
        ("?status=queued", "unknown status"),
        ("?limit=0", "limit"),
        ("?limit=501", "limit"),
        ("?limit=many", "limit"),
    ] {
        let r = s
            .get(&format!("/api/admin/jobs{query}"), Some(&admin))
            .await;
        r.assert_error(400);
        assert!(
            r.body["message"].as_str().unwrap().contains(needle),
            "{query}: {}",
            r.body
        );
    }

    // Cancel: a pending job is cancelled; the export's own row fails for its client.
    let (user_id, admin_id) = (
        user_job["id"].as_str().unwrap(),
        admin_job["id"].as_str().unwrap(),
    );
    let r = act(&s, &admin, "cancel", user_id).await;
    r.assert_ok();
    assert_eq!(r.body["job"]["status"], json!("cancelled"));
    assert_eq!(r.body["job"]["last_error"], json!("cancelled by operator"));
    let again = act(&s, &admin, "cancel", user_id).await;
    again.assert_error(409);
    assert_eq!(again.body["status"], json!("cancelled"));
    act(&s, &admin, "cancel", "01NOSUCHJOB")
        .await
        .assert_error(404);
    act(&s, &admin, "cancel", " ").await.assert_error(400);
    act(&s, &admin, "cancel", &export_job).await.assert_ok();
    let client_view = s.get(&export_path, Some(&admin)).await;
    assert_eq!(
        client_view.body["status"],
        json!("failed"),
        "{}",
        client_view.body
    );
    assert!(client_view.body["error"]
        .as_str()
        .unwrap()
        .contains("cancelled by an operator"));
    // Retry applies to failed and cancelled jobs only.
    let r = act(&s, &admin, "retry", admin_id).await;
    r.assert_error(409);
    assert_eq!(r.body["status"], json!("pending"));
    act(&s, &admin, "retry", "01NOSUCHJOB")
        .await
        .assert_error(404);

    // A worker whose SMTP relay refuses: the admin's email is retried after its back-off
    // and fails for good after 3 attempts; the cancelled jobs are never tried.
    let failing = Process::worker_env(
        &s,
        "ops",
        &[],
        &[("PLINTH_SMTP_URL", "smtp://127.0.0.1:1"), backoff],
    );
    let retrying = wait_job(&s, &admin, admin_id, |j| j["status"] == json!("retrying")).await;
    assert!(retrying["next_attempt_at"].is_string(), "{retrying}");
    let failed = wait_job(&s, &admin, admin_id, |j| j["status"] == json!("failed")).await;
    drop(failing);
    assert_eq!(failed["attempts"], json!(3), "{failed}");
    assert!(
        failed["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("127.0.0.1")),
        "{failed}"
    );
    // Every attempt with its error, the waits between them kept.
    let detail = s
        .get(&format!("/api/admin/jobs/{admin_id}"), Some(&admin))
        .await;
    detail.assert_ok();
    let runs = detail.body["attempts"].as_array().unwrap();
    let outcomes: Vec<&str> = runs
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["retrying", "retrying", "failed"],
        "{}",
        detail.body
    );
    for pair in runs.windows(2) {
        let next: chrono::DateTime<chrono::Utc> =
            pair[0]["next_at"].as_str().unwrap().parse().unwrap();
        let started: chrono::DateTime<chrono::Utc> =
            pair[1]["started_at"].as_str().unwrap().parse().unwrap();
        let ended: chrono::DateTime<chrono::Utc> =
            pair[0]["finished_at"].as_str().unwrap().parse().unwrap();
        assert!(started >= next, "an attempt came early: {}", detail.body);
        assert!(
            (started - ended).num_milliseconds() >= 700,
            "no back-off between attempts: {}",
            detail.body
        );
    }
    assert!(
        runs.iter()
            .all(|a| a["cause"] == json!("smtp")
                && a["error"].as_str().unwrap().contains("127.0.0.1"))
    );
    let listed = jobs(&s, &admin, "?queue=email&status=failed").await;
    assert!(listed.iter().any(|j| j["id"] == json!(admin_id)));
    let untouched = job(&s, &admin, user_id).await;
    assert_eq!(untouched["status"], json!("cancelled"));
    assert_eq!(untouched["attempts"], json!(0));
    let stats = s.get("/api/admin/jobs/stats", Some(&admin)).await;
    assert!(queue(&stats, "email")["failed"].as_i64().unwrap() >= 1);
    assert!(queue(&stats, "email")["cancelled"].as_i64().unwrap() >= 1);
    assert_eq!(queue(&stats, "export")["cancelled"], json!(1));
    let minutes = stats.body["throughput"].as_array().unwrap();
    assert!(
        minutes
            .iter()
            .any(|m| m["queue"] == json!("email") && m["failed"].as_i64().unwrap() >= 1),
        "{}",
        stats.body
    );

    // Retry over HTTP: pending again, due now, attempts reset.
    let r = act(&s, &admin, "retry", admin_id).await;
    r.assert_ok();
    assert_eq!(r.body["job"]["status"], json!("pending"));
    assert_eq!(r.body["job"]["attempts"], json!(0));
    assert_eq!(r.body["job"]["worker"], json!(null));

    // The CLI on the same data: stats, list, wrong ids and states, a retry and a cancel.
    let out = cli_ok(&s.cli(&["jobs", "stats"]));
    assert!(
        out.contains("QUEUE") && out.contains("export") && out.contains("expiry"),
        "{out}"
    );
    // `killed` is read as `cancelled` (the older word).
    let out = cli_ok(&s.cli(&["jobs", "list", "--queue", "email", "--status", "killed"]));
    assert!(out.contains(user_id), "{out}");
    assert!(!out.contains(admin_id), "{out}");
    let out = cli_ok(&s.cli(&["jobs", "show", admin_id]));
    assert!(
        out.contains("smtp") && out.contains("retrying") && out.contains("ATTEMPT"),
        "{out}"
    );
    let out = cli_ok(&s.cli(&["jobs", "show", &export]));
    assert!(out.contains(&export_job), "{out}");
    let err = cli_err(&s.cli(&["jobs", "retry", "01NOSUCHJOB"]));
    assert!(err.contains("no job with id"), "{err}");
    let err = cli_err(&s.cli(&["jobs", "cancel", user_id]));
    assert!(err.contains("cancelled"), "{err}");
    let err = cli_err(&s.cli(&["jobs", "list", "--queue", "nope"]));
    assert!(err.contains("unknown queue"), "{err}");
    let out = cli_ok(&s.cli(&["jobs", "retry", &export_job]));
    assert!(out.contains(&export_job), "{out}");
    // The export's row is pending again for its client.
    let client_view = s.get(&export_path, Some(&admin)).await;
    assert_eq!(
        client_view.body["status"],
        json!("pending"),
        "{}",
        client_view.body
    );
    let late_email = email("joblate");
    s.signup(&late_email).await;
    let late = email_job(&s, &admin, &late_email).await;
    let late_id = late["id"].as_str().unwrap();
    let out = cli_ok(&s.cli(&["jobs", "cancel", late_id]));
    assert!(out.contains("cancelled"), "{out}");

    // A working worker: the retried email is delivered and the export succeeds; the
    // cancelled emails never run.
    let _worker = Process::worker_env(&s, "ops", &[], &[]);
    s.wait_for_email(&admin_email, "?code=").await;
    let done = wait_job(&s, &admin, admin_id, |j| j["status"] == json!("succeeded")).await;
    assert_eq!(done["attempts"], json!(1), "{done}");
    assert_eq!(done["last_error"], json!(null));
    let finished = poll(&s, &export_path, &admin, ended).await;
    assert_eq!(finished["status"], json!("succeeded"), "{finished}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        s.emails_to(&user_email).is_empty(),
        "a cancelled email was sent"
    );
    assert!(
        s.emails_to(&late_email).is_empty(),
        "a cancelled email was sent"
    );
    for id in [user_id, late_id] {
        let j = job(&s, &admin, id).await;
        assert_eq!(j["status"], json!("cancelled"), "{j}");
        assert_eq!(j["attempts"], json!(0), "{j}");
    }
}

/// `PLINTH_JOB_RETENTION_DAYS`: the upkeep deletes finished jobs that ended longer ago;
/// newer ones, and jobs that may still run, stay. The expiry run is queued every second
/// here (the interval is 1 s), so done jobs appear by themselves; they are aged in SQL.
#[tokio::test]
async fn finished_jobs_past_the_retention_are_deleted() {
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_MONTHLY_INTERVAL_SECS", "1")
            .env("PLINTH_JOB_RETENTION_DAYS", "14"),
    )
    .await;
    let admin = s.admin(&email("retention")).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let done = jobs(&s, &admin, "?queue=expiry&status=succeeded&limit=500").await;
        if done.len() >= 4 {
            break done;
        }
        assert!(Instant::now() < deadline, "{} expiry jobs done", done.len());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let ids: Vec<String> = done.iter().map(id).collect();
    let (old, recent, retrying) = (&ids[..2], &ids[2], &ids[3]);
    let (table, days_ago): (&str, fn(u32) -> String) = if s.database_url.starts_with("postgres") {
        ("apalis.jobs", |d| format!("done_at - interval '{d} days'"))
    } else {
        ("Jobs", |d| format!("done_at - {d} * 86400"))
    };
    let quoted = |ids: &[String]| {
        ids.iter()
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let age = |ids: &[String], days: u32| {
        format!(
            "UPDATE {table} SET done_at = {} WHERE id IN ({})",
            days_ago(days),
            quoted(ids)
        )
    };
    // Failed with attempts left: apalis may run it again, so it is not finished. Status and
    // age change in one statement: the sweep runs every second and must never see this job
    // aged but still `Done`.
    s.sql(&format!(
        "UPDATE {table} SET status = 'Failed', attempts = 0, done_at = {} WHERE id = '{retrying}'",
        days_ago(15)
    ))
    .await;
    s.sql(&age(std::slice::from_ref(recent), 13)).await;
    s.sql(&age(old, 15)).await;

    let count =
        |ids: &[String]| format!("SELECT COUNT(*) FROM {table} WHERE id IN ({})", quoted(ids));
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.sql_count(&count(old)).await > 0 {
        assert!(
            Instant::now() < deadline,
            "jobs past the retention were kept"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(s.sql_count(&count(std::slice::from_ref(recent))).await, 1);
    assert_eq!(s.sql_count(&count(std::slice::from_ref(retrying))).await, 1);
    // Jobs that ended since are kept (the next expiry run may still be a second away:
    // the sweep can delete the aged ones before it), and the admin view no longer lists
    // the deleted.
    let deadline = Instant::now() + Duration::from_secs(20);
    let listed = loop {
        let listed: Vec<String> = jobs(&s, &admin, "?queue=expiry&limit=500")
            .await
            .iter()
            .map(id)
            .collect();
        if listed.len() > 2 || Instant::now() > deadline {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert!(listed.contains(recent) && listed.len() > 2, "{listed:?}");
    assert!(old.iter().all(|o| !listed.contains(o)), "{listed:?}");
}

/// Pausing a queue (`plinth jobs pause`, `POST /api/admin/queues/pause`): no worker of any
/// process starts its jobs until it is resumed; the process list shows every process
/// with its pools and workers; bulk actions cancel, retry and discard many jobs at once.
#[tokio::test]
async fn a_paused_queue_waits_in_every_process_and_bulk_actions_apply_to_many() {
    let s = Server::start().await;
    let admin = s.admin(&email("pauser")).await;
    let out = cli_ok(&s.cli(&["jobs", "pause", "export"]));
    assert!(out.contains("paused"), "{out}");
    let out = cli_ok(&s.cli(&["jobs", "pause", "export"]));
    assert!(out.contains("already"), "{out}");
    let stats = s.get("/api/admin/jobs/stats", Some(&admin)).await;
    assert_eq!(queue(&stats, "export")["paused"], json!(true));
    assert_eq!(queue(&stats, "email")["paused"], json!(false));
    // The serve process sees the pause within a second; a worker started now, at once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _worker = Process::worker(&s, "paused");
    let deck = id(&create_md(&s, &admin, "# Paused").await);
    let mut exports = Vec::new();
    for _ in 0..3 {
        exports.push(start_export(&s, &admin, &deck, "html").await);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for e in &exports {
        let v = s
            .get(
                &format!("/api/slides/jobs/{e}?deck_id={deck}"),
                Some(&admin),
            )
            .await;
        assert_eq!(v.body["status"], json!("pending"), "{}", v.body);
    }

    // Both processes are listed with their pools and workers.
    let deadline = Instant::now() + Duration::from_secs(15);
    let listed = loop {
        let r = s.get("/api/admin/workers", Some(&admin)).await;
        r.assert_ok();
        let procs = r.body["processes"].as_array().unwrap().clone();
        if procs.len() >= 2
            && procs
                .iter()
                .all(|p| !p["workers"].as_array().unwrap().is_empty())
        {
            break procs;
        }
        assert!(Instant::now() < deadline, "{}", r.body);
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let roles: Vec<&str> = listed.iter().map(|p| p["role"].as_str().unwrap()).collect();
    assert!(
        roles.contains(&"serve") && roles.contains(&"worker"),
        "{roles:?}"
    );
    for p in &listed {
        assert_eq!(p["alive"], json!(true), "{p}");
        assert!(p["pools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|pool| pool["queue"] == json!("export")));
        let export_workers: Vec<&Value> = p["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["queue"] == json!("export"))
            .collect();
        assert!(!export_workers.is_empty(), "{p}");
        assert!(export_workers.iter().all(|w| w["paused"] == json!(true)));
    }
    let out = cli_ok(&s.cli(&["jobs", "workers"]));
    assert!(
        out.contains("paused queues: export") && out.contains("plinth-worker"),
        "{out}"
    );

    // Bulk: cancel the three waiting exports by selection, retry them by their clients'
    // ids, and refuse what does not apply.
    let r = s
        .post(
            "/api/admin/jobs/bulk",
            Some(&admin),
            json!({"action": "cancel", "queue": "export", "status": "pending"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["changed"].as_array().unwrap().len(), 3, "{}", r.body);
    let r = s
        .post(
            "/api/admin/jobs/bulk",
            Some(&admin),
            json!({"action": "retry", "ids": [exports[0], exports[1], "01NOSUCHJOB0000000000000000"]}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["changed"].as_array().unwrap().len(), 2, "{}", r.body);
    assert_eq!(
        r.body["skipped"],
        json!([{"id": "01NOSUCHJOB0000000000000000", "status": null}])
    );
    for bad in [
        json!({"action": "explode", "ids": ["x"]}),
        json!({"action": "retry"}),
        json!({"action": "retry", "ids": []}),
    ] {
        s.post("/api/admin/jobs/bulk", Some(&admin), bad)
            .await
            .assert_error(400);
    }

    // Resumed over HTTP: the retried exports run.
    let r = s
        .post(
            "/api/admin/queues/resume",
            Some(&admin),
            json!({"queue": "export"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(
        r.body,
        json!({"_usage": r.body["_usage"], "queue": "export", "paused": false, "changed": true})
    );
    for e in &exports[..2] {
        let done = poll(
            &s,
            &format!("/api/slides/jobs/{e}?deck_id={deck}"),
            &admin,
            ended,
        )
        .await;
        assert_eq!(done["status"], json!("succeeded"), "{done}");
    }
    // Discard: finished jobs go with their records; the CLI takes a selection too.
    let out = cli_ok(&s.cli(&[
        "jobs",
        "discard",
        "--queue",
        "export",
        "--status",
        "cancelled",
    ]));
    assert!(out.contains("deleted"), "{out}");
    let r = s
        .get(&format!("/api/admin/jobs/{}", exports[2]), Some(&admin))
        .await;
    r.assert_error(404);
    // The queue's own record of a job ends a moment after the client's view of it (the
    // worker acknowledges after the export's row is written): discard takes jobs that
    // ended for good, so wait for the operator's view to end too.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let j = s
            .get(&format!("/api/admin/jobs/{}", exports[0]), Some(&admin))
            .await;
        if j.body["job"]["status"] == json!("succeeded") || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let err = cli_err(&s.cli(&[
        "jobs",
        "discard",
        &exports[0],
        "01NOSUCHJOB0000000000000000",
    ]));
    assert!(err.contains("no job with id"), "{err}");
    assert!(
        s.get(&format!("/api/admin/jobs/{}", exports[0]), Some(&admin))
            .await
            .status
            .as_u16()
            == 404
    );
}

/// A paused queue shows everywhere an operator looks (issue 45, O3/O4): `jobs pause`
/// says when it takes effect, `jobs stats` has a PAUSED column, `/metrics` has
/// `plinth_queue_paused{queue}`, and the backlog alert documented in docs/operations.md
/// fires for a stuck queue but not for a paused one (checked with promtool when it is
/// installed).
#[tokio::test]
async fn a_paused_queue_shows_in_stats_metrics_and_the_backlog_alert_skips_it() {
    const TOKEN: &str = "paused-metrics-token";
    let s = Server::start_with(Options::default().env("PLINTH_METRICS_TOKEN", TOKEN)).await;
    let out = cli_ok(&s.cli(&["jobs", "pause", "export"]));
    assert!(out.contains("within a second"), "{out}");

    let stats = cli_ok(&s.cli(&["jobs", "stats"]));
    let lines: Vec<&str> = stats.lines().collect();
    assert!(
        lines[0].split_whitespace().any(|w| w == "PAUSED"),
        "{stats}"
    );
    let row = |q: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(q))
            .unwrap_or_else(|| panic!("no {q} row: {stats}"))
            .split_whitespace()
            .last()
            .unwrap()
            .to_owned()
    };
    assert_eq!(row("export"), "yes", "{stats}");
    assert_eq!(row("email"), "-", "{stats}");

    let scrape = || async {
        let res = s
            .raw(reqwest::Method::GET, "/metrics")
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.text().await.unwrap()
    };
    let text = scrape().await;
    let paused = |text: &str, q: &str| {
        crate::common::metric_sample(text, "plinth_queue_paused", &[("queue", q)])
    };
    assert_eq!(paused(&text, "export"), Some(1.0), "{text}");
    assert_eq!(paused(&text, "email"), Some(0.0), "{text}");
    cli_ok(&s.cli(&["jobs", "resume", "export"]));
    let text = scrape().await;
    assert_eq!(paused(&text, "export"), Some(0.0), "{text}");
    let stats = cli_ok(&s.cli(&["jobs", "stats"]));
    assert!(!stats.contains(" yes"), "{stats}");

    // The documented rules, as an operator copies them, under promtool's rule tests.
    let Ok(version) = std::process::Command::new("promtool")
        .arg("--version")
        .output()
    else {
        eprintln!("skipped the alert rule check: promtool is not installed");
        return;
    };
    assert!(version.status.success());
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md"))
        .unwrap();
    let start = doc.find("```yaml\ngroups:").expect("the alert rules block") + "```yaml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rules.yml"), &doc[start..end]).unwrap();
    std::fs::write(
        dir.path().join("test.yml"),
        r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'plinth_queue_oldest_pending_seconds{queue="export", instance="a"}'
        values: '600+60x20'
      - series: 'plinth_queue_paused{queue="export", instance="a"}'
        values: '1x20'
      - series: 'plinth_queue_oldest_pending_seconds{queue="email", instance="a"}'
        values: '600+60x20'
      - series: 'plinth_queue_paused{queue="email", instance="a"}'
        values: '0x20'
    promql_expr_test:
      - expr: count by (queue) (ALERTS{alertname="PlinthQueueBacklog", alertstate="firing"})
        eval_time: 10m
        exp_samples:
          - labels: '{queue="email"}'
            value: 1
"#,
    )
    .unwrap();
    let out = std::process::Command::new("promtool")
        .args(["test", "rules", "test.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
