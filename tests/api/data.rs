//! Data objects end to end: file records of presigned uploads, public distribution
//! objects, localizations, labelled prices, things with full-text search.

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

fn unique(tag: &str) -> String {
    format!("{tag}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

async fn member_of_new_org(s: &Server) -> (String, String) {
    let key = s.verified_user(&email("files")).await;
    let d = format!("{}.example", unique("files"));
    s.post(
        "/api/organizations/create",
        Some(&key),
        json!({"domain": d}),
    )
    .await
    .assert_ok();
    (key, d)
}

#[tokio::test]
async fn uploads_are_recorded_listed_and_deleted_with_their_objects() {
    let s = Server::start().await;
    let (key, domain) = member_of_new_org(&s).await;
    let other = s.verified_user(&email("other")).await;
    let http = reqwest::Client::new();

    // An exact size limits the URL to that many bytes; over 15 MB is refused up front.
    let r = s
        .post(
            "/api/data/generate-presigned-url",
            Some(&key),
            json!({"domain": domain, "filename": "notes.txt", "contentType": "text/plain", "size": 5}),
        )
        .await;
    r.assert_ok();
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["max_bytes"], 5);
    let url = r.body["url"].as_str().unwrap().to_owned();
    let put = |body: &'static str| {
        http.put(url.clone())
            .header("content-type", "text/plain")
            .body(body)
            .send()
    };
    assert_eq!(put("too long").await.unwrap().status(), 413);
    assert!(put("hello").await.unwrap().status().is_success());
    s.post(
        "/api/data/generate-presigned-url",
        Some(&key),
        json!({"domain": domain, "filename": "big.bin", "contentType": "application/octet-stream", "size": 15 * 1024 * 1024 + 1}),
    )
    .await
    .assert_error(400);

    // GET /api/data lists the caller's files with a read URL; others see none of them.
    let r = s.get("/api/data", Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["total"], 1);
    let f = &r.body["data"][0];
    assert_eq!(f["id"], json!(id));
    assert_eq!(f["filename"], "notes.txt");
    assert_eq!(f["domain"], json!(domain));
    let read = http.get(f["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(read.text().await.unwrap(), "hello");
    assert_eq!(s.get("/api/data", Some(&other)).await.body["total"], 0);

    // Delete: the uploader only; it removes the object too.
    s.post("/api/data/delete", Some(&other), json!({"id": id}))
        .await
        .assert_error(404);
    let r = s
        .post("/api/data/delete", Some(&key), json!({"id": id}))
        .await;
    r.assert_ok();
    assert_eq!(
        http.get(f["url"].as_str().unwrap())
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(s.get("/api/data", Some(&key)).await.body["total"], 0);
}

#[tokio::test]
async fn administrators_publish_distribution_objects_without_records() {
    let s = Server::start().await;
    let admin = s.admin(&email("root")).await;
    let user = s.verified_user(&email("user")).await;
    let body = json!({"folder": "releases/v2", "file": "app.zip"});
    s.post("/api/data/admin/upload", Some(&user), body.clone())
        .await
        .assert_error(403);
    let http = reqwest::Client::new();
    for content in ["first", "second"] {
        let r = s
            .post("/api/data/admin/upload", Some(&admin), body.clone())
            .await;
        r.assert_ok();
        assert_eq!(r.body["key"], "public/releases/v2/app.zip");
        let up = http
            .put(r.body["url"].as_str().unwrap())
            .header("content-type", "application/octet-stream")
            .body(content)
            .send()
            .await
            .unwrap();
        assert!(up.status().is_success());
        // Anyone reads it at its public URL, without a signature; same folder and file overwrite.
        let public = r.body["public_url"].as_str().unwrap();
        let got = http.get(public).send().await.unwrap();
        assert_eq!(
            got.headers()["content-disposition"].to_str().unwrap(),
            "attachment"
        );
        assert_eq!(got.text().await.unwrap(), content);
    }
    assert_eq!(s.get("/api/data", Some(&admin)).await.body["total"], 0);
    s.post(
        "/api/data/admin/upload",
        Some(&admin),
        json!({"folder": "../etc", "file": "x"}),
    )
    .await
    .assert_error(400);
    let r = s
        .post("/api/data/admin/delete", Some(&admin), body.clone())
        .await;
    r.assert_ok();
    let gone = http
        .get(format!("{}/public/releases/v2/app.zip", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn localizations_are_unique_per_entity_language_and_name() {
    let s = Server::start().await;
    let author = s.verified_user(&email("translator")).await;
    let other = s.verified_user(&email("other")).await;
    let entity = unique("item");
    let create = |tag: &str, name: &str, value: &str| {
        s.post(
            "/api/data/localizations/create",
            Some(&author),
            json!({"entity_id": entity, "language_tag": tag, "name": name, "value": value}),
        )
    };
    let r = create("en", "title", "Chair").await;
    r.assert_ok();
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    create("pt-BR", "title", "Cadeira").await.assert_ok();
    create("en", "title", "Seat").await.assert_error(409);
    create("english!", "title", "x").await.assert_error(400);

    let r = s
        .post(
            "/api/data/localizations/get-by-entity-id",
            None,
            json!({"entity_id": entity}),
        )
        .await;
    r.assert_ok();
    let tags: Vec<&str> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["language_tag"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["en", "pt-BR"]);
    s.post(
        "/api/data/localizations/update",
        Some(&other),
        json!({"id": id, "value": "x"}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/data/localizations/update",
        Some(&author),
        json!({"id": id, "value": "Armchair"}),
    )
    .await
    .assert_ok();
    let r = s.get(&format!("/api/data/localizations/{id}"), None).await;
    assert_eq!(r.body["data"]["value"], "Armchair");
    s.post(
        "/api/data/localizations/delete",
        Some(&author),
        json!({"id": id}),
    )
    .await
    .assert_ok();
    s.get(&format!("/api/data/localizations/{id}"), None)
        .await
        .assert_error(404);
}

#[tokio::test]
async fn prices_come_from_the_fixture_or_the_operators_file() {
    let s = Server::start().await;
    let r = s
        .post(
            "/api/data/prices/by-label",
            None,
            json!({"label": "paying-monthly"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["unit_amount_cents"], 1000);
    s.post("/api/data/prices/by-label", None, json!({"label": "nope"}))
        .await
        .assert_error(404);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.json");
    std::fs::write(
        &file,
        r#"{"prices": [{"label": "gold", "unit_amount_cents": 4200, "currency": "eur", "interval": "year"}]}"#,
    )
    .unwrap();
    let s =
        Server::start_with(Options::default().env("PLINTH_PRICES_FILE", file.to_str().unwrap()))
            .await;
    let r = s
        .post("/api/data/prices/by-label", None, json!({"label": "gold"}))
        .await;
    assert_eq!(r.body["data"]["currency"], "eur");
    s.post(
        "/api/data/prices/by-label",
        None,
        json!({"label": "paying-monthly"}),
    )
    .await
    .assert_error(404);
}

fn titles(v: &Value) -> Vec<&str> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["title"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn things_page_by_offset_or_cursor_and_search_the_full_text_index() {
    let s = Server::start().await;
    let author = s.verified_user(&email("maker")).await;
    let other = s.verified_user(&email("other")).await;
    let tag = unique("batch");
    let mut ids = Vec::new();
    for (title, category) in [
        ("Red oak chair", "furniture"),
        ("Blue chair cushion", "textiles"),
        ("Oak table", "furniture"),
        ("Chairlift ticket", "travel"),
        ("Lamp", "lighting"),
    ] {
        let r = s
            .post(
                "/api/data/things/create",
                Some(&author),
                json!({"title": format!("{title} {tag}"), "category": category, "slug": unique("thing")}),
            )
            .await;
        r.assert_ok();
        ids.push(r.body["data"]["id"].as_str().unwrap().to_owned());
    }
    let slug = unique("taken");
    s.post(
        "/api/data/things/create",
        Some(&author),
        json!({"title": "x", "category": "y", "slug": slug}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/data/things/create",
        Some(&other),
        json!({"title": "z", "category": "y", "slug": slug}),
    )
    .await
    .assert_error(409);

    // Search: every word, also as a prefix ("chair" finds "chairlift"), ranked; query
    // syntax in the input is just text.
    let search = async |q: &str| {
        s.get(&format!("/api/data/things/list/search?search={q}"), None)
            .await
    };
    let r = search(&format!("chair+{tag}")).await;
    r.assert_ok();
    let found = titles(&r.body);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|t| t.to_lowercase().contains("chair")));
    let r = search(&format!("oak+furniture+{tag}")).await;
    assert_eq!(titles(&r.body).len(), 2);
    search("%22%2A%20OR%20NEAR(").await.assert_ok();
    // A hyphenated, number-like code is found by its parts on both databases
    // (PostgreSQL's parser reads `batch-12e4` differently from `12e4` alone).
    let code = format!("12e4{}", &uuid::Uuid::new_v4().simple().to_string()[..6]);
    s.post(
        "/api/data/things/create",
        Some(&author),
        json!({"title": format!("Widget batch-{code}"), "category": "parts", "slug": unique("code")}),
    )
    .await
    .assert_ok();
    assert_eq!(titles(&search(&code).await.body).len(), 1);
    search("%2A%2A").await.assert_error(400);

    // Pages: by offset, and by cursor (newest first, no repeats).
    let r = s.get("/api/data/things/list?limit=2", None).await;
    r.assert_ok();
    let mut seen: Vec<String> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    let mut cursor = r.body["next_cursor"].as_str().unwrap().to_owned();
    loop {
        let r = s
            .get(
                &format!("/api/data/things/list?limit=2&cursor={cursor}"),
                None,
            )
            .await;
        r.assert_ok();
        for t in r.body["data"].as_array().unwrap() {
            seen.push(t["id"].as_str().unwrap().to_owned());
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => cursor = c.to_owned(),
            None => break,
        }
    }
    let total = s.get("/api/data/things/list", None).await.body["total"]
        .as_i64()
        .unwrap();
    assert_eq!(seen.len() as i64, total);
    let mut unique_ids = seen.clone();
    unique_ids.sort();
    unique_ids.dedup();
    assert_eq!(unique_ids.len(), seen.len());

    // Read, update (only the creator), delete.
    let id = &ids[4];
    let r = s.get(&format!("/api/data/things?id={id}"), None).await;
    assert_eq!(r.body["data"]["category"], "lighting");
    s.post(
        "/api/data/things/update",
        Some(&other),
        json!({"id": id, "updates": {"title": "Mine now"}}),
    )
    .await
    .assert_error(404);
    let r = s
        .post(
            "/api/data/things/update",
            Some(&author),
            json!({"id": id, "updates": {"title": format!("Desk lamp {tag}"), "data": {"watts": 40}, "user_id": "x"}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["data"]["watts"], 40);
    // The index follows updates.
    assert_eq!(titles(&search(&format!("desk+{tag}")).await.body).len(), 1);
    s.post("/api/data/things/delete", Some(&author), json!({"id": id}))
        .await
        .assert_ok();
    assert_eq!(titles(&search(&format!("desk+{tag}")).await.body).len(), 0);
    s.get(&format!("/api/data/things?id={id}"), None)
        .await
        .assert_error(404);
}

#[tokio::test]
async fn gcs_upload_urls_sign_the_size_range_and_need_configuration() {
    let s = Server::start().await;
    let (key, domain) = member_of_new_org(&s).await;
    let body = json!({"domain": domain, "filename": "a.txt", "contentType": "text/plain"});
    let r = s
        .post(
            "/api/data/generate-presigned-url-gcs",
            Some(&key),
            body.clone(),
        )
        .await;
    // Not configured: a feature this server does not offer (404), not an outage.
    r.assert_error(404);
    assert_eq!(r.body["not_configured"], json!(true));
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("PLINTH_GCS_BUCKET"));

    // Configured with Google's published test key and an endpoint nothing answers on.
    let creds = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/gcs/test_service_account.not-a-test.json"
    );
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_GCS_BUCKET", "plinth-test")
            .env("PLINTH_GCS_CREDENTIALS", creds)
            .env("PLINTH_GCS_ENDPOINT", "http://127.0.0.1:9"),
    )
    .await;
    let (key, domain) = member_of_new_org(&s).await;
    let body = json!({"domain": domain, "filename": "a.txt", "contentType": "text/plain"});
    let r = s
        .post(
            "/api/data/generate-presigned-url-gcs",
            Some(&key),
            body.clone(),
        )
        .await;
    r.assert_ok();
    let url = r.body["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:9/plinth-test/orgs/"),
        "{url}"
    );
    assert!(url.contains("X-Goog-Algorithm=GOOG4-RSA-SHA256"));
    assert!(url.contains("test-iam-credentials%40dummy-project-id.iam.gserviceaccount.com"));
    assert!(
        url.contains("X-Goog-SignedHeaders=content-type%3Bhost%3Bx-goog-content-length-range"),
        "{url}"
    );
    assert_eq!(
        r.body["headers"]["x-goog-content-length-range"],
        "0,15728640"
    );
    let id = r.body["id"].as_str().unwrap().to_owned();
    let r = s.get("/api/data", Some(&key)).await;
    assert_eq!(r.body["data"][0]["provider"], "gcs");
    assert!(r.body["data"][0]["url"]
        .as_str()
        .unwrap()
        .contains("X-Goog-Signature="));
    // The delete cannot reach storage: 503, and the record stays for a retry.
    s.post("/api/data/delete", Some(&key), json!({"id": id}))
        .await
        .assert_error(503);
    assert_eq!(s.get("/api/data", Some(&key)).await.body["total"], 1);
}
