//! Checkout and orders: tokens through the credit actors with the units in one step,
//! USD through the (simulated) payment provider with holds that are paid, canceled or
//! expire, discount codes, idempotency keys, receipts, guest checkout, and never
//! overselling under concurrency.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{email, Options, Resp, Server};

const SECRET: &str = "whsec_checkout";

fn options() -> Options {
    Options::default()
        .env("PLINTH_STRIPE_WEBHOOK_SECRET", SECRET)
        .env("PLINTH_RESERVATION_SECS", "2")
        .env("PLINTH_MONTHLY_INTERVAL_SECS", "1")
}

/// An organization of `admin` (taking guest checkouts) selling `(sku, cents, tokens,
/// units)`.
async fn shop(s: &Server, admin: &str, items: &[(&str, i64, Option<i64>, i64)]) -> String {
    let (domain, _) = s.organization(admin, "co").await;
    for (sku, cents, tokens, units) in items {
        s.post(
            "/api/inventory/create",
            Some(admin),
            json!({"domain": domain, "sku": sku, "slug": sku.to_lowercase(), "price_cents": cents,
                   "price_tokens": tokens, "unit_count": units}),
        )
        .await
        .assert_ok();
    }
    domain
}

async fn balance(s: &Server, key: &str) -> i64 {
    s.get("/api/credits/balance", Some(key)).await.body["balance"]
        .as_i64()
        .unwrap()
}

async fn available(s: &Server, domain: &str, sku: &str) -> i64 {
    let r = s
        .get(&format!("/api/inventory?domain={domain}"), None)
        .await;
    r.assert_ok();
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["sku"] == sku)
        .unwrap()["available_count"]
        .as_i64()
        .unwrap()
}

async fn checkout(s: &Server, key: &str, body: Value) -> Resp {
    s.post("/api/marketplace/checkout", Some(key), body).await
}

async fn status_of(s: &Server, key: &str, id: &str) -> String {
    let r = s
        .get(&format!("/api/marketplace/orders/{id}"), Some(key))
        .await;
    r.assert_ok();
    r.body["data"]["status"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn token_checkout_takes_tokens_and_units_in_one_step() {
    let s = Server::start_with(options()).await;
    let admin = s.verified_user(&email("seller")).await;
    let domain = shop(
        &s,
        &admin,
        &[("MUG", 1200, Some(30), 3), ("TEE", 2500, None, 1)],
    )
    .await;
    let a = s.funded_user(&email("tok-a")).await;
    let b = s.funded_user(&email("tok-b")).await;

    let r = checkout(
        &s,
        &a,
        json!({"items": [{"sku": "MUG", "quantity": 2}], "payment_type": "tokens",
               "shipping_address": {"street": "1 Main St", "city": "Springfield", "state": "IL",
                                    "zip": "62701", "country": "US"}}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "paid");
    assert_eq!(r.body["balance"], 40);
    assert_eq!(r.body["data"]["total_tokens"], 60);
    assert_eq!(r.body["data"]["items"][0]["quantity"], 2);
    assert_eq!(r.body["data"]["shipping_address"]["city"], "Springfield");
    let order = r.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(balance(&s, &a).await, 40);
    assert_eq!(available(&s, &domain, "MUG").await, 1);

    // A short balance is a 402 and leaves the stock as it was.
    let r = checkout(
        &s,
        &a,
        json!({"items": [{"sku": "MUG", "quantity": 1}, {"sku": "MUG", "quantity": 1}],
               "payment_type": "tokens"}),
    )
    .await;
    r.assert_error(402);
    assert_eq!(r.body["tokens_balance"], 40);
    assert_eq!(available(&s, &domain, "MUG").await, 1);

    // Too few units: 409, and the tokens taken first are given back.
    let r = checkout(
        &s,
        &b,
        json!({"items": [{"sku": "MUG", "quantity": 2}], "payment_type": "tokens"}),
    )
    .await;
    r.assert_error(409);
    assert_eq!(r.body["available"], 1);
    assert_eq!(balance(&s, &b).await, 100);
    assert_eq!(available(&s, &domain, "MUG").await, 1);

    // Bad requests.
    for bad in [
        json!({"items": [{"sku": "TEE", "quantity": 1}], "payment_type": "tokens"}),
        json!({"items": [{"sku": "MUG", "quantity": 1}], "payment_type": "gold"}),
        json!({"items": [], "payment_type": "tokens"}),
        json!({"items": [{"sku": "MUG", "quantity": 0}], "payment_type": "tokens"}),
        json!({"payment_type": "tokens"}),
        json!({"items": [{"sku": "MUG", "quantity": 1}], "customer_info": "me"}),
    ] {
        checkout(&s, &b, bad).await.assert_error(400);
    }
    checkout(
        &s,
        &b,
        json!({"items": [{"sku": "NOPE", "quantity": 1}], "payment_type": "tokens"}),
    )
    .await
    .assert_error(404);

    // The cart checks out and empties.
    s.post(
        "/api/marketplace/cart/add",
        Some(&b),
        json!({"sku": "MUG", "quantity": 1}),
    )
    .await
    .assert_ok();
    let r = checkout(&s, &b, json!({"payment_type": "tokens"})).await;
    r.assert_ok();
    assert_eq!(r.body["balance"], 70);
    let b_order = r.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(
        s.get("/api/marketplace/cart", Some(&b)).await.body["count"],
        0
    );
    assert_eq!(available(&s, &domain, "MUG").await, 0);

    // Lists and details: the buyer's own; others do not see it.
    let r = s.get("/api/marketplace/orders", Some(&a)).await;
    r.assert_ok();
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["data"][0]["id"], json!(order));
    s.get(&format!("/api/marketplace/orders/{order}"), Some(&b))
        .await
        .assert_error(404);
    let r = s
        .get(
            &format!("/api/marketplace/orders?domain={domain}"),
            Some(&admin),
        )
        .await;
    assert_eq!(r.body["total"], 2);
    s.get(
        &format!("/api/marketplace/orders?domain={domain}"),
        Some(&a),
    )
    .await
    .assert_error(403);

    // The state table: the buyer cannot fulfil; the seller fulfils and delivers.
    let update = |key: String, id: String, status: &'static str| {
        let s = &s;
        async move {
            s.post(
                "/api/marketplace/orders/update",
                Some(&key),
                json!({"id": id, "status": status}),
            )
            .await
        }
    };
    update(a.clone(), order.clone(), "fulfilled")
        .await
        .assert_error(403);
    update(a.clone(), order.clone(), "canceled")
        .await
        .assert_error(409);
    update(admin.clone(), order.clone(), "shipped")
        .await
        .assert_error(409);
    update(admin.clone(), order.clone(), "fulfilled")
        .await
        .assert_ok();
    update(admin.clone(), order.clone(), "refunded")
        .await
        .assert_error(409);
    let r = update(admin.clone(), order.clone(), "delivered").await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], "delivered");

    // A refund by the seller: tokens back, the unit back in stock.
    let r = update(admin.clone(), b_order.clone(), "refunded").await;
    r.assert_ok();
    assert_eq!(balance(&s, &b).await, 100);
    assert_eq!(available(&s, &domain, "MUG").await, 1);
    update(admin.clone(), b_order.clone(), "refunded")
        .await
        .assert_ok();
    assert_eq!(balance(&s, &b).await, 100, "a refund is paid once");
}

#[tokio::test]
async fn usd_checkout_holds_units_until_paid_canceled_or_expired() {
    let s = Server::start_with(options()).await;
    let admin = s.verified_user(&email("seller")).await;
    let domain = shop(&s, &admin, &[("LAMP", 4999, None, 4)]).await;
    let a = s.funded_user(&email("usd-a")).await;
    let line = json!([{"sku": "LAMP", "quantity": 1}]);

    // With a payment method: paid at once.
    let r = checkout(
        &s,
        &a,
        json!({"items": line, "payment_method_id": "pm_card_visa"}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "paid");
    assert_eq!(r.body["data"]["total_cents"], 4999);
    assert!(r.body["data"]["payment"]["id"]
        .as_str()
        .unwrap()
        .starts_with("pi_"));
    assert_eq!(available(&s, &domain, "LAMP").await, 3);

    // A declined card holds nothing and leaves no order.
    let r = checkout(
        &s,
        &a,
        json!({"items": line, "payment_method_id": "pm_card_chargeDeclined"}),
    )
    .await;
    r.assert_error(402);
    assert_eq!(available(&s, &domain, "LAMP").await, 3);
    assert_eq!(
        s.get("/api/marketplace/orders", Some(&a)).await.body["total"],
        1
    );

    // Without one: pending, the unit held, paid on the provider's page (a declined card
    // there changes nothing); the signed webhook marks it paid.
    let r = checkout(&s, &a, json!({"items": line})).await;
    r.assert_ok();
    assert_eq!(r.body["status"], "pending");
    let id = r.body["order_id"].as_str().unwrap().to_owned();
    let url = r.body["payment"]["url"].as_str().unwrap().to_owned();
    assert!(url.ends_with(&format!("/pay/{id}")), "{url}");
    assert!(r.body["data"]["reserved_until"].is_string());
    assert_eq!(available(&s, &domain, "LAMP").await, 2);
    let page = s
        .raw(reqwest::Method::GET, &format!("/pay/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let declined = s
        .raw(reqwest::Method::POST, &format!("/pay/{id}"))
        .form(&[("payment_method", "pm_card_chargeDeclined")])
        .send()
        .await
        .unwrap();
    assert_eq!(declined.status(), 402);
    assert_eq!(status_of(&s, &a, &id).await, "pending");
    let paid = s
        .raw(reqwest::Method::POST, &format!("/pay/{id}"))
        .form(&[("payment_method", "pm_card_visa")])
        .send()
        .await
        .unwrap();
    assert_eq!(paid.status(), 200);
    assert_eq!(status_of(&s, &a, &id).await, "paid");
    assert_eq!(available(&s, &domain, "LAMP").await, 2);

    // The buyer cancels a pending order: the unit goes back.
    let r = checkout(&s, &a, json!({"items": line})).await;
    let id = r.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(available(&s, &domain, "LAMP").await, 1);
    s.post(
        "/api/marketplace/orders/update",
        Some(&a),
        json!({"id": id, "status": "canceled"}),
    )
    .await
    .assert_ok();
    assert_eq!(available(&s, &domain, "LAMP").await, 2);
    // Nobody but the provider marks an order paid.
    s.post(
        "/api/marketplace/orders/update",
        Some(&admin),
        json!({"id": id, "status": "paid"}),
    )
    .await
    .assert_error(409);

    // A hold nobody pays for expires (PLINTH_RESERVATION_SECS=2) and the unit returns;
    // a payment arriving after that is refunded.
    let r = checkout(&s, &a, json!({"items": line})).await;
    let id = r.body["order_id"].as_str().unwrap().to_owned();
    let payment = r.body["payment"]["id"].as_str().unwrap().to_owned();
    assert_eq!(available(&s, &domain, "LAMP").await, 1);
    let deadline = Instant::now() + Duration::from_secs(15);
    while status_of(&s, &a, &id).await != "expired" {
        assert!(Instant::now() < deadline, "the hold did not expire");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(available(&s, &domain, "LAMP").await, 2);
    let event = json!({"id": format!("evt_{}", uuid::Uuid::new_v4().simple()), "type": "payment_intent.succeeded",
        "data": {"object": {"id": payment, "object": "payment_intent", "amount": 4999,
                            "metadata": {"order_id": id}}}});
    s.webhook(&event, SECRET, None).await.assert_ok();
    assert_eq!(status_of(&s, &a, &id).await, "refunded");
    assert_eq!(available(&s, &domain, "LAMP").await, 2);
    // A forged confirmation changes nothing.
    let r = checkout(&s, &a, json!({"items": line})).await;
    let id = r.body["order_id"].as_str().unwrap().to_owned();
    let event = json!({"id": "evt_forged", "type": "payment_intent.succeeded",
        "data": {"object": {"id": "pi_x", "amount": 4999, "metadata": {"order_id": id}}}});
    s.webhook(&event, "whsec_wrong", None)
        .await
        .assert_error(401);
    assert_eq!(status_of(&s, &a, &id).await, "pending");
}

#[tokio::test]
async fn discount_codes_at_checkout() {
    let s = Server::start_with(options()).await;
    let admin = s.verified_user(&email("seller")).await;
    let domain = shop(&s, &admin, &[("BOOK", 2000, Some(40), 50)]).await;
    let a = s.funded_user(&email("disc-a")).await;
    for (code, kind, value, extra) in [
        ("TEN", "percentage", 10.0, json!({})),
        ("FIVE", "fixed", 500.0, json!({})),
        ("BIG", "percentage", 50.0, json!({"min_order_cents": 5000})),
        (
            "OLD",
            "percentage",
            50.0,
            json!({"expires_at": "2020-01-01T00:00:00Z"}),
        ),
        ("THREE", "fixed", 100.0, json!({"max_uses": 3})),
    ] {
        let mut body = json!({"domain": domain, "code": code, "type": kind, "value": value});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s.post("/api/marketplace/discounts/create", Some(&admin), body)
            .await
            .assert_ok();
    }
    let line = json!([{"sku": "BOOK", "quantity": 1}]);
    // The spec's table: an empty code fails validation; null means no discount.
    checkout(
        &s,
        &a,
        json!({"items": line, "payment_method_id": "pm_card_visa", "discount_code": ""}),
    )
    .await
    .assert_error(400);
    let r = checkout(
        &s,
        &a,
        json!({"items": line, "payment_method_id": "pm_card_visa", "discount_code": null}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["discount_cents"], 0);
    let r = checkout(
        &s,
        &a,
        json!({"items": line, "payment_method_id": "pm_card_visa", "discount_code": "ten"}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["discount_cents"], 200);
    assert_eq!(r.body["data"]["total_cents"], 1800);
    let r = checkout(
        &s,
        &a,
        json!({"items": line, "payment_type": "tokens", "discount_code": "TEN"}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["total_tokens"], 36);
    let r = checkout(
        &s,
        &a,
        json!({"items": line, "payment_method_id": "pm_card_visa", "discount_code": "FIVE"}),
    )
    .await;
    assert_eq!(r.body["data"]["total_cents"], 1500);
    for (code, payment_type) in [
        ("FIVE", "tokens"),
        ("BIG", "usd"),
        ("OLD", "usd"),
        ("NOPE", "usd"),
    ] {
        checkout(
            &s,
            &a,
            json!({"items": line, "payment_type": payment_type, "payment_method_id": "pm_card_visa",
                   "discount_code": code}),
        )
        .await
        .assert_error(400);
    }
    let r = checkout(
        &s,
        &a,
        json!({"items": [{"sku": "BOOK", "quantity": 3}], "payment_method_id": "pm_card_visa",
               "discount_code": "BIG"}),
    )
    .await;
    assert_eq!(r.body["data"]["total_cents"], 3000);

    // max_uses is exact under concurrency: 12 buyers race for 3 uses.
    let mut keys = Vec::new();
    for i in 0..12 {
        keys.push(s.verified_user(&email(&format!("race{i}"))).await);
    }
    let base = s.base.clone();
    let tasks: Vec<_> = keys
        .into_iter()
        .map(|k| {
            let base = base.clone();
            tokio::spawn(async move {
                reqwest::Client::new()
                    .post(format!("{base}/api/marketplace/checkout"))
                    .header("x-api-key", k)
                    .json(&json!({"items": [{"sku": "BOOK", "quantity": 1}],
                                  "payment_method_id": "pm_card_visa", "discount_code": "THREE"}))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            200 => ok += 1,
            409 => {}
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(ok, 3);
    let d = s
        .get(
            &format!("/api/marketplace/discounts?domain={domain}"),
            Some(&admin),
        )
        .await;
    let three = d.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "THREE")
        .unwrap()
        .clone();
    assert_eq!(three["uses"], 3);
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_answer_and_charges_once() {
    let s = Server::start_with(options()).await;
    let admin = s.verified_user(&email("seller")).await;
    let domain = shop(&s, &admin, &[("PEN", 300, Some(10), 5)]).await;
    let a = s.funded_user(&email("idem")).await;
    let send = |key: &'static str, quantity: i64| {
        let s = &s;
        let a = a.clone();
        async move {
            Server::read(
                s.raw(reqwest::Method::POST, "/api/marketplace/checkout")
                    .header("x-api-key", a)
                    .header("idempotency-key", key)
                    .json(&json!({"items": [{"sku": "PEN", "quantity": quantity}],
                                  "payment_type": "tokens"}))
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let first = send("order-1", 2).await;
    first.assert_ok();
    let again = send("order-1", 2).await;
    again.assert_ok();
    assert_eq!(again.body["order_id"], first.body["order_id"]);
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(balance(&s, &a).await, 80);
    assert_eq!(available(&s, &domain, "PEN").await, 3);
    send("order-1", 1).await.assert_error(422);
    // A refused checkout replays its refusal too.
    let short = send("order-2", 50).await;
    short.assert_error(402);
    let again = send("order-2", 50).await;
    again.assert_error(402);
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(balance(&s, &a).await, 80);
}

#[tokio::test]
async fn guest_checkout_receipts_and_public_lookup() {
    let s = Server::start_with(options()).await;
    let admin = s.verified_user(&email("seller")).await;
    let domain = shop(&s, &admin, &[("CAP", 1500, Some(20), 3)]).await;
    let token = s.guest_session(&domain).await;
    let guest = |path: &'static str, body: Value| s.post_as_guest(path, &token, body);

    let r = guest(
        "/api/marketplace/guest/checkout",
        json!({"items": [{"sku": "CAP", "quantity": 1}], "payment_method_id": "pm_card_chargeDeclined"}),
    )
    .await;
    r.assert_error(402);
    guest(
        "/api/marketplace/guest/checkout",
        json!({"items": [{"sku": "CAP", "quantity": 1}]}),
    )
    .await
    .assert_error(400);
    let guest_email = email("guest");
    guest(
        "/api/marketplace/guest/cart/add",
        json!({"sku": "CAP", "quantity": 2}),
    )
    .await
    .assert_ok();
    let r = guest(
        "/api/marketplace/guest/checkout",
        json!({"payment_method_id": "pm_card_visa", "email": guest_email,
               "shipping_address": {"street": "2 Elm", "city": "Oslo", "zip": "0150", "country": "NO"}}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "paid");
    assert_eq!(r.body["data"]["total_cents"], 3000);
    let id = r.body["order_id"].as_str().unwrap().to_owned();
    assert_eq!(available(&s, &domain, "CAP").await, 1);

    // Public lookup: no personal data.
    let r = s
        .get(&format!("/api/marketplace/guest/orders/{id}"), None)
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], "paid");
    assert_eq!(r.body["data"]["items"][0]["sku"], "CAP");
    let text = r.body.to_string();
    for private in [
        guest_email.as_str(),
        "Oslo",
        "shipping_address",
        "customer_info",
        "pi_",
    ] {
        assert!(!text.contains(private), "{private} in {text}");
    }
    let r = s
        .get(&format!("/api/marketplace/guest/orders/{id}/status"), None)
        .await;
    assert_eq!(r.body["status"], "paid");
    s.get(
        &format!("/api/marketplace/guest/orders/{}", uuid::Uuid::new_v4()),
        None,
    )
    .await
    .assert_error(404);

    // Receipts: the guest's matching email may ask, once; another email may not.
    s.post(
        "/api/marketplace/orders/send-receipt",
        None,
        json!({"order_id": id, "email": "someone@else.example"}),
    )
    .await
    .assert_error(401);
    let r = s
        .post(
            "/api/marketplace/orders/send-receipt",
            None,
            json!({"order_id": id, "email": guest_email.to_uppercase()}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["sent"], true);
    let receipt = s.wait_for_email(&guest_email, &id).await;
    assert!(receipt.contains("2 x CAP"), "{receipt}");
    let r = s
        .post(
            "/api/marketplace/orders/send-receipt",
            None,
            json!({"order_id": id, "email": guest_email}),
        )
        .await;
    assert_eq!(r.body["already_sent"], true);
    // The seller resends (Key).
    s.post(
        "/api/marketplace/orders/resend-receipt",
        None,
        json!({"order_id": id}),
    )
    .await
    .assert_error(401);
    s.post(
        "/api/marketplace/orders/resend-receipt",
        Some(&admin),
        json!({"order_id": id}),
    )
    .await
    .assert_ok();
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.emails_to(&guest_email).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the resent receipt did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Turning guest checkout off stops live sessions too.
    s.post(
        "/api/organizations/update",
        Some(&admin),
        json!({"domain": domain, "data": {"guest_checkout_enabled": false}}),
    )
    .await
    .assert_ok();
    guest(
        "/api/marketplace/guest/checkout",
        json!({"items": [{"sku": "CAP", "quantity": 1}], "payment_method_id": "pm_card_visa"}),
    )
    .await
    .assert_error(403);

    // A user's receipt goes to the account's email; a pending order has none yet.
    let buyer_email = email("rcpt");
    let b = s.verified_user(&buyer_email).await;
    let r = checkout(&s, &b, json!({"items": [{"sku": "CAP", "quantity": 1}]})).await;
    let pending = r.body["order_id"].as_str().unwrap().to_owned();
    s.post(
        "/api/marketplace/orders/send-receipt",
        Some(&b),
        json!({"order_id": pending}),
    )
    .await
    .assert_error(409);
    // User orders are not looked up publicly.
    s.get(&format!("/api/marketplace/guest/orders/{pending}"), None)
        .await
        .assert_error(404);
}

/// 64 clients race for the last 10 units, half by token checkout and half by claim:
/// exactly 10 win, stock never goes below zero, every loser gets a clean 4xx, and the
/// tokens are conserved (balances plus the token revenue of paid orders).
#[tokio::test]
async fn never_oversell_the_last_units() {
    let s = Server::start_with(options()).await;
    let admin = s.verified_user(&email("seller")).await;
    let domain = shop(&s, &admin, &[("LAST", 900, Some(30), 10)]).await;
    // A priced item is claimable only as a tier's entitlement (security round 2, H4).
    s.sql("UPDATE inventory_items SET min_tier = 10 WHERE sku = 'LAST'")
        .await;
    let mut keys = Vec::new();
    for i in 0..64 {
        keys.push(s.funded_user(&email(&format!("race{i}"))).await);
    }
    let base = s.base.clone();
    let tasks: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let (base, k, domain) = (base.clone(), k.clone(), domain.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let req = if i % 2 == 0 {
                    http.post(format!("{base}/api/marketplace/checkout"))
                        .json(&json!({"items": [{"sku": "LAST", "quantity": 1}], "payment_type": "tokens"}))
                } else {
                    http.post(format!("{base}/api/inventory/claim"))
                        .json(&json!({"sku": "LAST", "domain": domain}))
                };
                let res = req.header("x-api-key", k).send().await.unwrap();
                Server::read(res).await
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        let r = t.await.unwrap();
        if r.status.is_success() {
            wins += 1;
        } else {
            assert_eq!(r.status.as_u16(), 409, "{}", r.body);
            assert_eq!(r.body["error"], true);
        }
    }
    assert_eq!(wins, 10);
    assert_eq!(available(&s, &domain, "LAST").await, 0);
    let held = s
        .sql_count("SELECT COUNT(*) FROM inventory_units WHERE status IN ('sold', 'claimed')")
        .await;
    assert_eq!(held, 10);
    let mut sum = 0;
    for k in &keys {
        let b = balance(&s, k).await;
        assert!(b >= 0);
        sum += b;
    }
    let revenue = s
        .sql_count(
            "SELECT CAST(COALESCE(SUM(total_tokens), 0) AS BIGINT) FROM orders WHERE status = 'paid'",
        )
        .await;
    assert_eq!(sum + revenue, 64 * 100);
}
