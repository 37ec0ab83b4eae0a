//! Regression tests of the second security review (`../shared/reviews/security-2026-11-25.md`),
//! one per finding, named after it; `docs/security.md` ("Round 2") maps findings to these
//! names. The deep-nesting generators run over every route in `fuzz.rs`; the sign-in
//! window across processes is in `scaleout.rs`.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{code_in, email, Options, Resp, Server};

async fn user_id(s: &Server, key: &str) -> String {
    s.get("/api/users/viewer", Some(key)).await.body["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A POST of a body given as text (nesting a `Value` this deep would recurse here too).
async fn post_text(s: &Server, path: &str, key: &str, body: String) -> Resp {
    Server::read(
        s.raw(Method::POST, path)
            .header("x-api-key", key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

fn nested_array(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

#[tokio::test]
async fn h1_deep_markdown_and_json_never_stop_the_server_or_plant_unreadable_posts() {
    let s = Server::start().await;
    let author = s.verified_user(&email("h1")).await;
    let admin = s.admin(&email("h1admin")).await;

    // The crash: 20,000 `>` (20 KB) once aborted the process.
    let r = s
        .post(
            "/api/posts/create",
            Some(&author),
            json!({"type": "NOTE", "markdown": format!("{} x", ">".repeat(20_000))}),
        )
        .await;
    r.assert_ok();
    let doc = &r.body["data"]["data"]["editorContent"];
    assert!(
        plinth::json_depth::depth_of(doc) <= 70,
        "{}",
        doc.to_string().len()
    );
    assert!(doc.to_string().contains("\"x\""), "the text survives");
    s.get("/api/status", None).await.assert_ok();

    // The poison: a public thread 200 quotes deep still lists, reads and deletes.
    let r = s
        .post(
            "/api/posts/create",
            Some(&author),
            json!({"type": "THREAD", "markdown": format!("{} x", ">".repeat(200)),
                   "fields": {"public": true}}),
        )
        .await;
    r.assert_ok();
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = s.post("/api/posts/all-threads", None, json!({})).await;
    r.assert_ok();
    assert!(r.body.to_string().contains(&id));
    s.post("/api/posts", None, json!({"type": "THREAD"}))
        .await
        .assert_ok();
    s.get(&format!("/api/posts/{id}"), None).await.assert_ok();
    s.post(
        "/api/posts/update",
        Some(&author),
        json!({"id": id, "updates": {"markdown": "- ".repeat(5_000) + "x"}}),
    )
    .await
    .assert_ok();
    s.post("/api/posts/delete", Some(&admin), json!({"id": id}))
        .await
        .assert_ok();

    // Bodies: 99 levels are taken (and read back), 101 refused naming the limit.
    let r = post_text(
        &s,
        "/api/posts/create",
        &author,
        format!(
            r#"{{"type":"NOTE","fields":{{"deep":{}}}}}"#,
            nested_array(97)
        ),
    )
    .await;
    r.assert_ok();
    let deep_id = r.body["data"]["id"].as_str().unwrap().to_owned();
    s.get(&format!("/api/posts/{deep_id}"), Some(&author))
        .await
        .assert_ok();
    let r = post_text(
        &s,
        "/api/posts/create",
        &author,
        format!(
            r#"{{"type":"NOTE","fields":{{"deep":{}}}}}"#,
            nested_array(99)
        ),
    )
    .await;
    r.assert_error(400);
    assert!(
        r.body["message"].as_str().unwrap().contains("100"),
        "{}",
        r.body
    );
    assert_eq!(r.body["max_depth"], 100);
    // The same bound for every body (KV values, slide documents, records...).
    let r = post_text(
        &s,
        "/api/kv/entries/create",
        &admin,
        format!(
            r#"{{"namespace":"n","key":"k","value":{}}}"#,
            nested_array(5_000)
        ),
    )
    .await;
    r.assert_error(400);

    // A row planted before these checks, 1,000 levels deep: it reads (its deep part as
    // null), lists and deletes.
    let owner = user_id(&s, &author).await;
    let planted = format!(
        r#"{{"body":"old","public":true,"editorContent":{}}}"#,
        nested_array(1_000)
    );
    s.sql(&format!(
        "INSERT INTO posts (id, type, user_id, data, published, private, team_post, version, \
         created_at, updated_at) VALUES ('planted-h1', 'PLANTED', '{owner}', '{planted}', TRUE, \
         FALSE, FALSE, 0, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
    ))
    .await;
    let r = s.get("/api/posts/planted-h1", None).await;
    r.assert_ok();
    assert_eq!(r.body["data"]["data"]["body"], "old");
    let r = s.post("/api/posts", None, json!({"type": "PLANTED"})).await;
    r.assert_ok();
    assert_eq!(r.body["total"], 1);
    s.post(
        "/api/posts/delete",
        Some(&admin),
        json!({"id": "planted-h1"}),
    )
    .await
    .assert_ok();
    s.get("/api/posts/planted-h1", None).await.assert_error(404);
}

/// A catalog upload through the API (`purpose: catalog`): `(key, bytes)`.
async fn catalog_upload(s: &Server, admin: &str, domain: &str, bytes: &[u8]) -> (String, Resp) {
    let r = s
        .post(
            "/api/data/generate-presigned-url",
            Some(admin),
            json!({"domain": domain, "filename": "product.zip", "contentType": "application/zip",
                   "size": bytes.len(), "purpose": "catalog"}),
        )
        .await;
    let key = r.body["key"].as_str().unwrap_or_default().to_owned();
    (key, r)
}

#[tokio::test]
async fn h2_downloads_copy_only_the_organizations_own_objects() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("h2seller")).await;
    let (shop, shop_id) = s.organization(&seller, "h2shop").await;
    let bytes = b"PK the paid product".to_vec();

    // The seller puts a product file in its catalog without shell access to the bucket.
    let (key, r) = catalog_upload(&s, &seller, &shop, &bytes).await;
    r.assert_ok();
    assert!(key.starts_with(&format!("catalog/{shop_id}/")), "{key}");
    let res = reqwest::Client::new()
        .put(r.body["url"].as_str().unwrap())
        .header("content-type", "application/zip")
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    s.post(
        "/api/inventory/create",
        Some(&seller),
        json!({"domain": shop, "sku": "prod-1", "slug": "prod-1", "price_cents": 5000,
               "data": {"download_asset": {"key": key, "file_name": "product.zip",
                                           "mime_type": "application/zip"}}}),
    )
    .await
    .assert_ok();
    // A member who does not administer the shop cannot write its catalog.
    let member_email = email("h2member");
    let member = s.verified_user(&member_email).await;
    s.post(
        "/api/organizations/users/add",
        Some(&seller),
        json!({"domain": shop, "email": member_email}),
    )
    .await
    .assert_ok();
    catalog_upload(&s, &member, &shop, &bytes)
        .await
        .1
        .assert_error(403);

    // The public catalogue no longer shows where the file lives.
    let r = s.get(&format!("/api/inventory?domain={shop}"), None).await;
    r.assert_ok();
    assert!(!r.body.to_string().contains("download_asset"), "{}", r.body);
    assert!(!r.body.to_string().contains(&key));

    // The attack: another organization's item or link naming the seller's key.
    let attacker = s.verified_user(&email("h2attacker")).await;
    let (own, _) = s.organization(&attacker, "h2own").await;
    s.post(
        "/api/inventory/create",
        Some(&attacker),
        json!({"domain": own, "sku": "steal", "slug": "steal", "price_cents": 0,
               "data": {"download_asset": {"key": key}}}),
    )
    .await
    .assert_error(403);
    s.post(
        "/api/downloads/create",
        Some(&attacker),
        json!({"domain": own, "source_s3_key": key}),
    )
    .await
    .assert_error(403);
    // Keys of other areas are refused too (slide exports, analytics attachments, clones).
    for other in [
        "clones/x.zip",
        "decks/x/y.pdf",
        "analytics/x/y",
        "public/x/y.zip",
    ] {
        s.post(
            "/api/downloads/create",
            Some(&attacker),
            json!({"domain": own, "source_s3_key": other}),
        )
        .await
        .assert_error(403);
    }

    // The seller's own link works end to end and serves the bytes.
    let r = s
        .post(
            "/api/downloads/create",
            Some(&seller),
            json!({"domain": shop, "sku": "prod-1"}),
        )
        .await;
    r.assert_ok();
    let token = r.body["data"]["token"].as_str().unwrap().to_owned();
    let res = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/api/downloads/{token}", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let got = reqwest::get(&location).await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    // L1: the storage URL lives one minute.
    let expires: i64 = location
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("expires="))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(expires - chrono::Utc::now().timestamp() <= 61, "{location}");
}

#[tokio::test]
async fn h3_a_code_confirms_its_own_sign_up_and_a_pre_registration_can_be_rejected() {
    let s = Server::start().await;
    let mallory = s.verified_user(&email("h3mallory")).await;
    let (evil, _) = s.organization(&mallory, "h3evil").await;
    let invite = json!({"from": format!("BigCorp Workspace <invites@{evil}>"),
                        "subject": "You have been invited to the BigCorp workspace",
                        "text": "Accept the invitation:"});
    s.post(
        "/api/organizations/update",
        Some(&mallory),
        json!({"domain": evil, "data": {"email": invite}}),
    )
    .await
    .assert_ok();

    // Mallory registers the CFO's address first, with her password and her organization.
    let cfo = email("h3cfo");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": cfo, "password": "mallory's", "source": evil}),
        )
        .await;
    r.assert_ok();
    let mallory_key = r.body["user"]["key"].as_str().unwrap().to_owned();
    // The sign-up mail is dressed by her organization (spec, Notes 7), but the platform's
    // footer says who sent it, on whose behalf, and that it can be ignored (issue 42).
    let mail = s.wait_for_email(&cfo, "/verify?code=").await;
    assert!(mail.contains("Accept the invitation:"), "{mail}");
    assert!(mail.contains(&format!("on behalf of the organization {evil}")));
    assert!(mail.contains("If you did not sign up, ignore this email"));
    let code = code_in(&mail);

    // A code confirms its own sign-up (and its password): the page first shows when,
    // from where and through which source it was made, and offers "this wasn't me".
    let d = s
        .post("/api/users/verify/details", None, json!({"code": code}))
        .await;
    d.assert_ok();
    assert_eq!(d.body["attempt"]["source"], json!(evil));
    assert_eq!(d.body["attempt"]["opened_account"], json!(true));
    assert_eq!(d.body["attempt"]["client_ip"], json!("127.0.0.1"));
    let r = s
        .post("/api/users/verify/reject", None, json!({"code": code}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["account_deleted"], json!(true));
    // The unconfirmed account is gone with Mallory's key.
    s.get("/api/users/viewer", Some(&mallory_key))
        .await
        .assert_error(401);
    s.post("/api/users/verify", None, json!({"code": code}))
        .await
        .assert_error(404);
    // The CFO signs up and confirms: their password opens it, Mallory's does not.
    s.signup(&cfo).await;
    let mail = s.wait_for_email(&cfo, "Subject: Confirm your email").await;
    s.post("/api/users/verify", None, json!({"code": code_in(&mail)}))
        .await
        .assert_ok();
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": cfo, "password": "correct horse"}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": cfo, "password": "mallory's"}),
    )
    .await
    .assert_error(401);
}

#[tokio::test]
async fn h4_claim_gives_only_free_or_tier_gated_items() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("h4seller")).await;
    let buyer = s.verified_user(&email("h4buyer")).await;
    let (shop, _) = s.organization(&seller, "h4").await;
    for (sku, cents, tokens, tier) in [
        ("priced", 5000, None, None),
        ("token-priced", 0, Some(40), None),
        ("free", 0, None, None),
        ("entitled", 4999, None, Some(10)),
    ] {
        s.post(
            "/api/inventory/create",
            Some(&seller),
            json!({"domain": shop, "sku": sku, "slug": sku, "price_cents": cents,
                   "price_tokens": tokens, "min_tier": tier,
                   "units": [{"data": {"serial": format!("{sku}-KEY-1")}}]}),
        )
        .await
        .assert_ok();
    }
    for (sku, status) in [
        ("priced", 403),
        ("token-priced", 403),
        ("free", 200),
        ("entitled", 200),
    ] {
        let r = s
            .post(
                "/api/inventory/claim",
                Some(&buyer),
                json!({"sku": sku, "domain": shop}),
            )
            .await;
        assert_eq!(r.status, status, "{sku}: {}", r.body);
        if status == 403 {
            assert!(r.body["message"].as_str().unwrap().contains("for sale"));
            assert!(!r.body.to_string().contains("KEY-1"));
        }
    }
}

#[tokio::test]
async fn h5_post_lists_show_only_what_the_caller_may_read() {
    let s = Server::start().await;
    let member = s.verified_user(&email("h5member")).await;
    let outsider = s.verified_user(&email("h5outsider")).await;
    let (org, org_id) = s.organization(&member, "h5").await;
    let kind = format!("H5{}", &uuid::Uuid::new_v4().simple().to_string()[..6]).to_uppercase();
    let create = |key: String, body: Value| {
        let s = &s;
        async move {
            let r = s.post("/api/posts/create", Some(&key), body).await;
            r.assert_ok();
            r.body["data"]["id"].as_str().unwrap().to_owned()
        }
    };
    let internal = create(
        member.clone(),
        json!({"type": kind, "domain": org, "fields": {"title": "Q3 layoffs plan"}}),
    )
    .await;
    let personal = create(
        outsider.clone(),
        json!({"type": kind, "fields": {"title": "mine"}}),
    )
    .await;
    let secret = create(
        outsider.clone(),
        json!({"type": kind, "fields": {"private": true}}),
    )
    .await;
    // A published reply to the organization's unpublished thread.
    let thread = create(
        member.clone(),
        json!({"type": "THREAD", "domain": org, "fields": {"title": "internal thread"}}),
    )
    .await;
    let reply = create(
        member.clone(),
        json!({"type": kind, "thread_id": thread, "fields": {"public": true}}),
    )
    .await;

    let listed = |key: Option<String>, filter: Value| {
        let s = &s;
        let kind = kind.clone();
        async move {
            let mut body = json!({"type": kind});
            for (k, v) in filter.as_object().unwrap() {
                body[k] = v.clone();
            }
            let r = s.post("/api/posts", key.as_deref(), body).await;
            r.assert_ok();
            r.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    for key in [None, Some(outsider.clone())] {
        let all = listed(key.clone(), json!({})).await;
        assert!(!all.contains(&internal) && !all.contains(&reply), "{all:?}");
        assert!(
            all.contains(&personal),
            "other types list personal posts (spec)"
        );
        assert!(!all.contains(&secret));
        let by_org = listed(key, json!({"organization_id": org_id})).await;
        assert!(by_org.is_empty(), "{by_org:?}");
    }
    let all = listed(Some(member.clone()), json!({})).await;
    assert!(all.contains(&internal) && all.contains(&reply) && !all.contains(&secret));
    // One by one, the same answer.
    s.get(&format!("/api/posts/{internal}"), None)
        .await
        .assert_error(404);
}

#[tokio::test]
async fn m1_templates_only_for_accounts_that_joined_by_their_own_act() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("m1owner")).await;
    let (org, _) = s.organization(&owner, "m1").await;
    let phish = json!({"from": format!("Corp IT Security <security@{org}>"),
                       "subject": "URGENT: your account is locked", "text": "Reset now:"});
    s.post(
        "/api/organizations/update",
        Some(&owner),
        json!({"domain": org, "data": {"email_reset_password": phish, "waitlist_support": true}}),
    )
    .await
    .assert_ok();
    let reset_mail = |addr: String| {
        let s = &s;
        let org = org.clone();
        async move {
            let before = s.emails_to(&addr).len();
            s.post(
                "/api/users/reset-password",
                None,
                json!({"email": addr, "source": org}),
            )
            .await
            .assert_ok();
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let mails = s.emails_to(&addr);
                if let Some(m) = mails.iter().find(|m| m.contains("/reset-password?code=")) {
                    if mails.len() > before {
                        return m.clone();
                    }
                }
                assert!(Instant::now() < deadline, "no reset email to {addr}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    // Added by an admin without their consent: the platform's own email.
    let victim = email("m1victim");
    s.verified_user(&victim).await;
    s.post(
        "/api/organizations/users/add",
        Some(&owner),
        json!({"domain": org, "email": victim}),
    )
    .await
    .assert_ok();
    let mail = reset_mail(victim).await;
    assert!(
        !mail.contains("URGENT") && !mail.contains("Corp IT"),
        "{mail}"
    );
    // Created by a waitlist accept (L7): the organization is not the owner's choice.
    let listed = email("m1listed");
    s.post(
        "/api/waitlist/add",
        None,
        json!({"domain": org, "email": listed}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/waitlist/accept-by-email",
        Some(&owner),
        json!({"domain": org, "email": listed}),
    )
    .await
    .assert_ok();
    let mail = reset_mail(listed).await;
    assert!(!mail.contains("URGENT"), "{mail}");
    // A member who joined by their own act gets the organization's words.
    let joiner = format!("joiner@{org}");
    s.verified_user(&joiner).await;
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": joiner, "password": "correct horse"}),
        )
        .await;
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    s.post(
        "/api/organizations/membership/automatic",
        Some(&key),
        json!({}),
    )
    .await
    .assert_ok();
    let mail = reset_mail(joiner).await;
    assert!(
        mail.contains("URGENT") && mail.contains("Reset now:"),
        "{mail}"
    );
}

/// Resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

#[tokio::test]
async fn m2_object_reads_stream_in_constant_memory_with_ranges() {
    let s = Server::start().await;
    let size = 48 << 20;
    let path = s.data_dir().join("objects/public/m2/big.bin");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let content: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &content).unwrap();
    let url = format!("{}/public/m2/big.bin", s.base);

    // Ranges, as a download manager resumes.
    let r = reqwest::Client::new()
        .get(&url)
        .header("range", "bytes=1000-1999")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 206);
    assert_eq!(r.headers()["content-disposition"], "attachment");
    assert_eq!(r.bytes().await.unwrap().as_ref(), &content[1000..2000]);

    // Eight slow readers at once: the server holds a buffer each, not the object each.
    let before = rss(s.pid());
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let pid = s.pid();
    let watch = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(pid), std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let readers = (0..8).map(|_| {
        let url = url.clone();
        tokio::spawn(async move {
            let mut res = reqwest::get(&url).await.unwrap();
            let mut n = 0usize;
            while let Some(chunk) = res.chunk().await.unwrap() {
                n += chunk.len();
                if n % (4 << 20) < chunk.len() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            n
        })
    });
    for r in futures::future::join_all(readers).await {
        assert_eq!(r.unwrap(), size);
    }
    watch.abort();
    let grew = peak
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_sub(before);
    // Reading whole objects cost 8 x 48 MB here before.
    assert!(grew < 64 << 20, "RSS grew by {} MB", grew >> 20);
}

#[tokio::test]
async fn m2_public_reads_have_a_window_per_client_address() {
    // Behind a trusted proxy, each client address its own window (L2: the proxy's
    // address once stood for every client).
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_RATE_LIMIT_MULTIPLIER", "0.05")
            .env("PLINTH_TRUSTED_PROXIES", "127.0.0.1"),
    )
    .await;
    let path = s.data_dir().join("objects/public/m2/small.bin");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"small").unwrap();
    let url = format!("{}/public/m2/small.bin", s.base);
    let get = |client: &'static str| {
        let url = url.clone();
        async move {
            reqwest::Client::new()
                .get(&url)
                .header("x-forwarded-for", client)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    // 120 a minute at the base rate: 6 here.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(get("198.51.100.1").await);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        6,
        "{statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&429));
    assert_eq!(
        get("198.51.100.2").await,
        200,
        "another client has its own window"
    );
}

#[tokio::test]
async fn l6_checkout_from_a_cart_takes_at_most_100_lines() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("l6seller")).await;
    let buyer = s.verified_user(&email("l6buyer")).await;
    let (shop, _) = s.organization(&seller, "l6").await;
    for i in 0..101 {
        let sku = format!("c{i}");
        s.post(
            "/api/inventory/create",
            Some(&seller),
            json!({"domain": shop, "sku": sku, "slug": sku, "price_cents": 100, "unit_count": 1}),
        )
        .await
        .assert_ok();
        s.post(
            "/api/marketplace/cart/add",
            Some(&buyer),
            json!({"domain": shop, "sku": sku, "quantity": 1}),
        )
        .await
        .assert_ok();
    }
    let r = s
        .post(
            "/api/marketplace/checkout",
            Some(&buyer),
            json!({"payment_method_id": "pm_card_visa"}),
        )
        .await;
    r.assert_error(400);
    assert!(
        r.body["message"].as_str().unwrap().contains("100"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn m3_stats_patterns_are_bounded_and_cheap() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("m3")).await;
    let r = s
        .post(
            "/api/analytics/sites/create",
            Some(&owner),
            json!({"name": "m3"}),
        )
        .await;
    r.assert_ok();
    let site = r.body["data"]["id"].as_str().unwrap().to_owned();
    // Labels of 2,000 characters, the longest kept.
    let label = "a".repeat(1_997);
    for i in 0..150 {
        s.post(
            "/api/analytics/track",
            None,
            json!({"site_id": site, "label": format!("{label}{i:03}")}),
        )
        .await
        .assert_ok();
    }
    for (labels, needle) in [
        (vec!["a".repeat(201)], "200"),
        (vec!["*a".repeat(9)], "8"),
        (vec!["x".to_owned(); 21], "20"),
        (vec!["x".repeat(200); 6], "1000"),
    ] {
        let r = s
            .post(
                "/api/analytics/stats",
                Some(&owner),
                json!({"site_id": site, "labels": labels}),
            )
            .await;
        r.assert_error(400);
        assert!(
            r.body["message"].as_str().unwrap().contains(needle),
            "{}",
            r.body
        );
    }
    // The review's hostile patterns, as large as the bounds allow: fast, and right.
    let hostile: Vec<String> = (0..5)
        .map(|i| format!("*{}b{i}", "a".repeat(190)))
        .collect();
    let started = Instant::now();
    let r = s
        .post(
            "/api/analytics/stats",
            Some(&owner),
            json!({"site_id": site, "labels": hostile}),
        )
        .await;
    r.assert_ok();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.body["totals"]["hits"], 0, "{}", r.body["totals"]);
    let r = s
        .post(
            "/api/analytics/stats",
            Some(&owner),
            json!({"site_id": site, "labels": ["*a1*", "aaa*9"]}),
        )
        .await;
    r.assert_ok();
    assert!(
        r.body["totals"]["hits"].as_i64().unwrap() > 0,
        "{}",
        r.body["totals"]
    );
}

#[tokio::test]
async fn m4_one_claimed_unit_per_account_under_concurrency() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("m4seller")).await;
    let buyer = s.verified_user(&email("m4buyer")).await;
    let (shop, _) = s.organization(&seller, "m4").await;
    s.post(
        "/api/inventory/create",
        Some(&seller),
        json!({"domain": shop, "sku": "free", "slug": "free", "price_cents": 0, "unit_count": 20}),
    )
    .await
    .assert_ok();
    let claims = (0..8).map(|_| {
        s.post(
            "/api/inventory/claim",
            Some(&buyer),
            json!({"sku": "free", "domain": shop}),
        )
    });
    let codes: Vec<u16> = futures::future::join_all(claims)
        .await
        .iter()
        .map(|r| r.status.as_u16())
        .collect();
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 200 || *c == 409), "{codes:?}");
    let id = user_id(&s, &buyer).await;
    assert_eq!(
        s.sql_count(&format!(
            "SELECT COUNT(*) FROM inventory_units WHERE holder_id = '{id}' AND status = 'claimed'"
        ))
        .await,
        1
    );
}

#[tokio::test]
async fn m5_public_item_details_show_no_unit_data_or_holders() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("m5seller")).await;
    let claimer = s.verified_user(&email("m5claimer")).await;
    let (shop, _) = s.organization(&seller, "m5").await;
    let r = s
        .post(
            "/api/inventory/create",
            Some(&seller),
            json!({"domain": shop, "sku": "game", "slug": "game", "price_cents": 0,
                   "units": [{"data": {"serial": "GAME-KEY-AAAA-1111"}},
                             {"data": {"serial": "GAME-KEY-BBBB-2222"}}]}),
        )
        .await;
    r.assert_ok();
    let item = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/inventory/claim",
            Some(&claimer),
            json!({"sku": "game", "domain": shop}),
        )
        .await;
    r.assert_ok();
    let mine = r.body["unit"]["data"]["serial"]
        .as_str()
        .unwrap()
        .to_owned();
    let claimer_id = user_id(&s, &claimer).await;

    let anonymous = s.get(&format!("/api/inventory/{item}"), None).await;
    anonymous.assert_ok();
    let text = anonymous.body.to_string();
    assert!(
        !text.contains("GAME-KEY") && !text.contains(&claimer_id),
        "{text}"
    );
    assert_eq!(anonymous.body["data"]["units"].as_array().unwrap().len(), 2);
    // The holder sees their own unit, not the other one.
    let own = s
        .get(&format!("/api/inventory/{item}"), Some(&claimer))
        .await
        .body
        .to_string();
    assert!(
        own.contains(&mine) && own.matches("GAME-KEY").count() == 1,
        "{own}"
    );
    // The seller sees everything.
    let all = s
        .get(&format!("/api/inventory/{item}"), Some(&seller))
        .await
        .body
        .to_string();
    assert_eq!(all.matches("GAME-KEY").count(), 2);
    assert!(all.contains(&claimer_id));
}

#[tokio::test]
async fn m6_unpaid_holds_are_capped_and_short() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("m6seller")).await;
    let hoarder = s.verified_user(&email("m6hoarder")).await;
    let (shop, _) = s.organization(&seller, "m6").await;
    for sku in ["hot", "a", "b", "c", "d"] {
        s.post(
            "/api/inventory/create",
            Some(&seller),
            json!({"domain": shop, "sku": sku, "slug": sku, "price_cents": 100, "unit_count": 40}),
        )
        .await
        .assert_ok();
    }
    let checkout = |items: Value| {
        s.post(
            "/api/marketplace/checkout",
            Some(&hoarder),
            json!({"items": items}),
        )
    };
    // The whole stock of one item, unpaid: refused.
    let r = checkout(json!([{"sku": "hot", "quantity": 40}])).await;
    r.assert_error(409);
    assert_eq!(r.body["max_unpaid_units_per_item"], 5);
    // Five per item are held, for ten minutes at most.
    let r = checkout(json!([{"sku": "hot", "quantity": 5}])).await;
    r.assert_ok();
    assert_eq!(r.body["status"], "pending");
    let until =
        chrono::DateTime::parse_from_rfc3339(r.body["data"]["reserved_until"].as_str().unwrap())
            .unwrap();
    assert!(until.timestamp() - chrono::Utc::now().timestamp() <= 601);
    checkout(json!([{"sku": "hot", "quantity": 1}]))
        .await
        .assert_error(409);
    // Twenty units in all.
    for sku in ["a", "b", "c"] {
        checkout(json!([{"sku": sku, "quantity": 5}]))
            .await
            .assert_ok();
    }
    let r = checkout(json!([{"sku": "d", "quantity": 1}])).await;
    r.assert_error(409);
    assert_eq!(r.body["max_unpaid_units"], 20);
    // Paying at once is never capped.
    let r = s
        .post(
            "/api/marketplace/checkout",
            Some(&hoarder),
            json!({"items": [{"sku": "d", "quantity": 10}], "payment_method_id": "pm_card_visa"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["status"], "paid");
}

#[tokio::test]
async fn m7_a_removed_admin_keeps_no_rights_over_what_they_issued() {
    let s = Server::start().await;
    let owner = s.verified_user(&email("m7owner")).await;
    let staff_email = email("m7staff");
    let staff = s.verified_user(&staff_email).await;
    let (shop, org_id) = s.organization(&owner, "m7").await;
    s.post(
        "/api/inventory/create",
        Some(&owner),
        json!({"domain": shop, "sku": "APP", "slug": "app", "price_cents": 4900,
               "data": {"license_product_id": "prod-app"}}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/organizations/users/add",
        Some(&owner),
        json!({"domain": shop, "email": staff_email}),
    )
    .await
    .assert_ok();
    let staff_id = user_id(&s, &staff).await;
    s.post(
        "/api/organizations/users/promote",
        Some(&owner),
        json!({"organizationId": org_id, "userId": staff_id}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/licenses/create",
            Some(&staff),
            json!({"domain": shop, "sku": "APP"}),
        )
        .await;
    r.assert_ok();
    let license = r.body["data"][0]["id"].as_str().unwrap().to_owned();
    s.post(
        "/api/organizations/users/remove",
        Some(&owner),
        json!({"organizationId": org_id, "userId": staff_id}),
    )
    .await
    .assert_ok();
    for path in ["/api/licenses/regenerate", "/api/licenses/revoke"] {
        s.post(path, Some(&staff), json!({"id": license}))
            .await
            .assert_error(404);
    }
    s.post(
        "/api/licenses/regenerate",
        Some(&owner),
        json!({"id": license}),
    )
    .await
    .assert_ok();
}

#[tokio::test]
async fn l4_markdown_links_keep_only_safe_targets() {
    let s = Server::start().await;
    let author = s.verified_user(&email("l4")).await;
    let r = s
        .post(
            "/api/posts/create",
            Some(&author),
            json!({"type": "NOTE", "markdown":
                   "[click](javascript:alert(1)) [ok](https://example.com) ![x](data:image/png,AA)"}),
        )
        .await;
    r.assert_ok();
    let doc = r.body["data"]["data"]["editorContent"].to_string();
    assert!(
        !doc.contains("javascript:") && !doc.contains("data:image"),
        "{doc}"
    );
    assert!(
        doc.contains("https://example.com") && doc.contains("click"),
        "{doc}"
    );
}

#[tokio::test]
async fn l5_a_payment_event_must_match_the_orders_payment_and_currency() {
    const SECRET: &str = "whsec_l5";
    let s =
        Server::start_with(Options::default().env("PLINTH_STRIPE_WEBHOOK_SECRET", SECRET)).await;
    let seller = s.verified_user(&email("l5seller")).await;
    let buyer = s.verified_user(&email("l5buyer")).await;
    let (shop, _) = s.organization(&seller, "l5").await;
    s.post(
        "/api/inventory/create",
        Some(&seller),
        json!({"domain": shop, "sku": "lamp", "slug": "lamp", "price_cents": 4999, "unit_count": 3}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/marketplace/checkout",
            Some(&buyer),
            json!({"items": [{"sku": "lamp", "quantity": 1}]}),
        )
        .await;
    r.assert_ok();
    let order = r.body["order_id"].as_str().unwrap().to_owned();
    let payment = r.body["payment"]["id"].as_str().unwrap().to_owned();
    let event = |id: &str, currency: &str| {
        json!({"id": format!("evt_{}", uuid::Uuid::new_v4().simple()), "type": "payment_intent.succeeded",
               "data": {"object": {"id": id, "object": "payment_intent", "amount": 4999,
                                   "currency": currency, "metadata": {"order_id": order}}}})
    };
    let status = || async {
        s.get(&format!("/api/marketplace/orders/{order}"), Some(&buyer))
            .await
            .body["data"]["status"]
            .clone()
    };
    s.webhook(&event("pi_someone_elses", "usd"), SECRET, None)
        .await;
    assert_eq!(status().await, "pending");
    s.webhook(&event(&payment, "eur"), SECRET, None).await;
    assert_eq!(status().await, "pending");
    s.webhook(&event(&payment, "usd"), SECRET, None)
        .await
        .assert_ok();
    assert_eq!(status().await, "paid");
}

#[tokio::test]
async fn l3_recorded_purchase_answers_are_sealed() {
    let s = Server::start().await;
    let seller = s.verified_user(&email("l3seller")).await;
    let buyer = s.funded_user(&email("l3buyer")).await;
    let (shop, _) = s.organization(&seller, "l3").await;
    s.post(
        "/api/inventory/create",
        Some(&seller),
        json!({"domain": shop, "sku": "TOK", "slug": "tok", "price_cents": 900, "price_tokens": 30,
               "unit_count": 2, "data": {"license_product_id": "prod-tok"}}),
    )
    .await
    .assert_ok();
    let purchase = || async {
        Server::read(
            s.raw(Method::POST, "/api/licenses/purchase")
                .header("x-api-key", &buyer)
                .header("idempotency-key", "l3-once")
                .json(
                    &json!({"items": [{"sku": "TOK", "quantity": 1}], "payment_type": "tokens",
                              "domain": shop}),
                )
                .send()
                .await
                .unwrap(),
        )
        .await
    };
    let first = purchase().await;
    first.assert_ok();
    let key = first.body["licenses"][0]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    // Stored under the master key: the plaintext key is not in the table.
    let like = format!("SELECT COUNT(*) FROM idempotency_records WHERE response LIKE '%{key}%'");
    let like = like.replace("response LIKE", "CAST(response AS TEXT) LIKE");
    assert_eq!(s.sql_count(&like).await, 0);
    assert_eq!(
        s.sql_count(
            "SELECT COUNT(*) FROM idempotency_records WHERE CAST(response AS TEXT) LIKE '%sealed%'"
        )
        .await,
        1
    );
    // The replay still answers the same key, and sells nothing twice.
    let again = purchase().await;
    again.assert_ok();
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(again.body["licenses"][0]["key"], json!(key));
    assert_eq!(s.get("/api/licenses", Some(&buyer)).await.body["total"], 1);
}
