//! The identity provider's side of sign-in: its signing keys (fetched, cached, refetched
//! when a key id is unknown) and ID-token verification.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use crate::crypto::GrantKey;
use crate::db::Db;

/// Signature algorithms accepted for ID tokens (never `none` or a shared secret).
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// How long fetched signing keys are trusted before they are fetched again; an unknown
/// `kid` refetches sooner, at most once a minute.
const JWKS_TTL: Duration = Duration::from_secs(3600);
const JWKS_MIN_REFRESH: Duration = Duration::from_secs(60);

async fn load_jwks(source: &str) -> Result<JwkSet, String> {
    let text = if source.starts_with("http://") || source.starts_with("https://") {
        let res = reqwest::Client::new()
            .get(source)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| format!("fetching JWKS: {e}"))?;
        if !res.status().is_success() {
            return Err(format!("fetching JWKS: HTTP {}", res.status()));
        }
        res.text().await.map_err(|e| format!("reading JWKS: {e}"))?
    } else {
        tokio::fs::read_to_string(source)
            .await
            .map_err(|e| format!("reading JWKS file {source}: {e}"))?
    };
    serde_json::from_str(&text).map_err(|e| format!("parsing JWKS: {e}"))
}

/// Why an ID token is not taken.
#[derive(Debug, thiserror::Error)]
pub enum IdTokenError {
    /// The token is malformed, expired, for someone else or badly signed (a 401).
    #[error("invalid ID token: {0}")]
    Invalid(&'static str),
    /// The provider's keys could not be fetched (a 503; the cause is logged).
    #[error("identity-provider keys are unavailable; try again later")]
    KeysUnavailable(String),
}

#[derive(Debug, Deserialize)]
pub struct IdClaims {
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub name: Option<String>,
    pub picture: Option<String>,
}

/// Fetched signing keys with when they were fetched.
#[derive(Default)]
struct JwksCache(Mutex<Option<(Instant, JwkSet)>>);

impl JwksCache {
    fn cached(&self, max_age: Duration) -> Option<JwkSet> {
        let guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .as_ref()
            .filter(|(at, _)| at.elapsed() < max_age)
            .map(|(_, set)| set.clone())
    }

    fn store(&self, set: JwkSet) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), set));
    }
}

/// Sign-in through others: the identity provider's ID tokens (its signing keys as last
/// fetched, and what a token must name) and the token-exchange grants
/// (`crate::domain::grants`).
#[derive(Clone)]
pub struct Identity {
    db: Db,
    jwks: Arc<JwksCache>,
    /// Where the signing keys are read: an http(s) URL or a file.
    jwks_source: String,
    audiences: Vec<String>,
    issuers: Vec<String>,
    /// The grants' key; `None` disables the exchange (503). Never the master key.
    pub(super) auth_key: Option<GrantKey>,
}

/// What [`Identity`] is configured with (`PLINTH_GOOGLE_*`, `PLINTH_AUTH_TOKEN_KEY`).
pub struct IdentityConfig {
    pub jwks_source: String,
    pub audiences: Vec<String>,
    pub issuers: Vec<String>,
    pub auth_key: Option<GrantKey>,
}

impl Identity {
    pub fn new(db: Db, config: IdentityConfig) -> Self {
        Self {
            db,
            jwks: Default::default(),
            jwks_source: config.jwks_source,
            audiences: config.audiences,
            issuers: config.issuers,
            auth_key: config.auth_key,
        }
    }

    pub(super) fn db(&self) -> &Db {
        &self.db
    }

    async fn signing_keys(&self, kid: Option<&str>) -> Result<JwkSet, IdTokenError> {
        let known = |set: &JwkSet| kid.is_none_or(|k| set.find(k).is_some());
        if let Some(set) = self.jwks.cached(JWKS_TTL).filter(known) {
            return Ok(set);
        }
        // Unknown kid (keys rotate) or stale: refetch, but not more than once a minute.
        if let Some(set) = self.jwks.cached(JWKS_MIN_REFRESH) {
            return Ok(set);
        }
        let set = load_jwks(&self.jwks_source)
            .await
            .map_err(|e| IdTokenError::KeysUnavailable(format!("identity-provider keys: {e}")))?;
        self.jwks.store(set.clone());
        Ok(set)
    }

    /// Verifies an ID token: signature against the configured JWKS, `iss`, `aud`, `exp`.
    pub async fn verify_id_token(&self, token: &str) -> Result<IdClaims, IdTokenError> {
        let invalid = IdTokenError::Invalid;
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("malformed"))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(invalid("unsupported signature algorithm"));
        }
        let keys = self.signing_keys(header.kid.as_deref()).await?;
        let jwk = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }
        .ok_or_else(|| invalid("unknown signing key"))?;
        let key = DecodingKey::from_jwk(jwk).map_err(|_| invalid("unusable signing key"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_audience(&self.audiences);
        validation.set_issuer(&self.issuers);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = 30;
        let data = jsonwebtoken::decode::<IdClaims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            invalid(match e.kind() {
                K::ExpiredSignature => "expired",
                K::InvalidAudience => "wrong audience",
                K::InvalidIssuer => "wrong issuer",
                K::InvalidSignature => "bad signature",
                _ => "rejected",
            })
        })?;
        Ok(data.claims)
    }
}
