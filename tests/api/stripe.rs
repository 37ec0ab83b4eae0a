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
    for plan in plinth::payments::PLANS.iter() {
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
    // Hosted checkout is not built for Stripe: an honest 501.
    s.post(
        "/api/users/subscriptions/subscribe",
        Some(&key),
        json!({"productId": "prod_paying_monthly", "successUrl": "https://a.example/ok", "cancelUrl": "https://a.example/no"}),
    )
    .await
    .assert_error(501);
    let st = s.get("/api/status", None).await;
    assert_eq!(st.body["services"]["payments"]["provider"], json!("stripe"));
}
