//! Regression tests of the security review (`../shared/reviews/security-2026-11-22.md`),
//! one per finding, named after it; `docs/security.md` maps findings to these names.
//! Slide and storage findings are in `security_slides.rs`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{email, Options, Server, BIN};

const TOKEN_KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const MASTER_KEY: &str = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";

fn org_domain(tag: &str) -> String {
    format!(
        "{tag}-{}.example",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// `plinth grants mint`, as an operator or identity service would run it.
fn mint(email: &str, ttl: i64) -> String {
    let out = Command::new(BIN)
        .args([
            "grants",
            "mint",
            "--email",
            email,
            "--ttl",
            &ttl.to_string(),
        ])
        .env("PLINTH_AUTH_TOKEN_KEY", TOKEN_KEY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn token_key() -> plinth::crypto::GrantKey {
    plinth::crypto::GrantKey::new(&plinth::crypto::MasterKey::from_hex(TOKEN_KEY).unwrap())
}

/// Runs `plinth serve` expecting it to refuse to start; returns its stderr.
fn refused_start(args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(args)
        .env_remove("PLINTH_DATABASE_URL")
        .env_remove("PLINTH_MASTER_KEY")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(!status.success(), "the server exited successfully");
            let out = child.wait_with_output().unwrap();
            return String::from_utf8_lossy(&out.stderr).into_owned();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server started although it should have refused");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn exchange(s: &Server, token: &str) -> crate::common::Resp {
    s.post(
        "/api/users/authenticate-token",
        None,
        json!({ "token": token }),
    )
    .await
}

#[tokio::test]
async fn c1_aes_is_no_oracle_and_grants_never_use_the_master_key() {
    // Without a token-exchange key the exchange is off: 404 (not offered), whatever is sent.
    let s = Server::start().await;
    let r = s
        .post(
            "/api/aes",
            None,
            json!({"text": "{\"email\":\"admin@corp.example\",\"exp\":4102444800}"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["matched"], json!(true));
    let text = r.body.to_string();
    assert!(!text.contains("ciphertext"), "{text}");
    // Nothing in the answer is long enough to be a ciphertext of the text.
    fn longest_hex(v: &Value) -> usize {
        match v {
            Value::String(s) if s.chars().all(|c| c.is_ascii_hexdigit()) => s.len(),
            Value::Object(m) => m.values().map(longest_hex).max().unwrap_or(0),
            Value::Array(a) => a.iter().map(longest_hex).max().unwrap_or(0),
            _ => 0,
        }
    }
    assert!(longest_hex(&r.body) < 32, "{text}");
    let r = exchange(&s, &"ab".repeat(80)).await;
    r.assert_error(404);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("PLINTH_AUTH_TOKEN_KEY"));

    // A token-exchange key equal to the master key is a start-up error.
    let err = refused_start(
        &[],
        &[
            ("PLINTH_MASTER_KEY", MASTER_KEY),
            ("PLINTH_AUTH_TOKEN_KEY", MASTER_KEY),
        ],
    );
    assert!(
        err.contains("PLINTH_AUTH_TOKEN_KEY equals the master key"),
        "{err}"
    );
}

#[tokio::test]
async fn c3_grants_are_authenticated_single_use_and_short_lived() {
    let s = Server::start_with(Options::default().env("PLINTH_AUTH_TOKEN_KEY", TOKEN_KEY)).await;
    let admin_email = email("c3admin");
    let admin = s.admin(&admin_email).await;
    let mallory = email("mallory");

    // The review's attack: rewrite a grant for yourself into one for the admin by
    // XOR-ing known plaintext into the ciphertext. The tag refuses every changed byte.
    let own = format!(
        "{{\"email\":\"{mallory}\",\"exp\":{}}}",
        chrono::Utc::now().timestamp() + 300
    );
    let target = format!("{{\"email\":\"{admin_email}\"");
    let target = format!(
        "{target}{}",
        " ".repeat(own.len().saturating_sub(target.len() + 17))
    );
    let sealed = token_key().seal(own.as_bytes());
    let mut raw = hex::decode(&sealed).unwrap();
    for (i, (a, b)) in own.bytes().zip(target.bytes()).enumerate() {
        raw[16 + i] ^= a ^ b;
    }
    let r = exchange(&s, &hex::encode(&raw)).await;
    r.assert_error(401);
    // One flipped bit anywhere: 401.
    let mut flipped = hex::decode(&sealed).unwrap();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    exchange(&s, &hex::encode(flipped)).await.assert_error(401);

    // A real grant works once; a replay is refused.
    let r = exchange(&s, &sealed).await;
    r.assert_ok();
    assert_eq!(r.body["user"]["email"], json!(mallory));
    let r = exchange(&s, &sealed).await;
    r.assert_error(401);
    assert!(r.body["message"].as_str().unwrap().contains("already used"));
    exchange(&s, &sealed.to_uppercase()).await.assert_error(401);

    // `exp` more than ten minutes ahead is refused.
    let far = token_key().seal(
        json!({"email": mallory, "exp": chrono::Utc::now().timestamp() + 3600})
            .to_string()
            .as_bytes(),
    );
    let r = exchange(&s, &far).await;
    r.assert_error(401);
    assert!(r.body["message"].as_str().unwrap().contains("600 seconds"));

    // The operator's mint command makes grants the server accepts; the admin's own
    // grant signs the admin in (the legitimate path).
    let r = exchange(&s, &mint(&admin_email, 120)).await;
    r.assert_ok();
    assert_eq!(r.body["user"]["level"], json!(100));
    assert_eq!(r.body["key"], json!(admin));
}

#[tokio::test]
async fn c2_waitlist_accept_never_verifies_an_existing_account() {
    let s = Server::start().await;
    let big = org_domain("bigcorp");
    let owner = s.verified_user(&email("bigowner")).await;
    s.post(
        "/api/organizations/create",
        Some(&owner),
        json!({"domain": big}),
    )
    .await
    .assert_ok();

    // Mallory signs up as someone at bigcorp without reading that mailbox...
    let fake = format!(
        "fake-{}@{big}",
        &uuid::Uuid::new_v4().simple().to_string()[..6]
    );
    let (k2, _) = s.signup(&fake).await;
    // ...and has her own organization accept that address from its waitlist.
    let mallory = s.verified_user(&email("mallory")).await;
    let evil = org_domain("evil");
    s.post(
        "/api/organizations/create",
        Some(&mallory),
        json!({"domain": evil}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/organizations/waitlist-toggle",
        Some(&mallory),
        json!({"domain": evil, "waitlist_support": true}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/waitlist/add",
        None,
        json!({"domain": evil, "email": fake}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/waitlist/accept-by-email",
        Some(&mallory),
        json!({"domain": evil, "email": fake}),
    )
    .await
    .assert_ok();

    let v = s.get("/api/users/viewer", Some(&k2)).await;
    v.assert_ok();
    assert_eq!(v.body["user"]["verified"], json!(false));
    assert_eq!(v.body["user"]["level"], json!(0));
    s.post(
        "/api/organizations/membership/automatic",
        Some(&k2),
        json!({}),
    )
    .await
    .assert_error(403);
    let r = s
        .get(
            &format!("/api/waitlist/list-by-domain?domain={big}"),
            Some(&k2),
        )
        .await;
    assert!(!r.status.is_success(), "{}", r.body);
}

#[tokio::test]
async fn h1_verification_by_another_path_rotates_the_key_and_clears_the_password() {
    let s = Server::start_with(Options::default().env("PLINTH_AUTH_TOKEN_KEY", TOKEN_KEY)).await;
    // Mallory pre-registers the victim's address with her own password.
    let victim = email("victim");
    let (k, _) = s.signup(&victim).await;
    // The victim later signs in through the identity service.
    let r = exchange(&s, &mint(&victim, 60)).await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(true));
    let new_key = r.body["key"].as_str().unwrap();
    assert_ne!(new_key, k);
    s.get("/api/users/viewer", Some(&k)).await.assert_error(401);
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": victim, "password": "correct horse"}),
    )
    .await
    .assert_error(401);
    let v = s.get("/api/users/viewer", Some(new_key)).await;
    v.assert_ok();
    assert_eq!(v.body["user"]["verified"], json!(true));
    // Already verified: a second exchange keeps the key.
    let r = exchange(&s, &mint(&victim, 60)).await;
    assert_eq!(r.body["key"], json!(new_key));
}

#[tokio::test]
async fn h2_simulated_providers_only_when_nothing_real_is_configured() {
    // Defaults: both simulated, and /api/status says so plainly.
    let s = Server::start().await;
    let st = s.get("/api/status", None).await;
    assert_eq!(st.body["simulated"], json!(["payments", "app_store"]));
    assert_eq!(st.body["services"]["payments"]["simulated"], json!(true));
    drop(s);

    // Stripe configured, Apple not: the simulated App Store is off.
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_STRIPE_SECRET_KEY", "sk_test_unused")
            .env("PLINTH_STRIPE_API_BASE", "http://127.0.0.1:9"),
    )
    .await;
    let st = s.get("/api/status", None).await;
    assert_eq!(st.body["simulated"], json!([]));
    assert_eq!(
        st.body["services"]["app_store"]["provider"],
        json!("unconfigured")
    );
    let key = s.verified_user(&email("h2")).await;
    for _ in 0..3 {
        let r = s
            .post(
                "/api/credits/verify-apple-transaction-distritbution",
                Some(&key),
                json!({"transactionId": format!("sim-tokens_5000-{}", uuid::Uuid::new_v4().simple())}),
            )
            .await;
        r.assert_error(404);
        assert_eq!(r.body["not_configured"], json!(true));
    }
    let b = s.get("/api/credits/balance", Some(&key)).await;
    assert!(b.body.to_string().contains("\"balance\":0"), "{}", b.body);
    drop(s);

    // --production refuses simulated providers and a generated master key, each
    // alone, and both at once in one message.
    let err = refused_start(&["--production"], &[("PLINTH_MASTER_KEY", MASTER_KEY)]);
    assert!(
        err.contains("(1 problem)") && err.contains("simulated"),
        "{err}"
    );
    let err = refused_start(
        &["--production"],
        &[("PLINTH_STRIPE_SECRET_KEY", "sk_test_x")],
    );
    assert!(
        err.contains("(1 problem)") && err.contains("PLINTH_MASTER_KEY"),
        "{err}"
    );
    let err = refused_start(&["--production"], &[]);
    assert!(
        err.contains("(2 problems)")
            && err.contains("PLINTH_MASTER_KEY")
            && err.contains("simulated"),
        "{err}"
    );
}

#[tokio::test]
async fn h3_a_valid_key_does_not_reset_sign_in_throttling() {
    let s = Server::start_with(Options::default().env("PLINTH_RATE_LIMIT_MULTIPLIER", "1")).await;
    // 1: the victim's account; 2: the attacker's own (free) account.
    let victim = email("h3victim");
    s.signup(&victim).await;
    let (k, _) = s.signup(&email("attacker")).await;
    let guess = |key: Option<String>| {
        let (s, victim) = (&s, &victim);
        async move {
            s.post(
                "/api/users/authenticate",
                key.as_deref(),
                json!({"email": victim, "password": "guess"}),
            )
            .await
        }
    };
    // 3..5: guesses without a key.
    for _ in 0..3 {
        guess(None).await.assert_error(401);
    }
    // 6: the window of this address is full, key or not.
    guess(Some(k.clone())).await.assert_error(429);
    guess(None).await.assert_error(429);
}

#[tokio::test]
async fn m2_absurd_amounts_are_refused_and_never_fail_other_changes() {
    let s = Server::start().await;
    let key = s.verified_user(&email("m2")).await;
    let bystander = s.verified_user(&email("m2b")).await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (body, k) = if i % 2 == 0 {
            (json!({"credit": i64::MAX}), key.clone())
        } else {
            (json!({"credit": 1}), bystander.clone())
        };
        let base = s.base.clone();
        tasks.push(tokio::spawn(async move {
            let r = reqwest::Client::new()
                .post(format!("{base}/api/credits/deduct"))
                .header("x-api-key", k)
                .json(&body)
                .send()
                .await
                .unwrap();
            (body, r.status().as_u16())
        }));
    }
    for t in tasks {
        let (body, status) = t.await.unwrap();
        if body["credit"] == json!(i64::MAX) {
            assert_eq!(status, 400);
        } else {
            assert!(status == 200 || status == 402, "bystander got {status}");
        }
    }
    s.post(
        "/api/credits/send",
        Some(&key),
        json!({"amount": i64::MAX, "email": email("x")}),
    )
    .await
    .assert_error(400);
}

#[tokio::test]
async fn m4_org_templates_cannot_dress_platform_mail_for_outsiders() {
    let s = Server::start().await;
    let mallory = s.verified_user(&email("m4")).await;
    let evil = org_domain("evil");
    s.post(
        "/api/organizations/create",
        Some(&mallory),
        json!({"domain": evil}),
    )
    .await
    .assert_ok();
    let phish = json!({"from": "Corp IT Security <security@corp.example>",
                       "subject": "Urgent: account locked", "text": "Reply with the code"});
    s.post(
        "/api/organizations/update",
        Some(&mallory),
        json!({"domain": evil, "data": {"email_reset_password": phish, "email": phish}}),
    )
    .await
    .assert_ok();
    // An outsider's reset through Mallory's organization: the platform's own email.
    let victim = email("m4victim");
    s.signup(&victim).await;
    s.post(
        "/api/users/reset-password",
        None,
        json!({"email": victim, "source": evil}),
    )
    .await
    .assert_ok();
    let mail = s.wait_for_email(&victim, "/reset-password?code=").await;
    assert!(
        !mail.contains("Urgent") && !mail.contains("corp.example"),
        "{mail}"
    );
    // A user who signed up through the organization gets its words, but never a sender
    // outside its domain.
    let joiner = email("m4joiner");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": joiner, "password": "pw", "source": evil}),
        )
        .await;
    r.assert_ok();
    let signup_key = r.body["user"]["key"].as_str().unwrap().to_owned();
    // Its own sign-up mail is dressed (spec, Notes 7; issue 42), under the platform's
    // footer and never from a sender outside the organization's domain.
    let mail = s.wait_for_email(&joiner, "/verify?code=").await;
    assert!(mail.contains("Reply with the code"), "{mail}");
    assert!(!mail.contains("security@corp.example"), "{mail}");
    assert!(mail.contains(&format!("on behalf of the organization {evil}")));
    s.post(
        "/api/users/verify",
        Some(&signup_key),
        json!({"code": crate::common::code_in(&mail)}),
    )
    .await
    .assert_ok();
    s.post(
        "/api/users/reset-password",
        None,
        json!({"email": joiner, "source": evil}),
    )
    .await
    .assert_ok();
    let mail = s.wait_for_email(&joiner, "/reset-password?code=").await;
    assert!(mail.contains("Reply with the code"), "{mail}");
    assert!(!mail.contains("security@corp.example"), "{mail}");
}

#[tokio::test]
async fn m5_deleting_an_account_keeps_org_decks_and_last_admins() {
    let s = Server::start().await;
    let d = org_domain("m5");
    let admin = s.verified_user(&email("m5admin")).await;
    s.post(
        "/api/organizations/create",
        Some(&admin),
        json!({"domain": d}),
    )
    .await
    .assert_ok();
    let member_email = email("m5member");
    let member = s.verified_user(&member_email).await;
    s.post(
        "/api/organizations/users/add",
        Some(&admin),
        json!({"domain": d, "email": member_email}),
    )
    .await
    .assert_ok();
    let r = s
        .post(
            "/api/slides/create",
            Some(&member),
            json!({"markdown": "# Team deck", "domain": d}),
        )
        .await;
    r.assert_ok();
    let deck = r.body["id"].as_str().unwrap().to_owned();
    let member_id = s.get("/api/users/viewer", Some(&member)).await.body["user"]["id"].clone();
    s.post("/api/users/delete", Some(&member), json!({"id": member_id}))
        .await
        .assert_ok();
    // The organization's deck survives its author.
    s.get(&format!("/api/slides/{deck}"), Some(&admin))
        .await
        .assert_ok();

    // The last admin cannot delete their account while the organization has them.
    let admin_id = s.get("/api/users/viewer", Some(&admin)).await.body["user"]["id"].clone();
    let r = s
        .post("/api/users/delete", Some(&admin), json!({"id": admin_id}))
        .await;
    r.assert_error(409);
    assert_eq!(r.body["organizations"], json!([d]));
    s.get("/api/users/viewer", Some(&admin)).await.assert_ok();
}

#[tokio::test]
async fn m8_payment_method_ids_never_reach_a_provider_url() {
    let s = Server::start_with(
        Options::default()
            .env("PLINTH_STRIPE_SECRET_KEY", "sk_test_unused")
            .env("PLINTH_STRIPE_API_BASE", "http://127.0.0.1:9"),
    )
    .await;
    let r = s
        .post(
            "/api/users/authenticate-agent",
            None,
            json!({"username": "m8agent", "password": "p", "productId": "prod_paying_monthly",
                   "paymentMethodId": "../customers/cus_X?expand[]=sources#"}),
        )
        .await;
    r.assert_error(400);
    // With a real provider the simulated hosted pages are not mounted.
    for path in ["/billing/cus_x", "/checkout/cs_x"] {
        let r = s.raw(Method::GET, path).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 404, "{path}");
    }
}

#[tokio::test]
async fn l3_status_shows_locations_to_admins_only() {
    let s = Server::start().await;
    let st = s.get("/api/status", None).await;
    let text = st.body.to_string();
    let dir = s.data_dir().display().to_string();
    assert!(
        !text.contains(&dir) && !text.contains("outbox\":"),
        "{text}"
    );
    let admin = s.admin(&email("l3")).await;
    let st = s.get("/api/status", Some(&admin)).await;
    assert!(st.body.to_string().contains(&dir), "{}", st.body);
}

#[tokio::test]
async fn l6_an_expired_code_resends_once_and_older_codes_die() {
    let s = Server::start().await;
    let addr = email("l6");
    s.signup(&addr).await;
    let first = s.verification_code(&addr).await;
    s.sql(&format!(
        "UPDATE user_codes SET expires_at = '2000-01-01T00:00:00Z' WHERE code_hash = '{}'",
        plinth::crypto::sha256_hex(first.as_bytes())
    ))
    .await;
    let r = s
        .post("/api/users/verify", None, json!({"code": first}))
        .await;
    r.assert_error(400);
    assert_eq!(r.body["expired"], json!(true));
    // The expired code was spent by that answer: no second email.
    let r = s
        .post("/api/users/verify", None, json!({"code": first}))
        .await;
    r.assert_error(404);
    assert!(r.body.get("expired").is_none(), "{}", r.body);
    // A reset code issued before the verification dies with it.
    s.post("/api/users/reset-password", None, json!({"email": addr}))
        .await
        .assert_ok();
    let reset = crate::common::code_in(&s.wait_for_email(&addr, "/reset-password?code=").await);
    // Emails are delivered by the queue in any order: wait for the fresh one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let fresh = loop {
        let found = s
            .emails_to(&addr)
            .iter()
            .filter(|m| m.contains("/verify?code="))
            .map(|m| crate::common::code_in(m))
            .find(|c| *c != first);
        if let Some(c) = found {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a fresh verification code"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    s.post("/api/users/verify", None, json!({"code": fresh}))
        .await
        .assert_ok();
    s.post("/api/users/verify", None, json!({"code": reset}))
        .await
        .assert_error(404);
}

#[test]
fn l9_token_costs_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env(
            "PLINTH_TOKEN_COSTS",
            "GET /api/users/viewer=9223372036854775808",
        )
        .env_remove("PLINTH_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
}
