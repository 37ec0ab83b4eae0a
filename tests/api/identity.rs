//! Identity-provider sign-in (ID tokens checked against a JWKS the test generates) and
//! token exchange (grants encrypted with the configured key).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::ecdsa::SigningKey;
use p256::pkcs8::EncodePrivateKey;
use serde_json::{json, Value};

use crate::common::{email, Options, Server};

const CLIENT: &str = "client-123.apps.example";
const ISSUER: &str = "https://accounts.google.com";

struct Idp {
    key: EncodingKey,
    kid: String,
    jwks_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Idp {
    fn new() -> Idp {
        let signing = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let der = signing.to_pkcs8_der().unwrap();
        let point = signing.verifying_key().to_encoded_point(false);
        let kid = "test-key-1".to_owned();
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
            "y": URL_SAFE_NO_PAD.encode(point.y().unwrap()),
        }]});
        let dir = tempfile::tempdir().unwrap();
        let jwks_path = dir.path().join("jwks.json");
        std::fs::write(&jwks_path, jwks.to_string()).unwrap();
        Idp {
            key: EncodingKey::from_ec_der(der.as_bytes()),
            kid,
            jwks_path,
            _dir: dir,
        }
    }

    fn token(&self, claims: Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, &claims, &self.key).unwrap()
    }

    fn claims(&self, email: &str) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({"iss": ISSUER, "aud": CLIENT, "sub": "1234", "email": email,
               "email_verified": true, "name": "Ada L", "iat": now, "exp": now + 600})
    }

    async fn server(&self) -> Server {
        Server::start_with(
            Options::default()
                .env("PLINTH_GOOGLE_CLIENT_IDS", CLIENT)
                .env("PLINTH_GOOGLE_JWKS", self.jwks_path.to_str().unwrap())
                .env("PLINTH_EXEMPT_DOMAINS", "quiet.example"),
        )
        .await
    }
}

const PATH: &str = "/api/users/authenticate-google-client";

#[tokio::test]
async fn id_token_sign_in_creates_then_signs_in() {
    let idp = Idp::new();
    let s = idp.server().await;
    let addr = email("idp");
    let r = s
        .post(PATH, None, json!({"token": idp.token(idp.claims(&addr))}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(false));
    assert_eq!(r.body["emailed"], json!(true));
    assert_eq!(r.body["user"]["verified"], json!(true));
    assert_eq!(r.body["user"]["level"], json!(10));
    assert_eq!(r.body["user"]["data"]["name"], json!("Ada L"));
    let key = r.body["user"]["key"].as_str().unwrap().to_owned();
    // The generated password arrives by email and works for password sign-in.
    let mail = s.wait_for_email(&addr, "Your password").await;
    // The password is the line after the text (the platform's footer follows it).
    let lines: Vec<&str> = mail.lines().collect();
    let at = lines.iter().position(|l| l.contains("password:")).unwrap();
    let password = lines[at + 1..]
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap()
        .to_owned();
    let r2 = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": password}),
        )
        .await;
    r2.assert_ok();
    assert_eq!(r2.body["user"]["key"], json!(key));

    let again = s
        .post(
            PATH,
            None,
            json!({"id_token": idp.token(idp.claims(&addr))}),
        )
        .await;
    again.assert_ok();
    assert_eq!(again.body["existing"], json!(true));
    assert_eq!(again.body["user"]["key"], json!(key));
}

#[tokio::test]
async fn id_tokens_are_checked() {
    let idp = Idp::new();
    let s = idp.server().await;
    let addr = email("idp-bad");
    let mut c = idp.claims(&addr);
    c["aud"] = json!("someone-else");
    s.post(PATH, None, json!({"token": idp.token(c)}))
        .await
        .assert_error(401);
    let mut c = idp.claims(&addr);
    c["iss"] = json!("https://evil.example");
    s.post(PATH, None, json!({"token": idp.token(c)}))
        .await
        .assert_error(401);
    let mut c = idp.claims(&addr);
    c["exp"] = json!(chrono::Utc::now().timestamp() - 3600);
    let r = s.post(PATH, None, json!({"token": idp.token(c)})).await;
    r.assert_error(401);
    assert!(r.body["message"].as_str().unwrap().contains("expired"));
    let mut c = idp.claims(&addr);
    c["email_verified"] = json!(false);
    s.post(PATH, None, json!({"token": idp.token(c)}))
        .await
        .assert_error(401);
    // Signed by another key with the same kid.
    let stranger = Idp::new();
    s.post(
        PATH,
        None,
        json!({"token": stranger.token(idp.claims(&addr))}),
    )
    .await
    .assert_error(401);
    // Tampered payload.
    let t = idp.token(idp.claims(&addr));
    let mut parts: Vec<String> = t.split('.').map(str::to_owned).collect();
    parts[1] = URL_SAFE_NO_PAD.encode(idp.claims(&email("other")).to_string());
    s.post(PATH, None, json!({"token": parts.join(".")}))
        .await
        .assert_error(401);
    s.post(PATH, None, json!({"token": "garbage"}))
        .await
        .assert_error(401);
    s.post(PATH, None, json!({"token": ""}))
        .await
        .assert_error(400);
    s.post(PATH, None, json!({})).await.assert_error(400);
    // None of that created an account.
    let r = s
        .post(
            "/api/users/authenticate",
            None,
            json!({"email": addr, "password": "pw"}),
        )
        .await;
    assert_eq!(r.body["existing"], json!(false));
}

#[tokio::test]
async fn id_token_sign_up_on_an_exempt_domain_sends_no_password() {
    let idp = Idp::new();
    let s = idp.server().await;
    let addr = email("idp-quiet");
    let r = s
        .post(
            PATH,
            None,
            json!({"token": idp.token(idp.claims(&addr)), "source": "quiet.example"}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["emailed"], json!(false));
    assert_eq!(
        r.body["user"]["data"]["exemptions"],
        json!(["EXEMPT_ALL_EMAILS"])
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(s.emails_to(&addr).is_empty());
}

/// Spec part 1, Notes 7: `email_send_password` when identity-provider sign-in creates a
/// user with the organization's domain as `source`; the password is appended to the
/// text, and the platform's footer follows (issue 42).
#[tokio::test]
async fn id_token_sign_up_through_an_organization_gets_its_password_template() {
    let idp = Idp::new();
    let s = idp.server().await;
    let admin = s.verified_user(&email("idp-org-admin")).await;
    let (org, _) = s.organization(&admin, "idp").await;
    let t = json!({"from": format!("Org <hi@{org}>"), "subject": "Your Org password",
                   "text": "Welcome to Org. Your password:"});
    s.post(
        "/api/organizations/update",
        Some(&admin),
        json!({"domain": org, "data": {"email_send_password": t}}),
    )
    .await
    .assert_ok();
    let addr = email("idp-org");
    let r = s
        .post(
            PATH,
            None,
            json!({"token": idp.token(idp.claims(&addr)), "source": org}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["emailed"], json!(true));
    let mail = s.wait_for_email(&addr, "Your Org password").await;
    assert!(mail.contains(&format!("From: Org <hi@{org}>")), "{mail}");
    assert!(mail.contains(&format!("on behalf of the organization {org}")));
    let lines: Vec<&str> = mail.lines().collect();
    let at = lines.iter().position(|l| l.contains("password:")).unwrap();
    let password = lines[at + 1..]
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty());
    s.post(
        "/api/users/authenticate",
        None,
        json!({"email": addr, "password": password.unwrap()}),
    )
    .await
    .assert_ok();
}

#[tokio::test]
async fn unconfigured_identity_provider_is_a_404_that_says_so() {
    let s = Server::start().await;
    let r = s.post(PATH, None, json!({"token": "x.y.z"})).await;
    r.assert_error(404);
    assert_eq!(r.body["not_configured"], json!(true));
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("PLINTH_GOOGLE_CLIENT_IDS"));
}

const TOKEN_KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// A grant as the identity service seals it (docs/api.md, "Token exchange").
fn grant(g: Value) -> String {
    token_key().seal(g.to_string().as_bytes())
}

fn token_key() -> plinth::crypto::GrantKey {
    plinth::crypto::GrantKey::new(&plinth::crypto::MasterKey::from_hex(TOKEN_KEY).unwrap())
}

#[tokio::test]
async fn token_exchange_returns_the_api_key() {
    let s = Server::start_with(Options::default().env("PLINTH_AUTH_TOKEN_KEY", TOKEN_KEY)).await;
    let addr = email("grant");
    let exp = chrono::Utc::now().timestamp() + 300;
    let r = s
        .post(
            "/api/users/authenticate-token",
            None,
            json!({"token": grant(json!({"email": addr, "exp": exp}))}),
        )
        .await;
    r.assert_ok();
    assert_eq!(r.body["existing"], json!(false));
    let key = r.body["key"].as_str().unwrap().to_owned();
    let v = s.get("/api/users/viewer", Some(&key)).await;
    v.assert_ok();
    assert_eq!(v.body["user"]["email"], json!(addr));
    assert_eq!(v.body["user"]["verified"], json!(true));
    let r = s
        .post(
            "/api/users/authenticate-token",
            None,
            json!({"token": grant(json!({"email": addr, "exp": exp}))}),
        )
        .await;
    assert_eq!(r.body["existing"], json!(true));
    assert_eq!(r.body["key"], json!(key));

    let expired = grant(json!({"email": addr, "exp": exp - 3600}));
    let r = s
        .post(
            "/api/users/authenticate-token",
            None,
            json!({"token": expired}),
        )
        .await;
    r.assert_error(401);
    assert!(r.body["message"].as_str().unwrap().contains("expired"));
    s.post(
        "/api/users/authenticate-token",
        None,
        json!({"token": "zz-not-hex"}),
    )
    .await
    .assert_error(400);
    s.post(
        "/api/users/authenticate-token",
        None,
        json!({"token": "abcd"}),
    )
    .await
    .assert_error(401);
    // Sealed with another key: the tag does not verify.
    let foreign = plinth::crypto::GrantKey::new(&plinth::crypto::MasterKey::generate())
        .seal(json!({"email": addr, "exp": exp}).to_string().as_bytes());
    s.post(
        "/api/users/authenticate-token",
        None,
        json!({"token": foreign}),
    )
    .await
    .assert_error(401);
    let not_json = token_key().seal(b"hello");
    s.post(
        "/api/users/authenticate-token",
        None,
        json!({"token": not_json}),
    )
    .await
    .assert_error(401);
}
