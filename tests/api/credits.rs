//! Credits: the ledger through the credit-account actors.

use serde_json::{json, Value};

use crate::common::{email, Server};

async fn funded(s: &Server, tag: &str) -> (String, String, String) {
    let addr = email(tag);
    let (key, user) = s.signup(&addr).await;
    let r = s
        .post(
            "/api/credits/distribute-bonus",
            Some(&key),
            json!({"bonusName": "welcome"}),
        )
        .await;
    r.assert_ok();
    (key, user["id"].as_str().unwrap().to_owned(), addr)
}

/// Sum of the balances; each one never negative.
async fn total(s: &Server, keys: &[String]) -> i64 {
    let mut sum = 0;
    for k in keys {
        let b = balance(s, k).await;
        assert!(b >= 0);
        sum += b;
    }
    sum
}

async fn balance(s: &Server, key: &str) -> i64 {
    let r = s.get("/api/credits/balance", Some(key)).await;
    r.assert_ok();
    r.body["balance"].as_i64().unwrap()
}

#[tokio::test]
async fn bonus_deduct_history_and_check() {
    let s = Server::start().await;
    let (key, _) = s.signup(&email("ledger")).await;
    assert_eq!(balance(&s, &key).await, 0);
    let r = s.get("/api/credits", Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["data"], json!([]));

    let r = s
        .post(
            "/api/credits/distribute-bonus",
            Some(&key),
            json!({"bonusName": "welcome"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["amount"], json!(100));
    assert_eq!(r.body["balance"], json!(100));
    let r = s
        .post(
            "/api/credits/distribute-bonus",
            Some(&key),
            json!({"bonusName": "welcome"}),
        )
        .await;
    assert_eq!(r.body["already_distributed"], json!(true));
    assert_eq!(r.body["amount"], json!(0));
    s.post(
        "/api/credits/distribute-bonus",
        Some(&key),
        json!({"bonusName": "free-money"}),
    )
    .await
    .assert_error(400);

    let r = s
        .post("/api/credits/deduct", Some(&key), json!({"credit": 30}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["balance"], json!(70));
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(70));
    for bad in [
        json!({"credit": 0}),
        json!({"credit": -5}),
        json!({"credit": "5"}),
        json!({"credit": 1.5}),
        json!({}),
    ] {
        s.post("/api/credits/deduct", Some(&key), bad)
            .await
            .assert_error(400);
    }
    let r = s
        .post("/api/credits/deduct", Some(&key), json!({"credit": 1000}))
        .await;
    r.assert_error(402);
    assert_eq!(r.body["tokens_required"], json!(1000));
    assert_eq!(r.body["tokens_balance"], json!(70));
    assert!(r.body["payment_url"].is_string());
    assert_eq!(balance(&s, &key).await, 70);

    let r = s.get("/api/credits?limit=1", Some(&key)).await;
    assert_eq!(r.body["total"], json!(2));
    assert_eq!(r.body["data"][0]["kind"], json!("deduct"));
    assert_eq!(r.body["data"][0]["amount"], json!(-30));
    assert_eq!(r.body["data"][0]["balance_after"], json!(70));

    let account_id = s.get("/api/credits/balance", Some(&key)).await.body["account_id"].clone();
    let r = s
        .post("/api/credits/check", Some(&key), json!({"id": account_id}))
        .await;
    assert_eq!(r.body["valid"], json!(true));
    let (other, _) = s.signup(&email("other")).await;
    let r = s
        .post(
            "/api/credits/check",
            Some(&other),
            json!({"id": account_id}),
        )
        .await;
    assert_eq!(r.body["valid"], json!(false));
    let r = s
        .post("/api/credits/check", Some(&other), json!({"id": "nope"}))
        .await;
    assert_eq!(r.body["valid"], json!(false));
}

#[tokio::test]
async fn send_moves_tokens_atomically() {
    let s = Server::start().await;
    let (a, _, _) = funded(&s, "alice").await;
    let (b, b_id, b_email) = funded(&s, "bob").await;
    let name = format!("bob{}", &b_id[..6]);
    s.post(
        "/api/users/update-viewer-username",
        Some(&b),
        json!({"username": name}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/credits/send",
            Some(&a),
            json!({"amount": 40, "username": name}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["balance"], json!(60));
    assert_eq!(balance(&s, &b).await, 140);
    let r = s
        .post(
            "/api/credits/send",
            Some(&a),
            json!({"amount": 10, "email": b_email}),
        )
        .await;
    r.assert_ok();
    assert_eq!(balance(&s, &b).await, 150);
    assert_eq!(balance(&s, &a).await, 50);

    s.post(
        "/api/credits/send",
        Some(&a),
        json!({"amount": 51, "email": b_email}),
    )
    .await
    .assert_error(402);
    s.post(
        "/api/credits/send",
        Some(&a),
        json!({"amount": 0, "email": b_email}),
    )
    .await
    .assert_error(400);
    s.post("/api/credits/send", Some(&a), json!({"amount": 5}))
        .await
        .assert_error(400);
    s.post(
        "/api/credits/send",
        Some(&a),
        json!({"amount": 5, "email": email("ghost")}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/credits/send",
        Some(&b),
        json!({"amount": 5, "username": name}),
    )
    .await
    .assert_error(400);
    assert_eq!(balance(&s, &a).await + balance(&s, &b).await, 200);
    let h = s.get("/api/credits", Some(&b)).await;
    assert_eq!(h.body["data"][0]["kind"], json!("transfer_in"));
}

#[tokio::test]
async fn concurrent_sends_keep_the_total_and_deducts_never_overdraw() {
    let s = Server::start().await;
    let mut accounts = Vec::new();
    for i in 0..10 {
        accounts.push(funded(&s, &format!("c{i}")).await);
    }
    let keys: Vec<String> = accounts.iter().map(|a| a.0.clone()).collect();
    assert_eq!(total(&s, &keys).await, 1000);
    let mut tasks = Vec::new();
    for i in 0..50usize {
        let from = accounts[i % 10].0.clone();
        let to = accounts[(i * 7 + 3) % 10].2.clone();
        let base = s.base.clone();
        tasks.push(tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}/api/credits/send"))
                .header("x-api-key", from)
                .json(&json!({"amount": 30 + (i as i64 % 5) * 10, "email": to}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    for t in tasks {
        let status = t.await.unwrap();
        assert!(status == 200 || status == 402 || status == 400, "{status}");
    }
    assert_eq!(total(&s, &keys).await, 1000);

    // 30 concurrent deducts of 7 from 100: exactly 14 succeed.
    let (key, _, _) = funded(&s, "hot").await;
    let mut tasks = Vec::new();
    for _ in 0..30 {
        let key = key.clone();
        let base = s.base.clone();
        tasks.push(tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}/api/credits/deduct"))
                .header("x-api-key", key)
                .json(&json!({"credit": 7}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            200 => ok += 1,
            402 => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok, 14);
    assert_eq!(balance(&s, &key).await, 2);
}

#[tokio::test]
async fn admin_distributions_and_balances() {
    let s = Server::start().await;
    let admin = s.admin(&email("admin")).await;
    let addr = email("paying");
    let key = s.verified_user(&addr).await;
    let id = s.get("/api/users/viewer", Some(&key)).await.body["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let r = s
        .post(
            "/api/credits/get-balance-by-email",
            Some(&admin),
            json!({"email": addr}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["balance"], json!(0));
    s.post(
        "/api/credits/get-balance-by-email",
        Some(&admin),
        json!({"email": email("none")}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/credits/get-balance-by-user-id",
        Some(&key),
        json!({"id": id}),
    )
    .await
    .assert_error(403);

    let r = s
        .post(
            "/api/credits/create-account-by-user-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["created"],
        json!(false),
        "every user already has one"
    );
    s.post(
        "/api/credits/create-account-by-user-id",
        Some(&admin),
        json!({"id": "nope"}),
    )
    .await
    .assert_error(404);

    // VERIFIED has no monthly credits; PAYING has 1500, once per month.
    let r = s
        .post(
            "/api/credits/distribute-to-user-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["amount"], json!(0));
    assert!(s.set_level(&addr, 20).status.success());
    let r = s
        .post(
            "/api/credits/distribute-to-user-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    assert_eq!(r.body["amount"], json!(1500));
    assert_eq!(r.body["already_distributed"], json!(false));
    let r = s
        .post(
            "/api/credits/distribute-to-user-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    assert_eq!(r.body["amount"], json!(0));
    assert_eq!(r.body["already_distributed"], json!(true));

    let v = |reference: Value| json!({"email": addr, "vendorId": "v1", "amount_cents": 250, "reference": reference});
    let r = s
        .post(
            "/api/credits/vendor-distribution-to-email",
            Some(&admin),
            v(json!("payout-1")),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["tokens"], json!(250));
    let r = s
        .post(
            "/api/credits/vendor-distribution-to-email",
            Some(&admin),
            v(json!("payout-1")),
        )
        .await;
    assert_eq!(r.body["already_distributed"], json!(true));
    s.post(
        "/api/credits/vendor-distribution-to-email",
        Some(&admin),
        json!({"email": addr, "vendorId": "v1", "amount_cents": -1}),
    )
    .await
    .assert_error(400);
    let r = s
        .post(
            "/api/credits/get-balance-by-user-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    assert_eq!(r.body["balance"], json!(1750));
}

#[tokio::test]
async fn the_monthly_schedule_pays_paying_tiers_once() {
    let s = Server::start_with(
        crate::common::Options::default().env("PLINTH_MONTHLY_INTERVAL_SECS", "1"),
    )
    .await;
    let addr = email("scheduled");
    let key = s.verified_user(&addr).await;
    assert!(s.set_level(&addr, 30).status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while balance(&s, &key).await != 45000 {
        assert!(
            std::time::Instant::now() < deadline,
            "no scheduled allotment"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // Later runs in the same month add nothing.
    tokio::time::sleep(std::time::Duration::from_millis(6500)).await;
    assert_eq!(balance(&s, &key).await, 45000);
    let h = s.get("/api/credits", Some(&key)).await;
    assert_eq!(h.body["total"], json!(1));
    assert_eq!(h.body["data"][0]["kind"], json!("monthly"));
}

#[tokio::test]
async fn store_transactions_are_credited_once_ever() {
    let s = Server::start().await;
    let (key, _) = s.signup(&email("buyer")).await;
    let (other, _) = s.signup(&email("thief")).await;
    let path = "/api/credits/verify-apple-transaction-distritbution";
    let r = s
        .post(
            path,
            Some(&key),
            json!({"transactionId": "sim-tokens_1000-2000000123"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["tokens"], json!(1000));
    assert_eq!(balance(&s, &key).await, 1000);
    let r = s
        .post(
            path,
            Some(&key),
            json!({"transactionId": "sim-tokens_1000-2000000123"}),
        )
        .await;
    assert_eq!(r.body["already_distributed"], json!(true));
    s.post(
        path,
        Some(&other),
        json!({"transactionId": "sim-tokens_1000-2000000123"}),
    )
    .await
    .assert_error(409);
    s.post(path, Some(&key), json!({"transactionId": "forged"}))
        .await
        .assert_error(404);
    s.post(path, Some(&key), json!({"transactionId": "sim-tokens_9-1"}))
        .await
        .assert_error(400);
    assert_eq!(balance(&s, &key).await, 1000);
    assert_eq!(balance(&s, &other).await, 0);
}

#[tokio::test]
async fn sends_answered_200_survive_a_kill_9_and_the_total_holds() {
    let mut s = Server::start().await;
    let mut accounts = Vec::new();
    for i in 0..6 {
        accounts.push(funded(&s, &format!("k{i}")).await);
    }
    let keys: Vec<String> = accounts.iter().map(|a| a.0.clone()).collect();
    assert_eq!(total(&s, &keys).await, 600);

    let mut tasks = Vec::new();
    for i in 0..120usize {
        let (from, _, _) = accounts[i % 6].clone();
        let to = accounts[(i + 1 + i / 6) % 6].2.clone();
        let base = s.base.clone();
        tasks.push(tokio::spawn(async move {
            let res = reqwest::Client::new()
                .post(format!("{base}/api/credits/send"))
                .header("x-api-key", &from)
                .json(&json!({"amount": 3, "email": to}))
                .send()
                .await;
            match res {
                Ok(r) if r.status() == 200 => {
                    let v: Value = r.json().await.unwrap_or(Value::Null);
                    Some((from, v["transaction_id"].as_str().map(str::to_owned)))
                }
                _ => None,
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    s.restart(); // kill -9 in the middle of the burst, then start again
    let mut answered = Vec::new();
    for t in tasks {
        if let Some(ok) = t.await.unwrap() {
            answered.push(ok);
        }
    }
    assert_eq!(
        total(&s, &keys).await,
        600,
        "transfers never create or destroy tokens"
    );
    for (key, tx) in answered {
        let tx = tx.expect("a 200 answer names its ledger row");
        let h = s.get("/api/credits?limit=200", Some(&key)).await;
        let ids: Vec<_> = h.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].clone())
            .collect();
        assert!(
            ids.contains(&json!(tx)),
            "answered send {tx} is missing from the ledger"
        );
    }
}
