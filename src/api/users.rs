//! Users: sign-in and sign-up, verification, the viewer's profile.

use axum::extract::State;
use chrono::Duration;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::Viewer;
use crate::crypto;
use crate::db::users::{self as store, NewUser, UserRow};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::mail;
use crate::reply::Reply;
use crate::state::AppState;

/// How long an emailed verification code stays valid.
pub const VERIFY_CODE_TTL_HOURS: i64 = 24;

pub const EXEMPT_ALL_EMAILS: &str = "EXEMPT_ALL_EMAILS";

#[derive(Deserialize)]
pub struct AuthenticateBody {
    email: String,
    password: String,
    source: Option<String>,
}

/// Normalises and checks an email address (400 on anything malformed).
pub fn parse_email(raw: &str) -> Result<String, ApiError> {
    let email = raw.trim().to_lowercase();
    if !email_address::EmailAddress::is_valid(&email) || !email.contains('.') {
        return Err(ApiError::bad_request(format!(
            "`{raw}` is not a valid email address"
        )));
    }
    Ok(email)
}

fn user_key(app: &AppState, user: &UserRow) -> Result<String, ApiError> {
    app.key
        .decrypt(&user.key_cipher)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| ApiError::internal("stored API key does not decrypt with the master key"))
}

fn is_exempt(user: &UserRow) -> bool {
    user.data
        .0
        .get("exemptions")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|t| t == EXEMPT_ALL_EMAILS))
}

/// `POST /api/users/authenticate`: signs in, or creates the account at level 0 and emails
/// a verification code (unless the user is exempt).
pub async fn authenticate(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<AuthenticateBody>,
) -> ApiResult {
    let email = parse_email(&body.email)?;
    if body.password.is_empty() {
        return Err(ApiError::bad_request("`password` must not be empty"));
    }
    let source = body
        .source
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty());
    let exempt_source = source
        .as_deref()
        .is_some_and(|s| app.exempt_domains.iter().any(|d| d == s));

    if let Some(user) = store::by_email(&app.db, &email).await? {
        let hash = user.password_hash.clone().unwrap_or_default();
        let password = body.password;
        let ok = tokio::task::spawn_blocking(move || crypto::verify_password(&password, &hash))
            .await
            .map_err(ApiError::internal)?;
        if !ok || user.deleted_at.is_some() {
            return Err(ApiError::unauthorized("invalid email or password"));
        }
        let key = user_key(&app, &user)?;
        return Ok(Reply::ok(json!({
            "user": user.to_json(Some(&key)),
            "existing": true,
            "emailed": false,
        })));
    }

    let key = crypto::new_api_key();
    let password = body.password;
    let password_hash = tokio::task::spawn_blocking(move || crypto::hash_password(&password))
        .await
        .map_err(ApiError::internal)?;
    let data = if exempt_source {
        json!({"exemptions": [EXEMPT_ALL_EMAILS]})
    } else {
        json!({})
    };
    let code = (!exempt_source).then(crypto::new_code);
    let code_hash = code.as_deref().map(|c| crypto::sha256_hex(c.as_bytes()));
    let expires = chrono::Utc::now() + Duration::hours(VERIFY_CODE_TTL_HOURS);
    let user = store::create(
        &app.db,
        NewUser {
            email: &email,
            key_hash: &crypto::sha256_hex(key.as_bytes()),
            key_cipher: &app.key.encrypt(key.as_bytes()),
            password_hash: Some(&password_hash),
            level: 0,
            verified: false,
            data,
            source: source.as_deref(),
        },
        code_hash.as_deref().map(|h| (h, "verify", expires)),
    )
    .await?;

    let emailed = match &code {
        Some(code) => mail::send(&app, mail::verification(&app, &user.email, code)).await,
        None => false,
    };
    Ok(Reply::ok(json!({
        "user": user.to_json(Some(&key)),
        "existing": false,
        "emailed": emailed,
    })))
}

#[derive(Deserialize)]
pub struct VerifyBody {
    code: String,
}

/// `POST /api/users/verify`: a valid code raises the account to VERIFIED (level 10).
/// An expired code emails a fresh one and answers 400 with `expired: true`.
pub async fn verify(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<VerifyBody>,
) -> ApiResult {
    let code = body.code.trim();
    if code.is_empty() {
        return Err(ApiError::bad_request("`code` must not be empty"));
    }
    let hash = crypto::sha256_hex(code.as_bytes());
    let row = store::code(&app.db, &hash)
        .await?
        .filter(|r| r.purpose == "verify" && r.used_at.is_none())
        .ok_or_else(|| ApiError::bad_request("invalid or already used verification code"))?;

    if row.expires_at <= chrono::Utc::now() {
        let user = store::by_id(&app.db, &row.user_id)
            .await?
            .ok_or_else(|| ApiError::bad_request("invalid or already used verification code"))?;
        let emailed = if is_exempt(&user) {
            false
        } else {
            let fresh = crypto::new_code();
            let expires = chrono::Utc::now() + Duration::hours(VERIFY_CODE_TTL_HOURS);
            store::add_code(
                &app.db,
                &user.id,
                &crypto::sha256_hex(fresh.as_bytes()),
                "verify",
                expires,
            )
            .await?;
            mail::send(&app, mail::verification(&app, &user.email, &fresh)).await
        };
        return Err(ApiError::bad_request(if emailed {
            "verification code expired; a new code was emailed"
        } else {
            "verification code expired"
        })
        .with("expired", true)
        .with("emailed", emailed));
    }

    let user = store::verify_with_code(&app.db, &hash)
        .await?
        .ok_or_else(|| ApiError::bad_request("invalid or already used verification code"))?;
    app.callers.invalidate_user(&user.id);
    let key = user_key(&app, &user)?;
    Ok(Reply::ok(json!({
        "success": true,
        "user": user.to_json(Some(&key)),
    })))
}

/// `GET /api/users/viewer`: the caller's own profile, key included.
pub async fn viewer(State(app): State<AppState>, Viewer(caller): Viewer) -> ApiResult {
    let key = user_key(&app, &caller.user)?;
    Ok(Reply::ok(
        json!({ "user": caller.user.to_json(Some(&key)) }),
    ))
}
