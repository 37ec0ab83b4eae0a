//! Issue 17, the request path across processes: rate windows shared through PostgreSQL,
//! the client address behind trusted proxies, and cached keys, levels, KV entries and
//! posts dropped on every process within a second of a change (LISTEN/NOTIFY).
//!
//! The cross-process scenarios need PostgreSQL (`PLINTH_TEST_DATABASE_URL`): on SQLite
//! there is one host and the caches' 5 s expiry is the bound, so they skip saying so.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::{post_to, Process};
use crate::common::{email, pg_admin_url, Options, Resp, Server};

async fn get_from(base: &str, path: &str, key: Option<&str>, forwarded: Option<&str>) -> Resp {
    let mut req = reqwest::Client::new().get(format!("{base}{path}"));
    if let Some(k) = key {
        req = req.header("x-api-key", k);
    }
    if let Some(f) = forwarded {
        req = req.header("x-forwarded-for", f);
    }
    Server::read(req.send().await.expect("request")).await
}

fn needs_postgres(test: &str) -> bool {
    if pg_admin_url().is_none() {
        eprintln!("skipping {test}: cross-process invalidation and shared rate windows need PostgreSQL (PLINTH_TEST_DATABASE_URL)");
        return false;
    }
    true
}

/// Polls `check` until it holds, for at most `within`; returns how long it took.
async fn within<F, Fut>(within: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "{what}: not seen within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn forwarded_addresses_count_only_from_trusted_proxies() {
    // Anonymous reads: 120 a minute per client address.
    let trusting = Server::start_with(
        Options::default()
            .env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")
            .env("PLINTH_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1"),
    )
    .await;
    let b = &trusting.base;
    for _ in 0..120 {
        get_from(b, "/api/status", None, Some("198.51.100.1"))
            .await
            .assert_ok();
    }
    let r = get_from(b, "/api/status", None, Some("198.51.100.1")).await;
    r.assert_error(429);
    // Another client behind the same proxy has its own window; a forged first entry does
    // not move the client off its real address.
    get_from(b, "/api/status", None, Some("198.51.100.2"))
        .await
        .assert_ok();
    get_from(b, "/api/status", None, Some("203.0.113.9, 198.51.100.1"))
        .await
        .assert_error(429);

    // From a peer that is not trusted the header is ignored: one window for everyone.
    let plain =
        Server::start_with(Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    for i in 0..120 {
        let who = format!("198.51.100.{}", i % 200);
        get_from(&plain.base, "/api/status", None, Some(&who))
            .await
            .assert_ok();
    }
    get_from(&plain.base, "/api/status", None, Some("192.0.2.77"))
        .await
        .assert_error(429);
}

#[tokio::test]
async fn a_rate_limit_holds_across_three_processes() {
    if !needs_postgres("a_rate_limit_holds_across_three_processes") {
        return;
    }
    let one = [
        ("PLINTH_RATE_LIMIT_MULTIPLIER", "1"),
        ("PLINTH_RATE_STORE", "postgres"),
    ];
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")
            .env("PLINTH_RATE_STORE", "postgres"),
    )
    .await;
    let (p2, p3) = (Process::serve(&s, &one), Process::serve(&s, &one));
    let bases = [
        s.base.clone(),
        p2.base.clone().unwrap(),
        p3.base.clone().unwrap(),
    ];
    // 3R anonymous reads (R = 120 a minute), spread round-robin, 24 at a time.
    let mut answers = Vec::new();
    for chunk in (0..360).collect::<Vec<usize>>().chunks(24) {
        let sends = chunk
            .iter()
            .map(|i| get_from(&bases[i % 3], "/api/status", None, None));
        answers.extend(futures::future::join_all(sends).await);
    }
    let allowed = answers.iter().filter(|r| r.status == 200).count();
    let refused: Vec<&Resp> = answers.iter().filter(|r| r.status == 429).collect();
    assert_eq!(allowed + refused.len(), 360, "only 200s and 429s");
    // At most R; the harness's own start-up requests may have used a few.
    assert!(
        (110..=120).contains(&allowed),
        "{allowed} allowed of a limit of 120"
    );
    for r in refused {
        assert!(r.body["retry_after_ms"].as_u64().unwrap() > 0, "{}", r.body);
    }
    // Every process agrees the window is full.
    for b in &bases {
        get_from(b, "/api/status", None, None)
            .await
            .assert_error(429);
    }
}

#[tokio::test]
async fn changes_reach_every_process_within_a_second() {
    if !needs_postgres("changes_reach_every_process_within_a_second") {
        return;
    }
    let s = Server::start().await;
    let (p2, p3) = (Process::serve(&s, &[]), Process::serve(&s, &[]));
    let others = [p2.base.clone().unwrap(), p3.base.clone().unwrap()];
    let second = Duration::from_secs(1);

    // A regenerated key: the old one is refused everywhere, the new one works.
    let old = s.verified_user(&email("regen")).await;
    for b in &others {
        get_from(b, "/api/users/viewer", Some(&old), None)
            .await
            .assert_ok(); // cached now
    }
    let r = s
        .post("/api/users/regenerate-key", Some(&old), json!({}))
        .await;
    r.assert_ok();
    let new = r.body["key"].as_str().unwrap().to_owned();
    for b in &others {
        let took = within(second, "old key refused", || async {
            get_from(b, "/api/users/viewer", Some(&old), None)
                .await
                .status
                == 401
        })
        .await;
        eprintln!("old key refused on {b} after {took:?}");
        get_from(b, "/api/users/viewer", Some(&new), None)
            .await
            .assert_ok();
    }

    // A level taken away by the CLI (another process): admin routes refuse at once.
    let admin_email = email("demoted");
    let admin = s.admin(&admin_email).await;
    for b in &others {
        get_from(b, "/api/kv/namespaces", Some(&admin), None)
            .await
            .assert_ok();
    }
    assert!(s.set_level(&admin_email, 10).status.success());
    for b in &others {
        within(second, "demoted admin refused", || async {
            get_from(b, "/api/kv/namespaces", Some(&admin), None)
                .await
                .status
                == 403
        })
        .await;
    }

    // A KV entry updated on one process is read anew on the others.
    let kv_admin = s.admin(&email("kvadmin")).await;
    let ns = format!("ns-{}", uuid::Uuid::new_v4().simple());
    s.post(
        "/api/kv/namespaces/create",
        Some(&kv_admin),
        json!({"namespace": ns}),
    )
    .await
    .assert_ok();
    let entry = |value: &str| json!({"namespace": ns, "key": "K", "value": value});
    s.post("/api/kv/entries/create", Some(&kv_admin), entry("v1"))
        .await
        .assert_ok();
    let get = json!({"namespace": ns, "key": "K"});
    for b in &others {
        let r = post_to(b, "/api/kv/entries/get", &kv_admin, &get).await;
        assert_eq!(r.body["data"]["value"], "v1", "{}", r.body);
    }
    s.post("/api/kv/entries/update", Some(&kv_admin), entry("v2"))
        .await
        .assert_ok();
    for b in &others {
        within(second, "updated KV value", || async {
            post_to(b, "/api/kv/entries/get", &kv_admin, &get)
                .await
                .body["data"]["value"]
                == "v2"
        })
        .await;
    }
    s.post("/api/kv/entries/delete", Some(&kv_admin), get.clone())
        .await
        .assert_ok();
    for b in &others {
        within(second, "deleted KV entry", || async {
            post_to(b, "/api/kv/entries/get", &kv_admin, &get)
                .await
                .status
                == 404
        })
        .await;
    }

    // A post unpublished on one process stops being served by slug on the others.
    let author = s.verified_user(&email("author")).await;
    let slug = format!("cached-{}", uuid::Uuid::new_v4().simple());
    let r = s
        .post(
            "/api/posts/create",
            Some(&author),
            json!({"type": "GENERAL", "slug": slug, "fields": {"public": true, "title": "Hi"}}),
        )
        .await;
    r.assert_ok();
    let id: Value = r.body["data"]["id"].clone();
    let path = format!("/api/posts/public/{slug}");
    for b in &others {
        get_from(b, &path, None, None).await.assert_ok();
    }
    s.post(
        "/api/posts/update",
        Some(&author),
        json!({"id": id, "updates": {"data": {"public": false}}}),
    )
    .await
    .assert_ok();
    for b in &others {
        within(second, "unpublished post hidden", || async {
            get_from(b, &path, None, None).await.status == 404
        })
        .await;
    }
}

#[tokio::test]
async fn money_stays_exact_across_three_processes() {
    if !needs_postgres("money_stays_exact_across_three_processes") {
        return;
    }
    // The shape: three `serve --no-workers` and two `worker` processes (the
    // workers deliver the verification emails).
    let s = Server::start_with(Options::default().env("PLINTH_NO_WORKERS", "true")).await;
    let (p2, p3) = (Process::serve(&s, &[]), Process::serve(&s, &[]));
    let _workers = (Process::worker(&s, "wa"), Process::worker(&s, "wb"));
    let bases = [
        s.base.clone(),
        p2.base.clone().unwrap(),
        p3.base.clone().unwrap(),
    ];

    // 300 deducts of 1 from a balance of 100, round-robin, 30 at a time: exactly 100 pass.
    let hot = s.funded_user(&email("hot")).await;
    let mut statuses = Vec::new();
    let one = json!({"credit": 1});
    for chunk in (0..300).collect::<Vec<usize>>().chunks(30) {
        let sends = chunk
            .iter()
            .map(|i| post_to(&bases[i % 3], "/api/credits/deduct", &hot, &one));
        statuses.extend(
            futures::future::join_all(sends)
                .await
                .into_iter()
                .map(|r| r.status.as_u16()),
        );
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        100,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 402).count(),
        200,
        "{statuses:?}"
    );

    // Random transfers between six accounts, in both directions, over every process.
    let mut users = Vec::new();
    for i in 0..6 {
        let mail = email(&format!("t{i}"));
        users.push((s.funded_user(&mail).await, mail));
    }
    let mut seed = 0x2545_f491_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let transfers: Vec<(usize, usize, u64)> = (0..150)
        .map(|_| {
            let from = next(6) as usize;
            (from, (from + 1 + next(5) as usize) % 6, 1 + next(40))
        })
        .collect();
    let mut answers = Vec::new();
    for (n, chunk) in transfers.chunks(30).enumerate() {
        let bodies: Vec<Value> = chunk
            .iter()
            .map(|(_, to, amount)| json!({"amount": amount, "email": users[*to].1}))
            .collect();
        let sends = chunk
            .iter()
            .zip(&bodies)
            .enumerate()
            .map(|(i, ((from, _, _), body))| {
                post_to(
                    &bases[(n + i) % 3],
                    "/api/credits/send",
                    &users[*from].0,
                    body,
                )
            });
        answers.extend(futures::future::join_all(sends).await);
    }
    for r in &answers {
        assert!(
            [200, 402].contains(&r.status.as_u16()),
            "{} {}",
            r.status,
            r.body
        );
    }
    assert!(answers.iter().any(|r| r.status == 200));
    // Conserved, never negative, and every balance is the sum of its ledger.
    assert_eq!(
        s.sql_count("SELECT CAST(SUM(balance) AS BIGINT) FROM credit_accounts")
            .await,
        600, // six accounts of 100; the hot one spent its 100
        "total after transfers"
    );
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM credit_accounts WHERE balance < 0")
            .await,
        0
    );
    assert_eq!(
        s.sql_count(
            "SELECT COUNT(*) FROM credit_accounts a WHERE a.balance <> \
             (SELECT COALESCE(SUM(t.amount), 0) FROM credit_transactions t WHERE t.account_id = a.id)"
        )
        .await,
        0,
        "a balance that is not the sum of its ledger"
    );
}

/// Security round 2: with `PLINTH_RATE_STORE` at its default (`local`), the `auth`
/// category (sign-in, resets, verification mail, token exchange) is still counted in the
/// shared store on PostgreSQL, so a brute-force client gains nothing from reaching more
/// processes: 12 sign-ups spread over 2 processes allow the 5 of one window.
#[tokio::test]
async fn the_sign_in_window_holds_across_processes_by_default() {
    if !needs_postgres("the_sign_in_window_holds_across_processes_by_default") {
        return;
    }
    let s = Server::start_with(Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    let second = Process::serve(&s, &[("PLINTH_RATE_LIMIT_MULTIPLIER", "1")]);
    let bases = [s.base.clone(), second.base.clone().unwrap()];
    let mut allowed = 0;
    for i in 0..12 {
        let r = Server::read(
            reqwest::Client::new()
                .post(format!("{}/api/users/authenticate", bases[i % 2]))
                .json(&json!({"email": email(&format!("brute{i}")), "password": "guess"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        match r.status.as_u16() {
            200 => allowed += 1,
            429 => {}
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert_eq!(allowed, 5, "one window of 5 over both processes");
    // Reads stay each process's own (local leases): both still answer.
    for base in &bases {
        get_from(base, "/api/status", None, None).await.assert_ok();
    }
}
