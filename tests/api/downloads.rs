//! Download links: a storage clone per link, tokens shown once, atomic redeem with a
//! redirect to a short-lived URL, 410 for every dead link alike, revoke, and the expiry
//! work deleting clones — on the local store and on S3 (s3s-fs).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{email, Options, Server};

/// An organization of `admin` with an item whose `download_asset` is `catalog/<org>/book.pdf`;
/// `(domain, org id)`.
async fn seller(s: &Server, admin: &str) -> (String, String) {
    let (domain, org_id) = s.organization(admin, "dl").await;
    s.post(
        "/api/inventory/create",
        Some(admin),
        json!({"domain": domain, "sku": "EBOOK", "slug": "ebook", "price_cents": 999,
               "data": {"download_asset": {"key": format!("catalog/{org_id}/book.pdf"),
                        "file_name": "The Book.pdf", "mime_type": "application/pdf",
                        "max_downloads": 3, "expires_in_seconds": 3600}}}),
    )
    .await
    .assert_ok();
    (domain, org_id)
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Files a test puts straight into the object store (`objects/` locally, the bucket's
/// directory for s3s-fs).
async fn links_clone_redeem_and_die(s: &Server, objects: PathBuf) {
    let admin = s.verified_user(&email("dl-admin")).await;
    let other = s.verified_user(&email("dl-other")).await;
    let (domain, org_id) = seller(s, &admin).await;
    let source = objects.join(format!("catalog/{org_id}/book.pdf"));
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    std::fs::write(&source, b"%PDF-1.4 the book").unwrap();

    // Sources: the org's catalog or one of its items' assets; never another bucket.
    for (body, status) in [
        (
            json!({"domain": domain, "source_s3_key": "catalog/someone-else/book.pdf"}),
            403,
        ),
        (
            json!({"domain": domain, "source_s3_key": "slides/x.pdf"}),
            403,
        ),
        (
            json!({"domain": domain, "source_s3_key": "../etc/passwd"}),
            400,
        ),
        (
            json!({"domain": domain, "sku": "EBOOK", "bucket": "other"}),
            400,
        ),
        (
            json!({"domain": domain, "source_s3_key": format!("catalog/{org_id}/missing.pdf")}),
            404,
        ),
        (
            json!({"domain": domain, "sku": "EBOOK", "max_downloads": 0}),
            400,
        ),
    ] {
        s.post("/api/downloads/create", Some(&admin), body.clone())
            .await
            .assert_error(status);
    }
    s.post(
        "/api/downloads/create",
        Some(&other),
        json!({"domain": domain, "sku": "EBOOK"}),
    )
    .await
    .assert_error(403);

    let r = s
        .post(
            "/api/downloads/create",
            Some(&admin),
            json!({"domain": domain, "sku": "EBOOK"}),
        )
        .await;
    r.assert_ok();
    let link = r.body["data"].clone();
    let token = link["token"].as_str().unwrap().to_owned();
    let id = link["id"].as_str().unwrap().to_owned();
    assert_eq!(link["max_downloads"], 3);
    assert_eq!(link["file_name"], "The Book.pdf");
    assert_eq!(link["status"], "live");
    assert!(link["url"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/api/downloads/{token}")));
    // Stored as its hash; a clone of its own under clones/.
    let hash = plinth::crypto::sha256_hex(token.as_bytes());
    assert_eq!(
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM download_links WHERE token_hash = '{hash}' AND clone_key LIKE 'clones/%.pdf'"
        ))
        .await,
        1
    );
    let clones: Vec<_> = std::fs::read_dir(objects.join("clones")).unwrap().collect();
    assert_eq!(clones.len(), 1);

    // Redeem: 302 to a short-lived URL of the clone, with the headers that keep it private.
    let http = no_redirects();
    let res = http
        .get(format!("{}/api/downloads/{token}", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["referrer-policy"], "no-referrer");
    assert_eq!(res.headers()["cache-control"], "no-store");
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("clones/"), "{location}");
    let file = reqwest::get(&location).await.unwrap();
    assert_eq!(file.status(), 200, "{location}");
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"%PDF-1.4 the book");

    // Status and lists never carry the token.
    let st = s
        .get(&format!("/api/downloads/status?id={id}"), Some(&admin))
        .await;
    st.assert_ok();
    assert_eq!(st.body["data"]["download_count"], 1);
    assert!(!st.body.to_string().contains(&token));
    let st = s
        .get(
            &format!("/api/downloads/status?token={token}"),
            Some(&admin),
        )
        .await;
    assert_eq!(st.body["data"]["id"], json!(id));
    assert!(!st.body.to_string().contains(&token));
    s.get(&format!("/api/downloads/status?id={id}"), Some(&other))
        .await
        .assert_error(404);
    // Naming no link finds none (a 404 that says what to send).
    let r = s.get("/api/downloads/status", Some(&admin)).await;
    r.assert_error(404);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("`id` or `token`"));
    let l = s
        .get(&format!("/api/downloads?domain={domain}"), Some(&admin))
        .await;
    l.assert_ok();
    assert_eq!(l.body["total"], 1);
    assert!(!l.body.to_string().contains(&token));
    s.get(&format!("/api/downloads?domain={domain}"), Some(&other))
        .await
        .assert_error(403);

    // Two more downloads, then 410 like an unknown token.
    for _ in 0..2 {
        let res = http
            .get(format!("{}/api/downloads/{token}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 302);
    }
    let used_up: Value = http
        .get(format!("{}/api/downloads/{token}", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let unknown: Value = http
        .get(format!("{}/api/downloads/dl_{}", s.base, "0".repeat(64)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(used_up["message"], unknown["message"]);
    assert_eq!(used_up["error"], true);

    // A redeem race: 20 at once on a link of 3 → exactly 3 redirects.
    let r = s
        .post(
            "/api/downloads/create",
            Some(&admin),
            json!({"domain": domain, "source_s3_key": format!("catalog/{org_id}/book.pdf"), "max_downloads": 3}),
        )
        .await;
    let race = r.body["data"]["token"].as_str().unwrap().to_owned();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (http, url) = (http.clone(), format!("{}/api/downloads/{race}", s.base));
            tokio::spawn(async move { http.get(url).send().await.unwrap().status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 302).count(), 3);
    assert_eq!(statuses.iter().filter(|s| **s == 410).count(), 17);

    // Revoke: idempotent, then 410; the expiry work deletes the clones of dead links.
    let r = s
        .post(
            "/api/downloads/create",
            Some(&admin),
            json!({"domain": domain, "sku": "EBOOK"}),
        )
        .await;
    let revoked = r.body["data"]["token"].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/downloads/revoke",
            Some(&admin),
            json!({"domain": domain, "token": revoked}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["already_revoked"], false);
    assert!(!r.body.to_string().contains(&revoked));
    // The spec's body is `id` or `token`: the link names its organization.
    let again = s
        .post(
            "/api/downloads/revoke",
            Some(&admin),
            json!({"token": revoked}),
        )
        .await;
    again.assert_ok();
    assert_eq!(again.body["already_revoked"], true);
    // Someone else's admin, or a domain that is not the link's: as if it did not exist.
    s.post(
        "/api/downloads/revoke",
        Some(&other),
        json!({"token": revoked}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/downloads/revoke",
        Some(&admin),
        json!({"token": revoked, "domain": "elsewhere.example"}),
    )
    .await
    .assert_error(404);
    let res = http
        .get(format!("{}/api/downloads/{revoked}", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 410);
    {
        // Revoked: deleted on the next run; used up: after the 5-minute grace (aged here).
        s.sql("UPDATE download_links SET exhausted_at = '2000-01-01T00:00:00Z' WHERE exhausted_at IS NOT NULL")
            .await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = std::fs::read_dir(objects.join("clones")).unwrap().count();
            if left == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "{left} clones left");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(
            s.sql_count("SELECT COUNT(*) FROM download_links WHERE clone_deleted_at IS NULL")
                .await,
            0
        );
    }
    // The source is never touched.
    assert!(source.exists());
}

#[tokio::test]
async fn download_links_on_the_local_store() {
    let s = Server::start_with(Options::default().env("PLINTH_MONTHLY_INTERVAL_SECS", "1")).await;
    let objects = s.data_dir().join("objects");
    links_clone_redeem_and_die(&s, objects).await;
}

#[tokio::test]
async fn download_links_on_s3() {
    let Some(peer) = crate::storage::s3_peer() else {
        return;
    };
    let s = Server::start_with(peer.options().env("PLINTH_MONTHLY_INTERVAL_SECS", "1")).await;
    let objects = peer.root().join("plinth");
    links_clone_redeem_and_die(&s, objects).await;
}

#[tokio::test]
async fn purchases_give_one_link_per_unit() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("dlp-admin")).await;
    let buyer = s.funded_user(&email("dlp-buyer")).await;
    let (domain, org_id) = seller(&s, &admin).await;
    let objects = s.data_dir().join("objects");
    std::fs::create_dir_all(objects.join(format!("catalog/{org_id}"))).unwrap();
    std::fs::write(
        objects.join(format!("catalog/{org_id}/song.mp3")),
        b"ID3 a song",
    )
    .unwrap();
    for (sku, key) in [("SONG", "song.mp3"), ("GONE", "gone.mp3")] {
        s.post(
            "/api/inventory/create",
            Some(&admin),
            json!({"domain": domain, "sku": sku, "slug": sku.to_lowercase(), "price_cents": 199,
                   "price_tokens": 10, "unit_count": 5,
                   "data": {"download_asset": {"key": format!("catalog/{org_id}/{key}"),
                            "file_name": key, "mime_type": "audio/mpeg", "max_downloads": 2}}}),
        )
        .await
        .assert_ok();
    }

    let r = s
        .post(
            "/api/downloads/purchase",
            Some(&buyer),
            json!({"items": [{"sku": "SONG", "quantity": 2}], "payment_type": "tokens", "domain": domain}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["balance"], 80);
    let links = r.body["links"].as_array().unwrap().clone();
    assert_eq!(links.len(), 2);
    assert_ne!(links[0]["token"], links[1]["token"]);
    assert_eq!(links[0]["max_downloads"], 2);
    let res = no_redirects()
        .get(links[0]["url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let file = reqwest::get(res.headers()["location"].to_str().unwrap())
        .await
        .unwrap();
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"ID3 a song");

    // Each unit clones the file: a purchase mints at most 100, refused before payment.
    let r = s
        .post(
            "/api/downloads/purchase",
            Some(&buyer),
            json!({"items": [{"sku": "SONG", "quantity": 101}], "payment_type": "tokens", "domain": domain}),
        )
        .await;
    r.assert_error(400);
    assert!(
        r.body["message"].as_str().unwrap().contains("at most 100"),
        "{}",
        r.body
    );
    assert_eq!(
        s.get("/api/credits/balance", Some(&buyer)).await.body["balance"],
        80
    );

    // A missing source after payment: the order is refunded, no link is left.
    let r = s
        .post(
            "/api/downloads/purchase",
            Some(&buyer),
            json!({"items": [{"sku": "GONE", "quantity": 1}], "payment_type": "tokens", "domain": domain}),
        )
        .await;
    r.assert_error(404);
    let b = s.get("/api/credits/balance", Some(&buyer)).await;
    assert_eq!(b.body["balance"], 80);
    assert_eq!(
        s.sql_count("SELECT COUNT(*) FROM orders WHERE status = 'refunded'")
            .await,
        1
    );
    // Not downloadable, or not paid at once: 400.
    s.post(
        "/api/downloads/purchase",
        Some(&buyer),
        json!({"items": [{"sku": "SONG", "quantity": 1}], "domain": domain}),
    )
    .await
    .assert_error(400);

    // A guest buys by card.
    let token = s.guest_session(&domain).await;
    let r = s
        .post_as_guest(
            "/api/downloads/purchase",
            &token,
            json!({"items": [{"sku": "SONG", "quantity": 1}], "payment_method_id": "pm_card_visa"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["links"][0]["user_id"], Value::Null);
    assert!(r.body["links"][0]["token"]
        .as_str()
        .unwrap()
        .starts_with("dl_"));
}
