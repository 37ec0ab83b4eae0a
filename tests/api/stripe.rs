//! The Stripe adapter against localstripe, a stateful Stripe stand-in (PyPI), for what
//! it supports: customers, payment methods, subscriptions and payment intents.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{Options, Server};

struct LocalStripe {
    child: std::process::Child,
    base: String,
}

impl Drop for LocalStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const KEY: &str = "sk_test_plinth";

async fn localstripe() -> Option<LocalStripe> {
    let installed = Command::new("localstripe")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if installed.is_err() {
        eprintln!(
            "skipped: localstripe is not installed (pip install localstripe; .ci/run installs it)"
        );
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("localstripe")
        .args(["--port", &port.to_string(), "--from-scratch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "localstripe did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The plans of fixtures/plans.json, as Stripe plans with the same ids.
    let http = reqwest::Client::new();
    for plan in plinth::adapters::payments::PLANS.iter() {
        let r = http
            .post(format!("{base}/v1/plans"))
            .basic_auth(KEY, Some(""))
            .form(&[
                ("id", plan.product_id.as_str()),
                ("amount", &plan.price_cents.to_string()),
                ("currency", plan.currency.as_str()),
                ("interval", plan.interval.as_str()),
                ("product[name]", plan.name.as_str()),
            ])
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "creating plan: {}",
            r.text().await.unwrap()
        );
    }
    Some(LocalStripe { child, base })
}

#[tokio::test]
async fn stripe_adapter_subscribes_charges_and_cancels() {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_STRIPE_API_BASE", &stripe.base)
            .env("PLINTH_STRIPE_SECRET_KEY", KEY),
    )
    .await;
    let name = format!("st{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let agent = |pm: &str| json!({"username": name, "password": "pw", "paymentMethodId": pm, "productId": "prod_paying_monthly"});

    // A declined card creates nothing.
    s.post(
        "/api/users/authenticate-agent",
        None,
        agent("pm_card_visa_chargeDeclined"),
    )
    .await
    .assert_error(402);
    s.post(
        "/api/users/public/get-by-username",
        None,
        json!({"username": name}),
    )
    .await
    .assert_error(404);

    let r = s
        .post("/api/users/authenticate-agent", None, agent("pm_card_visa"))
        .await;
    r.assert_ok();
    assert!(r.body["subscription"]["id"]
        .as_str()
        .unwrap()
        .starts_with("sub_"));
    let key = r.body["apiKey"].as_str().unwrap().to_owned();
    let v = s.get("/api/users/viewer", Some(&key)).await;
    assert_eq!(v.body["user"]["level"], json!(20));
    let b = s.get("/api/credits/balance", Some(&key)).await;
    assert_eq!(b.body["balance"], json!(1500));
    let pm = s
        .get("/api/users/viewer/get-current-payment-method", Some(&key))
        .await;
    assert_eq!(pm.body["data"]["last4"], json!("4242"));
    assert_eq!(pm.body["data"]["brand"], json!("visa"));

    let r = s
        .post(
            "/api/users/viewer/pay-provider-amount-cents",
            Some(&key),
            json!({"amount_cents": 700}),
        )
        .await;
    r.assert_ok();
    assert!(r.body["data"]["provider_payment_id"]
        .as_str()
        .unwrap()
        .starts_with("pi_"));

    let r = s
        .post(
            "/api/users/subscriptions/unsubscribe",
            Some(&key),
            json!({}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["level"], json!(10));
    let st = s.get("/api/status", None).await;
    assert_eq!(st.body["services"]["payments"]["provider"], json!("stripe"));
}

/// What localstripe lacks (Checkout Sessions, the Billing Portal), answered in Stripe's
/// documented format by a stub that records what it was sent.
async fn stripe_stub() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<(String, String)>)>>>,
) {
    use axum::extract::{Form, State};
    use axum::routing::post;
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<(String, String)>)>>>;
    let seen: Seen = Default::default();
    async fn customer(
        State(seen): State<Seen>,
        Form(f): Form<Vec<(String, String)>>,
    ) -> axum::Json<serde_json::Value> {
        seen.lock().unwrap().push(("customer".into(), f));
        axum::Json(json!({"id": "cus_stub_1", "object": "customer"}))
    }
    async fn checkout(
        State(seen): State<Seen>,
        Form(f): Form<Vec<(String, String)>>,
    ) -> axum::Json<serde_json::Value> {
        seen.lock().unwrap().push(("checkout".into(), f));
        axum::Json(
            json!({"id": "cs_test_stub1", "object": "checkout.session", "mode": "subscription",
                          "url": "https://checkout.stripe.test/c/pay/cs_test_stub1"}),
        )
    }
    async fn portal(
        State(seen): State<Seen>,
        Form(f): Form<Vec<(String, String)>>,
    ) -> axum::Json<serde_json::Value> {
        seen.lock().unwrap().push(("portal".into(), f));
        axum::Json(
            json!({"id": "bps_stub1", "object": "billing_portal.session",
                          "url": "https://billing.stripe.test/p/session/bps_stub1"}),
        )
    }
    let app = axum::Router::new()
        .route("/v1/customers", post(customer))
        .route("/v1/checkout/sessions", post(checkout))
        .route("/v1/billing_portal/sessions", post(portal))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

#[tokio::test]
async fn stripe_checkout_and_portal_sessions_then_the_signed_event() {
    let (base, seen) = stripe_stub().await;
    let secret = "whsec_stub";
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_STRIPE_API_BASE", &base)
            .env("PLINTH_STRIPE_SECRET_KEY", KEY)
            .env("PLINTH_STRIPE_WEBHOOK_SECRET", secret),
    )
    .await;
    let key = s.verified_user(&crate::common::email("stripe-co")).await;
    let user_id = s.get("/api/users/viewer", Some(&key)).await.body["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = s
        .post(
            "/api/users/subscriptions/subscribe",
            Some(&key),
            json!({"productId": "prod_paying_monthly", "successUrl": "https://a.example/ok", "cancelUrl": "https://a.example/no"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["url"],
        json!("https://checkout.stripe.test/c/pay/cs_test_stub1")
    );
    {
        let seen = seen.lock().unwrap();
        let (_, form) = seen.iter().find(|(k, _)| k == "checkout").unwrap();
        let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("mode").as_deref(), Some("subscription"));
        assert_eq!(
            get("line_items[0][price]").as_deref(),
            Some("prod_paying_monthly")
        );
        assert_eq!(get("client_reference_id"), Some(user_id.clone()));
        assert_eq!(get("success_url").as_deref(), Some("https://a.example/ok"));
    }
    // Stripe then delivers the signed completion event.
    let event = json!({"id": "evt_stub_co", "type": "checkout.session.completed", "data": {"object": {
        "id": "cs_test_stub1", "object": "checkout.session", "mode": "subscription",
        "customer": "cus_stub_1", "subscription": "sub_stub_1", "client_reference_id": user_id,
        "metadata": {"product_id": "prod_paying_monthly"}}}});
    s.webhook(&event, secret, None).await.assert_ok();
    let v = s.get("/api/users/viewer", Some(&key)).await;
    assert_eq!(v.body["user"]["level"], json!(20));

    let r = s
        .post(
            "/api/users/viewer/generate-add-payment-method-url",
            Some(&key),
            json!({}),
        )
        .await;
    r.assert_ok();
    assert_eq!(
        r.body["url"],
        json!("https://billing.stripe.test/p/session/bps_stub1")
    );
    let seen = seen.lock().unwrap();
    let (_, form) = seen.iter().find(|(k, _)| k == "portal").unwrap();
    assert!(form.contains(&("customer".to_owned(), "cus_stub_1".to_owned())));
}

/// Marketplace USD checkout over Stripe PaymentIntents: confirmed at once with a payment
/// method (a decline holds nothing), left for Stripe.js with a client secret without one,
/// and a seller's refund goes to the provider.
#[tokio::test]
async fn stripe_payment_intents_pay_for_orders() {
    let Some(stripe) = localstripe().await else {
        return;
    };
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_STRIPE_API_BASE", &stripe.base)
            .env("PLINTH_STRIPE_SECRET_KEY", KEY),
    )
    .await;
    let admin = s.verified_user(&crate::common::email("seller")).await;
    let buyer = s.verified_user(&crate::common::email("buyer")).await;
    let domain = format!(
        "st-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    s.post(
        "/api/organizations/create",
        Some(&admin),
        json!({"domain": domain}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/inventory/create",
        Some(&admin),
        json!({"domain": domain, "sku": "KIT", "slug": "kit", "price_cents": 2500, "unit_count": 3}),
    )
    .await
    .assert_ok();
    let line = json!([{"sku": "KIT", "quantity": 1}]);
    let r = s
        .post(
            "/api/marketplace/checkout",
            Some(&buyer),
            // localstripe declines charges of this test card (…0341).
            json!({"items": line, "payment_method_id": "pm_card_chargeCustomerFail"}),
        )
        .await;
    r.assert_error(402);
    let r = s
        .post(
            "/api/marketplace/checkout",
            Some(&buyer),
            json!({"items": line, "payment_method_id": "pm_card_visa"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "paid");
    let paid = r.body["order_id"].as_str().unwrap().to_owned();
    let payment = r.body["data"]["payment"]["id"].as_str().unwrap().to_owned();
    assert!(payment.starts_with("pi_"), "{payment}");
    // The payment is Stripe's, for the order's total, naming the order.
    let pi: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/v1/payment_intents/{payment}", stripe.base))
        .basic_auth(KEY, Some(""))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pi["amount"], 2500);
    assert_eq!(pi["status"], "succeeded");
    assert_eq!(pi["metadata"]["order_id"], json!(paid));

    let r = s
        .post(
            "/api/marketplace/checkout",
            Some(&buyer),
            json!({"items": line}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "pending");
    assert!(r.body["payment"]["client_secret"]
        .as_str()
        .unwrap()
        .contains("_secret_"));
    assert!(r.body["payment"]["url"].is_null());

    let r = s
        .post(
            "/api/marketplace/orders/update",
            Some(&admin),
            json!({"id": paid, "status": "refunded"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], "refunded");
    let refunds: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/v1/refunds", stripe.base))
        .basic_auth(KEY, Some(""))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        refunds["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["payment_intent"] == json!(payment) && f["amount"] == 2500),
        "{refunds}"
    );
}
