//! Licenses: minted by organization admins (a zero-cost `admin_grant` order), shown in
//! plain text only at mint and on the owner's detail, validated with machine activation
//! that stays exact under concurrency, revoked and regenerated.

use serde_json::{json, Value};

use crate::common::{email, Resp, Server};

/// An organization of `admin` with a licensed item `APP` (2 activations; `duration`
/// seconds when given).
async fn licensed_shop(
    s: &Server,
    admin: &str,
    sku: &str,
    allowed: i64,
    duration: Option<i64>,
) -> String {
    let (domain, _) = s.organization(admin, "lic").await;
    s.post(
        "/api/inventory/create",
        Some(admin),
        json!({"domain": domain, "sku": sku, "slug": sku.to_lowercase(), "price_cents": 4900,
               "data": {"license_product_id": "prod-app", "license_activations_allowed": allowed,
                        "license_duration_seconds": duration}}),
    )
    .await
    .assert_ok();
    domain
}

async fn validate(s: &Server, key: &str, machine: &str) -> Resp {
    let r = s
        .post(
            "/api/licenses/validate",
            None,
            json!({"key": key, "machine": machine}),
        )
        .await;
    r.assert_ok();
    r
}

/// The body without the envelope's `_usage`.
fn bare(r: &Resp) -> Value {
    let mut b = r.body.clone();
    b.as_object_mut().unwrap().remove("_usage");
    b
}

#[tokio::test]
async fn admins_mint_keys_that_only_owners_and_admins_read() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("lic-admin")).await;
    let owner_email = email("lic-owner");
    let owner = s.verified_user(&owner_email).await;
    let other = s.verified_user(&email("lic-other")).await;
    let owner_id = s.get("/api/users/viewer", Some(&owner)).await.body["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let domain = licensed_shop(&s, &admin, "APP", 2, None).await;

    let r = s
        .post(
            "/api/licenses/create",
            Some(&admin),
            json!({"domain": domain, "count": 3, "recipient_user_id": owner_id, "sku": "APP"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["count"], 3);
    let first = &r.body["data"][0];
    let key = first["key"].as_str().unwrap().to_owned();
    let id = first["id"].as_str().unwrap().to_owned();
    let groups: Vec<&str> = key.split('-').collect();
    assert_eq!(groups.len(), 5, "{key}");
    assert!(groups.iter().all(|g| g.len() == 5));
    assert!(groups[0].starts_with("PTH") && groups[1].starts_with("PTH"));
    assert!(key
        .chars()
        .all(|c| c == '-' || "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains(c)));
    assert_eq!(first["status"], "active");
    assert_eq!(first["product_id"], "prod-app");
    assert_eq!(first["activations_allowed"], 2);
    assert_eq!(first["user_id"], json!(owner_id));
    let order = r.body["order_id"].as_str().unwrap();
    assert_eq!(
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM orders WHERE id = '{order}' AND payment_type = 'admin_grant' AND total_cents = 0"
        ))
        .await,
        1
    );
    // Stored as its hash and ciphertext only.
    let hash = plinth::crypto::sha256_hex(key.as_bytes());
    assert_eq!(
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM licenses WHERE key_hash = '{hash}' AND key_cipher <> '{key}'"
        ))
        .await,
        1
    );
    assert_eq!(
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM licenses WHERE key_cipher LIKE '%{}%'",
            groups[4]
        ))
        .await,
        0
    );

    // The owner and the admins read the key; anyone else gets the same 404 as for nothing.
    let r = s.get(&format!("/api/licenses/{id}"), Some(&owner)).await;
    r.assert_ok();
    assert_eq!(r.body["data"]["key"], json!(key));
    assert_eq!(r.body["data"]["machine_ids"], json!([]));
    let r = s.get(&format!("/api/licenses/{id}"), Some(&admin)).await;
    assert_eq!(r.body["data"]["key"], json!(key));
    let denied = s.get(&format!("/api/licenses/{id}"), Some(&other)).await;
    denied.assert_error(404);
    let missing = s
        .get(
            &format!("/api/licenses/{}", uuid::Uuid::new_v4()),
            Some(&other),
        )
        .await;
    assert_eq!(denied.body["message"], missing.body["message"]);

    // Lists never carry keys.
    let r = s.get("/api/licenses", Some(&owner)).await;
    r.assert_ok();
    assert_eq!(r.body["total"], 3);
    assert!(!r.body.to_string().contains(&key));
    let r = s
        .get(&format!("/api/licenses?domain={domain}"), Some(&admin))
        .await;
    assert_eq!(r.body["total"], 3);
    assert!(!r.body.to_string().contains(&key));
    s.get(&format!("/api/licenses?domain={domain}"), Some(&other))
        .await
        .assert_error(403);
    assert_eq!(s.get("/api/licenses", Some(&other)).await.body["total"], 0);

    for bad in [
        json!({"domain": domain, "count": 101}),
        json!({"domain": domain, "count": 0}),
    ] {
        s.post("/api/licenses/create", Some(&admin), bad)
            .await
            .assert_error(400);
    }
    s.post(
        "/api/licenses/create",
        Some(&admin),
        json!({"domain": domain, "sku": "NOPE"}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/licenses/create",
        Some(&other),
        json!({"domain": domain}),
    )
    .await
    .assert_error(403);
    // Without a recipient, `user_id` is null.
    let r = s
        .post(
            "/api/licenses/create",
            Some(&admin),
            json!({"domain": domain}),
        )
        .await;
    assert_eq!(r.body["data"][0]["user_id"], Value::Null);
    assert_eq!(r.body["data"][0]["activations_allowed"], Value::Null);
}

#[tokio::test]
async fn validation_activates_machines_up_to_the_limit() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("val-admin")).await;
    let other = s.verified_user(&email("val-other")).await;
    let domain = licensed_shop(&s, &admin, "APP", 2, None).await;
    let mint = |count: i64| {
        let (s, admin, domain) = (&s, admin.clone(), domain.clone());
        async move {
            let r = s
                .post(
                    "/api/licenses/create",
                    Some(&admin),
                    json!({"domain": domain, "sku": "APP", "count": count}),
                )
                .await;
            r.assert_ok();
            r.body["data"].as_array().unwrap().clone()
        }
    };
    let l = mint(1).await.remove(0);
    let key = l["key"].as_str().unwrap().to_owned();
    let id = l["id"].as_str().unwrap().to_owned();

    // Unknown keys: exactly `{valid: false}`.
    let r = validate(&s, "PTH00-PTH00-00000-00000-00000", "m1").await;
    assert_eq!(bare(&r), json!({"valid": false}));
    s.post(
        "/api/licenses/validate",
        None,
        json!({"key": key, "machine": ""}),
    )
    .await
    .assert_error(400);

    let r = validate(&s, &key, "m1").await;
    assert_eq!(r.body["valid"], true);
    assert_eq!(r.body["code"], "valid_activated");
    assert_eq!(r.body["license"]["activations_current"], 1);
    let r = validate(&s, &key.to_lowercase(), "m1").await;
    assert_eq!(r.body["code"], "valid_known_machine");
    assert_eq!(
        validate(&s, &key, "m2").await.body["code"],
        "valid_activated"
    );
    let r = validate(&s, &key, "m3").await;
    assert_eq!(r.body["valid"], false);
    assert_eq!(r.body["code"], "activation_limit");
    assert_eq!(
        validate(&s, &key, "m2").await.body["code"],
        "valid_known_machine"
    );
    let r = s.get(&format!("/api/licenses/{id}"), Some(&admin)).await;
    assert_eq!(r.body["data"]["machine_ids"], json!(["m1", "m2"]));
    assert_eq!(r.body["data"]["activations_current"], 2);

    // Revoked: exactly `{valid: false}`; a second revoke changes nothing. Only the
    // organization's admins or the issuer revoke.
    s.post("/api/licenses/revoke", Some(&other), json!({"id": id}))
        .await
        .assert_error(404);
    s.post("/api/licenses/revoke", None, json!({"id": id}))
        .await
        .assert_error(401);
    let r = s
        .post(
            "/api/licenses/revoke",
            Some(&admin),
            json!({"id": id, "reason": "chargeback"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["already_revoked"], false);
    assert_eq!(r.body["data"]["status"], "revoked");
    assert_eq!(r.body["data"]["data"]["revoke_reason"], "chargeback");
    assert!(!r.body.to_string().contains(&key));
    let r = s
        .post("/api/licenses/revoke", Some(&admin), json!({"id": id}))
        .await;
    assert_eq!(r.body["already_revoked"], true);
    assert_eq!(
        bare(&validate(&s, &key, "m1").await),
        json!({"valid": false})
    );
    s.post("/api/licenses/regenerate", Some(&admin), json!({"id": id}))
        .await
        .assert_error(409);

    // A refunded order's keys read as unknown too.
    let l = mint(1).await.remove(0);
    let key = l["key"].as_str().unwrap().to_owned();
    assert_eq!(validate(&s, &key, "m1").await.body["valid"], true);
    s.sql(&format!(
        "UPDATE orders SET status = 'refunded' WHERE id = '{}'",
        l["order_id"].as_str().unwrap()
    ))
    .await;
    assert_eq!(
        bare(&validate(&s, &key, "m1").await),
        json!({"valid": false})
    );

    // Exact under concurrency: 50 machines race for 2 activations; 20 calls of one
    // machine count once.
    let l = mint(2).await;
    let (race, same) = (
        l[0]["key"].as_str().unwrap().to_owned(),
        l[1]["key"].as_str().unwrap().to_owned(),
    );
    let base = s.base.clone();
    let call = |key: String, machine: String| {
        let base = base.clone();
        tokio::spawn(async move {
            let r: Value = reqwest::Client::new()
                .post(format!("{base}/api/licenses/validate"))
                .json(&json!({"key": key, "machine": machine}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["code"].as_str().unwrap().to_owned()
        })
    };
    let tasks: Vec<_> = (0..50)
        .map(|i| call(race.clone(), format!("machine-{i}")))
        .chain((0..20).map(|_| call(same.clone(), "one-machine".into())))
        .collect();
    let mut codes = Vec::new();
    for t in tasks {
        codes.push(t.await.unwrap());
    }
    let (raced, repeated) = codes.split_at(50);
    assert_eq!(raced.iter().filter(|c| *c == "valid_activated").count(), 2);
    assert_eq!(
        raced.iter().filter(|c| *c == "activation_limit").count(),
        48
    );
    assert_eq!(
        repeated.iter().filter(|c| *c == "valid_activated").count(),
        1
    );
    assert_eq!(
        repeated
            .iter()
            .filter(|c| *c == "valid_known_machine")
            .count(),
        19
    );
    let r = s
        .get(
            &format!("/api/licenses/{}", l[1]["id"].as_str().unwrap()),
            Some(&admin),
        )
        .await;
    assert_eq!(r.body["data"]["activations_current"], 1);
}

#[tokio::test]
async fn licenses_expire_and_regenerate() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("exp-admin")).await;
    let domain = licensed_shop(&s, &admin, "TRIAL", 1, Some(1)).await;
    let r = s
        .post(
            "/api/licenses/create",
            Some(&admin),
            json!({"domain": domain, "sku": "TRIAL"}),
        )
        .await;
    let l = r.body["data"][0].clone();
    let (id, key) = (
        l["id"].as_str().unwrap().to_owned(),
        l["key"].as_str().unwrap().to_owned(),
    );
    assert_eq!(
        validate(&s, &key, "m1").await.body["code"],
        "valid_activated"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let r = validate(&s, &key, "m1").await;
    assert_eq!(r.body["valid"], false);
    assert_eq!(r.body["code"], "expired");
    assert_eq!(
        s.get(&format!("/api/licenses/{id}"), Some(&admin))
            .await
            .body["data"]["status"],
        "expired"
    );

    // Regenerate from expired: the old row is revoked and points at the new one, which
    // has no machines and the same terms.
    let r = s
        .post("/api/licenses/regenerate", Some(&admin), json!({"id": id}))
        .await;
    r.assert_ok();
    let fresh = &r.body["data"];
    let new_key = fresh["key"].as_str().unwrap();
    assert_ne!(new_key, key);
    assert_eq!(fresh["activations_current"], 0);
    assert_eq!(fresh["machine_ids"], json!([]));
    assert_eq!(fresh["expires_at"], l["expires_at"]);
    let old = s.get(&format!("/api/licenses/{id}"), Some(&admin)).await;
    assert_eq!(old.body["data"]["status"], "revoked");
    assert_eq!(old.body["data"]["data"]["replaced_by_id"], fresh["id"]);
    assert_eq!(
        bare(&validate(&s, &key, "m1").await),
        json!({"valid": false})
    );
}

#[tokio::test]
async fn purchases_mint_one_key_per_unit_once_paid() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("buy-admin")).await;
    let buyer = s.funded_user(&email("buy-buyer")).await;
    let domain = licensed_shop(&s, &admin, "APP", 2, None).await;
    s.post(
        "/api/inventory/create",
        Some(&admin),
        json!({"domain": domain, "sku": "TOK", "slug": "tok", "price_cents": 500, "price_tokens": 30,
               "unit_count": 5, "data": {"license_product_id": "prod-tok"}}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/inventory/create",
        Some(&admin),
        json!({"domain": domain, "sku": "KEY", "slug": "key", "price_cents": 2900, "unit_count": 5,
               "data": {"license_product_id": "prod-key", "license_activations_allowed": 2}}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/inventory/create",
        Some(&admin),
        json!({"domain": domain, "sku": "MUG", "slug": "mug", "price_cents": 500, "unit_count": 5}),
    )
    .await
    .assert_ok();

    // Tokens: two units, two keys that work.
    let r = s
        .post(
            "/api/licenses/purchase",
            Some(&buyer),
            json!({"items": [{"sku": "TOK", "quantity": 2}], "payment_type": "tokens", "domain": domain}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "paid");
    assert_eq!(r.body["balance"], 40);
    let keys = r.body["licenses"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["product_id"], "prod-tok");
    let key = keys[0]["key"].as_str().unwrap().to_owned();
    assert_eq!(
        validate(&s, &key, "m1").await.body["code"],
        "valid_activated"
    );
    assert_eq!(s.get("/api/licenses", Some(&buyer)).await.body["total"], 2);

    // Refusals: nothing licensed, no payment, nobody, a declined card.
    for (body, status) in [
        (
            json!({"items": [{"sku": "MUG", "quantity": 1}], "payment_method_id": "pm_card_visa", "domain": domain}),
            400,
        ),
        (
            json!({"items": [{"sku": "TOK", "quantity": 1}], "domain": domain}),
            400,
        ),
        (
            json!({"items": [{"sku": "TOK", "quantity": 1}], "payment_method_id": "pm_card_chargeDeclined", "domain": domain}),
            402,
        ),
    ] {
        s.post("/api/licenses/purchase", Some(&buyer), body)
            .await
            .assert_error(status);
    }
    s.post(
        "/api/licenses/purchase",
        None,
        json!({"items": [{"sku": "TOK", "quantity": 1}], "payment_method_id": "pm_card_visa"}),
    )
    .await
    .assert_error(401);
    assert_eq!(s.get("/api/licenses", Some(&buyer)).await.body["total"], 2);

    // USD by card; the seller's refund makes its keys read as unknown.
    let r = s
        .post(
            "/api/licenses/purchase",
            Some(&buyer),
            json!({"items": [{"sku": "KEY", "quantity": 1}], "payment_method_id": "pm_card_visa", "domain": domain}),
        )
        .await;
    r.assert_ok();
    let usd_key = r.body["licenses"][0]["key"].as_str().unwrap().to_owned();
    assert_eq!(validate(&s, &usd_key, "m1").await.body["valid"], true);
    s.post(
        "/api/marketplace/orders/update",
        Some(&admin),
        json!({"id": r.body["order_id"], "status": "refunded"}),
    )
    .await
    .assert_ok();
    assert_eq!(
        bare(&validate(&s, &usd_key, "m1").await),
        json!({"valid": false})
    );

    // A guest session buys by card; its keys have no owner.
    let token = s.guest_session(&domain).await;
    let r = s
        .post_as_guest(
            "/api/licenses/purchase",
            &token,
            json!({"items": [{"sku": "KEY", "quantity": 1}], "payment_method_id": "pm_card_visa"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["licenses"][0]["user_id"], Value::Null);
    let guest_key = r.body["licenses"][0]["key"].as_str().unwrap().to_owned();
    assert_eq!(
        validate(&s, &guest_key, "g1").await.body["code"],
        "valid_activated"
    );
}
