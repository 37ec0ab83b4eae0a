//! Issue 45 (review A6: the same `Idempotency-Key` twice made two analytics sites): every
//! POST that creates or changes something honours the key or refuses it with a 400 that
//! says so. The walk reads the route table through the OpenAPI document, so a route added
//! later is walked too.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

/// Routes whose handler (or the deck actors) runs the key itself; each has its own
/// replay test (tests/api/idempotency.rs, credits.rs, checkout.rs, licenses.rs). Their
/// records are made once a body is valid, so the walk's `{}` is not replayed.
const HANDLER_KEYED: &[&str] = &[
    "/api/slides/create",
    "/api/slides/update",
    "/api/slides/delete",
    "/api/slides/revisions/restore",
    "/api/slides/assets/create",
    "/api/slides/assets/complete",
    "/api/slides/assets/delete",
    "/api/slides/exports/create",
    "/api/slides/jobs/cancel",
    "/api/slides/publish",
    "/api/slides/unpublish",
    "/api/downloads/purchase",
    "/api/licenses/purchase",
    "/api/marketplace/checkout",
    "/api/marketplace/guest/checkout",
];

async fn post_keyed(
    s: &Server,
    key: &str,
    path: &str,
    idem: &str,
    body: &Value,
) -> crate::common::Resp {
    let r = s
        .raw(reqwest::Method::POST, path)
        .header("x-api-key", key)
        .header("Idempotency-Key", idem)
        .json(body)
        .send()
        .await
        .unwrap();
    Server::read(r).await
}

#[tokio::test]
async fn every_changing_post_honours_or_refuses_the_key() {
    let s = Server::start().await;
    let key = s.admin(&email("idemwalk")).await;
    let doc = s.get("/api/openapi.json", None).await.body;
    let mut walked = 0;
    let mut unreplayed = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("post") else { continue };
        let rule = op["x-idempotency"].as_str();
        let category = op["x-rate-category"].as_str().unwrap();
        if category == "read" || op["x-implemented"] == json!(false) {
            continue;
        }
        assert!(rule.is_some(), "POST {path} states no x-idempotency");
        assert_ne!(
            rule,
            Some("ignored"),
            "POST {path} changes something ({category}) but ignores the key"
        );
        let url = path.replace("{id}", "nope");
        let idem = format!("walk-{path}");
        let first = post_keyed(&s, &key, &url, &idem, &json!({})).await;
        if rule == Some("refused") {
            first.assert_error(400);
            let message = first.body["message"].as_str().unwrap();
            assert!(
                message.contains("Idempotency-Key"),
                "POST {path}: {message}"
            );
            walked += 1;
            continue;
        }
        let declared = op["description"]
            .as_str()
            .is_some_and(|d| d.contains("Takes an `Idempotency-Key` header"));
        assert!(
            declared,
            "POST {path} honours the key but the document does not say so"
        );
        let again = post_keyed(&s, &key, &url, &idem, &json!({})).await;
        if again.header("idempotent-replayed").as_deref() == Some("true") {
            assert_eq!(
                first.status, again.status,
                "POST {path}: a replay answers as the first"
            );
        } else {
            unreplayed.push(path.clone());
        }
        walked += 1;
    }
    assert!(walked > 60, "only {walked} changing routes walked");
    // Each route not replayed here runs the key in its handler, with its own test; any
    // other is a route the key was forgotten on.
    let forgotten: Vec<_> = unreplayed
        .iter()
        .filter(|p| !HANDLER_KEYED.contains(&p.as_str()) && !p.starts_with("/api/credits/"))
        .collect();
    assert!(
        forgotten.is_empty(),
        "the same key twice ran twice on {forgotten:?}"
    );
}

#[tokio::test]
async fn the_same_key_twice_makes_one_site_and_a_replay_carries_current_rate_headers() {
    let s = Server::start_with(Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    let key = s.verified_user(&email("idemsite")).await;
    let body = json!({"name": "Once"});
    let first = post_keyed(&s, &key, "/api/analytics/sites/create", "site-1", &body).await;
    first.assert_ok();
    assert_eq!(first.header("idempotent-replayed"), None);
    // Another write in the same window, without a key: the window moves on.
    s.post(
        "/api/analytics/sites/create",
        Some(&key),
        json!({"name": "Other"}),
    )
    .await
    .assert_ok();
    let again = post_keyed(&s, &key, "/api/analytics/sites/create", "site-1", &body).await;
    again.assert_ok();
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(again.body["data"]["id"], first.body["data"]["id"]);
    let sites = s.get("/api/analytics/sites", Some(&key)).await;
    let names: Vec<_> = sites.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].clone())
        .collect();
    assert_eq!(
        names.iter().filter(|n| **n == json!("Once")).count(),
        1,
        "{names:?}"
    );
    // The replay counts nothing and reports the window as it is now: one fewer than the
    // first answer said (the write in between), not the first answer's figures.
    let remaining = |r: &crate::common::Resp| -> u64 {
        r.header("x-ratelimit-remaining").unwrap().parse().unwrap()
    };
    assert_eq!(remaining(&again), remaining(&first) - 1);
    assert_eq!(
        again.header("x-ratelimit-limit"),
        first.header("x-ratelimit-limit")
    );
    assert_eq!(
        again.body["_usage"]["rate_limit"]["remaining"],
        json!(remaining(&first) - 1)
    );
    // The same key with another body: 422, nothing made.
    let other = post_keyed(
        &s,
        &key,
        "/api/analytics/sites/create",
        "site-1",
        &json!({"name": "Else"}),
    )
    .await;
    other.assert_error(422);
    // A sign-in refuses a key, saying so.
    let r = s
        .raw(reqwest::Method::POST, "/api/users/authenticate")
        .header("Idempotency-Key", "signin-1")
        .json(&json!({"email": email("idemsignin"), "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    let r = Server::read(r).await;
    r.assert_error(400);
    assert_eq!(r.body["code"], json!("idempotency_key_not_accepted"));
}
