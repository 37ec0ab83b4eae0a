//! The app store behind `POST /api/credits/verify-apple-transaction-distritbution`.
//! `Simulated` is the zero set-up default: no network, a transaction id
//! `sim-<product id>-<suffix>` is a purchase of that product. `AppStore` asks Apple's App
//! Store Server API (`GET /inApps/v1/transactions/{id}`, authorized by an ES256 token made
//! with the App Store Connect API key) and believes its answer only once the signed
//! transaction checks out: the `x5c` chain leads to a configured trusted root (Apple Root
//! CA - G3), every certificate is in its validity period and carries Apple's marker
//! extension, the JWS signature verifies with the leaf's key, and the payload names this
//! app's bundle id and the requested transaction and is not revoked.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use futures::future::BoxFuture;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sha2::{Digest, Sha256, Sha384};
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::{Decode, Encode};
use x509_cert::Certificate;

use crate::config::Payments;

/// Token products of the stores (`fixtures/store_products.json`): product id → tokens.
static STORE_PRODUCTS: LazyLock<HashMap<String, i64>> = LazyLock::new(|| {
    let all: HashMap<String, Value> =
        serde_json::from_str(include_str!("../../fixtures/store_products.json"))
            .expect("valid store_products.json");
    all.into_iter()
        .filter_map(|(k, v)| Some((k, v.as_i64()?)))
        .collect()
});

/// Tokens paid for one unit of a store product; `None` for a product not sold for tokens.
pub fn product_tokens(product_id: &str) -> Option<i64> {
    STORE_PRODUCTS.get(product_id).copied()
}

/// A purchase the store vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub transaction_id: String,
    pub product_id: String,
    /// Units bought in this transaction (a consumable may be bought several at once).
    pub quantity: i64,
}

#[derive(Debug)]
pub enum StoreError {
    /// The store does not know the transaction: 400.
    Unknown(String),
    /// The store's answer does not prove a purchase of this app: 400, nothing credited.
    Refused(String),
    /// The store refused plinth's own credentials: 502, an operator must act.
    Credentials(String),
    /// The store could not be reached or failed: 503, try again.
    Unavailable(String),
    /// No App Store is configured in this deployment: 503, an operator must act.
    NotConfigured,
}

pub type StoreResult<'a> = BoxFuture<'a, Result<Verified, StoreError>>;

/// What plinth needs from an app store: is this transaction a real purchase, and of what?
pub trait StoreVerifier: Send + Sync {
    fn name(&self) -> &'static str;
    fn verify<'a>(&'a self, transaction_id: &'a str) -> StoreResult<'a>;
}

fn unknown() -> StoreError {
    StoreError::Unknown("the store does not know that transaction".into())
}

pub struct Simulated;

impl StoreVerifier for Simulated {
    fn name(&self) -> &'static str {
        "simulated"
    }
    fn verify<'a>(&'a self, transaction_id: &'a str) -> StoreResult<'a> {
        Box::pin(async move {
            let rest = transaction_id.strip_prefix("sim-").ok_or_else(unknown)?;
            let (product, suffix) = rest.rsplit_once('-').ok_or_else(unknown)?;
            if product.is_empty() || suffix.is_empty() {
                return Err(unknown());
            }
            Ok(Verified {
                transaction_id: transaction_id.to_owned(),
                product_id: product.to_owned(),
                quantity: 1,
            })
        })
    }
}

/// The store of a deployment that configured a real payment provider but no App Store:
/// every transaction answers 503 (finding H2).
pub struct Unconfigured;

impl StoreVerifier for Unconfigured {
    fn name(&self) -> &'static str {
        "unconfigured"
    }
    fn verify<'a>(&'a self, _: &'a str) -> StoreResult<'a> {
        Box::pin(async { Err(StoreError::NotConfigured) })
    }
}

/// Whether any `PLINTH_APPLE_*` variable is set (a partial set is refused by `from_config`).
pub fn configured(config: &Payments) -> bool {
    config.apple_issuer_id.is_some()
        || config.apple_key_id.is_some()
        || config.apple_private_key.is_some()
        || config.apple_bundle_id.is_some()
        || config.apple_root_cert.is_some()
}

/// The store of the configuration: the App Store when `PLINTH_APPLE_*` are set; the
/// simulated one only when no real provider at all is configured (`simulated_ok`), else
/// an unconfigured store. A partial set is an error naming what is missing.
pub fn from_config(
    config: &Payments,
    simulated_ok: bool,
) -> anyhow::Result<Arc<dyn StoreVerifier>> {
    fn set(v: &Option<String>) -> Option<&str> {
        v.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
    fn set_path(v: &Option<std::path::PathBuf>) -> Option<&Path> {
        v.as_deref().filter(|p| !p.as_os_str().is_empty())
    }
    let issuer = set(&config.apple_issuer_id);
    let key_id = set(&config.apple_key_id);
    let key = set_path(&config.apple_private_key);
    let bundle = set(&config.apple_bundle_id);
    let root = set_path(&config.apple_root_cert);
    let named = [
        ("PLINTH_APPLE_ISSUER_ID", issuer.is_some()),
        ("PLINTH_APPLE_KEY_ID", key_id.is_some()),
        ("PLINTH_APPLE_PRIVATE_KEY", key.is_some()),
        ("PLINTH_APPLE_BUNDLE_ID", bundle.is_some()),
        ("PLINTH_APPLE_ROOT_CERT", root.is_some()),
    ];
    if named.iter().all(|(_, present)| !present) {
        return Ok(if simulated_ok {
            Arc::new(Simulated)
        } else {
            Arc::new(Unconfigured)
        });
    }
    let missing: Vec<&str> = named
        .iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| *name)
        .collect();
    let (Some(issuer), Some(key_id), Some(key), Some(bundle), Some(root)) =
        (issuer, key_id, key, bundle, root)
    else {
        anyhow::bail!(
            "the App Store client is partly configured: {} missing (set all of {} for the real \
             App Store, or none for the simulated store; PLINTH_APPLE_ROOT_CERT is Apple Root \
             CA - G3 from https://www.apple.com/certificateauthority/)",
            missing.join(", "),
            named.map(|n| n.0).join(", "),
        );
    };
    let key_pem = std::fs::read_to_string(key)
        .with_context(|| format!("PLINTH_APPLE_PRIVATE_KEY: reading {}", key.display()))?;
    let roots = std::fs::read(root)
        .with_context(|| format!("PLINTH_APPLE_ROOT_CERT: reading {}", root.display()))?;
    let store = AppStore::new(AppStoreConfig {
        base: &config.apple_api_base,
        issuer_id: issuer,
        key_id,
        private_key_pem: &key_pem,
        bundle_id: bundle,
        roots: &roots,
    })?;
    tracing::info!(base = %store.base, bundle = %store.bundle_id, "App Store client configured");
    Ok(Arc::new(store))
}

pub struct AppStoreConfig<'a> {
    pub base: &'a str,
    pub issuer_id: &'a str,
    pub key_id: &'a str,
    /// The App Store Connect API key (.p8): PKCS#8 PEM of a P-256 key.
    pub private_key_pem: &'a str,
    pub bundle_id: &'a str,
    /// PEM (one or more certificates) or DER of the trusted roots.
    pub roots: &'a [u8],
}

/// Apple's App Store Server API.
pub struct AppStore {
    base: String,
    issuer_id: String,
    key_id: String,
    bundle_id: String,
    key: EncodingKey,
    roots: Vec<Vec<u8>>,
    http: reqwest::Client,
}

/// Lifetime of the request tokens (Apple accepts at most 60 minutes).
const TOKEN_LIFETIME_SECS: i64 = 300;

impl AppStore {
    pub fn new(cfg: AppStoreConfig<'_>) -> anyhow::Result<Self> {
        use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
        let secret = p256::SecretKey::from_pkcs8_pem(cfg.private_key_pem).map_err(|e| {
            anyhow::anyhow!("PLINTH_APPLE_PRIVATE_KEY is not a PKCS#8 PEM P-256 key (.p8): {e}")
        })?;
        let der = secret
            .to_pkcs8_der()
            .map_err(|e| anyhow::anyhow!("PLINTH_APPLE_PRIVATE_KEY: {e}"))?;
        let roots = parse_roots(cfg.roots).context("PLINTH_APPLE_ROOT_CERT")?;
        let store = Self {
            base: cfg.base.trim().trim_end_matches('/').to_owned(),
            issuer_id: cfg.issuer_id.to_owned(),
            key_id: cfg.key_id.to_owned(),
            bundle_id: cfg.bundle_id.to_owned(),
            key: EncodingKey::from_ec_der(der.as_bytes()),
            roots,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .context("building the App Store HTTP client")?,
        };
        if !store.base.starts_with("http://") && !store.base.starts_with("https://") {
            anyhow::bail!("PLINTH_APPLE_API_BASE must be an http(s) URL");
        }
        store
            .token()
            .map_err(|e| anyhow::anyhow!("PLINTH_APPLE_PRIVATE_KEY cannot sign: {e}"))?;
        Ok(store)
    }

    /// The bearer token of one request: ES256, `kid` the key id, 5 minutes.
    fn token(&self) -> Result<String, jsonwebtoken::errors::Error> {
        let now = chrono::Utc::now().timestamp();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        header.typ = Some("JWT".into());
        let claims = json!({
            "iss": self.issuer_id,
            "iat": now,
            "exp": now + TOKEN_LIFETIME_SECS,
            "aud": "appstoreconnect-v1",
            "bid": self.bundle_id,
        });
        jsonwebtoken::encode(&header, &claims, &self.key)
    }

    async fn fetch(&self, transaction_id: &str) -> Result<String, StoreError> {
        let token = self
            .token()
            .map_err(|e| StoreError::Unavailable(format!("signing the request token: {e}")))?;
        let res = self
            .http
            .get(format!(
                "{}/inApps/v1/transactions/{transaction_id}",
                self.base
            ))
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(format!("app store: {e}")))?;
        let status = res.status();
        let body: Value = res.json().await.unwrap_or(Value::Null);
        let said = || {
            let code = &body["errorCode"];
            let msg = body["errorMessage"].as_str().unwrap_or("");
            format!("app store {status}: {code} {msg}")
        };
        match status.as_u16() {
            200 => body["signedTransactionInfo"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| {
                    StoreError::Unavailable(
                        "app store: answer without signedTransactionInfo".into(),
                    )
                }),
            // 404: no such transaction; 400: an id the store cannot parse (4000006).
            404 | 400 => {
                tracing::info!(answer = %said(), "app store does not know a transaction");
                Err(unknown())
            }
            401 | 403 => Err(StoreError::Credentials(said())),
            _ => Err(StoreError::Unavailable(said())),
        }
    }
}

impl StoreVerifier for AppStore {
    fn name(&self) -> &'static str {
        "app_store"
    }
    fn verify<'a>(&'a self, transaction_id: &'a str) -> StoreResult<'a> {
        Box::pin(async move {
            // App Store transaction ids are decimal numbers; nothing else goes into the URL.
            if transaction_id.is_empty()
                || transaction_id.len() > 64
                || !transaction_id.bytes().all(|b| b.is_ascii_alphanumeric())
            {
                return Err(unknown());
            }
            let jws = self.fetch(transaction_id).await?;
            let payload = verify_signed_data(&jws, &self.roots, SystemTime::now())
                .map_err(StoreError::Refused)?;
            check_transaction(&payload, transaction_id, &self.bundle_id)
        })
    }
}

/// The payload of a verified signed transaction, held against the request.
fn check_transaction(
    payload: &Value,
    transaction_id: &str,
    bundle_id: &str,
) -> Result<Verified, StoreError> {
    let refused = |m: &str| Err(StoreError::Refused(m.to_owned()));
    if payload["bundleId"].as_str() != Some(bundle_id) {
        return refused("it is a purchase in another app (bundleId)");
    }
    if payload["transactionId"].as_str() != Some(transaction_id) {
        return refused("the store answered with another transaction");
    }
    if !payload["revocationDate"].is_null() {
        return refused("the purchase was refunded or revoked");
    }
    let Some(product) = payload["productId"].as_str().filter(|p| !p.is_empty()) else {
        return refused("the transaction names no product");
    };
    let quantity = match &payload["quantity"] {
        Value::Null => 1,
        q => match q.as_i64() {
            Some(n @ 1..=1000) => n,
            _ => return refused("the transaction has an invalid quantity"),
        },
    };
    Ok(Verified {
        transaction_id: transaction_id.to_owned(),
        product_id: product.to_owned(),
        quantity,
    })
}

/// The DER of each certificate of a PEM file (one or more `CERTIFICATE` blocks) or of a
/// DER file, as the file holds them (the x5c root is compared byte for byte).
fn parse_roots(bytes: &[u8]) -> anyhow::Result<Vec<Vec<u8>>> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut roots = Vec::new();
    match std::str::from_utf8(bytes) {
        Ok(text) if text.contains("-----BEGIN") => {
            let mut rest = text;
            while let Some(start) = rest.find(BEGIN) {
                let end = rest[start..]
                    .find(END)
                    .map(|e| start + e + END.len())
                    .ok_or_else(|| anyhow::anyhow!("unterminated PEM certificate"))?;
                let (label, der) = x509_cert::der::pem::decode_vec(&rest.as_bytes()[start..end])
                    .map_err(|e| anyhow::anyhow!("bad PEM: {e}"))?;
                anyhow::ensure!(label == "CERTIFICATE", "unexpected PEM label {label}");
                roots.push(der);
                rest = &rest[end..];
            }
        }
        _ => roots.push(bytes.to_vec()),
    }
    anyhow::ensure!(!roots.is_empty(), "no certificate in the file");
    for der in &roots {
        Certificate::from_der(der).map_err(|e| anyhow::anyhow!("not an X.509 certificate: {e}"))?;
    }
    Ok(roots)
}

const ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_WITH_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const SECP256R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const SECP384R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const BASIC_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.19");
/// Marks Apple's App Store signing (leaf) certificates.
pub const APPLE_LEAF_OID: &str = "1.2.840.113635.100.6.11.1";
/// Marks Apple's Worldwide Developer Relations intermediate CAs.
pub const APPLE_INTERMEDIATE_OID: &str = "1.2.840.113635.100.6.2.1";

enum EcKey {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
}

impl EcKey {
    fn of(cert: &Certificate) -> Result<Self, String> {
        let spki = &cert.tbs_certificate.subject_public_key_info;
        if spki.algorithm.oid != EC_PUBLIC_KEY {
            return Err("a certificate key is not an elliptic-curve key".into());
        }
        let curve: ObjectIdentifier = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as().ok())
            .ok_or("a certificate key names no curve")?;
        let point = spki
            .subject_public_key
            .as_bytes()
            .ok_or("a certificate key is malformed")?;
        let bad = |_| "a certificate key is malformed".to_owned();
        match curve {
            SECP256R1 => Ok(Self::P256(
                p256::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?,
            )),
            SECP384R1 => Ok(Self::P384(
                p384::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?,
            )),
            other => Err(format!("unsupported curve {other}")),
        }
    }

    /// A DER ECDSA signature over a SHA-2 digest (of either length, on either curve).
    fn verify_prehash_der(&self, digest: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        match self {
            Self::P256(k) => p256::ecdsa::Signature::from_der(signature)
                .is_ok_and(|s| k.verify_prehash(digest, &s).is_ok()),
            Self::P384(k) => p384::ecdsa::Signature::from_der(signature)
                .is_ok_and(|s| k.verify_prehash(digest, &s).is_ok()),
        }
    }

    /// A JWS signature (`r || s`) of `alg` over `message`.
    fn verify_jws(&self, alg: &str, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier;
        match (self, alg) {
            (Self::P256(k), "ES256") => p256::ecdsa::Signature::from_slice(signature)
                .is_ok_and(|s| k.verify(message, &s).is_ok()),
            (Self::P384(k), "ES384") => p384::ecdsa::Signature::from_slice(signature)
                .is_ok_and(|s| k.verify(message, &s).is_ok()),
            _ => false,
        }
    }
}

fn has_extension(cert: &Certificate, oid: ObjectIdentifier) -> bool {
    cert.tbs_certificate
        .extensions
        .iter()
        .flatten()
        .any(|e| e.extn_id == oid)
}

fn is_ca(cert: &Certificate) -> bool {
    cert.tbs_certificate
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == BASIC_CONSTRAINTS)
        .and_then(|e| {
            x509_cert::ext::pkix::BasicConstraints::from_der(e.extn_value.as_bytes()).ok()
        })
        .is_some_and(|bc| bc.ca)
}

/// `cert` was signed by `issuer`'s key (ecdsa-with-SHA256 or -SHA384).
fn issued_by(cert: &Certificate, issuer: &Certificate, what: &str) -> Result<(), String> {
    if cert.tbs_certificate.issuer != issuer.tbs_certificate.subject {
        return Err(format!(
            "the {what} certificate's issuer is not the next certificate of the chain"
        ));
    }
    let tbs = cert
        .tbs_certificate
        .to_der()
        .map_err(|e| format!("the {what} certificate cannot be encoded: {e}"))?;
    let digest = match cert.signature_algorithm.oid {
        ECDSA_WITH_SHA256 => Sha256::digest(&tbs).to_vec(),
        ECDSA_WITH_SHA384 => Sha384::digest(&tbs).to_vec(),
        other => {
            return Err(format!(
                "the {what} certificate has an unsupported signature algorithm {other}"
            ))
        }
    };
    let signature = cert
        .signature
        .as_bytes()
        .ok_or_else(|| format!("the {what} certificate's signature is malformed"))?;
    if !EcKey::of(issuer)?.verify_prehash_der(&digest, signature) {
        return Err(format!(
            "the {what} certificate's signature does not verify with its issuer's key"
        ));
    }
    Ok(())
}

fn in_validity(cert: &Certificate, now: SystemTime, what: &str) -> Result<(), String> {
    let v = &cert.tbs_certificate.validity;
    if now < v.not_before.to_system_time() || now > v.not_after.to_system_time() {
        return Err(format!(
            "the {what} certificate is not valid now (valid {} to {})",
            v.not_before, v.not_after
        ));
    }
    Ok(())
}

/// Checks an App Store signed-data JWS (compact, `alg` ES256 with a 3-certificate `x5c`
/// of leaf, intermediate and root) and returns its payload. The root must be byte-equal
/// to one of `roots`; each certificate is signed by the next and valid at `now`; the
/// intermediate is a CA carrying Apple's WWDR marker, the leaf Apple's App Store signing
/// marker; the JWS signature verifies with the leaf's key.
pub fn verify_signed_data(jws: &str, roots: &[Vec<u8>], now: SystemTime) -> Result<Value, String> {
    let parts: Vec<&str> = jws.trim().split('.').collect();
    let [header_b64, payload_b64, signature_b64] = parts[..] else {
        return Err("the signed transaction is not a compact JWS".into());
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .map_err(|_| format!("the signed transaction's {what} is not base64url"))
    };
    let header: Value = serde_json::from_slice(&decode(header_b64, "header")?)
        .map_err(|_| "the signed transaction's header is not JSON".to_owned())?;
    let alg = header["alg"].as_str().unwrap_or("");
    if alg != "ES256" {
        return Err(format!(
            "the signed transaction's alg is `{alg}`, not ES256"
        ));
    }
    let x5c: Vec<Vec<u8>> = header["x5c"]
        .as_array()
        .ok_or("the signed transaction has no x5c certificate chain")?
        .iter()
        .map(|c| {
            c.as_str()
                .and_then(|s| STANDARD.decode(s).ok())
                .ok_or_else(|| "an x5c certificate is not base64".to_owned())
        })
        .collect::<Result<_, _>>()?;
    let [leaf_der, intermediate_der, root_der] = &x5c[..] else {
        return Err(format!(
            "the x5c chain has {} certificates, not 3 (leaf, intermediate, root)",
            x5c.len()
        ));
    };
    if !roots.iter().any(|r| r == root_der) {
        return Err(
            "the certificate chain does not end in a trusted root (PLINTH_APPLE_ROOT_CERT)".into(),
        );
    }
    let parse = |der: &[u8], what: &str| {
        Certificate::from_der(der).map_err(|_| format!("the {what} certificate is malformed"))
    };
    let leaf = parse(leaf_der, "leaf")?;
    let intermediate = parse(intermediate_der, "intermediate")?;
    let root = parse(root_der, "root")?;
    issued_by(&intermediate, &root, "intermediate")?;
    issued_by(&leaf, &intermediate, "leaf")?;
    for (cert, what) in [
        (&leaf, "leaf"),
        (&intermediate, "intermediate"),
        (&root, "root"),
    ] {
        in_validity(cert, now, what)?;
    }
    if !is_ca(&intermediate) {
        return Err("the intermediate certificate is not a CA".into());
    }
    if !has_extension(
        &intermediate,
        ObjectIdentifier::new_unwrap(APPLE_INTERMEDIATE_OID),
    ) {
        return Err("the intermediate certificate is not an Apple WWDR intermediate".into());
    }
    if !has_extension(&leaf, ObjectIdentifier::new_unwrap(APPLE_LEAF_OID)) {
        return Err("the leaf certificate is not an App Store signing certificate".into());
    }
    let signature = decode(signature_b64, "signature")?;
    let signed = format!("{header_b64}.{payload_b64}");
    if !EcKey::of(&leaf)?.verify_jws(alg, signed.as_bytes(), &signature) {
        return Err("the signed transaction's signature does not verify".into());
    }
    serde_json::from_slice(&decode(payload_b64, "payload")?)
        .map_err(|_| "the signed transaction's payload is not JSON".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(id: &str) -> Result<Verified, StoreError> {
        futures::executor::block_on(Simulated.verify(id))
    }

    #[test]
    fn simulated_transactions() {
        let v = sim("sim-tokens_1000-2000000123").unwrap();
        assert_eq!(v.product_id, "tokens_1000");
        assert_eq!(v.quantity, 1);
        assert!(matches!(sim("forged"), Err(StoreError::Unknown(_))));
        assert!(matches!(
            sim("sim-tokens_1000-"),
            Err(StoreError::Unknown(_))
        ));
        assert!(matches!(sim("sim--1"), Err(StoreError::Unknown(_))));
        assert_eq!(product_tokens("tokens_100"), Some(100));
        assert_eq!(product_tokens("_comment"), None);
    }

    #[test]
    fn payload_checks() {
        let ok =
            json!({"bundleId": "com.example.app", "transactionId": "7", "productId": "tokens_100"});
        assert_eq!(
            check_transaction(&ok, "7", "com.example.app")
                .unwrap()
                .product_id,
            "tokens_100"
        );
        assert!(check_transaction(&ok, "8", "com.example.app").is_err());
        assert!(check_transaction(&ok, "7", "com.example.other").is_err());
        let mut revoked = ok.clone();
        revoked["revocationDate"] = json!(1_700_000_000_000u64);
        assert!(check_transaction(&revoked, "7", "com.example.app").is_err());
        let mut three = ok.clone();
        three["quantity"] = json!(3);
        assert_eq!(
            check_transaction(&three, "7", "com.example.app")
                .unwrap()
                .quantity,
            3
        );
        three["quantity"] = json!(0);
        assert!(check_transaction(&three, "7", "com.example.app").is_err());
    }

    #[test]
    fn malformed_signed_data_is_refused() {
        let now = SystemTime::now();
        assert!(verify_signed_data("abc", &[], now).is_err());
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        assert!(verify_signed_data(&format!("{header}.e30."), &[], now)
            .unwrap_err()
            .contains("ES256"));
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","x5c":["AA=="]}"#);
        assert!(verify_signed_data(&format!("{header}.e30.AA"), &[], now)
            .unwrap_err()
            .contains("not 3"));
    }
}
