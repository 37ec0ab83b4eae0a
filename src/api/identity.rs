//! Sign-in through others: an OpenID Connect ID token from the identity provider
//! (`POST /api/users/authenticate-google-client`) and an encrypted grant from the
//! identity service at `PLINTH_AUTH_URL` (`POST /api/users/authenticate-token`).

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::adapters::mail::{self, Kind};
use crate::crypto;
use crate::db::users as store;
use crate::domain::accounts::{self, parse_email, parse_source};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::Answer;
use crate::http::request::NonBlank;
use crate::state::AppState;
use crate::wire::users::{SignedIn, TokenSignedIn, User};

#[derive(Deserialize, schemars::JsonSchema)]
pub struct IdTokenBody {
    /// The ID token; `id_token`, `idToken` and `credential` are accepted as aliases.
    #[serde(alias = "id_token", alias = "idToken", alias = "credential")]
    token: NonBlank,
    source: Option<String>,
}

/// `POST /api/users/authenticate-google-client`: signs in (or creates, VERIFIED, with a
/// generated password emailed through the `email_send_password` template unless exempt)
/// the account of the token's verified email.
pub async fn authenticate_google_client(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdTokenBody>,
) -> ApiResult<Answer<SignedIn>> {
    if body.token.trim().is_empty() {
        return Err(ApiError::bad_request("`token` must not be empty"));
    }
    if app.opts.accounts.google_client_ids.is_empty() {
        return Err(ApiError::not_offered(
            "identity-provider sign-in is not offered by this server (an operator enables it \
             with PLINTH_GOOGLE_CLIENT_IDS)",
        ));
    }
    let claims = app
        .domain
        .identity
        .verify_id_token(body.token.trim())
        .await?;
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
            let (user, key) = app
                .domain
                .accounts
                .sign_in_elsewhere(&user.id, source.as_deref())
                .await?;
            (user, key, true, false)
        }
        None => {
            let password = crypto::new_code();
            let (user, key) = app
                .domain
                .accounts
                .create_account(&email, Some(&password), source.as_deref(), true)
                .await?;
            let user = with_profile(&app, user, claims.name, claims.picture).await?;
            let emailed = if accounts::is_exempt(&user) {
                false
            } else {
                let msg = app
                    .domain
                    .mailer
                    .compose(
                        mail::Dress::account(source.as_deref()),
                        Kind::SendPassword,
                        &user,
                        &password,
                    )
                    .await;
                app.domain.mailer.send(msg).await
            };
            (user, key, false, emailed)
        }
    };
    Ok(Answer(SignedIn {
        user: User::of(&user, Some(&key)),
        existing,
        emailed,
    }))
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
    Ok(app
        .domain
        .accounts
        .modify_data(user, |data| {
            if let Some(n) = &name {
                data.insert("name".into(), json!(n));
            }
            if let Some(p) = &picture {
                data.insert("avatar_url".into(), json!(p));
            }
        })
        .await?)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TokenBody {
    #[schemars(regex(pattern = r"^\s*([0-9A-Fa-f]{2})+\s*$"))]
    token: String,
}

/// `POST /api/users/authenticate-token`: exchanges a grant from the identity service for
/// the account's API key (creating the account, VERIFIED, on first use). Grants are
/// authenticated, single-use and short-lived (`domain::grants`); without
/// `PLINTH_AUTH_TOKEN_KEY` this answers 503.
pub async fn authenticate_token(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<TokenBody>,
) -> ApiResult<Answer<TokenSignedIn>> {
    let token = body.token.trim();
    if token.is_empty() || hex::decode(token).is_err() {
        return Err(ApiError::bad_request("`token` must be a hex string"));
    }
    let grant = app.domain.identity.redeem(token).await?;
    let email = parse_email(&grant.email).map_err(|_| ApiError::unauthorized("invalid token"))?;
    let source = parse_source(grant.source);
    let (user, api_key, existing) = match store::by_email(&app.db, &email).await? {
        Some(user) => {
            let (user, k) = app
                .domain
                .accounts
                .sign_in_elsewhere(&user.id, source.as_deref())
                .await?;
            (user, k, true)
        }
        None => {
            let (user, k) = app
                .domain
                .accounts
                .create_account(&email, None, source.as_deref(), true)
                .await?;
            (user, k, false)
        }
    };
    Ok(Answer(TokenSignedIn {
        user: User::of(&user, Some(&api_key)),
        key: api_key.clone(),
        api_key,
        existing,
    }))
}
