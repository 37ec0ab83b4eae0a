//! Issue 42 and the security review of 2026-11-28 (`N-…` findings, accounts part):
//! pre-registration in either order, organization templates as the spec says, the
//! account pages' policy, and password guessing per target account.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{code_in, email, Options, Resp, Server};

/// Waits for a mail to `to` holding `needle` that is not one of `seen`; its text.
async fn new_mail(s: &Server, to: &str, needle: &str, seen: &[String]) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(m) = s
            .emails_to(to)
            .into_iter()
            .find(|m| m.contains(needle) && !seen.contains(m))
        {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "no new mail to {to} with {needle:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sign_in(s: &Server, addr: &str, password: &str) -> Resp {
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": password}),
    )
    .await
}

/// The owner's password signs in (with `key`), the other's does not, and none of the
/// keys issued before the confirmation works.
async fn owner_holds(
    s: &Server,
    addr: &str,
    owner_pw: &str,
    other_pw: &str,
    key: &str,
    dead: &[&str],
) {
    let r = sign_in(s, addr, owner_pw).await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(true));
    assert_eq!(r.body["user"]["key"], json!(key));
    sign_in(s, addr, other_pw).await.assert_error(401);
    for k in dead {
        s.get("/api/users/viewer", Some(k)).await.assert_error(401);
    }
    s.get("/api/users/viewer", Some(key)).await.assert_ok();
}

/// Order (a): someone signs up the address with their password first; the owner then
/// signs up with theirs (401, and a mail confirming that attempt) and confirms it from
/// the mailbox, without any key.
#[tokio::test]
async fn pre_registration_first_then_the_owner_signs_up_and_confirms() {
    let s = Server::start().await;
    let addr = email("order-a");
    let r = sign_in(&s, &addr, "mallory pw").await;
    r.assert_ok();
    let mallory_key = r.body["user"]["key"].as_str().unwrap().to_owned();
    let first = s.wait_for_email(&addr, "/verify?code=").await;
    let regenerated = s
        .post("/api/users/regenerate-key", Some(&mallory_key), json!({}))
        .await;
    let regenerated = regenerated.body["key"].as_str().unwrap().to_owned();

    let r = sign_in(&s, &addr, "owner pw").await;
    r.assert_error(401);
    assert_eq!(r.body["emailed"], json!(true));
    let mine = new_mail(&s, &addr, "/verify?code=", std::slice::from_ref(&first)).await;
    assert!(mine.contains("nobody has confirmed yet"), "{mine}");
    let d = s
        .post(
            "/api/users/verify/details",
            None,
            json!({"code": code_in(&mine)}),
        )
        .await;
    assert_eq!(
        d.body["attempt"]["opened_account"],
        json!(false),
        "{}",
        d.body
    );
    let r = s
        .post("/api/users/verify", None, json!({"code": code_in(&mine)}))
        .await;
    r.assert_ok();
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    owner_holds(
        &s,
        &addr,
        "owner pw",
        "mallory pw",
        &key,
        &[&mallory_key, &regenerated],
    )
    .await;
    // The pre-registrant's link died with the confirmation.
    s.post("/api/users/verify", None, json!({"code": code_in(&first)}))
        .await
        .assert_error(404);
}

/// Order (a) with a reset instead of a sign-up: the reset link proves the mailbox, the
/// pre-registrant's password goes, and their keys die.
#[tokio::test]
async fn pre_registration_first_then_the_owner_resets() {
    let s = Server::start().await;
    let addr = email("order-a-reset");
    let r = sign_in(&s, &addr, "mallory pw").await;
    let mallory_key = r.body["user"]["key"].as_str().unwrap().to_owned();
    s.post("/api/users/reset-password", None, json!({"email": addr}))
        .await
        .assert_ok();
    let mail = s.wait_for_email(&addr, "/reset-password?code=").await;
    let r = s
        .post(
            "/api/users/verify",
            None,
            json!({"code": code_in(&mail), "password": "owner pw"}),
        )
        .await;
    r.assert_ok();
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    owner_holds(&s, &addr, "owner pw", "mallory pw", &key, &[&mallory_key]).await;
}

/// Order (b): the owner signs up first, someone else signs up the same address
/// afterwards (401, no key), and the owner confirms with the link of the first mail.
#[tokio::test]
async fn the_owner_first_then_a_pre_registration_and_the_first_link() {
    let s = Server::start().await;
    let addr = email("order-b");
    let (owner_key, _) = s.signup(&addr).await;
    let first = s.wait_for_email(&addr, "/verify?code=").await;
    let r = sign_in(&s, &addr, "mallory pw").await;
    r.assert_error(401);
    assert!(
        r.body["user"].is_null(),
        "no key for a wrong password: {}",
        r.body
    );
    let theirs = new_mail(&s, &addr, "/verify?code=", std::slice::from_ref(&first)).await;

    let r = s
        .post("/api/users/verify", None, json!({"code": code_in(&first)}))
        .await;
    r.assert_ok();
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    owner_holds(
        &s,
        &addr,
        "correct horse",
        "mallory pw",
        &key,
        &[&owner_key],
    )
    .await;
    // The later attempt's link died with the confirmation: it can never set its password.
    s.post("/api/users/verify", None, json!({"code": code_in(&theirs)}))
        .await
        .assert_error(404);
    sign_in(&s, &addr, "mallory pw").await.assert_error(401);
}

/// "This wasn't me" on a later attempt discards only that attempt; on the sign-up that
/// opened the account it deletes the unconfirmed account and every key.
#[tokio::test]
async fn this_wasnt_me_discards_the_attempt_or_deletes_the_unconfirmed_account() {
    let s = Server::start().await;
    let addr = email("reject");
    let (owner_key, _) = s.signup(&addr).await;
    let first = s.wait_for_email(&addr, "/verify?code=").await;
    sign_in(&s, &addr, "mallory pw").await.assert_error(401);
    let theirs = new_mail(&s, &addr, "/verify?code=", std::slice::from_ref(&first)).await;
    let r = s
        .post(
            "/api/users/verify/reject",
            None,
            json!({"code": code_in(&theirs)}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["account_deleted"], json!(false));
    s.post("/api/users/verify", None, json!({"code": code_in(&theirs)}))
        .await
        .assert_error(404);
    s.get("/api/users/viewer", Some(&owner_key))
        .await
        .assert_ok();
    // Other codes than sign-up confirmations are not rejected (ignoring them is enough).
    s.post("/api/users/reset-password", None, json!({"email": addr}))
        .await
        .assert_ok();
    let reset = s.wait_for_email(&addr, "/reset-password?code=").await;
    s.post(
        "/api/users/verify/reject",
        None,
        json!({"code": code_in(&reset)}),
    )
    .await
    .assert_error(400);

    let r = s
        .post(
            "/api/users/verify/reject",
            None,
            json!({"code": code_in(&first)}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["account_deleted"], json!(true));
    s.get("/api/users/viewer", Some(&owner_key))
        .await
        .assert_error(401);
    s.post(
        "/api/users/verify/details",
        None,
        json!({"code": code_in(&first)}),
    )
    .await
    .assert_error(404);
    // The address is free: a sign-up creates a new account.
    let r = sign_in(&s, &addr, "later").await;
    assert_eq!(r.body["existing"], json!(false));
}

/// An organization with templates for every kind: `(domain, admin key)`.
async fn branded(s: &Server, prefix: &str) -> (String, String) {
    let admin = s.verified_user(&email(&format!("{prefix}-admin"))).await;
    let (org, _) = s.organization(&admin, prefix).await;
    let t = |subject: &str, text: &str| json!({"from": format!("Brand <hello@{org}>"), "subject": subject, "text": text});
    s.post(
        "/api/organizations/update",
        Some(&admin),
        json!({"domain": org, "data": {
            "email": t("Brand welcome", "Welcome to Brand. Confirm here:"),
            "email_reset_password": t("Brand reset", "URGENT: reset here:"),
        }}),
    )
    .await
    .assert_ok();
    (org, admin)
}

fn dressed_by(mail: &str, org: &str) -> bool {
    mail.contains(&format!("From: Brand <hello@{org}>"))
        && mail.contains(&format!("on behalf of the organization {org}"))
}

/// Every mail carries the platform's footer, whatever dresses it.
fn has_footer(mail: &str) -> bool {
    mail.contains("Sent by plinth at http://127.0.0.1:") && mail.contains("ignore this email")
}

/// Spec part 1, Notes 7: `email` for a new account, verify-resend and verify with an
/// expired code; `email_reset_password` for reset-password; the platform's footer on each.
#[tokio::test]
async fn org_templates_dress_the_mails_the_spec_names_under_the_platform_footer() {
    let s = Server::start().await;
    let (org, _) = branded(&s, "tpl").await;
    let addr = email("tpl-user");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": org}),
        )
        .await;
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    let first = s.wait_for_email(&addr, "/verify?code=").await;
    assert!(dressed_by(&first, &org) && has_footer(&first), "{first}");
    assert!(first.contains("Welcome to Brand. Confirm here:"));

    let r = s
        .post(
            "/api/users/verify-resend",
            Some(&key),
            json!({"email": addr, "source": org}),
        )
        .await;
    assert_eq!(r.body["emailed"], json!(true));
    let resent = new_mail(&s, &addr, "/verify?code=", std::slice::from_ref(&first)).await;
    assert!(dressed_by(&resent, &org) && has_footer(&resent), "{resent}");

    s.sql("UPDATE user_codes SET expires_at = '2000-01-01T00:00:00Z'")
        .await;
    let r = s
        .post("/api/users/verify", None, json!({"code": code_in(&resent)}))
        .await;
    assert_eq!(r.body["expired"], json!(true), "{}", r.body);
    let fresh = new_mail(&s, &addr, "/verify?code=", &[first.clone(), resent.clone()]).await;
    assert!(dressed_by(&fresh, &org) && has_footer(&fresh), "{fresh}");

    s.post(
        "/api/users/reset-password",
        None,
        json!({"email": addr, "source": org}),
    )
    .await
    .assert_ok();
    let reset = s.wait_for_email(&addr, "/reset-password?code=").await;
    assert!(
        dressed_by(&reset, &org) && reset.contains("Subject: Brand reset"),
        "{reset}"
    );
    assert!(reset.contains("If you did not ask for a password reset, ignore this email"));

    // The platform's own mail has the footer too, naming no organization.
    let plain = email("tpl-plain");
    s.signup(&plain).await;
    let mail = s.wait_for_email(&plain, "/verify?code=").await;
    assert!(
        has_footer(&mail) && !mail.contains("on behalf of"),
        "{mail}"
    );
}

/// Template mail is limited per organization: past the hourly budget the platform's own
/// words go instead (the mail itself still goes).
#[tokio::test]
async fn template_mail_is_rate_limited_per_organization() {
    let s =
        Server::start_with(Options::default().env("PLINTH_ORG_TEMPLATE_MAILS_PER_HOUR", "2")).await;
    let (org, _) = branded(&s, "budget").await;
    let mut dressed = 0;
    for i in 0..3 {
        let addr = email(&format!("budget{i}"));
        s.post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw", "source": org}),
        )
        .await
        .assert_ok();
        let mail = s.wait_for_email(&addr, "/verify?code=").await;
        assert!(has_footer(&mail), "{mail}");
        if dressed_by(&mail, &org) {
            dressed += 1;
        } else {
            assert!(
                mail.contains("From: plinth <noreply@plinth.localhost>"),
                "{mail}"
            );
        }
    }
    assert_eq!(dressed, 2);
}

/// N-M1: a pre-registrant's organization dresses the sign-up mail it asked for (spec),
/// but once the owner confirms through an attempt not made with that `source` (or
/// through a reset) it no longer dresses the owner's mail.
#[tokio::test]
async fn n_m1_a_pre_registrants_source_dresses_nothing_once_the_owner_confirms() {
    let s = Server::start().await;
    let (evil, _) = branded(&s, "nm1").await;
    let reset_with = |addr: String| {
        let (s, evil) = (&s, evil.clone());
        async move {
            let seen = s.emails_to(&addr);
            s.post(
                "/api/users/reset-password",
                None,
                json!({"email": addr, "source": evil}),
            )
            .await
            .assert_ok();
            new_mail(s, &addr, "/reset-password?code=", &seen).await
        }
    };
    for how in ["sign-up", "reset"] {
        let dave = email(&format!("nm1-{how}"));
        s.post(
            "/api/users/authenticate",
            None,
            json!({"email": dave, "password": "mallory pw", "source": evil}),
        )
        .await
        .assert_ok();
        let mail = s.wait_for_email(&dave, "/verify?code=").await;
        assert!(dressed_by(&mail, &evil), "{mail}");
        if how == "sign-up" {
            sign_in(&s, &dave, "dave pw").await.assert_error(401);
            let mine = new_mail(&s, &dave, "/verify?code=", &[mail]).await;
            assert!(!mine.contains("on behalf of"), "{mine}");
            s.post("/api/users/verify", None, json!({"code": code_in(&mine)}))
                .await
                .assert_ok();
        } else {
            s.post("/api/users/reset-password", None, json!({"email": dave}))
                .await
                .assert_ok();
            let reset = s.wait_for_email(&dave, "/reset-password?code=").await;
            s.post(
                "/api/users/verify",
                None,
                json!({"code": code_in(&reset), "password": "dave pw"}),
            )
            .await
            .assert_ok();
        }
        let mail = reset_with(dave.clone()).await;
        assert!(
            !mail.contains("URGENT") && !mail.contains("on behalf of"),
            "{how}: {mail}"
        );
        sign_in(&s, &dave, "dave pw").await.assert_ok();
        sign_in(&s, &dave, "mallory pw").await.assert_error(401);
    }
}

/// N-L5: pre-registering an address with an exempt `source` never silences its owner's
/// reset or sign-up mail, and the tag goes when the owner confirms.
#[tokio::test]
async fn n_l5_an_exempt_pre_registration_never_silences_the_owner() {
    let s =
        Server::start_with(Options::default().env("PLINTH_EXEMPT_DOMAINS", "quiet.example")).await;
    let erin = email("nl5");
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": erin, "password": "mallory pw", "source": "quiet.example"}),
        )
        .await;
    assert_eq!(r.body["emailed"], json!(false));
    s.post("/api/users/reset-password", None, json!({"email": erin}))
        .await
        .assert_ok();
    s.wait_for_email(&erin, "/reset-password?code=").await;
    let r = sign_in(&s, &erin, "erin pw").await;
    r.assert_error(401);
    assert_eq!(r.body["emailed"], json!(true));
    let mine = s.wait_for_email(&erin, "/verify?code=").await;
    let r = s
        .post("/api/users/verify", None, json!({"code": code_in(&mine)}))
        .await;
    r.assert_ok();
    assert!(
        r.body["user"]["data"].get("exemptions").is_none(),
        "{}",
        r.body
    );
    let before = s.emails_to(&erin);
    s.post("/api/users/reset-password", None, json!({"email": erin}))
        .await
        .assert_ok();
    new_mail(&s, &erin, "/reset-password?code=", &before).await;
    sign_in(&s, &erin, "erin pw").await.assert_ok();
}

/// N-L3: the account pages run their own inline script only, named by its sha256.
#[tokio::test]
async fn n_l3_account_pages_allow_only_their_own_script_by_hash() {
    use base64::Engine;
    use sha2::Digest;
    let s = Server::start().await;
    for page in ["/verify?code=00", "/reset-password", "/sign-in"] {
        let r = s.raw(reqwest::Method::GET, page).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(r.headers()["cache-control"], "no-store");
        let html = r.text().await.unwrap();
        let open = html.find("<script>").unwrap() + "<script>".len();
        let script = &html[open..open + html[open..].find("</script>").unwrap()];
        let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script));
        let script_src = csp
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .unwrap();
        assert_eq!(
            script_src.trim(),
            format!("script-src 'sha256-{hash}'"),
            "{page}: {csp}"
        );
        assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    }
}

/// A client bound to a loopback alias: another "client address" for the server.
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(Some(ip.parse::<IpAddr>().unwrap()))
        .build()
        .unwrap()
}

async fn guess_from(s: &Server, ip: &str, addr: &str, password: &str) -> Resp {
    let res = client_from(ip)
        .post(format!("{}/api/users/authenticate", s.base))
        .json(&json!({"email": addr, "password": password}))
        .send()
        .await
        .unwrap();
    Server::read(res).await
}

/// N-M3: failed sign-ins are counted per target email whatever the address: five are
/// free, then each further attempt waits 1 s, 2 s, … (429 with `retry_after_ms`). The
/// owner is never locked out: the reset mail still arrives, and completing it signs in.
#[tokio::test]
async fn n_m3_guessing_one_account_from_many_addresses_is_throttled_not_locked() {
    let s = Server::start().await;
    let victim = email("nm3");
    s.verified_user(&victim).await;
    for i in 0..5 {
        let r = guess_from(&s, &format!("127.0.0.{}", i + 2), &victim, "guess").await;
        r.assert_error(401);
    }
    let r = guess_from(&s, "127.0.0.9", &victim, "guess").await;
    r.assert_error(429);
    let wait = r.body["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 1000, "{}", r.body);
    assert_eq!(
        r.header("retry-after").as_deref(),
        Some("1"),
        "the standard header too"
    );
    let message = r.body["message"].as_str().unwrap().to_owned();
    assert!(message.contains("reset-password") && message.contains("authenticate-interstitial"));
    // Even the right password waits: the answer tells nothing about the guess.
    let right = guess_from(&s, "127.0.0.10", &victim, "correct horse").await;
    right.assert_error(429);
    let strip = |v: &Value| v["message"].as_str().unwrap().replace(char::is_numeric, "");
    assert_eq!(strip(&right.body), strip(&r.body));
    // The delay grows: after the wait, one more failure means 2 s.
    tokio::time::sleep(Duration::from_millis(wait + 50)).await;
    guess_from(&s, "127.0.0.11", &victim, "guess")
        .await
        .assert_error(401);
    let r = guess_from(&s, "127.0.0.12", &victim, "guess").await;
    r.assert_error(429);
    assert!(
        r.body["retry_after_ms"].as_u64().unwrap() > 1000,
        "{}",
        r.body
    );

    // The owner's way in: a reset, completed at once, and the password signs in.
    s.post("/api/users/reset-password", None, json!({"email": victim}))
        .await
        .assert_ok();
    let mail = s.wait_for_email(&victim, "/reset-password?code=").await;
    s.post(
        "/api/users/verify",
        None,
        json!({"code": code_in(&mail), "password": "new pw"}),
    )
    .await
    .assert_ok();
    sign_in(&s, &victim, "new pw").await.assert_ok();
}

/// N-M2: what the server writes is its user's alone (data directory 0700, database,
/// outbox and backups 0600), and the email jobs in the queue tables hold no live link.
#[tokio::test]
async fn n_m2_secrets_at_rest_are_private_and_queued_links_are_sealed() {
    use std::os::unix::fs::PermissionsExt;
    let s = Server::start().await;
    let to = email("nm2");
    s.signup(&to).await;
    s.wait_for_email(&to, "?code=").await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = s.data_dir();
    assert_eq!(mode(&dir), 0o700, "the data directory");
    let mut files = vec![dir.join("master.key")];
    if crate::common::pg_admin_url().is_none() {
        files.push(dir.join("plinth.db"));
    }
    for f in std::fs::read_dir(dir.join("outbox")).unwrap() {
        files.push(f.unwrap().path());
    }
    for f in &files {
        assert_eq!(mode(f) & 0o077, 0, "{} is {:o}", f.display(), mode(f));
    }
    // The queued email's text is sealed: no `code=` in the queue tables.
    let (table, text) = if crate::common::pg_admin_url().is_some() {
        ("apalis.jobs", "convert_from(job, 'UTF8')")
    } else {
        ("Jobs", "CAST(job AS TEXT)")
    };
    let jobs = s.sql_count(&format!("SELECT COUNT(*) FROM {table}")).await;
    assert!(jobs >= 1);
    let open = s
        .sql_count(&format!(
            "SELECT COUNT(*) FROM {table} WHERE {text} LIKE '%code=%'"
        ))
        .await;
    assert_eq!(open, 0, "a queued email holds a live link in the clear");
    // A backup is created 0600.
    let backup = s.dir.path().join("backup.db");
    let out = s.cli(&["backup", backup.to_str().unwrap()]);
    if out.status.success() {
        assert_eq!(
            mode(&backup) & 0o077,
            0,
            "the backup is {:o}",
            mode(&backup)
        );
    } else {
        // PostgreSQL without pg_dump on this machine: the command says so.
        assert!(String::from_utf8_lossy(&out.stderr).contains("pg_dump"));
    }
}
