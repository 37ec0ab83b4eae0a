//! Issue 41, "output is bounded by what is stored": every place where a small request
//! (or many small ones) could make a large stored value, a large answer or much work.
//! Each check would pass a request through with its bound removed.

use serde_json::json;

use crate::common::{email, Server};

/// An organization domain no other test uses.
fn fresh_domain() -> String {
    format!(
        "amp-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// 100 KiB of text: three of these pass the 256 KiB bound on `data`, one does not.
fn chunk() -> String {
    "x".repeat(100 * 1024)
}

#[tokio::test]
async fn stored_values_are_bounded_after_a_merge_not_only_per_request() {
    let s = Server::start().await;
    let key = s.verified_user(&email("amp-user")).await;
    let me = s.get("/api/users/viewer", Some(&key)).await;
    let id = me.body["user"]["id"].as_str().unwrap().to_owned();

    // Users: each update is small enough, the merged `data` is not.
    for k in ["a", "b"] {
        s.post(
            "/api/users/update",
            Some(&key),
            json!({"id": id, "updates": {k: chunk()}}),
        )
        .await
        .assert_ok();
    }
    let r = s
        .post(
            "/api/users/update",
            Some(&key),
            json!({"id": id, "updates": {"c": chunk()}}),
        )
        .await;
    r.assert_error(400);
    let me = s.get("/api/users/viewer", Some(&key)).await;
    assert!(
        me.body["user"]["data"].get("c").is_none(),
        "nothing half-written"
    );
    // Removing a key makes room again.
    s.post(
        "/api/users/update",
        Some(&key),
        json!({"id": id, "updates": {"a": null, "c": "small"}}),
    )
    .await
    .assert_ok();

    // Organizations: the same for `data`, and the name has a length.
    let domain = fresh_domain();
    s.post(
        "/api/organizations/create",
        Some(&key),
        json!({"domain": domain, "name": "n".repeat(201)}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/organizations/create",
        Some(&key),
        json!({"domain": domain, "name": "Amp", "data": {"a": chunk(), "b": chunk()}}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/organizations/update",
            Some(&key),
            json!({"domain": domain, "data": {"c": chunk()}}),
        )
        .await;
    r.assert_error(400);

    // Email templates: one-line subject and from, a bounded text.
    let template = |subject: String, text: String| {
        json!({"domain": domain, "data": {"email": {"from": "Amp <team@amp.example>",
                "subject": subject, "text": text}}})
    };
    for (body, status) in [
        (
            template("Hi\r\nBcc: all@example.com".into(), "t".into()),
            400,
        ),
        (template("s".repeat(201), "t".into()), 400),
        (template("Hi".into(), "t".repeat(16 * 1024 + 1)), 400),
    ] {
        s.post("/api/organizations/update", Some(&key), body)
            .await
            .assert_error(status);
    }
    s.post(
        "/api/organizations/update",
        Some(&key),
        template("Welcome".into(), "t".repeat(16 * 1024)),
    )
    .await
    .assert_ok();
}

#[tokio::test]
async fn markdown_posts_are_bounded_before_they_are_parsed() {
    let s = Server::start().await;
    let key = s.verified_user(&email("amp-post")).await;

    // Markdown that could not be stored is refused before it becomes a document.
    let r = s
        .post(
            "/api/posts/create",
            Some(&key),
            json!({"type": "NOTE", "markdown": "a".repeat(256 * 1024 + 1)}),
        )
        .await;
    r.assert_error(400);

    // A link's target is copied onto every text node of the link: a long one stays text.
    let long = format!("https://example.com/{}", "p".repeat(2100));
    let md = format!("[*a* b *c* d]({long}) and [ok](https://example.com/ok)");
    let r = s
        .post(
            "/api/posts/create",
            Some(&key),
            json!({"type": "NOTE", "markdown": md}),
        )
        .await;
    r.assert_ok();
    let doc = r.body["data"]["data"]["editorContent"].to_string();
    assert!(
        !doc.contains(&long),
        "a 2 KiB+ href was copied into the document"
    );
    assert!(doc.contains("https://example.com/ok"), "{doc}");
}

#[tokio::test]
async fn a_page_of_large_records_is_cut_at_its_byte_budget_and_pages_on() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("amp-docs")).await;
    let domain = fresh_domain();
    s.post(
        "/api/organizations/create",
        Some(&admin),
        json!({"domain": domain}),
    )
    .await
    .assert_ok();
    // 70 documents of 250 KiB: 17.5 MB, past the 16 MiB a page may answer.
    let body = "d".repeat(250 * 1024);
    for _ in 0..70 {
        s.post(
            "/api/documents/create",
            Some(&admin),
            json!({"domain": domain, "type": "big", "data": {"body": body}}),
        )
        .await
        .assert_ok();
    }
    let (s, admin) = (&s, admin.as_str());
    let page = |offset: usize| {
        let path = format!("/api/documents?domain={domain}&limit=100&offset={offset}");
        async move { s.get(&path, Some(admin)).await }
    };
    let first = page(0).await;
    first.assert_ok();
    let count = first.body["count"].as_u64().unwrap() as usize;
    assert_eq!(first.body["total"], 70);
    assert_eq!(first.body["data"].as_array().unwrap().len(), count);
    assert!((60..70).contains(&count), "a page of {count} large records");
    let rest = page(count).await;
    rest.assert_ok();
    assert_eq!(rest.body["count"].as_u64().unwrap() as usize, 70 - count);
}
