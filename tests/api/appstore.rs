//! The real App Store client (src/adapters/appstore.rs) against a stub of Apple's App Store Server API
//! run inside the test. The test makes a certificate chain shaped like Apple's (P-384 root
//! and intermediate signing with ecdsa-with-SHA384, a P-256 leaf, Apple's marker
//! extensions) and an App Store Connect P-256 key; the stub checks every bearer token
//! with that key's public half and serves transactions signed with the chain.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName,
    DnType, IsCa, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384,
};
use serde_json::{json, Value};

use crate::common::{email, Options, Server};

const BUNDLE: &str = "com.example.plinth";
const ISSUER: &str = "57246542-96fe-1a63-e053-0824d011072a";
const KID: &str = "2X9R4HXF34";
const PATH: &str = "/api/credits/verify-apple-transaction-distritbution";
/// Apple's marker extensions (OID arcs) of the WWDR intermediate and the signing leaf.
const INTERMEDIATE_MARKER: &[u64] = &[1, 2, 840, 113635, 100, 6, 2, 1];
const LEAF_MARKER: &[u64] = &[1, 2, 840, 113635, 100, 6, 11, 1];

fn marker(oid: &[u64]) -> CustomExtension {
    // Apple's markers carry an ASN.1 NULL.
    CustomExtension::from_oid_content(oid, vec![0x05, 0x00])
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.distinguished_name
        .push(DnType::OrganizationName, "Example Test PKI");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p
}

/// A root and a WWDR-like intermediate, both P-384.
struct Pki {
    root_der: Vec<u8>,
    root_pem: String,
    intermediate_der: Vec<u8>,
    intermediate: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate with its key: what signs transactions.
struct LeafSigner {
    x5c: Vec<String>,
    key: SigningKey,
}

struct LeafOptions {
    marker: bool,
    expired: bool,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let root_key = KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).unwrap();
        let root =
            CertifiedIssuer::self_signed(ca_params(&format!("{name} Root CA - G3")), root_key)
                .unwrap();
        let mut params = ca_params(&format!("{name} Worldwide Developer Relations CA - G6"));
        params.custom_extensions = vec![marker(INTERMEDIATE_MARKER)];
        let intermediate = CertifiedIssuer::signed_by(
            params,
            KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).unwrap(),
            &*root,
        )
        .unwrap();
        Pki {
            root_der: root.der().to_vec(),
            root_pem: root.pem(),
            intermediate_der: intermediate.der().to_vec(),
            intermediate,
        }
    }

    fn leaf(&self, opts: LeafOptions) -> LeafSigner {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = DistinguishedName::new();
        p.distinguished_name.push(
            DnType::CommonName,
            "Prod ECC Mac App Store and iTunes Store Receipt Signing",
        );
        if opts.marker {
            p.custom_extensions = vec![marker(LEAF_MARKER)];
        }
        if opts.expired {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let cert = p.signed_by(&key, &*self.intermediate).unwrap();
        LeafSigner {
            x5c: [cert.der().as_ref(), &self.intermediate_der, &self.root_der]
                .iter()
                .map(|d| STANDARD.encode(d))
                .collect(),
            key: SigningKey::from_pkcs8_der(&key.serialize_der()).unwrap(),
        }
    }

    fn good_leaf(&self) -> LeafSigner {
        self.leaf(LeafOptions {
            marker: true,
            expired: false,
        })
    }
}

impl LeafSigner {
    /// A compact JWS as the App Store signs transactions: ES256 with the chain in `x5c`.
    fn sign(&self, payload: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "x5c": self.x5c}).to_string());
        let body = URL_SAFE_NO_PAD.encode(payload.to_string());
        let input = format!("{header}.{body}");
        let sig: Signature = self.key.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
    }
}

/// A transaction payload in the App Store's format (JWSTransactionDecodedPayload).
fn transaction(id: &str, product: &str) -> Value {
    let now = chrono::Utc::now().timestamp_millis();
    json!({
        "transactionId": id,
        "originalTransactionId": id,
        "webOrderLineItemId": "0",
        "bundleId": BUNDLE,
        "productId": product,
        "purchaseDate": now - 60_000,
        "originalPurchaseDate": now - 60_000,
        "quantity": 1,
        "type": "Consumable",
        "inAppOwnershipType": "PURCHASED",
        "signedDate": now,
        "environment": "Sandbox",
        "transactionReason": "PURCHASE",
        "storefront": "USA",
        "storefrontId": "143441",
        "price": 990,
        "currency": "USD",
    })
}

/// The stub of `GET /inApps/v1/transactions/{transactionId}`.
struct Stub {
    api_key: VerifyingKey,
    transactions: HashMap<String, String>,
    /// Claims of every accepted bearer token.
    seen: Mutex<Vec<Value>>,
    /// Why bearer tokens were refused.
    refused: Mutex<Vec<String>>,
}

impl Stub {
    /// Checks a bearer token as Apple would: ES256 with the App Store Connect key, `kid`,
    /// `typ`, and the claims `iss`, `aud`, `bid`, `iat`, `exp` (at most 60 minutes).
    fn check_bearer(&self, headers: &HeaderMap) -> Result<Value, String> {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or("no bearer token")?;
        let parts: Vec<&str> = token.split('.').collect();
        let [h, c, s] = parts[..] else {
            return Err("not a JWT".into());
        };
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).unwrap()).unwrap();
        if header["alg"] != "ES256" || header["kid"] != KID || header["typ"] != "JWT" {
            return Err(format!("bad header {header}"));
        }
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        self.api_key
            .verify(format!("{h}.{c}").as_bytes(), &sig)
            .map_err(|_| "bad signature".to_owned())?;
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(c).unwrap()).unwrap();
        let now = chrono::Utc::now().timestamp();
        let (iat, exp) = (claims["iat"].as_i64(), claims["exp"].as_i64());
        let times_ok = matches!((iat, exp), (Some(i), Some(e))
            if i <= now + 5 && e > now && e > i && e - i <= 3600);
        if claims["iss"] != ISSUER
            || claims["aud"] != "appstoreconnect-v1"
            || claims["bid"] != BUNDLE
            || !times_ok
        {
            return Err(format!("bad claims {claims}"));
        }
        Ok(claims)
    }
}

async fn get_transaction(
    State(stub): State<Arc<Stub>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    match stub.check_bearer(&headers) {
        Ok(claims) => stub.seen.lock().unwrap().push(claims),
        Err(why) => {
            stub.refused.lock().unwrap().push(why);
            return (StatusCode::UNAUTHORIZED, Json(json!({})));
        }
    }
    match stub.transactions.get(&id) {
        Some(jws) => (StatusCode::OK, Json(json!({"signedTransactionInfo": jws}))),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"errorCode": 4040010, "errorMessage": "Transaction id not found."})),
        ),
    }
}

/// Serves the stub on 127.0.0.1; returns its base URL.
async fn serve_stub(stub: Arc<Stub>) -> String {
    let app = Router::new()
        .route("/inApps/v1/transactions/{id}", get(get_transaction))
        .with_state(stub);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// An App Store Connect API key: the signing key and its `.p8` PEM.
fn api_key() -> (SigningKey, String) {
    let key = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
    let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string();
    (key, pem)
}

fn apple_env(base: &str, dir: &std::path::Path, key_pem: &str, root: (&str, &[u8])) -> Options {
    let key_path = dir.join("AuthKey_2X9R4HXF34.p8");
    std::fs::write(&key_path, key_pem).unwrap();
    let root_path = dir.join(root.0);
    std::fs::write(&root_path, root.1).unwrap();
    Options::default()
        .env("PLINTH_APPLE_API_BASE", base)
        .env("PLINTH_APPLE_ISSUER_ID", ISSUER)
        .env("PLINTH_APPLE_KEY_ID", KID)
        .env("PLINTH_APPLE_PRIVATE_KEY", key_path.to_str().unwrap())
        .env("PLINTH_APPLE_BUNDLE_ID", BUNDLE)
        .env("PLINTH_APPLE_ROOT_CERT", root_path.to_str().unwrap())
}

async fn balance(s: &Server, key: &str) -> i64 {
    let r = s.get("/api/credits/balance", Some(key)).await;
    r.assert_ok();
    r.body["balance"].as_i64().unwrap()
}

fn message(r: &crate::common::Resp) -> String {
    r.body["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn app_store_credits_verified_purchases_once_and_refuses_the_rest() {
    let apple = Pki::new("Test Apple");
    let rogue = Pki::new("Rogue");
    let good = apple.good_leaf();
    let rogue_leaf = rogue.good_leaf();
    let mut tx = HashMap::new();
    let mut add = |id: &str, jws: String| {
        tx.insert(id.to_owned(), jws);
    };
    add(
        "1000000001",
        good.sign(&transaction("1000000001", "tokens_1000")),
    );
    // Signed by a chain that does not lead to the configured root.
    add(
        "1000000002",
        rogue_leaf.sign(&transaction("1000000002", "tokens_5000")),
    );
    let mut other_app = transaction("1000000003", "tokens_5000");
    other_app["bundleId"] = json!("com.example.other");
    add("1000000003", good.sign(&other_app));
    let mut revoked = transaction("1000000004", "tokens_5000");
    revoked["revocationDate"] = json!(chrono::Utc::now().timestamp_millis());
    revoked["revocationReason"] = json!(0);
    add("1000000004", good.sign(&revoked));
    add(
        "1000000005",
        good.sign(&transaction("1000000005", "tokens_9")),
    );
    // The signed answer of another transaction.
    add(
        "1000000006",
        good.sign(&transaction("1000000001", "tokens_1000")),
    );
    // The trusted root at the end of a chain whose intermediate it did not sign (an
    // impostor with the same names).
    let mut spliced = Pki::new("Test Apple").good_leaf();
    spliced.x5c[2] = STANDARD.encode(&apple.root_der);
    add(
        "1000000007",
        spliced.sign(&transaction("1000000007", "tokens_5000")),
    );
    // A payload changed after signing.
    let signed = good.sign(&transaction("1000000008", "tokens_100"));
    let parts: Vec<&str> = signed.split('.').collect();
    let forged_body = URL_SAFE_NO_PAD.encode(transaction("1000000008", "tokens_5000").to_string());
    add(
        "1000000008",
        format!("{}.{forged_body}.{}", parts[0], parts[2]),
    );
    let expired = apple.leaf(LeafOptions {
        marker: true,
        expired: true,
    });
    add(
        "1000000009",
        expired.sign(&transaction("1000000009", "tokens_5000")),
    );
    let unmarked = apple.leaf(LeafOptions {
        marker: false,
        expired: false,
    });
    add(
        "1000000010",
        unmarked.sign(&transaction("1000000010", "tokens_5000")),
    );
    let mut three = transaction("1000000011", "tokens_100");
    three["quantity"] = json!(3);
    add("1000000011", good.sign(&three));

    let (api_signing, api_pem) = api_key();
    let stub = Arc::new(Stub {
        api_key: *api_signing.verifying_key(),
        transactions: tx,
        seen: Mutex::new(vec![]),
        refused: Mutex::new(vec![]),
    });
    let base = serve_stub(stub.clone()).await;
    let files = tempfile::tempdir().unwrap();
    let s = Server::start_with(apple_env(
        &base,
        files.path(),
        &api_pem,
        ("AppleRootCA-G3.pem", apple.root_pem.as_bytes()),
    ))
    .await;
    let (key, _) = s.signup(&email("apple-buyer")).await;
    let (other, _) = s.signup(&email("apple-other")).await;

    let r = s
        .post(PATH, Some(&key), json!({"transactionId": "1000000001"}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["already_distributed"], json!(false));
    assert_eq!(r.body["product_id"], json!("tokens_1000"));
    assert_eq!(r.body["tokens"], json!(1000));
    assert_eq!(balance(&s, &key).await, 1000);
    // Once, ever.
    let r = s
        .post(PATH, Some(&key), json!({"transactionId": "1000000001"}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["already_distributed"], json!(true));
    assert_eq!(r.body["tokens"], json!(0));
    assert_eq!(balance(&s, &key).await, 1000);
    s.post(PATH, Some(&other), json!({"transactionId": "1000000001"}))
        .await
        .assert_error(409);

    // Unknown to the store (the stub answers 404), and ids that are not App Store ids:
    // a reference to nothing, 404.
    for id in ["1000000099", "sim-tokens_1000-1", "../../v1/x"] {
        let r = s.post(PATH, Some(&key), json!({"transactionId": id})).await;
        r.assert_error(404);
        assert!(message(&r).contains("does not know"), "{id}: {}", r.body);
    }

    for (id, why) in [
        ("1000000002", "trusted root"),
        ("1000000003", "another app"),
        ("1000000004", "revoked"),
        ("1000000006", "another transaction"),
        ("1000000007", "does not verify"),
        ("1000000008", "signature does not verify"),
        ("1000000009", "not valid now"),
        ("1000000010", "not an App Store signing certificate"),
    ] {
        let r = s.post(PATH, Some(&key), json!({"transactionId": id})).await;
        r.assert_error(400);
        assert!(message(&r).contains("refused"), "{id}: {}", r.body);
        assert!(message(&r).contains(why), "{id}: {}", r.body);
    }
    let r = s
        .post(PATH, Some(&key), json!({"transactionId": "1000000005"}))
        .await;
    r.assert_error(400);
    assert!(message(&r).contains("tokens_9"), "{}", r.body);
    assert_eq!(balance(&s, &key).await, 1000);
    assert_eq!(balance(&s, &other).await, 0);

    // A refused transaction was not claimed: nothing stops the right one later, and a
    // purchase of several units pays for each.
    let r = s
        .post(PATH, Some(&other), json!({"transactionId": "1000000011"}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["tokens"], json!(300));
    assert_eq!(balance(&s, &other).await, 300);
    let h = s.get("/api/credits", Some(&other)).await;
    assert_eq!(h.body["data"][0]["kind"], json!("store_purchase"));

    // Every request reached the stub with a correctly signed token.
    assert!(
        stub.refused.lock().unwrap().is_empty(),
        "{:?}",
        stub.refused
    );
    let seen = stub.seen.lock().unwrap();
    assert!(seen.len() >= 13, "{} requests", seen.len());
    assert!(seen
        .iter()
        .all(|c| c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap() <= 300));
}

#[tokio::test]
async fn app_store_credits_nothing_when_credentials_are_refused_or_the_store_is_down() {
    let apple = Pki::new("Test Apple");
    let good = apple.good_leaf();
    let (api_signing, api_pem) = api_key();
    let (_, wrong_pem) = api_key();
    let stub = Arc::new(Stub {
        api_key: *api_signing.verifying_key(),
        transactions: HashMap::from([(
            "2000000001".to_owned(),
            good.sign(&transaction("2000000001", "tokens_100")),
        )]),
        seen: Mutex::new(vec![]),
        refused: Mutex::new(vec![]),
    });
    let base = serve_stub(stub.clone()).await;
    let files = tempfile::tempdir().unwrap();
    // A key Apple does not know: 401 from the store, 502 from plinth.
    let opts = apple_env(
        &base,
        files.path(),
        &wrong_pem,
        ("AppleRootCA-G3.cer", &apple.root_der),
    );
    let mut s = Server::start_with(opts).await;
    let (key, _) = s.signup(&email("apple-creds")).await;
    let r = s
        .post(PATH, Some(&key), json!({"transactionId": "2000000001"}))
        .await;
    r.assert_error(502);
    assert!(
        message(&r).contains("store credentials refused"),
        "{}",
        r.body
    );
    assert_eq!(stub.refused.lock().unwrap().len(), 1);

    // The store unreachable: 503.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    s.set_env("PLINTH_APPLE_API_BASE", &closed_base);
    s.restart();
    let r = s
        .post(PATH, Some(&key), json!({"transactionId": "2000000001"}))
        .await;
    r.assert_error(503);
    assert_eq!(balance(&s, &key).await, 0);

    // The right key (and a DER root file): the purchase is credited.
    let key_path = files.path().join("AuthKey_2X9R4HXF34.p8");
    std::fs::write(&key_path, &api_pem).unwrap();
    s.set_env("PLINTH_APPLE_API_BASE", &base);
    s.restart();
    let r = s
        .post(PATH, Some(&key), json!({"transactionId": "2000000001"}))
        .await;
    r.assert_ok();
    assert_eq!(r.body["tokens"], json!(100));
    assert_eq!(balance(&s, &key).await, 100);
}

#[test]
fn app_store_credits_need_a_complete_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(crate::common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("PLINTH_DATABASE_URL")
        .env("PLINTH_APPLE_ISSUER_ID", ISSUER)
        .env("PLINTH_APPLE_BUNDLE_ID", BUNDLE)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for missing in [
        "PLINTH_APPLE_KEY_ID",
        "PLINTH_APPLE_PRIVATE_KEY",
        "PLINTH_APPLE_ROOT_CERT",
    ] {
        assert!(err.contains(missing), "{missing} not named: {err}");
    }
    assert!(err.contains("missing"), "{err}");
}
