//! Issue 34, "idempotency everywhere it is promised": the `Idempotency-Key` header is the
//! same key as a slide route's body `idempotency_key` (both, different: 400), a repeat is
//! replayed (one job, not two), and a replay uses up no rate window.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};
use crate::slide_helpers::{create_md, id};

async fn export(s: &Server, key: &str, body: Value, idem: Option<&str>) -> crate::common::Resp {
    let mut req = s
        .raw(reqwest::Method::POST, "/api/slides/exports/create")
        .header("x-api-key", key)
        .json(&body);
    if let Some(k) = idem {
        req = req.header("Idempotency-Key", k);
    }
    Server::read(req.send().await.unwrap()).await
}

#[tokio::test]
async fn the_header_is_the_body_key_and_a_replay_costs_no_rate_window() {
    // Base limits: a verified account may export 6 times a minute.
    let s = Server::start_with(Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    let key = s.verified_user(&email("idem")).await;
    let deck = id(&create_md(&s, &key, "# Keys").await);
    let body = json!({"deck_id": deck, "format": "html"});

    // The same header twice: one job, the second answer a replay.
    let first = export(&s, &key, body.clone(), Some("export-1")).await;
    first.assert_ok();
    assert_eq!(first.header("idempotent-replayed"), None);
    let job = id(&first.body);
    for _ in 0..8 {
        let again = export(&s, &key, body.clone(), Some("export-1")).await;
        again.assert_ok();
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(id(&again.body), job);
        assert_eq!(
            again.header("location"),
            first.header("location"),
            "a replay answers Location too"
        );
    }
    // The body's key is the same key.
    let mut with_body_key = body.clone();
    with_body_key["idempotency_key"] = json!("export-1");
    let again = export(&s, &key, with_body_key.clone(), None).await;
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(id(&again.body), job);
    let again = export(&s, &key, with_body_key.clone(), Some("export-1")).await;
    assert_eq!(id(&again.body), job);
    // Different values: 400, naming both.
    let r = export(&s, &key, with_body_key, Some("export-2")).await;
    r.assert_error(400);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("Idempotency-Key"));
    // The same key with another request: 422.
    let r = export(
        &s,
        &key,
        json!({"deck_id": deck, "format": "pdf"}),
        Some("export-1"),
    )
    .await;
    r.assert_error(422);
    let jobs = s
        .sql_count(&format!(
            "SELECT COUNT(*) FROM slide_jobs WHERE deck_id = '{deck}'"
        ))
        .await;
    assert_eq!(jobs, 1, "one export for one key");

    // Ten replays later the window still holds three more exports: only the first
    // export, the 400 and the 422 were counted (6 - 3).
    for n in 0..3 {
        let r = export(&s, &key, body.clone(), Some(&format!("more-{n}"))).await;
        r.assert_ok();
        assert_eq!(r.header("idempotent-replayed"), None);
    }
    let r = export(&s, &key, body.clone(), Some("one-too-many")).await;
    r.assert_error(429);
    // A replay still answers while the window is full.
    let again = export(&s, &key, body.clone(), Some("export-1")).await;
    again.assert_ok();
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
}

#[tokio::test]
async fn every_mutating_slide_route_takes_the_header() {
    let s = Server::start().await;
    let key = s.verified_user(&email("idemall")).await;
    // create, by header: the same deck twice.
    let create = |k: &'static str| {
        let (s, key) = (&s, key.clone());
        async move {
            Server::read(
                s.raw(reqwest::Method::POST, "/api/slides/create")
                    .header("x-api-key", key)
                    .header("Idempotency-Key", k)
                    .json(&json!({"markdown": "# Once"}))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let a = create("deck-1").await;
    a.assert_ok();
    let b = create("deck-1").await;
    assert_eq!(b.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(a.body["id"], b.body["id"]);
    let deck = id(&a.body);
    // update by header, then publish by header (a render first).
    let update = |k: &'static str| {
        let (s, key, deck) = (&s, key.clone(), deck.clone());
        async move {
            Server::read(
                s.raw(reqwest::Method::POST, "/api/slides/update")
                    .header("x-api-key", key)
                    .header("Idempotency-Key", k)
                    .json(&json!({"id": deck, "expected_version": 1, "markdown": "# Twice"}))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let u1 = update("update-1").await;
    u1.assert_ok();
    let u2 = update("update-1").await;
    u2.assert_ok();
    assert_eq!(u2.header("idempotent-replayed").as_deref(), Some("true"));
    let v = s.get(&format!("/api/slides/{deck}"), Some(&key)).await;
    assert_eq!(
        v.body["version"],
        json!(2),
        "one update, not two: {}",
        v.body
    );
    // A header that is not a key: 400.
    let r = Server::read(
        s.raw(reqwest::Method::POST, "/api/slides/update")
            .header("x-api-key", &key)
            .header("Idempotency-Key", "x".repeat(300))
            .json(&json!({"id": deck, "expected_version": 2, "markdown": "# Three"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    r.assert_error(400);
}

async fn keyed_post(
    s: &Server,
    path: &str,
    key: &str,
    idem: &str,
    body: Value,
) -> crate::common::Resp {
    let req = s
        .raw(reqwest::Method::POST, path)
        .header("x-api-key", key)
        .header("Idempotency-Key", idem)
        .json(&body);
    Server::read(req.send().await.unwrap()).await
}

async fn balance_of(s: &Server, key: &str) -> i64 {
    let r = s.get("/api/credits/balance", Some(key)).await;
    r.assert_ok();
    r.body["balance"].as_i64().unwrap()
}

/// Issue 36, safe retries for money: `credits/deduct`, `credits/send` and the
/// distributions take `Idempotency-Key`. A retry with the same key and body replays the
/// first answer (same transaction id) and moves nothing; another body under the key is a
/// 422; without a key every call moves tokens, as the spec's bodies always did.
#[tokio::test]
async fn credit_changes_under_one_key_move_tokens_once() {
    let s = Server::start().await;
    let from_addr = email("money");
    let key = s.funded_user(&from_addr).await;
    let to_addr = email("money-to");
    let to = s.funded_user(&to_addr).await;
    assert_eq!(balance_of(&s, &key).await, 100);

    let first = keyed_post(&s, "/api/credits/deduct", &key, "d-1", json!({"credit": 7})).await;
    first.assert_ok();
    assert_eq!(first.body["balance"], json!(93));
    assert_eq!(first.header("idempotent-replayed"), None);
    for _ in 0..3 {
        let again = keyed_post(&s, "/api/credits/deduct", &key, "d-1", json!({"credit": 7})).await;
        again.assert_ok();
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(again.body["transaction_id"], first.body["transaction_id"]);
        assert_eq!(again.body["balance"], json!(93));
    }
    assert_eq!(balance_of(&s, &key).await, 93);
    // The same key with another body, or on another route: 422, nothing moved.
    let other = keyed_post(&s, "/api/credits/deduct", &key, "d-1", json!({"credit": 8})).await;
    other.assert_error(422);
    let send = json!({"amount": 5, "email": to_addr});
    let other = keyed_post(&s, "/api/credits/send", &key, "d-1", send.clone()).await;
    other.assert_error(422);
    assert_eq!(balance_of(&s, &key).await, 93);

    // A send under a key: once, and the recipient is paid once.
    let sent = keyed_post(&s, "/api/credits/send", &key, "s-1", send.clone()).await;
    sent.assert_ok();
    let again = keyed_post(&s, "/api/credits/send", &key, "s-1", send.clone()).await;
    again.assert_ok();
    assert_eq!(again.body["transaction_id"], sent.body["transaction_id"]);
    assert_eq!(balance_of(&s, &key).await, 88);
    assert_eq!(balance_of(&s, &to).await, 105);
    // The recipient may use the same key for its own send: keys belong to their caller.
    let back = json!({"amount": 1, "email": from_addr});
    let r = keyed_post(&s, "/api/credits/send", &to, "s-1", back).await;
    r.assert_ok();
    assert_eq!(balance_of(&s, &to).await, 104);

    // A bonus under a key replays its first answer (amount paid), not "already paid".
    let bonus = json!({"bonusName": "welcome"});
    let b = keyed_post(
        &s,
        "/api/credits/distribute-bonus",
        &key,
        "b-1",
        bonus.clone(),
    )
    .await;
    b.assert_ok();
    assert_eq!(b.body["already_distributed"], json!(true));
    let b2 = keyed_post(&s, "/api/credits/distribute-bonus", &key, "b-1", bonus).await;
    assert_eq!(b2.header("idempotent-replayed").as_deref(), Some("true"));

    // Without a key, the spec's bodies work as always: each call deducts.
    for _ in 0..2 {
        s.post("/api/credits/deduct", Some(&key), json!({"credit": 1}))
            .await
            .assert_ok();
    }
    assert_eq!(balance_of(&s, &key).await, 87);

    // An administrator's vendor distribution without a `reference`: once per key.
    let admin = s.admin(&email("money-admin")).await;
    let vendor = json!({"email": to_addr, "vendorId": "v1", "amount_cents": 30});
    let v = keyed_post(
        &s,
        "/api/credits/vendor-distribution-to-email",
        &admin,
        "v-1",
        vendor.clone(),
    )
    .await;
    v.assert_ok();
    assert_eq!(v.body["tokens"], json!(30));
    let v2 = keyed_post(
        &s,
        "/api/credits/vendor-distribution-to-email",
        &admin,
        "v-1",
        vendor,
    )
    .await;
    assert_eq!(v2.body["tokens"], json!(30));
    assert_eq!(balance_of(&s, &to).await, 134);
}
