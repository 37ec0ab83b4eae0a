//! The rest of the Users area: reset, profile updates, usernames, keys, wallets,
//! deletion, admin views, resend, templates, passwordless sign-in, office applications.

use serde_json::{json, Value};

use crate::common::{code_in, email, Options, Server};

async fn wait_emails(s: &Server, to: &str, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mails = s.emails_to(to);
        if mails.len() >= n {
            return mails;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expected {n} emails to {to}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn password_reset_with_the_emailed_code() {
    let s = Server::start().await;
    let addr = email("reset");
    let (key, _) = s.signup(&addr).await;

    let known = s
        .post("/api/users/reset-password", None, json!({"email": addr}))
        .await;
    known.assert_ok();
    let unknown = s
        .post(
            "/api/users/reset-password",
            None,
            json!({"email": email("ghost")}),
        )
        .await;
    unknown.assert_ok();
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("_usage");
        v
    };
    assert_eq!(
        strip(&known.body),
        strip(&unknown.body),
        "reset must not reveal accounts"
    );
    s.post("/api/users/reset-password", None, json!({"email": "nope"}))
        .await
        .assert_error(400);

    let mail = s.wait_for_email(&addr, "/reset-password?code=").await;
    let code = code_in(&mail);
    // The reset code signs in and sets the new password in one step.
    let r = s
        .post(
            "/api/users/verify",
            None,
            json!({"code": code, "password": "new secret"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["purpose"], json!("reset"));
    assert_eq!(r.body["password_changed"], json!(true));
    // A completed reset rotates the key: a leaked key dies with it.
    assert_ne!(r.body["user"]["key"], json!(key));
    s.get("/api/users/viewer", Some(&key))
        .await
        .assert_error(401);
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": "correct horse"}),
    )
    .await
    .assert_error(401);
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": "new secret"}),
    )
    .await
    .assert_ok();

    // Second way: a reset code answers the key, then update-viewer-password.
    s.post("/api/users/reset-password", None, json!({"email": addr}))
        .await
        .assert_ok();
    let mails = wait_emails(&s, &addr, 3).await;
    let fresh = mails
        .iter()
        .filter(|m| m.contains("/reset-password?code="))
        .map(|m| code_in(m))
        .find(|c| *c != code)
        .unwrap();
    let r = s
        .post("/api/users/verify", None, json!({"code": fresh}))
        .await;
    r.assert_ok();
    let k = r.body["user"]["key"].as_str().unwrap().to_owned();
    s.post(
        "/api/users/update-viewer-password",
        Some(&k),
        json!({"password": "third"}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/users/update-viewer-password",
        Some(&k),
        json!({"password": ""}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": "third"}),
    )
    .await
    .assert_ok();
    // A verification code may carry the password too (it replaces the one chosen at
    // sign-up: the code proves the mailbox, security round 2, H3); a sign-in code not.
    let other = email("other");
    s.signup(&other).await;
    let vcode = s.verification_code(&other).await;
    let r = s
        .post(
            "/api/users/verify",
            None,
            json!({"code": vcode, "password": "chosen at verification"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["password_changed"], json!(true));
    for (password, status) in [("correct horse", 401), ("chosen at verification", 200)] {
        let r = s
            .post(
                "/api/users/authenticate",
                None,
                json!({"email": other, "password": password}),
            )
            .await;
        assert_eq!(r.status, status, "{password}: {}", r.body);
    }
}

#[tokio::test]
async fn update_merges_data_by_the_conventions() {
    let s =
        Server::start_with(Options::default().env("PLINTH_EXEMPT_DOMAINS", "quiet.example")).await;
    let addr = email("merge");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": "quiet.example"}),
        )
        .await;
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    let id = r.body["user"]["id"].as_str().unwrap().to_owned();

    let up = |updates: Value, force: bool| {
        s.post(
            "/api/users/update",
            Some(&key),
            json!({"id": id, "updates": updates, "forcePush": force}),
        )
    };
    let r = up(
        json!({"name": "Ada", "bio": "b", "settings": {"a": 1, "b": 2}}),
        false,
    )
    .await;
    r.assert_ok();
    let r = up(json!({"bio": "new", "settings": {"a": 9}}), false).await;
    r.assert_ok();
    let data = &r.body["user"]["data"];
    assert_eq!(data["name"], json!("Ada"), "shallow merge keeps other keys");
    assert_eq!(data["bio"], json!("new"));
    assert_eq!(
        data["settings"],
        json!({"a": 9}),
        "top-level keys are replaced, not deep-merged"
    );
    assert_eq!(data["exemptions"], json!(["EXEMPT_ALL_EMAILS"]));

    // A client-supplied exemptions key is ignored, also with forcePush.
    let r = up(json!({"only": true, "exemptions": []}), true).await;
    r.assert_ok();
    assert_eq!(
        r.body["user"]["data"],
        json!({"only": true, "exemptions": ["EXEMPT_ALL_EMAILS"]})
    );
    // Server-managed fields are refused, and nothing is written.
    let r = up(json!({"level": 100, "name": "x"}), false).await;
    r.assert_error(400);
    assert!(r.body["message"].as_str().unwrap().contains("level"));
    let v = s.get("/api/users/viewer", Some(&key)).await;
    assert_eq!(v.body["user"]["level"], json!(0));
    assert_eq!(v.body["user"]["data"]["only"], json!(true));
    assert!(v.body["user"]["data"].get("name").is_none());

    up(json!("not an object"), false).await.assert_error(400);
    s.post("/api/users/update", Some(&key), json!({"id": id}))
        .await
        .assert_error(400);

    // Only your own id, unless admin.
    let (other_key, other) = s.signup(&email("other")).await;
    s.post(
        "/api/users/update",
        Some(&other_key),
        json!({"id": id, "updates": {"name": "hijack"}}),
    )
    .await
    .assert_error(403);
    let admin = s.admin(&email("admin")).await;
    let r = s
        .post(
            "/api/users/update",
            Some(&admin),
            json!({"id": other["id"], "updates": {"name": "by admin"}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["data"]["name"], json!("by admin"));
    assert!(
        r.body["user"].get("key").is_none(),
        "an admin does not see others' keys"
    );
    s.post(
        "/api/users/update",
        Some(&admin),
        json!({"id": "nope", "updates": {}}),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn usernames_public_profiles_keys_wallets() {
    let s = Server::start().await;
    let addr = email("profile");
    let (key, user) = s.signup(&addr).await;
    let id = user["id"].as_str().unwrap();
    let name = format!("ada_{}", &id[..8]);

    let r = s
        .post(
            "/api/users/update-viewer-username",
            Some(&key),
            json!({"username": name.to_uppercase()}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["username"], json!(name));
    let (other, _) = s.signup(&email("taken")).await;
    s.post(
        "/api/users/update-viewer-username",
        Some(&other),
        json!({"username": name}),
    )
    .await
    .assert_error(409);
    s.post(
        "/api/users/update-viewer-username",
        Some(&other),
        json!({"username": "a b"}),
    )
    .await
    .assert_error(400);

    let r = s
        .post(
            "/api/users/public/get-by-username",
            None,
            json!({"username": name}),
        )
        .await;
    r.assert_ok();
    let public = r.body["user"].as_object().unwrap();
    assert_eq!(public["id"], json!(id));
    for hidden in [
        "email",
        "key",
        "level",
        "hash",
        "password_hash",
        "wallet_signature",
    ] {
        assert!(
            !public.contains_key(hidden),
            "public profile shows {hidden}"
        );
    }
    let r = s
        .post("/api/users/public/get-by-id", None, json!({"id": id}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["username"], json!(name));
    s.post(
        "/api/users/public/get-by-id",
        None,
        json!({"id": "missing"}),
    )
    .await
    .assert_error(404);
    s.post(
        "/api/users/public/get-by-username",
        None,
        json!({"username": "missing"}),
    )
    .await
    .assert_error(404);

    // Wallets.
    let r = s
        .post(
            "/api/users/sync-wallet",
            Some(&key),
            json!({"wallet_address": "0xabc", "wallet_signature": "sig"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["wallet_address"], json!("0xabc"));
    assert!(!r.body.to_string().contains("\"sig\""));
    s.post(
        "/api/users/sync-wallet",
        Some(&key),
        json!({"wallet_address": ""}),
    )
    .await
    .assert_error(400);
    let r = s
        .post("/api/users/desync-wallet", Some(&key), json!({}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["wallet_address"], json!(null));

    // A regenerated key replaces the old one at once.
    let r = s
        .post("/api/users/regenerate-key", Some(&key), json!({}))
        .await;
    r.assert_ok();
    let fresh = r.body["key"].as_str().unwrap().to_owned();
    assert_ne!(fresh, key);
    s.get("/api/users/viewer", Some(&key))
        .await
        .assert_error(401);
    let v = s.get("/api/users/viewer", Some(&fresh)).await;
    v.assert_ok();
    assert_eq!(v.body["user"]["key"], json!(fresh));
    // Sign-in now answers the new key.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse"}),
        )
        .await;
    assert_eq!(r.body["user"]["key"], json!(fresh));
}

#[tokio::test]
async fn delete_removes_the_account_and_its_key() {
    let s = Server::start().await;
    let addr = email("gone");
    let (key, user) = s.signup(&addr).await;
    let (other_key, other) = s.signup(&email("stay")).await;
    s.post(
        "/api/users/delete",
        Some(&other_key),
        json!({"id": user["id"]}),
    )
    .await
    .assert_error(403);
    let r = s
        .post("/api/users/delete", Some(&key), json!({"id": user["id"]}))
        .await;
    r.assert_ok();
    s.get("/api/users/viewer", Some(&key))
        .await
        .assert_error(401);
    // The email is free again: signing up creates a new account.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "x"}),
        )
        .await;
    assert_eq!(r.body["existing"], json!(false));
    assert_ne!(r.body["user"]["id"], user["id"]);

    let admin = s.admin(&email("admin")).await;
    s.post(
        "/api/users/delete",
        Some(&admin),
        json!({"id": other["id"]}),
    )
    .await
    .assert_ok();
    s.get("/api/users/viewer", Some(&other_key))
        .await
        .assert_error(401);
    s.post(
        "/api/users/delete",
        Some(&admin),
        json!({"id": other["id"]}),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn admin_views_of_accounts() {
    let s = Server::start().await;
    let admin = s.admin(&email("admin")).await;
    let addr = email("listed");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": "app.example"}),
        )
        .await;
    let id = r.body["user"]["id"].as_str().unwrap().to_owned();

    let r = s.get("/api/users?limit=500", Some(&admin)).await;
    r.assert_ok();
    let ids: Vec<_> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].clone())
        .collect();
    assert!(ids.contains(&json!(id)));
    assert!(r.body["data"][0].get("key").is_none());
    s.get("/api/users?limit=0", Some(&admin))
        .await
        .assert_error(400);

    let by_get = s
        .get("/api/users/list-by-source?source=app.example", Some(&admin))
        .await;
    by_get.assert_ok();
    assert_eq!(by_get.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(by_get.body["data"][0]["id"], json!(id));
    let by_post = s
        .post(
            "/api/users/list-by-source",
            Some(&admin),
            json!({"source": "APP.example"}),
        )
        .await;
    by_post.assert_ok();
    assert_eq!(by_post.body["data"].as_array().unwrap().len(), 1);
    s.post("/api/users/list-by-source", Some(&admin), json!({}))
        .await
        .assert_error(400);

    let r = s
        .post("/api/users/get-by-id", Some(&admin), json!({"id": id}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["email"], json!(addr));
    assert!(r.body["user"].get("key").is_none());
    s.post("/api/users/get-by-id", Some(&admin), json!({"id": "x"}))
        .await
        .assert_error(404);

    let r = s
        .post(
            "/api/users/verify-check-by-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["verified"], json!(false));
    let code = s.verification_code(&addr).await;
    s.post("/api/users/verify", None, json!({"code": code}))
        .await
        .assert_ok();
    let r = s
        .post(
            "/api/users/verify-check-by-id",
            Some(&admin),
            json!({"id": id}),
        )
        .await;
    assert_eq!(r.body["verified"], json!(true));
    assert_eq!(r.body["level"], json!(10));
}

#[tokio::test]
async fn verify_resend_and_exemption_following_the_last_sign_in() {
    let s =
        Server::start_with(Options::default().env("PLINTH_EXEMPT_DOMAINS", "quiet.example")).await;
    let addr = email("resend");
    let (key, _) = s.signup(&addr).await;
    s.wait_for_email(&addr, "?code=").await;
    let r = s
        .post(
            "/api/users/verify-resend",
            Some(&key),
            json!({"email": addr}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["emailed"], json!(true));
    let mails = wait_emails(&s, &addr, 2).await;
    let code = code_in(&mails[0]);
    assert_ne!(code, code_in(&mails[1]));
    s.post(
        "/api/users/verify-resend",
        Some(&key),
        json!({"email": email("someone")}),
    )
    .await
    .assert_error(403);

    // Sign-in through an exempt domain tags the account: no more email of any kind.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse", "source": "quiet.example"}),
        )
        .await;
    assert_eq!(
        r.body["user"]["data"]["exemptions"],
        json!(["EXEMPT_ALL_EMAILS"])
    );
    let r = s
        .post(
            "/api/users/verify-resend",
            Some(&key),
            json!({"email": addr}),
        )
        .await;
    assert_eq!(r.body["emailed"], json!(false));
    // A reset anyone may ask for still reaches an account nobody confirmed: whoever
    // opened it may have tagged it to lock its owner out (review N-L5).
    s.post("/api/users/reset-password", None, json!({"email": addr}))
        .await
        .assert_ok();
    s.wait_for_email(&addr, "/reset-password?code=").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(s.emails_to(&addr).len(), 3);

    // Sign-in through another domain removes the tag.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse", "source": "loud.example"}),
        )
        .await;
    assert!(
        r.body["user"]["data"].get("exemptions").is_none(),
        "{}",
        r.body
    );
    let r = s
        .post(
            "/api/users/verify-resend",
            Some(&key),
            json!({"email": addr}),
        )
        .await;
    assert_eq!(r.body["emailed"], json!(true));
}

#[tokio::test]
async fn organization_templates_shape_the_emails() {
    let s = Server::start().await;
    s.sql(
        "INSERT INTO organizations (id, domain, data, created_at, updated_at) VALUES \
         ('org-t', 'brand.example', '{\"email\": {\"from\": \"Brand <hello@brand.example>\", \
         \"subject\": \"Welcome to Brand\", \"text\": \"Hi from Brand! Confirm here:\"}, \
         \"email_reset_password\": {\"subject\": \"Brand reset\", \"text\": \"Reset it:\"}}', \
         '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
    )
    .await;
    let addr = email("brand");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": "brand.example"}),
        )
        .await;
    r.assert_ok();
    // Spec Notes 7: the `email` template dresses the first mail of an account created
    // with the organization as `source`; the platform's footer follows it, always.
    let mail = s.wait_for_email(&addr, "/verify?code=").await;
    assert!(mail.contains("From: Brand <hello@brand.example>"), "{mail}");
    assert!(mail.contains("Subject: Welcome to Brand"), "{mail}");
    let body_at = mail.find("Hi from Brand! Confirm here:").unwrap();
    let link_at = mail.find("/verify?code=").unwrap();
    let footer_at = mail.find("Sent by plinth at").unwrap();
    assert!(body_at < link_at && link_at < footer_at, "{mail}");
    assert!(
        mail.contains("on behalf of the organization brand.example"),
        "{mail}"
    );
    assert!(mail.contains("If you did not sign up, ignore this email"));
    s.post("/api/users/verify", None, json!({"code": code_in(&mail)}))
        .await
        .assert_ok();

    // Verified, and signed up through the organization: its templates apply.
    s.post(
        "/api/users/authenticate-interstitial",
        None,
        json!({"email": addr, "source": "brand.example"}),
    )
    .await
    .assert_ok();
    let mail = s.wait_for_email(&addr, "/sign-in?code=").await;
    assert!(mail.contains("Welcome to Brand"), "{mail}");
    assert!(mail.contains("From: Brand <hello@brand.example>"), "{mail}");
    assert!(mail.contains("Hi from Brand! Confirm here:"));
    let body_at = mail.find("Hi from Brand").unwrap();
    assert!(
        mail[body_at..].contains("/sign-in?code="),
        "link appended to the text"
    );

    s.post(
        "/api/users/reset-password",
        None,
        json!({"email": addr, "source": "brand.example"}),
    )
    .await
    .assert_ok();
    let mail = s.wait_for_email(&addr, "Brand reset").await;
    assert!(mail.contains("Reset it:") && mail.contains("/reset-password?code="));
    // Without a template the default sender is used.
    assert!(
        mail.contains("From: plinth <noreply@plinth.localhost>"),
        "{mail}"
    );
}

#[tokio::test]
async fn interstitial_sends_a_one_time_sign_in_link() {
    let s = Server::start().await;
    let addr = email("magic");
    let (key, _) = s.signup(&addr).await;
    let r = s
        .post(
            "/api/users/authenticate-interstitial",
            None,
            json!({"email": addr}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["emailed"], json!(true));
    let mail = s.wait_for_email(&addr, "/sign-in?code=").await;
    let r = s
        .post("/api/users/verify", None, json!({"code": code_in(&mail)}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["purpose"], json!("signin"));
    // A sign-in link is the first proof of the mailbox: the key rotates and the password
    // set before the proof is cleared (finding H1).
    assert_ne!(r.body["user"]["key"], json!(key));
    s.get("/api/users/viewer", Some(&key))
        .await
        .assert_error(401);
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": "correct horse"}),
    )
    .await
    .assert_error(401);

    let ghost = email("ghost");
    let r = s
        .post(
            "/api/users/authenticate-interstitial",
            None,
            json!({"email": ghost}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["emailed"], json!(false));
    // Nothing was created.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": ghost, "password": "pw"}),
        )
        .await;
    assert_eq!(r.body["existing"], json!(false));
    s.post(
        "/api/users/authenticate-interstitial",
        None,
        json!({"email": "bad"}),
    )
    .await
    .assert_error(400);
}

#[tokio::test]
async fn office_applications() {
    let s = Server::start().await;
    let key = s.verified_user(&email("applicant")).await;
    let admin = s.admin(&email("admin")).await;

    let r = s
        .post("/api/users/office/status", Some(&key), json!({}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"], json!(null));
    let r = s
        .post(
            "/api/users/office/apply",
            Some(&key),
            json!({"data": {"why": "desk"}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], json!("pending"));
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    s.post("/api/users/office/apply", Some(&key), json!({}))
        .await
        .assert_error(409);

    let r = s.get("/api/users/office", Some(&admin)).await;
    r.assert_ok();
    assert!(r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["id"] == json!(id)));
    s.get("/api/users/office", Some(&key))
        .await
        .assert_error(403);

    let r = s
        .post(
            "/api/users/office/update",
            Some(&admin),
            json!({"id": id, "updates": {"status": "approved"}}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["data"]["status"], json!("approved"));
    assert_eq!(r.body["data"]["data"]["why"], json!("desk"));
    s.post(
        "/api/users/office/update",
        Some(&admin),
        json!({"id": id, "updates": {"status": "maybe"}}),
    )
    .await
    .assert_error(400);
    let r = s
        .post("/api/users/office/status", Some(&key), json!({}))
        .await;
    assert_eq!(r.body["status"], json!("approved"));

    s.post("/api/users/office/delete", Some(&admin), json!({"id": id}))
        .await
        .assert_ok();
    s.post("/api/users/office/delete", Some(&admin), json!({"id": id}))
        .await
        .assert_error(404);
    s.post(
        "/api/users/office/update",
        Some(&admin),
        json!({"id": id, "updates": {}}),
    )
    .await
    .assert_error(404);
}

#[tokio::test]
async fn viewer_likes_and_organizations_come_from_the_tables() {
    let s = Server::start().await;
    let key = s.verified_user(&email("member")).await;
    let r = s.get("/api/users/viewer/likes", Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["data"], json!([]));
    let r = s.get("/api/users/viewer/organizations", Some(&key)).await;
    r.assert_ok();
    assert_eq!(r.body["data"], json!([]));

    let id = s.get("/api/users/viewer", Some(&key)).await.body["user"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.sql(
        "INSERT INTO organizations (id, domain, data, created_at, updated_at) VALUES \
         ('org-v', 'team.example', '{}', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
    )
    .await;
    s.sql(&format!(
        "INSERT INTO organization_members (organization_id, user_id, role, created_at) \
         VALUES ('org-v', '{id}', 'admin', '2026-01-01T00:00:00Z')"
    ))
    .await;
    s.sql(&format!(
        "INSERT INTO likes (id, user_id, entity_id, data, created_at, updated_at) \
         VALUES ('like-1', '{id}', 'post-1', '{{}}', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
    ))
    .await;
    let r = s.get("/api/users/viewer/organizations", Some(&key)).await;
    assert_eq!(r.body["data"][0]["domain"], json!("team.example"));
    assert_eq!(r.body["data"][0]["role"], json!("admin"));
    let r = s.get("/api/users/viewer/likes", Some(&key)).await;
    assert_eq!(r.body["data"][0]["entity_id"], json!("post-1"));
}
