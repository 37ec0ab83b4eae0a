//! Marketplace: carts (per user; availability is checked at checkout, not at add) and
//! discount codes of an organization.

use serde_json::json;

use crate::common::{email, Server};

async fn shop_with_items(s: &Server, admin: &str) -> String {
    let domain = format!(
        "mk-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    s.post(
        "/api/organizations/create",
        Some(admin),
        json!({"domain": domain}),
    )
    .await
    .assert_ok();
    for (sku, cents, tokens, units) in [("MUG", 1200, Some(50), 2), ("TEE", 2500, None, 1)] {
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

#[tokio::test]
async fn carts_belong_to_their_user_and_check_skus_not_stock() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("seller")).await;
    let buyer = s.verified_user(&email("buyer")).await;
    let other = s.verified_user(&email("other")).await;
    let domain = shop_with_items(&s, &admin).await;

    // More than the 2 units in stock is fine in a cart: checkout decides.
    let r = s
        .post(
            "/api/marketplace/cart/add",
            Some(&buyer),
            json!({"sku": "MUG", "quantity": 3}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"][0]["quantity"], 3);
    let r = s
        .post(
            "/api/marketplace/cart/add",
            Some(&buyer),
            json!({"sku": "MUG", "quantity": 2, "domain": domain}),
        )
        .await;
    assert_eq!(r.body["data"][0]["quantity"], 5);
    s.post(
        "/api/marketplace/cart/add",
        Some(&buyer),
        json!({"sku": "TEE", "quantity": 1}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/marketplace/cart/add",
        Some(&buyer),
        json!({"sku": "NOPE", "quantity": 1}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/marketplace/cart/add",
        Some(&buyer),
        json!({"sku": "MUG", "quantity": 0}),
    )
    .await
    .assert_error(400);

    let r = s.get("/api/marketplace/cart", Some(&buyer)).await;
    r.assert_ok();
    assert_eq!(r.body["count"], 2);
    assert_eq!(r.body["subtotal_cents"], 5 * 1200 + 2500);
    assert_eq!(
        r.body["subtotal_tokens"],
        serde_json::Value::Null,
        "TEE has no token price"
    );
    assert_eq!(
        s.get("/api/marketplace/cart", Some(&other)).await.body["count"],
        0
    );

    let r = s
        .post(
            "/api/marketplace/cart/update",
            Some(&buyer),
            json!({"sku": "MUG", "quantity": 1}),
        )
        .await;
    assert_eq!(r.body["data"][0]["quantity"], 1);
    s.post(
        "/api/marketplace/cart/update",
        Some(&other),
        json!({"sku": "MUG", "quantity": 1}),
    )
    .await
    .assert_error(404);
    let r = s
        .post(
            "/api/marketplace/cart/remove",
            Some(&buyer),
            json!({"sku": "TEE"}),
        )
        .await;
    assert_eq!(r.body["count"], 1);
    assert_eq!(r.body["subtotal_tokens"], 50);
    let r = s
        .post("/api/marketplace/cart/clear", Some(&buyer), json!({}))
        .await;
    assert_eq!(r.body["removed"], 1);
    assert_eq!(
        s.get("/api/marketplace/cart", Some(&buyer)).await.body["count"],
        0
    );
}

#[tokio::test]
async fn discount_codes_are_per_organization_and_checked() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("owner")).await;
    let member_email = email("member");
    let member = s.verified_user(&member_email).await;
    let domain = shop_with_items(&s, &admin).await;
    s.post(
        "/api/organizations/users/add",
        Some(&admin),
        json!({"domain": domain, "email": member_email}),
    )
    .await
    .assert_ok();

    let create = |body: serde_json::Value| {
        let mut body = body;
        body["domain"] = json!(domain);
        s.post("/api/marketplace/discounts/create", Some(&admin), body)
    };
    let r = create(
        json!({"code": "spring-10", "value": 10, "type": "percentage", "max_uses": 100,
                          "expires_at": "2030-01-01T00:00:00Z", "min_order_cents": 1000}),
    )
    .await;
    r.assert_ok();
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["data"]["code"], "SPRING-10");
    assert_eq!(r.body["data"]["uses"], 0);
    create(json!({"code": "SPRING-10", "value": 5, "type": "fixed"}))
        .await
        .assert_error(409);
    create(json!({"code": "BAD", "value": 150, "type": "percentage"}))
        .await
        .assert_error(400);
    create(json!({"code": "BAD", "value": 2.5, "type": "fixed"}))
        .await
        .assert_error(400);
    create(json!({"code": "BAD", "value": 5, "type": "bogo"}))
        .await
        .assert_error(400);
    create(json!({"code": "FIVE", "value": 500, "type": "fixed"}))
        .await
        .assert_ok();

    // OrgAdmin only: a member is refused.
    s.get(
        &format!("/api/marketplace/discounts?domain={domain}"),
        Some(&member),
    )
    .await
    .assert_error(403);
    let r = s
        .get(
            &format!("/api/marketplace/discounts?domain={domain}"),
            Some(&admin),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["count"], 2);
    let r = s
        .get(
            &format!("/api/marketplace/discounts/{id}?domain={domain}"),
            Some(&admin),
        )
        .await;
    assert_eq!(r.body["data"]["max_uses"], 100);

    // Update: given fields; null clears a limit; `uses` stays the server's.
    let r = s
        .post(
            "/api/marketplace/discounts/update",
            Some(&admin),
            json!({"domain": domain, "id": id, "value": 15, "max_uses": null, "uses": 99}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["value"], 15.0);
    assert_eq!(r.body["data"]["max_uses"], serde_json::Value::Null);
    assert_eq!(r.body["data"]["uses"], 0);
    assert_eq!(r.body["data"]["min_order_cents"], 1000);

    // Another organization's admin cannot see or change it.
    let stranger = s.verified_user(&email("rival")).await;
    let rival = shop_with_items(&s, &stranger).await;
    s.get(
        &format!("/api/marketplace/discounts/{id}?domain={rival}"),
        Some(&stranger),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/marketplace/discounts/delete",
        Some(&stranger),
        json!({"domain": rival, "id": id}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/marketplace/discounts/delete",
        Some(&admin),
        json!({"domain": domain, "id": id}),
    )
    .await
    .assert_ok();
    s.get(
        &format!("/api/marketplace/discounts/{id}?domain={domain}"),
        Some(&admin),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn guest_sessions_need_the_organizations_consent_and_keep_their_own_cart() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("guestshop")).await;
    let domain = shop_with_items(&s, &admin).await;
    let other_admin = s.verified_user(&email("elsewhere")).await;
    let other = shop_with_items(&s, &other_admin).await;
    s.post(
        "/api/inventory/create",
        Some(&admin),
        json!({"domain": domain, "sku": "HIDDEN", "slug": "hidden", "price_cents": 1, "private": true, "unit_count": 1}),
    )
    .await
    .assert_ok();

    // Not enabled: no session.
    s.post(
        "/api/marketplace/guest/session",
        None,
        json!({"domain": domain}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/organizations/update",
        Some(&admin),
        json!({"domain": domain, "data": {"guest_checkout_enabled": true}}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/marketplace/guest/session",
            None,
            json!({"domain": domain}),
        )
        .await;
    r.assert_ok();
    let token = r.body["token"].as_str().unwrap().to_owned();
    assert!(r.body["expires_at"].is_string());

    let guest =
        |method: reqwest::Method, path: &str, token: Option<&str>, body: serde_json::Value| {
            let mut req = s.raw(method, path).json(&body);
            if let Some(t) = token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            async move { Server::read(req.send().await.unwrap()).await }
        };
    use reqwest::Method;
    guest(Method::GET, "/api/marketplace/guest/cart", None, json!({}))
        .await
        .assert_error(401);
    guest(
        Method::GET,
        "/api/marketplace/guest/cart",
        Some("gs_forged"),
        json!({}),
    )
    .await
    .assert_error(401);
    let r = guest(
        Method::POST,
        "/api/marketplace/guest/cart/add",
        Some(&token),
        json!({"sku": "MUG", "quantity": 2}),
    )
    .await;
    r.assert_ok();
    assert_eq!(r.body["data"][0]["domain"], json!(domain));
    assert_eq!(r.body["subtotal_cents"], 2400);
    // Only the session's organization, and only public items.
    guest(
        Method::POST,
        "/api/marketplace/guest/cart/add",
        Some(&token),
        json!({"sku": "HIDDEN", "quantity": 1}),
    )
    .await
    .assert_error(404);
    let r = guest(
        Method::POST,
        "/api/marketplace/guest/cart/add",
        Some(&token),
        json!({"sku": "TEE", "quantity": 1, "domain": other}),
    )
    .await;
    assert_eq!(
        r.body["count"], 2,
        "the domain is the session's, not the body's: {}",
        r.body
    );
    let r = guest(
        Method::POST,
        "/api/marketplace/guest/cart/update",
        Some(&token),
        json!({"sku": "MUG", "quantity": 0}),
    )
    .await;
    assert_eq!(r.body["count"], 1);
    let r = guest(
        Method::POST,
        "/api/marketplace/guest/cart/remove",
        Some(&token),
        json!({"sku": "TEE"}),
    )
    .await;
    assert_eq!(r.body["count"], 0);
    guest(
        Method::POST,
        "/api/marketplace/guest/cart/add",
        Some(&token),
        json!({"sku": "MUG", "quantity": 1}),
    )
    .await
    .assert_ok();
    let r = guest(
        Method::POST,
        "/api/marketplace/guest/cart/clear",
        Some(&token),
        json!({}),
    )
    .await;
    assert_eq!(r.body["removed"], 1);
    // A second session has its own cart.
    let r = s
        .post(
            "/api/marketplace/guest/session",
            None,
            json!({"domain": domain}),
        )
        .await;
    let second = r.body["token"].as_str().unwrap().to_owned();
    guest(
        Method::POST,
        "/api/marketplace/guest/cart/add",
        Some(&token),
        json!({"sku": "MUG", "quantity": 1}),
    )
    .await
    .assert_ok();
    let r = guest(
        Method::GET,
        "/api/marketplace/guest/cart",
        Some(&second),
        json!({}),
    )
    .await;
    assert_eq!(r.body["count"], 0);

    // Tokens are kept only as their hash, and a session ends after its 24 hours.
    let stored = format!("SELECT COUNT(*) FROM guest_sessions WHERE token_hash = '{token}'");
    assert_eq!(s.sql_count(&stored).await, 0);
    s.sql("UPDATE guest_sessions SET expires_at = created_at")
        .await;
    guest(
        Method::GET,
        "/api/marketplace/guest/cart",
        Some(&token),
        json!({}),
    )
    .await
    .assert_error(401);
}
