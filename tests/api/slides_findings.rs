//! Regression tests of the security review's slide findings (issue 10): bounded
//! operation batches (H4), paged revision lists (M1), the markdown panic (M6), bounded
//! object reads on S3 (M7), the upkeep sweep (M11), the level gate (L2) and swapped
//! images (L4).

use serde_json::json;

use crate::common::{email, Server};
use crate::slide_helpers::{create_md, ended, export, id, png, poll, sha256_hex, upload_asset};

#[tokio::test]
async fn h4_oversized_operation_batches_are_refused_before_any_work() {
    let s = Server::start().await;
    let key = s.verified_user(&email("h4")).await;
    let d = id(&create_md(&s, &key, "# one").await);
    let insert = json!({"op": "insert", "index": 0, "slide": {}});
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1, "operations": vec![insert.clone(); 26_000]}),
        )
        .await;
    r.assert_error(400);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("at most 500 operations"));
    // 500 inserts are allowed by count but stop at the slide cap, on the 200th.
    let r = s
        .post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": 1, "operations": vec![insert; 500]}),
        )
        .await;
    r.assert_error(400);
    let m = r.body["message"].as_str().unwrap();
    assert!(
        m.starts_with("operation 200:") && m.contains("200 slides"),
        "{m}"
    );
    let deck = s.get(&format!("/api/slides/{d}"), Some(&key)).await;
    assert_eq!(deck.body["version"], json!(1), "nothing was applied");
}

#[tokio::test]
async fn m1_revision_lists_are_paged_and_never_carry_content() {
    let s = Server::start().await;
    let key = s.verified_user(&email("m1")).await;
    let d = id(&create_md(&s, &key, "# v1").await);
    let picture = upload_asset(&s, &key, &d, &png(8, 8), "image/png", None).await;
    let unused = upload_asset(&s, &key, &d, &png(9, 9), "image/png", None).await;
    let (picture, unused) = (id(&picture), id(&unused));
    for (v, md) in [
        (1, format!("# v2\n\n![p](asset:{picture})")),
        (2, "# v3".to_owned()),
        (3, "# v4".to_owned()),
    ] {
        s.post(
            "/api/slides/update",
            Some(&key),
            json!({"id": d, "expected_version": v, "markdown": md}),
        )
        .await
        .assert_ok();
    }
    let r = s
        .get(
            &format!("/api/slides/revisions?deck_id={d}&limit=2"),
            Some(&key),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["total"], json!(4));
    let data = r.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["version"], json!(4));
    assert_eq!(data[0]["slide_count"], json!(1));
    assert!(data.iter().all(|rev| rev.get("content").is_none()));
    let r = s
        .get(
            &format!("/api/slides/revisions?deck_id={d}&limit=2&offset=3"),
            Some(&key),
        )
        .await;
    assert_eq!(r.body["data"][0]["version"], json!(1));
    s.get(
        &format!("/api/slides/revisions?deck_id={d}&limit=201"),
        Some(&key),
    )
    .await
    .assert_error(400);

    // Image references come from the revision index, not from reading every revision:
    // the picture is only in version 2, which is retained.
    let del = |asset: String| {
        s.post(
            "/api/slides/assets/delete",
            Some(&key),
            json!({"deck_id": d, "asset_id": asset}),
        )
    };
    del(picture).await.assert_error(409);
    del(unused).await.assert_ok();
}

#[tokio::test]
async fn m6_markdown_comment_markers_never_panic() {
    let s = Server::start().await;
    let key = s.verified_user(&email("m6")).await;
    for md in [
        "# t\n\n<!-->",
        "# t\n\nsome <!--> x",
        "# t\n\n<!--->",
        "# t\n\n<!--",
    ] {
        let r = s
            .post("/api/slides/create", Some(&key), json!({ "markdown": md }))
            .await;
        assert!(
            r.status.is_success() || r.status == 400,
            "{md:?}: {} {}",
            r.status,
            r.body
        );
    }
    s.get("/api/status", None).await.assert_ok();
}

#[tokio::test]
async fn m11_stuck_validations_and_exports_are_failed_by_the_sweep() {
    let s = Server::start_with(
        crate::common::Options::default().env("PLINTH_MONTHLY_INTERVAL_SECS", "1"),
    )
    .await;
    let key = s.verified_user(&email("m11")).await;
    let d = id(&create_md(&s, &key, "# stuck").await);
    let r = s
        .post(
            "/api/slides/assets/create",
            Some(&key),
            json!({"deck_id": d, "file": "a.png", "type": "image/png", "size": 10, "sha256": "00".repeat(32)}),
        )
        .await;
    r.assert_ok();
    let asset = id(&r.body);
    let job = export(&s, &key, &d, "html").await;
    assert_eq!(job["status"], json!("succeeded"));
    let job = id(&job);
    // As if a worker died mid-way, long ago: the asset validating, the job running.
    let long_ago = "2000-01-01T00:00:00+00:00";
    s.sql(&format!(
        "UPDATE slide_assets SET status = 'validating', updated_at = '{long_ago}' WHERE id = '{asset}'"
    ))
    .await;
    s.sql(&format!(
        "UPDATE slide_jobs SET status = 'running', updated_at = '{long_ago}' WHERE id = '{job}'"
    ))
    .await;
    let a = poll(
        &s,
        &format!("/api/slides/assets/{asset}?deck_id={d}"),
        &key,
        |v| v["status"] == json!("rejected"),
    )
    .await;
    assert!(
        a["reason"].as_str().unwrap().contains("did not finish"),
        "{a}"
    );
    let j = poll(
        &s,
        &format!("/api/slides/jobs/{job}?deck_id={d}"),
        &key,
        ended,
    )
    .await;
    assert_eq!(j["status"], json!("failed"), "{j}");

    // Idempotency records answer retries for a day; an older one is expired (and
    // pruned by the sweep), even across a restart: the same key then makes a new deck.
    let mut s = s;
    let body = json!({"markdown": "# idem", "idempotency_key": "k-m11"});
    let first = s.post("/api/slides/create", Some(&key), body.clone()).await;
    first.assert_ok();
    let again = s.post("/api/slides/create", Some(&key), body.clone()).await;
    assert_eq!(
        again.body["id"], first.body["id"],
        "replayed within the day"
    );
    s.sql(&format!(
        "UPDATE idempotency_records SET created_at = '{long_ago}' WHERE key = 'k-m11'"
    ))
    .await;
    s.restart();
    let later = s.post("/api/slides/create", Some(&key), body.clone()).await;
    later.assert_ok();
    assert_ne!(
        later.body["id"], first.body["id"],
        "an expired record replayed"
    );
}

#[tokio::test]
async fn l2_unverified_org_members_cannot_edit_or_read_revisions() {
    let s = Server::start().await;
    let admin = s.verified_user(&email("l2admin")).await;
    let domain = format!(
        "l2-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    s.post(
        "/api/organizations/create",
        Some(&admin),
        json!({"domain": domain}),
    )
    .await
    .assert_ok();
    let member_email = email("l2member");
    let (member, _) = s.signup(&member_email).await;
    s.post(
        "/api/organizations/users/add",
        Some(&admin),
        json!({"domain": domain, "email": member_email}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/slides/create",
            Some(&admin),
            json!({"domain": domain, "markdown": "# team"}),
        )
        .await;
    r.assert_ok();
    let d = id(&r.body);
    s.post(
        "/api/slides/update",
        Some(&member),
        json!({"id": d, "expected_version": 1, "markdown": "# mine"}),
    )
    .await
    .assert_error(403);
    s.get(&format!("/api/slides/revisions?deck_id={d}"), Some(&member))
        .await
        .assert_error(403);
}

#[tokio::test]
async fn l4_exports_refuse_an_image_replaced_after_validation() {
    let s = Server::start().await;
    let key = s.verified_user(&email("l4")).await;
    let d = id(&create_md(&s, &key, "# swap").await);
    let bytes = png(12, 12);
    let r = s
        .post(
            "/api/slides/assets/create",
            Some(&key),
            json!({"deck_id": d, "file": "a.png", "type": "image/png", "size": bytes.len(),
                   "sha256": sha256_hex(&bytes)}),
        )
        .await;
    r.assert_ok();
    let asset = id(&r.body);
    let upload = r.body["upload_url"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    let put = |b: Vec<u8>| {
        http.put(&upload)
            .header("content-type", "image/png")
            .body(b)
            .send()
    };
    assert!(put(bytes.clone()).await.unwrap().status().is_success());
    s.post(
        "/api/slides/assets/complete",
        Some(&key),
        json!({"deck_id": d, "asset_id": asset}),
    )
    .await
    .assert_ok();
    let a = poll(
        &s,
        &format!("/api/slides/assets/{asset}?deck_id={d}"),
        &key,
        |v| v["status"] != json!("validating") && v["status"] != json!("pending_upload"),
    )
    .await;
    assert_eq!(a["status"], json!("ready"), "{a}");
    s.post(
        "/api/slides/update",
        Some(&key),
        json!({"id": d, "expected_version": 1, "markdown": format!("# swap\n\n![p](asset:{asset})")}),
    )
    .await
    .assert_ok();
    // The upload URL still works for its lifetime: other bytes of the same length.
    let mut other = bytes.clone();
    let last = other.len() - 1;
    other[last] ^= 0xff;
    assert!(put(other).await.unwrap().status().is_success());
    let job = export(&s, &key, &d, "pdf").await;
    assert_eq!(job["status"], json!("failed"), "{job}");
    assert!(
        job["error"]
            .as_str()
            .unwrap()
            .contains("changed after it was validated"),
        "{job}"
    );
}

#[tokio::test]
async fn m7_s3_objects_larger_than_declared_are_refused_unread() {
    let Some(peer) = crate::storage::s3_peer() else {
        return;
    };
    let s = Server::start_with(peer.options()).await;
    let key = s.verified_user(&email("m7")).await;
    let d = id(&create_md(&s, &key, "# big").await);
    let r = s
        .post(
            "/api/slides/assets/create",
            Some(&key),
            json!({"deck_id": d, "file": "a.png", "type": "image/png", "size": 10, "sha256": "00".repeat(32)}),
        )
        .await;
    r.assert_ok();
    let asset = id(&r.body);
    // The upload URL signs Content-Length: S3 itself refuses 3 MB for a declared 10 bytes.
    let url = r.body["upload_url"].as_str().unwrap();
    let put = reqwest::Client::new()
        .put(url)
        .header("content-type", "image/png")
        .body(vec![7u8; 3 << 20])
        .send()
        .await;
    assert!(
        put.as_ref().map_or(true, |r| !r.status().is_success()),
        "S3 accepted an upload larger than the signed size"
    );
    // An object replaced behind S3's back (written into the peer's directory) is still
    // refused by the image job, which reads at most the declared size.
    let object = url
        .split_once("/plinth/")
        .unwrap()
        .1
        .split('?')
        .next()
        .unwrap();
    let path = peer.root().join("plinth").join(object);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, vec![7u8; 3 << 20]).unwrap();
    s.post(
        "/api/slides/assets/complete",
        Some(&key),
        json!({"deck_id": d, "asset_id": asset}),
    )
    .await
    .assert_ok();
    let a = poll(
        &s,
        &format!("/api/slides/assets/{asset}?deck_id={d}"),
        &key,
        |v| v["status"] == json!("rejected") || v["status"] == json!("ready"),
    )
    .await;
    assert_eq!(a["status"], json!("rejected"));
    assert!(
        a["reason"]
            .as_str()
            .unwrap()
            .contains("but 10 were declared"),
        "{a}"
    );
}
