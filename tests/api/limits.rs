//! Rate limits (fixed windows per category and caller) and token costs.

use serde_json::json;

use crate::common::{email, Options, Server};

fn unthrottled() -> Options {
    Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")
}

#[tokio::test]
async fn auth_category_allows_five_then_429_with_retry_after() {
    let s = Server::start_with(unthrottled()).await;
    let mut last_remaining = None;
    // Two different auth endpoints share one counter.
    for i in 0..5 {
        let r = if i % 2 == 0 {
            s.post("/api/users/verify", None, json!({"code": "nope"}))
                .await
        } else {
            s.post(
                "/api/users/authenticate",
                None,
                json!({"email": "bad", "password": "x"}),
            )
            .await
        };
        // An unknown code names nothing (404); a malformed email is a 400.
        r.assert_error(if i % 2 == 0 { 404 } else { 400 });
        assert_eq!(r.body["_usage"]["rate_limit"]["limit"], json!(5));
        let rem = r.body["_usage"]["rate_limit"]["remaining"]
            .as_u64()
            .unwrap();
        assert_eq!(rem, 4 - i);
        last_remaining = Some(rem);
    }
    assert_eq!(last_remaining, Some(0));
    let r = s
        .post("/api/users/verify", None, json!({"code": "nope"}))
        .await;
    r.assert_error(429);
    let retry = r.body["retry_after_ms"].as_u64().unwrap();
    assert!(retry > 0 && retry <= 60_000, "{retry}");
    let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&secs));
    // Which window is full, whose, and when it reopens (issue 45).
    assert_eq!(r.body["window"], json!("auth"));
    assert_eq!(r.body["limit"], json!(5));
    assert_eq!(r.body["interval_ms"], json!(60000));
    let reopens = chrono::DateTime::parse_from_rfc3339(r.body["reopens_at"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    let ahead = (reopens - chrono::Utc::now()).num_milliseconds();
    assert!((-2_000..=61_000).contains(&ahead), "{ahead}");
    let message = r.body["message"].as_str().unwrap();
    for needle in [
        "`auth` window",
        "client address",
        "5 requests per 60 s",
        "reopens in",
    ] {
        assert!(message.contains(needle), "{message}");
    }

    // Other categories have their own windows.
    s.get("/api/status", None).await.assert_ok();
}

#[tokio::test]
async fn limits_scale_with_the_tier_and_follow_the_key() {
    let s = Server::start_with(unthrottled().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    // Sign-ups share the IP's auth window: two of them (the multiplier is 1).
    let (k0, _) = s.signup(&email("t0")).await;
    let r = s.get("/api/users/viewer", Some(&k0)).await;
    assert_eq!(r.body["_usage"]["rate_limit"]["limit"], json!(120));
    assert_eq!(r.body["_usage"]["rate_limit"]["interval_ms"], json!(60000));
    let before = r.body["_usage"]["rate_limit"]["remaining"]
        .as_u64()
        .unwrap();
    // The key has its own window, apart from anonymous requests from the same IP.
    s.get("/api/status", None).await;
    let r = s.get("/api/users/viewer", Some(&k0)).await;
    assert_eq!(
        r.body["_usage"]["rate_limit"]["remaining"]
            .as_u64()
            .unwrap(),
        before - 1
    );
}

#[tokio::test]
async fn verified_accounts_get_six_times_the_base() {
    let s = Server::start().await; // multiplier 1000 for the sign-up itself
    let key = s.verified_user(&email("t10")).await;
    let r = s.get("/api/users/viewer", Some(&key)).await;
    assert_eq!(
        r.body["_usage"]["rate_limit"]["limit"],
        json!(120 * 6 * 1000)
    );
}

#[tokio::test]
async fn configured_token_cost_answers_402_when_the_balance_is_short() {
    let s = Server::start_with(Options::default().env(
        "PLINTH_TOKEN_COSTS",
        "GET /api/users/viewer=3,GET /api/status=1",
    ))
    .await;
    let (key, _) = s.signup(&email("cost")).await;
    let r = s.get("/api/users/viewer", Some(&key)).await;
    r.assert_error(402);
    assert_eq!(r.body["tokens_required"], json!(3));
    assert_eq!(r.body["tokens_balance"], json!(0));
    assert!(r.body["payment_url"].as_str().unwrap().starts_with("http"));
    assert_eq!(r.body["_usage"]["tokens"]["cost"], json!(3));
    assert_eq!(r.header("x-tokens-cost").as_deref(), Some("3"));
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(0));
    // Anonymous callers have no balance either.
    s.get("/api/status", None).await.assert_error(402);
    // Free routes are unaffected, and pricing shows the configured cost.
    let p = s.get("/api/credits/pricing", None).await;
    p.assert_ok();
    let viewer = p.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == json!("/api/users/viewer"))
        .unwrap();
    assert_eq!(viewer["cost"], json!(3));
}

#[tokio::test]
async fn token_cost_is_charged_from_the_ledger_and_refunded_on_failure() {
    let s = Server::start_with(Options::default().env(
        "PLINTH_TOKEN_COSTS",
        "GET /api/users/viewer=40,POST /api/users/verify=2",
    ))
    .await;
    let (key, _) = s.signup(&email("charge")).await;
    let r = s
        .post(
            "/api/credits/distribute-bonus",
            Some(&key),
            json!({"bonusName": "welcome"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(100));
    let r = s.get("/api/users/viewer", Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(60));
    assert_eq!(r.header("x-tokens-remaining").as_deref(), Some("60"));
    // A failed request gives its tokens back.
    let r = s
        .post("/api/users/verify", Some(&key), json!({"code": "nope"}))
        .await;
    r.assert_error(404);
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(60));
    let r = s.get("/api/users/viewer", Some(&key)).await;
    assert_eq!(r.body["_usage"]["tokens"]["remaining"], json!(20));
    let r = s.get("/api/users/viewer", Some(&key)).await;
    r.assert_error(402);
    assert_eq!(r.body["tokens_balance"], json!(20));
    assert_eq!(r.body["tokens_required"], json!(40));
    // The ledger shows the charge, the reservation and its refund.
    let h = s.get("/api/credits", Some(&key)).await;
    let kinds: Vec<_> = h.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["usage", "usage_refund", "usage", "usage", "bonus"]);
}
