//! Inventory end to end: items with units and `available_count`, private items, search
//! (keywords, filters, price range), mutable fields only, soft removal with a ledger,
//! claims gated by tier and never handing out more units than exist.

use serde_json::{json, Value};

use crate::common::{email, Server};

struct Shop {
    domain: String,
    admin: String,
    member: String,
}

async fn shop(s: &Server) -> Shop {
    let domain = format!(
        "shop-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let admin = s.verified_user(&email("shopadmin")).await;
    s.post(
        "/api/organizations/create",
        Some(&admin),
        json!({"domain": domain}),
    )
    .await
    .assert_ok();
    let member_email = email("clerk");
    let member = s.verified_user(&member_email).await;
    s.post(
        "/api/organizations/users/add",
        Some(&admin),
        json!({"domain": domain, "email": member_email}),
    )
    .await
    .assert_ok();
    Shop {
        domain,
        admin,
        member,
    }
}

async fn create(s: &Server, shop: &Shop, body: Value) -> Value {
    let mut body = body;
    body["domain"] = json!(shop.domain);
    let r = s
        .post("/api/inventory/create", Some(&shop.admin), body)
        .await;
    r.assert_ok();
    r.body["data"].clone()
}

fn skus(v: &Value) -> Vec<&str> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sku"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn items_units_privacy_search_and_soft_removal() {
    let s = Server::start().await;
    let shop = shop(&s).await;
    let stranger = s.verified_user(&email("stranger")).await;

    let chair = create(
        &s,
        &shop,
        json!({"sku": "CH-1", "slug": "oak-chair", "price_cents": 12000, "price_tokens": 500,
               "data": {"title": "Oak chair", "condition": "new", "color": "brown"}, "unit_count": 3}),
    )
    .await;
    assert_eq!(chair["available_count"], 3);
    assert_eq!(chair["price_tokens"], 500);
    let lamp = create(
        &s,
        &shop,
        json!({"sku": "LA-1", "slug": "desk-lamp", "price_cents": 3000,
               "data": {"title": "Desk lamp", "condition": "used"},
               "units": [{"data": {"serial": "A1"}}, {"data": {"serial": "A2"}}]}),
    )
    .await;
    assert_eq!(lamp["price_tokens"], Value::Null);
    create(
        &s,
        &shop,
        json!({"sku": "SECRET", "slug": "prototype", "price_cents": 1, "private": true, "data": {"title": "Prototype chair"}}),
    )
    .await;
    // Only an admin of the organization creates; a taken sku is a 409; sku and units checked.
    let mut dup = json!({"sku": "CH-1", "slug": "other", "price_cents": 1, "domain": shop.domain});
    s.post("/api/inventory/create", Some(&shop.member), dup.clone())
        .await
        .assert_error(403);
    s.post("/api/inventory/create", Some(&shop.admin), dup.clone())
        .await
        .assert_error(409);
    dup["sku"] = json!("NEW");
    dup["unit_count"] = json!(-1);
    s.post("/api/inventory/create", Some(&shop.admin), dup)
        .await
        .assert_error(400);

    // Lists: private items for members only.
    let path = format!("/api/inventory?domain={}", shop.domain);
    let list = async |key: Option<&str>| s.get(&path, key).await;
    let r = list(None).await;
    r.assert_ok();
    assert_eq!(skus(&r.body), ["LA-1", "CH-1"]);
    assert_eq!(r.body["data"][1]["available_count"], 3);
    assert_eq!(list(Some(&stranger)).await.body["total"], 2);
    assert_eq!(list(Some(&shop.member)).await.body["total"], 3);

    // Detail with units.
    let id = chair["id"].as_str().unwrap();
    let r = s
        .get(&format!("/api/inventory/{id}?domain={}", shop.domain), None)
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["units"].as_array().unwrap().len(), 3);

    // Search: keywords (full text), data filters, price range; private items hidden.
    let search = |body: Value| {
        let mut body = body;
        body["domain"] = json!(shop.domain);
        s.post("/api/inventory/search", None, body)
    };
    let r = search(json!({"search": {"keywords": "chair"}})).await;
    r.assert_ok();
    assert_eq!(skus(&r.body), ["CH-1"]);
    let r = search(json!({"filters": {"condition": "used"}})).await;
    assert_eq!(skus(&r.body), ["LA-1"]);
    let r = search(json!({"priceRange": {"min": 5000, "max": 20000}})).await;
    assert_eq!(skus(&r.body), ["CH-1"]);
    let r = search(json!({"search": {"keywords": "de"}, "priceRange": {"max": 5000}})).await;
    assert_eq!(skus(&r.body), ["LA-1"], "prefix match on `desk`");
    search(json!({"priceRange": {"min": 10, "max": 5}}))
        .await
        .assert_error(400);

    // Update: the mutable fields only; null clears price_tokens; data merges.
    let r = s
        .post(
            "/api/inventory/update",
            Some(&shop.admin),
            json!({"id": id, "price_tokens": null, "min_tier": 20, "data": {"color": null, "finish": "oil"},
                   "sku": "HACKED", "organization_id": "elsewhere", "available_count": 99}),
        )
        .await;
    r.assert_ok();
    let d = &r.body["data"];
    assert_eq!(d["sku"], "CH-1");
    assert_eq!(d["price_tokens"], Value::Null);
    assert_eq!(d["min_tier"], 20);
    assert_eq!(d["available_count"], 3);
    assert_eq!(
        d["data"],
        json!({"title": "Oak chair", "condition": "new", "finish": "oil"})
    );
    s.post(
        "/api/inventory/update",
        Some(&shop.member),
        json!({"id": id, "price_cents": 1}),
    )
    .await
    .assert_error(404);

    // Units: add, update, remove (soft).
    let r = s
        .post(
            "/api/inventory/units/add",
            Some(&shop.admin),
            json!({"domain": shop.domain, "inventory_item_id": id, "count": 2}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["available_count"], 5);
    let unit = r.body["unit_ids"][0].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/inventory/units/update",
            Some(&shop.admin),
            json!({"domain": shop.domain, "id": unit, "status": "unavailable", "data": {"note": "scratched"}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], "unavailable");
    s.post(
        "/api/inventory/units/update",
        Some(&shop.admin),
        json!({"domain": shop.domain, "id": unit, "status": "sold"}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/inventory/units/remove",
        Some(&shop.admin),
        json!({"domain": shop.domain, "id": unit}),
    )
    .await
    .assert_ok();
    let r = s
        .get(&format!("/api/inventory/{id}?domain={}", shop.domain), None)
        .await;
    assert_eq!(r.body["data"]["units"].as_array().unwrap().len(), 4);

    // Delete: the item and its units, softly; both removals are in the ledger.
    s.post(
        "/api/inventory/delete",
        Some(&shop.admin),
        json!({"id": id}),
    )
    .await
    .assert_ok();
    s.get(&format!("/api/inventory/{id}"), None)
        .await
        .assert_error(404);
    let count = async |action: &str| {
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM inventory_ledger WHERE item_id = '{id}' AND action = '{action}'"
        ))
        .await
    };
    assert_eq!(
        count("unit_removed").await,
        5,
        "4 live units, 1 removed before"
    );
    assert_eq!(count("item_removed").await, 1);
}

#[tokio::test]
async fn claims_are_gated_by_tier_one_per_account_and_never_oversell() {
    let s = Server::start().await;
    let shop = shop(&s).await;
    create(
        &s,
        &shop,
        json!({"sku": "GIFT", "slug": "gift", "price_cents": 0, "min_tier": 10, "unit_count": 5}),
    )
    .await;
    create(
        &s,
        &shop,
        json!({"sku": "VIP", "slug": "vip", "price_cents": 0, "min_tier": 30, "unit_count": 1}),
    )
    .await;
    let claim = async |key: String, sku: &'static str| {
        s.post(
            "/api/inventory/claim",
            Some(&key),
            json!({"sku": sku, "domain": shop.domain}),
        )
        .await
    };
    // Tier 10 is below VIP's 30.
    let r = claim(shop.member.clone(), "VIP").await;
    r.assert_error(403);
    assert_eq!(r.body["required_tier"], 30);

    // 16 accounts race for 5 units: exactly 5 get one, the rest a clean 409.
    let mut keys = Vec::new();
    for i in 0..16 {
        keys.push(s.verified_user(&email(&format!("racer{i}"))).await);
    }
    let results = futures::future::join_all(keys.iter().map(|k| claim(k.clone(), "GIFT"))).await;
    let won = results.iter().filter(|r| r.status.is_success()).count();
    assert_eq!(
        won,
        5,
        "{:?}",
        results.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(results
        .iter()
        .all(|r| r.status.is_success() || r.status.as_u16() == 409));
    let winner = keys[results.iter().position(|r| r.status.is_success()).unwrap()].clone();
    claim(winner, "GIFT").await.assert_error(409);
    let r = s
        .get(&format!("/api/inventory?domain={}", shop.domain), None)
        .await;
    let gift = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["sku"] == "GIFT")
        .unwrap()
        .clone();
    assert_eq!(gift["available_count"], 0);
}
