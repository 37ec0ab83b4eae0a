//! Subscriptions and payments through the simulated provider, and the signed webhook.

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::{email, Options, Server};

const SECRET: &str = "whsec_test_secret";

fn with_secret() -> Options {
    Options::default().env("PLINTH_STRIPE_WEBHOOK_SECRET", SECRET)
}

async fn webhook(s: &Server, event: &Value, signature: Option<String>) -> crate::common::Resp {
    s.webhook(event, SECRET, signature).await
}

async fn level_and_balance(s: &Server, key: &str) -> (i64, i64) {
    let v = s.get("/api/users/viewer", Some(key)).await;
    let b = s.get("/api/credits/balance", Some(key)).await;
    (
        v.body["user"]["level"].as_i64().unwrap(),
        b.body["balance"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn plans_are_listed() {
    let s = Server::start().await;
    let r = s.get("/api/users/subscriptions", None).await;
    r.assert_ok();
    let plans = r.body["data"].as_array().unwrap();
    assert!(plans
        .iter()
        .any(|p| p["product_id"] == json!("prod_paying_monthly") && p["level"] == json!(20)));
}

#[tokio::test]
async fn checkout_in_the_browser_raises_the_tier_and_pays_the_allotment() {
    let s = Server::start_with(with_secret()).await;
    let addr = email("sub");
    let key = s.verified_user(&addr).await;
    s.post(
        "/api/users/subscriptions/subscribe",
        Some(&key),
        json!({"productId": "prod_nope", "successUrl": "https://app.example/ok", "cancelUrl": "https://app.example/no"}),
    )
    .await
    .assert_error(400);
    let r = s
        .post(
            "/api/users/subscriptions/subscribe",
            Some(&key),
            json!({"productId": "prod_paying_monthly", "successUrl": "https://app.example/ok", "cancelUrl": "https://app.example/no"}),
        )
        .await;
    r.assert_ok();
    let url = r.body["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&s.base));
    let r = s
        .post("/api/users/subscriptions/check", Some(&key), json!({}))
        .await;
    assert_eq!(r.body["active"], json!(false));

    // The person opens the page, then pays with a declined card, then a good one.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = client.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Pay"));
    let declined = client
        .post(&url)
        .form(&[("payment_method", "pm_card_chargeDeclined")])
        .send()
        .await
        .unwrap();
    assert_eq!(declined.status(), 402);
    assert_eq!(level_and_balance(&s, &key).await, (10, 0));
    let paid = client
        .post(&url)
        .form(&[("payment_method", "pm_card_visa")])
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), 303);
    assert_eq!(paid.headers()["location"], "https://app.example/ok");

    assert_eq!(level_and_balance(&s, &key).await, (20, 1500));
    let r = s
        .post("/api/users/subscriptions/check", Some(&key), json!({}))
        .await;
    assert_eq!(r.body["active"], json!(true));
    assert_eq!(r.body["data"]["product_id"], json!("prod_paying_monthly"));
    let id = s.get("/api/users/viewer", Some(&key)).await.body["user"]["id"].clone();
    let r = s
        .post(
            "/api/users/subscriptions/get-by-user-id",
            Some(&key),
            json!({"id": id}),
        )
        .await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    let r = s
        .post(
            "/api/users/subscriptions/get-current-invoices",
            Some(&key),
            json!({}),
        )
        .await;
    assert_eq!(r.body["data"][0]["amount_cents"], json!(1000));
    let r = s
        .get("/api/users/viewer/get-current-payment-method", Some(&key))
        .await;
    assert_eq!(r.body["data"]["last4"], json!("4242"));
    // Completing again changes nothing.
    let again = client
        .post(&url)
        .form(&[("payment_method", "pm_card_visa")])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 303);
    assert_eq!(level_and_balance(&s, &key).await, (20, 1500));

    // Unsubscribe: back to the verified tier; credits stay.
    let r = s
        .post(
            "/api/users/subscriptions/unsubscribe",
            Some(&key),
            json!({}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["level"], json!(10));
    assert_eq!(level_and_balance(&s, &key).await, (10, 1500));
    s.post(
        "/api/users/subscriptions/unsubscribe",
        Some(&key),
        json!({}),
    )
    .await
    .assert_error(409);
}

#[tokio::test]
async fn webhook_signatures_replays_and_subscription_events() {
    let s = Server::start_with(with_secret()).await;
    // An agent account is subscribed (through the provider) in one call.
    let name = format!("agent{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let r = s
        .post(
            "/api/users/authenticate-agent",
            None,
            json!({"username": name, "password": "pw", "paymentMethodId": "pm_card_visa", "productId": "prod_paying_monthly"}),
        )
        .await;
    r.assert_ok();
    let key = r.body["apiKey"].as_str().unwrap().to_owned();
    let sub_id = r.body["subscription"]["id"].as_str().unwrap().to_owned();
    assert_eq!(level_and_balance(&s, &key).await, (20, 1500));

    let event = json!({"id": "evt_sub_deleted_1", "type": "customer.subscription.deleted",
        "data": {"object": {"id": sub_id, "object": "subscription", "status": "canceled"}}});
    // Unsigned, forged and stale deliveries are refused (401: the signature is the
    // sender's credential) and change nothing.
    webhook(&s, &event, Some(String::new()))
        .await
        .assert_error(400);
    webhook(
        &s,
        &event,
        Some(plinth::adapters::payments::sign_event(
            "whsec_wrong",
            chrono::Utc::now().timestamp(),
            event.to_string().as_bytes(),
        )),
    )
    .await
    .assert_error(401);
    webhook(
        &s,
        &event,
        Some(plinth::adapters::payments::sign_event(
            SECRET,
            chrono::Utc::now().timestamp() - 600,
            event.to_string().as_bytes(),
        )),
    )
    .await
    .assert_error(401);
    assert_eq!(level_and_balance(&s, &key).await.0, 20);

    let r = webhook(&s, &event, None).await;
    r.assert_ok();
    assert_eq!(r.body["handled"], json!(true));
    assert_eq!(
        r.body["_usage"]["rate_limit"]["interval_ms"],
        json!(0),
        "category unlimited"
    );
    assert_eq!(
        level_and_balance(&s, &key).await.0,
        10,
        "agent accounts fall back to VERIFIED"
    );
    let replay = webhook(&s, &event, None).await;
    replay.assert_ok();
    assert_eq!(replay.body["duplicate"], json!(true));

    // An update back to active restores the tier; invoice.paid records the renewal.
    let up = json!({"id": "evt_sub_updated_1", "type": "customer.subscription.updated",
        "data": {"object": {"id": sub_id, "status": "active"}}});
    webhook(&s, &up, None).await.assert_ok();
    assert_eq!(
        level_and_balance(&s, &key).await,
        (20, 1500),
        "this month was already paid"
    );
    let inv = json!({"id": "evt_inv_1", "type": "invoice.paid",
        "data": {"object": {"id": "in_test_1", "subscription": sub_id, "amount_paid": 1000}}});
    webhook(&s, &inv, None).await.assert_ok();
    let r = s
        .post(
            "/api/users/subscriptions/get-current-invoices",
            Some(&key),
            json!({}),
        )
        .await;
    assert!(r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["provider_payment_id"] == json!("in_test_1")));
    // Unknown event kinds are acknowledged.
    let other = json!({"id": "evt_other", "type": "customer.created", "data": {"object": {}}});
    let r = webhook(&s, &other, None).await;
    r.assert_ok();
    assert_eq!(r.body["handled"], json!(false));
}

#[tokio::test]
async fn agent_sign_up_declines_leave_nothing_and_one_time_payments() {
    let s = Server::start().await;
    let name = format!("bot{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let body = |pm: &str, product: &str| json!({"username": name, "password": "pw", "paymentMethodId": pm, "productId": product});
    s.post(
        "/api/users/authenticate-agent",
        None,
        body("pm_card_chargeDeclined", "prod_paying_monthly"),
    )
    .await
    .assert_error(402);
    s.post(
        "/api/users/authenticate-agent",
        None,
        body("pm_card_visa", "prod_unknown"),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/users/authenticate-agent",
        None,
        body("pm_bogus", "prod_paying_monthly"),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/users/public/get-by-username",
        None,
        json!({"username": name}),
    )
    .await
    .assert_error(404);

    let r = s
        .post(
            "/api/users/authenticate-agent",
            None,
            body("pm_card_visa", "prod_coworking_monthly"),
        )
        .await;
    r.assert_ok();
    let key = r.body["apiKey"].as_str().unwrap().to_owned();
    assert_eq!(level_and_balance(&s, &key).await, (30, 45000));
    s.post(
        "/api/users/authenticate-agent",
        None,
        body("pm_card_visa", "prod_paying_monthly"),
    )
    .await
    .assert_error(409);
    // The agent signs in with its username's address and password.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": format!("{name}@agents.invalid"), "password": "pw"}),
        )
        .await;
    assert_eq!(r.body["user"]["key"], json!(key));

    let r = s
        .post(
            "/api/users/viewer/pay-provider-amount-cents",
            Some(&key),
            json!({"amount_cents": 700}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["amount_cents"], json!(700));
    s.post(
        "/api/users/viewer/pay-provider-amount-cents",
        Some(&key),
        json!({"amount_cents": 0}),
    )
    .await
    .assert_error(400);
    let (plain, _) = s.signup(&email("nocard")).await;
    s.post(
        "/api/users/viewer/pay-provider-amount-cents",
        Some(&plain),
        json!({"amount_cents": 100}),
    )
    .await
    .assert_error(409);
    let r = s
        .get("/api/users/viewer/get-current-payment-method", Some(&plain))
        .await;
    assert_eq!(r.body["data"], json!(null));
    let r = s
        .post(
            "/api/users/viewer/generate-add-payment-method-url",
            Some(&plain),
            json!({}),
        )
        .await;
    r.assert_ok();
    let url = r.body["url"].as_str().unwrap().to_owned();
    let saved = reqwest::Client::new()
        .post(&url)
        .form(&[("payment_method", "pm_card_mastercard")])
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 200);
    let r = s
        .get("/api/users/viewer/get-current-payment-method", Some(&plain))
        .await;
    assert_eq!(r.body["data"]["brand"], json!("mastercard"));
    s.post(
        "/api/users/viewer/pay-provider-amount-cents",
        Some(&plain),
        json!({"amount_cents": 100}),
    )
    .await
    .assert_ok();
}

#[tokio::test]
async fn a_person_completes_the_simulated_checkout_in_headless_chromium() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Server::start_with(with_secret()).await;
    let key = s.verified_user(&email("chromium")).await;
    // Both pages are plinth's own: nothing else resolves here.
    let success = format!("{}/api/status?paid=1", s.base);
    let cancel = format!("{}/api/status?paid=0", s.base);
    let r = s
        .post(
            "/api/users/subscriptions/subscribe",
            Some(&key),
            json!({"productId": "prod_paying_monthly", "successUrl": success, "cancelUrl": cancel}),
        )
        .await;
    r.assert_ok();
    let checkout = r.body["url"].as_str().unwrap().to_owned();

    // The page shows the plan and a Pay button.
    browser.goto(&checkout).await;
    let page = browser.source().await;
    let plan = plinth::adapters::payments::plan("prod_paying_monthly").unwrap();
    assert!(
        page.contains(&format!("<h1>Subscribe to {}</h1>", plan.name)),
        "{page}"
    );
    assert!(page.contains("USD 10.00 per month"), "{page}");
    browser.find("form button[type=submit]").await;
    assert!(page.contains(">Pay</button>"), "{page}");

    // A declined card: the page says so and nothing changes.
    let declined = "select[name=payment_method] option[value=pm_card_chargeDeclined]";
    browser.click(declined).await;
    assert!(browser.selected(declined).await);
    browser.click("form button[type=submit]").await;
    browser
        .wait_for("the decline", |_, src| {
            src.contains("Payment not completed")
        })
        .await;
    assert!(browser.source().await.contains("your card was declined"));
    assert_eq!(level_and_balance(&s, &key).await, (10, 0));
    let r = s
        .post("/api/users/subscriptions/check", Some(&key), json!({}))
        .await;
    assert_eq!(r.body["active"], json!(false));

    // Back to the checkout with a good card: the browser lands on the success URL.
    browser.goto(&checkout).await;
    let visa = "select[name=payment_method] option[value=pm_card_visa]";
    browser.click(declined).await;
    browser.click(visa).await;
    assert!(browser.selected(visa).await);
    browser.click("form button[type=submit]").await;
    browser
        .wait_for("the success URL", |url, _| url == success)
        .await;
    assert_eq!(browser.url().await, success);

    assert_eq!(level_and_balance(&s, &key).await, (20, 1500));
    let r = s
        .post("/api/users/subscriptions/check", Some(&key), json!({}))
        .await;
    assert_eq!(r.body["active"], json!(true));
    assert_eq!(r.body["data"]["product_id"], json!("prod_paying_monthly"));
    browser.quit().await;
}
