//! Sign-in through others: an OpenID Connect ID token from the identity provider
//! (`POST /api/users/authenticate-google-client`) and an encrypted grant from the
//! identity service at `PLINTH_AUTH_URL` (`POST /api/users/authenticate-token`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::State;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::json;

use crate::api::users::{self, apply_exemption, create_account, parse_email, parse_source};
use crate::crypto;
use crate::db::users as store;
use crate::domain::accounts::{self, Proof};
use crate::domain::grants;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::mail::{self, Kind};
use crate::reply::Reply;
use crate::state::AppState;

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

#[derive(Default)]
pub struct JwksCache(Mutex<Option<(Instant, JwkSet)>>);

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

async fn signing_keys(app: &AppState, kid: Option<&str>) -> Result<JwkSet, ApiError> {
    let known = |set: &JwkSet| kid.is_none_or(|k| set.find(k).is_some());
    if let Some(set) = app.jwks.cached(JWKS_TTL).filter(known) {
        return Ok(set);
    }
    // Unknown kid (keys rotate) or stale: refetch, but not more than once a minute.
    if let Some(set) = app.jwks.cached(JWKS_MIN_REFRESH) {
        return Ok(set);
    }
    let set = load_jwks(&app.opts.google_jwks).await.map_err(|e| {
        tracing::error!(error = %e, "identity-provider keys unavailable");
        ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "identity-provider keys are unavailable; try again later",
        )
    })?;
    app.jwks.store(set.clone());
    Ok(set)
}

#[derive(Debug, Deserialize)]
struct IdClaims {
    email: Option<String>,
    email_verified: Option<bool>,
    name: Option<String>,
    picture: Option<String>,
}

/// Verifies an ID token: signature against the configured JWKS, `iss`, `aud`, `exp`.
async fn verify_id_token(app: &AppState, token: &str) -> Result<IdClaims, ApiError> {
    let invalid = |why: &str| ApiError::unauthorized(format!("invalid ID token: {why}"));
    let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("malformed"))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(invalid("unsupported signature algorithm"));
    }
    let keys = signing_keys(app, header.kid.as_deref()).await?;
    let jwk = match &header.kid {
        Some(kid) => keys.find(kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or_else(|| invalid("unknown signing key"))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|_| invalid("unusable signing key"))?;
    let mut validation = Validation::new(header.alg);
    validation.set_audience(&app.opts.google_client_ids);
    validation.set_issuer(&app.opts.google_issuers);
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

#[derive(Deserialize)]
pub struct IdTokenBody {
    /// The ID token; `id_token`, `idToken` and `credential` are accepted as aliases.
    #[serde(alias = "id_token", alias = "idToken", alias = "credential")]
    token: String,
    source: Option<String>,
}

/// `POST /api/users/authenticate-google-client`: signs in (or creates, VERIFIED, with a
/// generated password emailed through the `email_send_password` template unless exempt)
/// the account of the token's verified email.
pub async fn authenticate_google_client(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdTokenBody>,
) -> ApiResult {
    if body.token.trim().is_empty() {
        return Err(ApiError::bad_request("`token` must not be empty"));
    }
    if app.opts.google_client_ids.is_empty() {
        return Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "identity-provider sign-in is not configured (PLINTH_GOOGLE_CLIENT_IDS)",
        ));
    }
    let claims = verify_id_token(&app, body.token.trim()).await?;
    // Only an email the provider vouches for proves the mailbox (finding L7): a missing
    // claim is refused like `false`.
    if claims.email_verified != Some(true) {
        return Err(ApiError::unauthorized(
            "the identity provider has not verified this email",
        ));
    }
    let email = parse_email(claims.email.as_deref().unwrap_or_default())
        .map_err(|_| ApiError::unauthorized("the ID token carries no usable email"))?;
    let source = parse_source(body.source);

    let (user, key, existing, emailed) = match store::by_email(&app.db, &email).await? {
        Some(user) => {
            let (user, key) = accounts::verify(&app, &user.id, Proof::Elsewhere).await?;
            let user = apply_exemption(&app, user, source.as_deref()).await?;
            (user, key, true, false)
        }
        None => {
            let password = crypto::new_code();
            let (user, key) =
                create_account(&app, &email, Some(&password), source.as_deref(), true).await?;
            let user = with_profile(&app, user, claims.name, claims.picture).await?;
            let emailed = if users::is_exempt(&user) {
                false
            } else {
                let msg = mail::compose(
                    &app,
                    source.as_deref(),
                    Kind::SendPassword,
                    &user,
                    &password,
                )
                .await;
                mail::send(&app, msg).await
            };
            (user, key, false, emailed)
        }
    };
    Ok(Reply::ok(json!({
        "user": user.to_json(Some(&key)),
        "existing": existing,
        "emailed": emailed,
    })))
}

/// Seeds `data.name` and `data.avatar_url` of a new account from the provider's claims.
async fn with_profile(
    app: &AppState,
    user: store::UserRow,
    name: Option<String>,
    picture: Option<String>,
) -> ApiResult<store::UserRow> {
    if name.is_none() && picture.is_none() {
        return Ok(user);
    }
    users::modify_data(app, user, |data| {
        if let Some(n) = &name {
            data.insert("name".into(), json!(n));
        }
        if let Some(p) = &picture {
            data.insert("avatar_url".into(), json!(p));
        }
    })
    .await
}

#[derive(Deserialize)]
pub struct TokenBody {
    token: String,
}

/// `POST /api/users/authenticate-token`: exchanges a grant from the identity service for
/// the account's API key (creating the account, VERIFIED, on first use). Grants are
/// authenticated, single-use and short-lived (`domain::grants`); without
/// `PLINTH_AUTH_TOKEN_KEY` this answers 503.
pub async fn authenticate_token(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<TokenBody>,
) -> ApiResult {
    let token = body.token.trim();
    if token.is_empty() || hex::decode(token).is_err() {
        return Err(ApiError::bad_request("`token` must be a hex string"));
    }
    let grant = grants::redeem(&app, token).await?;
    let email = parse_email(&grant.email).map_err(|_| ApiError::unauthorized("invalid token"))?;
    let source = parse_source(grant.source);
    let (user, api_key, existing) = match store::by_email(&app.db, &email).await? {
        Some(user) => {
            let (user, k) = accounts::verify(&app, &user.id, Proof::Elsewhere).await?;
            let user = apply_exemption(&app, user, source.as_deref()).await?;
            (user, k, true)
        }
        None => {
            let (user, k) = create_account(&app, &email, None, source.as_deref(), true).await?;
            (user, k, false)
        }
    };
    Ok(Reply::ok(json!({
        "key": api_key,
        "apiKey": api_key,
        "existing": existing,
        "user": user.to_json(Some(&api_key)),
    })))
}
