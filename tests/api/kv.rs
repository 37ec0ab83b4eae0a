//! The key-value store: platform admins only, namespaces owned by their creator (others
//! get 404), exact limits with clear 400s, update never creates, delete only empty.

use serde_json::json;

use crate::common::{email, Server};

#[tokio::test]
async fn namespaces_and_entries_belong_to_their_admin() {
    let s = Server::start().await;
    let a = s.admin(&email("kv-a")).await;
    let b = s.admin(&email("kv-b")).await;
    let user = s.verified_user(&email("kv-user")).await;
    let ns = format!("Cfg-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let lower = ns.to_lowercase();

    s.post(
        "/api/kv/namespaces/create",
        Some(&user),
        json!({"namespace": ns}),
    )
    .await
    .assert_error(403);
    let r = s
        .post(
            "/api/kv/namespaces/create",
            Some(&a),
            json!({"namespace": format!("  {ns} ")}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["name"], json!(lower));
    s.post(
        "/api/kv/namespaces/create",
        Some(&b),
        json!({"namespace": lower}),
    )
    .await
    .assert_error(409);
    for bad in ["", "-lead", "has space", "ünï", &"x".repeat(129)] {
        s.post(
            "/api/kv/namespaces/create",
            Some(&a),
            json!({"namespace": bad}),
        )
        .await
        .assert_error(400);
    }
    let r = s.get("/api/kv/namespaces", Some(&a)).await;
    assert_eq!(r.body["count"], 1);
    assert_eq!(s.get("/api/kv/namespaces", Some(&b)).await.body["count"], 0);

    // Entries: case-sensitive keys, string values (empty allowed), limits named.
    let put = |path: &'static str, key: &str, value: serde_json::Value| {
        s.post(
            path,
            Some(&a),
            json!({"namespace": lower, "key": key, "value": value}),
        )
    };
    put("/api/kv/entries/create", "Theme", json!("dark"))
        .await
        .assert_ok();
    put("/api/kv/entries/create", "theme", json!(""))
        .await
        .assert_ok();
    put("/api/kv/entries/create", "Theme", json!("light"))
        .await
        .assert_error(409);
    put("/api/kv/entries/update", "missing", json!("x"))
        .await
        .assert_error(404);
    put("/api/kv/entries/create", &"k".repeat(513), json!("x"))
        .await
        .assert_error(400);
    put("/api/kv/entries/create", "n", json!(5))
        .await
        .assert_error(400);
    let big = put(
        "/api/kv/entries/create",
        "big",
        json!("v".repeat(256 * 1024 + 1)),
    )
    .await;
    // A field over its limit is a 400 naming it (413 is for a body over the body limit).
    big.assert_error(400);
    assert!(big.body["message"].as_str().unwrap().contains("256 KiB"));
    assert_eq!(big.body["max_bytes"], json!(256 * 1024));
    put(
        "/api/kv/entries/create",
        "max",
        json!("v".repeat(256 * 1024)),
    )
    .await
    .assert_ok();
    let r = put("/api/kv/entries/update", "Theme", json!("light")).await;
    r.assert_ok();
    let get = |who: String, key: &'static str| {
        let s = &s;
        let lower = lower.clone();
        async move {
            s.post(
                "/api/kv/entries/get",
                Some(&who),
                json!({"namespace": lower, "key": key}),
            )
            .await
        }
    };
    let r = get(a.clone(), "Theme").await;
    assert_eq!(r.body["data"]["value"], "light");
    assert_eq!(get(a.clone(), "theme").await.body["data"]["value"], "");
    // Another admin: the same 404 as for a namespace that does not exist.
    let other = get(b.clone(), "Theme").await;
    other.assert_error(404);
    let none = s
        .post(
            "/api/kv/entries/get",
            Some(&b),
            json!({"namespace": "no-such-ns", "key": "Theme"}),
        )
        .await;
    assert_eq!(other.body["message"], none.body["message"]);

    // A namespace goes only when empty.
    s.post(
        "/api/kv/namespaces/delete",
        Some(&a),
        json!({"namespace": lower}),
    )
    .await
    .assert_error(409);
    for k in ["Theme", "theme", "max"] {
        s.post(
            "/api/kv/entries/delete",
            Some(&a),
            json!({"namespace": lower, "key": k}),
        )
        .await
        .assert_ok();
    }
    s.post(
        "/api/kv/entries/delete",
        Some(&a),
        json!({"namespace": lower, "key": "Theme"}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/kv/namespaces/delete",
        Some(&b),
        json!({"namespace": lower}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/kv/namespaces/delete",
        Some(&a),
        json!({"namespace": lower}),
    )
    .await
    .assert_ok();
    assert_eq!(s.get("/api/kv/namespaces", Some(&a)).await.body["count"], 0);
}
