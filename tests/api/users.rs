//! Sign-up, verification through the outbox, the viewer, access levels.

use serde_json::json;

use crate::common::{code_in, email, Options, Server};

#[tokio::test]
async fn sign_up_verify_and_read_the_viewer() {
    let s = Server::start().await;
    let addr = email("flow");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr.to_uppercase(), "password": "pw1"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(false));
    assert_eq!(r.body["emailed"], json!(true));
    let user = &r.body["user"];
    assert_eq!(user["email"], json!(addr), "emails are stored lower-case");
    assert_eq!(user["level"], json!(0));
    assert_eq!(user["verified"], json!(false));
    assert!(user.get("hash").is_none() && user.get("password_hash").is_none());
    assert!(user.get("wallet_signature").is_none());
    let key = user["key"].as_str().unwrap().to_owned();

    // Level 0 can read its own profile but not V10 routes.
    let v = s.get("/api/users/viewer", Some(&key)).await;
    v.assert_ok();
    assert_eq!(v.body["user"]["id"], user["id"]);
    s.get("/api/users/viewer/organizations", Some(&key))
        .await
        .assert_error(403);

    let mail = s.wait_for_email(&addr, "?code=").await;
    assert!(mail.contains(&format!("{}/verify?code=", s.base)), "{mail}");
    let code = code_in(&mail);
    let r = s
        .post("/api/users/verify", None, json!({"code": code}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["user"]["level"], json!(10));
    assert_eq!(r.body["user"]["verified"], json!(true));

    // The first verification rotates the key (finding H1): the sign-up key is dead.
    let new_key = r.body["user"]["key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    s.get("/api/users/viewer", Some(&key))
        .await
        .assert_error(401);
    let v = s.get("/api/users/viewer", Some(&new_key)).await;
    assert_eq!(v.body["user"]["level"], json!(10));
    assert_eq!(v.body["user"]["key"], json!(new_key));

    // Codes are single-use; a used or unknown code names nothing (404).
    s.post("/api/users/verify", None, json!({"code": code}))
        .await
        .assert_error(404);
    s.post("/api/users/verify", None, json!({"code": "0".repeat(32)}))
        .await
        .assert_error(404);
}

#[tokio::test]
async fn sign_in_returns_the_same_key_and_wrong_password_is_401() {
    let s = Server::start().await;
    let addr = email("signin");
    let (key, user) = s.signup(&addr).await;
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(true));
    assert_eq!(r.body["emailed"], json!(false));
    assert_eq!(r.body["user"]["key"], json!(key));
    assert_eq!(r.body["user"]["id"], user["id"]);

    let wrong = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "nope"}),
        )
        .await;
    wrong.assert_error(401);
    assert!(!wrong.body["message"].as_str().unwrap().contains("exist"));
    // Nobody confirmed the address yet: the other password is kept as another sign-up
    // attempt and mailed its own confirmation (issue 42), which only its link confirms.
    assert_eq!(wrong.body["emailed"], json!(true), "{}", wrong.body);
    s.wait_for_email(&addr, "already has an account that nobody has confirmed")
        .await;
    assert_eq!(s.emails_to(&addr).len(), 2);
}

/// Spec part 1, Users: `verify {code}` is Public and confirms the email. The password
/// chosen at sign-up survives a confirmation by the emailed code alone (no key), and
/// signs in afterwards (issue 42; it was cleared before).
#[tokio::test]
async fn the_password_chosen_at_sign_up_survives_a_confirmation_by_code_alone() {
    let s = Server::start().await;
    let addr = email("spec-flow");
    let (signup_key, _) = s.signup(&addr).await;
    let code = s.verification_code(&addr).await;
    let r = s
        .post("/api/users/verify", None, json!({"code": code}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["purpose"], json!("verify"));
    assert_eq!(r.body["password_changed"], json!(false));
    assert_eq!(r.body["user"]["verified"], json!(true));
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "correct horse"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(true));
    assert_eq!(r.body["user"]["key"], json!(key));
    assert_eq!(r.body["user"]["level"], json!(10));
    // The key handed out before the confirmation is dead.
    s.get("/api/users/viewer", Some(&signup_key))
        .await
        .assert_error(401);
}

#[tokio::test]
async fn expired_code_sends_a_fresh_one() {
    let s = Server::start().await;
    let addr = email("expired");
    s.signup(&addr).await;
    let old = s.verification_code(&addr).await;
    s.sql("UPDATE user_codes SET expires_at = '2000-01-01T00:00:00Z'")
        .await;
    let r = s
        .post("/api/users/verify", None, json!({"code": old}))
        .await;
    r.assert_error(400);
    assert_eq!(r.body["expired"], json!(true));
    assert_eq!(r.body["emailed"], json!(true));
    // A second email arrives with a different, working code.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while s.emails_to(&addr).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no second email");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let fresh = s
        .emails_to(&addr)
        .iter()
        .map(|t| code_in(t))
        .find(|c| *c != old)
        .unwrap();
    s.post("/api/users/verify", None, json!({"code": fresh}))
        .await
        .assert_ok();
}

#[tokio::test]
async fn exempt_domains_get_no_email() {
    let s = Server::start_with(
        Options::default().env("PLINTH_EXEMPT_DOMAINS", "quiet.example,other.example"),
    )
    .await;
    let addr = email("exempt");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": "Quiet.Example"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["emailed"], json!(false));
    assert_eq!(r.body["user"]["verified"], json!(false));
    assert_eq!(
        r.body["user"]["data"]["exemptions"],
        json!(["EXEMPT_ALL_EMAILS"])
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(s.emails_to(&addr).is_empty());
}

#[tokio::test]
async fn invalid_and_missing_keys_are_401_and_levels_are_403() {
    let s = Server::start().await;
    s.get("/api/users/viewer", None).await.assert_error(401);
    s.get("/api/users/viewer", Some("pk_0000"))
        .await
        .assert_error(401);
    let key = s.verified_user(&email("lvl")).await;
    s.get("/api/users", Some(&key)).await.assert_error(403);
    // A V10 route passes the access check (it is not built yet: 501, not 403).
    let r = s.get("/api/organizations", Some(&key)).await;
    assert_ne!(r.status.as_u16(), 403);
}

#[tokio::test]
async fn set_level_makes_an_admin_and_the_server_sees_it() {
    let s = Server::start().await;
    let addr = email("op");
    let key = s.admin(&addr).await; // waits until the level is visible (< 12 s)
    let r = s.get("/api/users", Some(&key)).await;
    assert_ne!(r.status.as_u16(), 403, "{}", r.body);
    // Admins are not rate limited: the usage reports no limit.
    assert_eq!(r.body["_usage"]["rate_limit"]["interval_ms"], json!(0));

    let out = s.set_level("nobody@example.com", 100);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no account"));
}
