//! Users: sign-in and sign-up, one-time codes (verification, reset, sign-in links), the
//! profile, keys, wallets, deletion, and the viewer's likes and organizations.
//! Identity-provider sign-in and token exchange are in `identity.rs`; office applications
//! in `office.rs`.

use axum::extract::{Query, State};
use chrono::Utc;
use serde::Deserialize;
use serde_json::Value;

use crate::adapters::mail::{Dress, Kind};
use crate::crypto;
use crate::db::users as store;
use crate::domain::accounts::{parse_email, parse_source, parse_username, Asker, Attempt};
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::ClientAddr;
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::{prebuild, Answer, Prebuilt};
use crate::http::request::{Limit, NonBlank, Offset};
use crate::state::AppState;
use crate::wire::users::{
    CodeDetails, CodeUsed, KeyRegenerated, LinkEmailed, PublicProfile, PublicUser, ResetRequested,
    SignUpAttempt, SignUpRejected, SignedIn, User, UserAnswer, UserDeleted, UserList, UserSaved,
    UsersBySource, VerificationResent, VerificationState,
};
use crate::wire::{Acknowledged, True};

/// Fields of the account that the server manages; `update` refuses them in `updates`.
const SERVER_MANAGED: &[&str] = &[
    "hash",
    "key",
    "wallet_signature",
    "created_at",
    "updated_at",
    "deleted_at",
    "level",
    "email",
    "verified",
];

async fn check_password(password: String, hash: Option<String>) -> ApiResult<bool> {
    // Accounts made by identity-provider sign-in may have no password: check against a
    // dummy hash anyway, so the time taken does not tell them apart.
    static DUMMY: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| crypto::hash_password("no password set"));
    tokio::task::spawn_blocking(move || match hash {
        Some(h) => crypto::verify_password(&password, &h),
        None => {
            crypto::verify_password(&password, &DUMMY);
            false
        }
    })
    .await
    .map_err(ApiError::internal)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AuthenticateBody {
    #[schemars(email)]
    email: String,
    #[schemars(length(min = 1))]
    password: String,
    source: Option<String>,
}

/// `POST /api/users/authenticate`: signs in, or creates the account at level 0 and emails
/// the confirmation of this sign-up (unless the user is exempt). Password attempts are
/// limited per email as well as per address (`accounts::count_password_attempt`). A wrong
/// password on an account nobody confirmed yet is kept as another sign-up attempt and
/// mailed its own confirmation (401 with `emailed`): the owner of an address someone
/// else registered first can still claim it.
pub async fn authenticate(
    State(app): State<AppState>,
    ClientAddr(ip): ClientAddr,
    JsonBody(body): JsonBody<AuthenticateBody>,
) -> ApiResult<Answer<SignedIn>> {
    let email = parse_email(&body.email)?;
    if body.password.is_empty() {
        return Err(ApiError::bad_request("`password` must not be empty"));
    }
    let source = parse_source(body.source);
    let ip = ip.map(|i| i.to_string());
    let attempt = Attempt {
        password: &body.password,
        source: source.as_deref(),
        client_ip: ip.as_deref(),
    };
    app.domain.accounts.count_password_attempt(&email).await?;

    let Some(user) = store::by_email(&app.db, &email).await? else {
        app.domain.accounts.forget_failures(&email).await?;
        let (user, key, emailed) = app.domain.accounts.sign_up(&email, &attempt).await?;
        return Ok(Answer(SignedIn {
            user: User::of(&user, Some(&key)),
            existing: false,
            emailed,
        }));
    };
    if check_password(body.password.clone(), user.password_hash.clone()).await? {
        app.domain.accounts.forget_failures(&email).await?;
        let user = app
            .domain
            .accounts
            .apply_exemption(user, source.as_deref())
            .await?;
        let key = app.domain.accounts.user_key(&user)?;
        return Ok(Answer(SignedIn {
            user: User::of(&user, Some(&key)),
            existing: true,
            emailed: false,
        }));
    }
    if user.verified {
        return Err(ApiError::unauthorized("invalid email or password"));
    }
    let emailed = app.domain.accounts.another_sign_up(&user, &attempt).await?;
    let message = if emailed {
        "invalid email or password; the address is not confirmed yet, so a link that \
         confirms it with this password was emailed to it"
    } else {
        "invalid email or password"
    };
    Err(ApiError::unauthorized(message).with("emailed", emailed))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct InterstitialBody {
    #[schemars(email)]
    email: String,
    source: Option<String>,
}

/// `POST /api/users/authenticate-interstitial`: passwordless sign-in. Emails an existing
/// account a one-time link (`/sign-in?code=`, 15 minutes); `verify` with that code
/// answers the account and its key. Creates nothing; `emailed` says whether a link went.
pub async fn authenticate_interstitial(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<InterstitialBody>,
) -> ApiResult<Answer<LinkEmailed>> {
    let email = parse_email(&body.email)?;
    let source = parse_source(body.source);
    let dress = Dress::account(source.as_deref());
    let emailed = match store::by_email(&app.db, &email).await? {
        Some(user) => {
            app.domain
                .accounts
                .email_code(&user, Kind::SignIn, dress, Asker::Anyone, None)
                .await?
        }
        None => false,
    };
    Ok(Answer(LinkEmailed { emailed }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct VerifyBody {
    code: NonBlank,
    /// With a reset or verification code: the new password, set in the same step.
    #[schemars(length(min = 1))]
    password: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CodeBody {
    code: NonBlank,
}

/// A 404: a code names a pending verification, and there is none by that code (a 400
/// would say the request is malformed; it is well formed, and refers to nothing).
fn invalid_code() -> ApiError {
    ApiError::not_found("no verification is waiting for that code (wrong, or already used)")
}

/// The unused code (expired or not) and its hash; 404 otherwise.
async fn unused_code(app: &AppState, code: &str) -> ApiResult<(String, store::CodeRow)> {
    let code = code.trim();
    if code.is_empty() {
        return Err(ApiError::bad_request("`code` must not be empty"));
    }
    let hash = crypto::sha256_hex(code.as_bytes());
    let row = store::code(&app.db, &hash)
        .await?
        .filter(|r| r.used_at.is_none())
        .ok_or_else(invalid_code)?;
    Ok((hash, row))
}

/// `POST /api/users/verify`: spends a one-time code. A verification code confirms the
/// sign-up attempt that sent it (its password becomes the account's: the one chosen at
/// sign-up survives a click on its own link) and raises the account to VERIFIED (level
/// 10); a reset or sign-in code proves the same control of the email and answers the
/// key (a reset code may carry the new `password`). An expired verification code emails
/// a fresh one and answers 400 with `expired: true`.
pub async fn verify(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<VerifyBody>,
) -> ApiResult<Answer<CodeUsed>> {
    let (hash, row) = unused_code(&app, &body.code).await?;
    let new_password = match body.password {
        Some(_) if row.purpose == "signin" => {
            return Err(ApiError::bad_request(
                "`password` can only be set with a password-reset or verification code",
            ))
        }
        Some(p) if p.is_empty() => {
            return Err(ApiError::bad_request("`password` must not be empty"))
        }
        Some(p) => Some(
            tokio::task::spawn_blocking(move || crypto::hash_password(&p))
                .await
                .map_err(ApiError::internal)?,
        ),
        None => None,
    };
    if row.expires_at <= Utc::now() {
        return Err(expired(&app, &hash, &row).await?);
    }
    let (user, key) = app
        .domain
        .accounts
        .verify_with_code(&hash, new_password.as_deref())
        .await?
        .ok_or_else(invalid_code)?;
    Ok(Answer(CodeUsed {
        success: True,
        purpose: row.purpose,
        password_changed: new_password.is_some(),
        user: User::of(&user, Some(&key)),
    }))
}

/// The answer to an expired code, which is spent here so that it sends at most one
/// fresh email (L6): a verification code is sent again for the same attempt.
async fn expired(app: &AppState, hash: &str, row: &store::CodeRow) -> ApiResult<ApiError> {
    if !store::spend_code(&app.db, hash).await? {
        return Ok(invalid_code());
    }
    if row.purpose != "verify" {
        return Ok(ApiError::bad_request("code expired; ask for a new one").with("expired", true));
    }
    let user = store::by_id(&app.db, &row.user_id)
        .await?
        .ok_or_else(invalid_code)?;
    let attempt = match &row.attempt_id {
        Some(id) => store::attempt(&app.db, id).await?,
        None => None,
    };
    let emailed = match &attempt {
        Some(a) => {
            let kind = if a.opened_account {
                Kind::Verify
            } else {
                Kind::AnotherSignUp
            };
            let dress = Dress::sign_up(a.source.as_deref());
            app.domain
                .accounts
                .email_code(&user, kind, dress, Asker::Anyone, Some(&a.id))
                .await?
        }
        None => {
            let dress = Dress::account(user.source.as_deref());
            app.domain
                .accounts
                .email_code(&user, Kind::Verify, dress, Asker::Anyone, None)
                .await?
        }
    };
    Ok(ApiError::bad_request(if emailed {
        "verification code expired; a new code was emailed"
    } else {
        "verification code expired"
    })
    .with("expired", true)
    .with("emailed", emailed))
}

/// `POST /api/users/verify/details` (addition): what a code would do, without spending
/// it: its purpose, the account, and for a verification code the sign-up it confirms
/// (when, from which address, through which `source`), so that the confirmation page
/// can show them before the person confirms.
pub async fn verify_details(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<CodeBody>,
) -> ApiResult<Answer<CodeDetails>> {
    let (_, row) = unused_code(&app, &body.code).await?;
    let user = store::by_id(&app.db, &row.user_id)
        .await?
        .ok_or_else(invalid_code)?;
    let attempt = match &row.attempt_id {
        Some(id) => store::attempt(&app.db, id).await?,
        None => None,
    };
    Ok(Answer(CodeDetails {
        expired: row.expires_at <= Utc::now(),
        purpose: row.purpose,
        email: user.email,
        verified: user.verified,
        account_created_at: user.created_at,
        expires_at: row.expires_at,
        attempt: attempt.map(|a| SignUpAttempt {
            created_at: a.created_at,
            source: a.source,
            client_ip: a.client_ip,
            opened_account: a.opened_account,
        }),
    }))
}

/// `POST /api/users/verify/reject` (addition): "this wasn't me" with a verification
/// code. When the rejected sign-up created the account (nobody confirmed it yet), the
/// account and every key issued for it are deleted; a later attempt only loses its codes.
pub async fn verify_reject(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<CodeBody>,
) -> ApiResult<Answer<SignUpRejected>> {
    let (hash, row) = unused_code(&app, &body.code).await?;
    if row.purpose != "verify" {
        return Err(ApiError::bad_request(
            "only a sign-up confirmation can be rejected; ignore other links",
        ));
    }
    let attempt = match &row.attempt_id {
        Some(id) => store::attempt(&app.db, id).await?,
        None => None,
    };
    if let Some(a) = attempt.filter(|a| !a.opened_account) {
        if store::retire_attempt(&app.db, &a.id).await? == 0 {
            return Err(invalid_code());
        }
        return Ok(Answer(SignUpRejected {
            success: True,
            account_deleted: false,
        }));
    }
    if !store::spend_code(&app.db, &hash).await? {
        return Err(invalid_code());
    }
    let deleted = store::delete_unverified(&app.db, &row.user_id).await?;
    if !app.caches.announce(deleted).await {
        return Err(invalid_code());
    }
    Ok(Answer(SignUpRejected {
        success: True,
        account_deleted: true,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct EmailSourceBody {
    #[schemars(email)]
    email: String,
    source: Option<String>,
}

/// `POST /api/users/verify-resend`: a fresh confirmation of the sign-up that opened the
/// caller's own account (an admin may name any account). Already verified: nothing is
/// sent.
pub async fn verify_resend(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<EmailSourceBody>,
) -> ApiResult<Answer<VerificationResent>> {
    let email = parse_email(&body.email)?;
    let user = if email == caller.user.email {
        store::by_id(&app.db, &caller.id).await?
    } else if caller.is_admin() {
        store::by_email(&app.db, &email).await?
    } else {
        return Err(ApiError::forbidden(
            "you can only resend the verification of your own email",
        ));
    }
    .ok_or_else(|| ApiError::not_found("no account with that email"))?;
    if user.verified {
        return Ok(Answer(VerificationResent {
            emailed: false,
            verified: true,
        }));
    }
    let source = parse_source(body.source);
    let emailed = app
        .domain
        .accounts
        .resend_confirmation(&user, source.as_deref(), Asker::Holder)
        .await?;
    Ok(Answer(VerificationResent {
        emailed,
        verified: false,
    }))
}

/// `POST /api/users/reset-password`: emails a reset code (link ends in `?code=`). The
/// answer is the same whether or not the email has an account.
pub async fn reset_password(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<EmailSourceBody>,
) -> ApiResult<Answer<ResetRequested>> {
    let email = parse_email(&body.email)?;
    let source = parse_source(body.source);
    if let Some(user) = store::by_email(&app.db, &email).await? {
        let dress = Dress::account(source.as_deref());
        app.domain
            .accounts
            .email_code(&user, Kind::Reset, dress, Asker::Anyone, None)
            .await?;
    }
    Ok(Answer(ResetRequested {
        success: True,
        message: "if an account exists for that email, a reset link was sent".into(),
    }))
}

/// `POST /api/users/verify-check-by-id` (admin).
pub async fn verify_check_by_id(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<VerificationState>> {
    let user = store::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    Ok(Answer(VerificationState {
        id: user.id,
        verified: user.verified,
        level: user.level,
    }))
}

/// `GET /api/users/viewer`: the caller's own profile, key included.
pub async fn viewer(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Prebuilt<UserAnswer>> {
    if let Some(bytes) = caller.viewer_answer.get() {
        return Ok(Prebuilt::public(bytes.clone()));
    }
    let key = app.domain.accounts.user_key(&caller.user)?;
    let bytes = prebuild(&UserAnswer {
        user: User::of(&caller.user, Some(&key)),
    })
    .ok_or_else(|| ApiError::internal("a viewer answer that is not an object"))?;
    Ok(Prebuilt::public(
        caller.viewer_answer.get_or_init(|| bytes).clone(),
    ))
}

/// `POST /api/users/public/get-by-id`.
pub async fn public_get_by_id(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<PublicProfile>> {
    let user = store::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    Ok(Answer(PublicProfile {
        user: PublicUser::from(&user),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UsernameBody {
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9_.-]{3,32}\s*$"))]
    username: String,
}

/// `POST /api/users/public/get-by-username`.
pub async fn public_get_by_username(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<UsernameBody>,
) -> ApiResult<Answer<PublicProfile>> {
    let username = body.username.trim().to_lowercase();
    let user = store::by_username(&app.db, &username)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    Ok(Answer(PublicProfile {
        user: PublicUser::from(&user),
    }))
}

/// `POST /api/users/get-by-id` (admin): the full profile, without the key.
pub async fn get_by_id(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<UserAnswer>> {
    let user = store::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    Ok(Answer(UserAnswer {
        user: User::of(&user, None),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Page {
    #[serde(default)]
    limit: Limit<100, 1000>,
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/users` (admin): newest first; `limit` (default 100, max 1000), `offset`.
pub async fn list(
    State(app): State<AppState>,
    Query(page): Query<Page>,
) -> ApiResult<Answer<UserList>> {
    let (limit, offset) = (page.limit.get(), page.offset.get());
    let (users, total) = store::list(&app.db, limit, offset).await?;
    Ok(Answer(UserList {
        data: users.iter().map(|u| User::of(u, None)).collect(),
        total,
        limit,
        offset,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SourceQuery {
    /// The domain the accounts signed up through.
    #[schemars(required, length(min = 1), regex(pattern = r"\S"))]
    source: Option<String>,
}

/// `GET|POST /api/users/list-by-source` (admin): `source` from the query (the document's
/// GET) or the body (its POST, the spec's example). The query is read from the URI, not
/// a `Query` argument, so that the POST does not also document a query parameter.
pub async fn list_by_source(
    State(app): State<AppState>,
    uri: axum::http::Uri,
    JsonBody(body): JsonBody<SourceQuery>,
) -> ApiResult<Answer<UsersBySource>> {
    let query: Option<SourceQuery> = uri.query().and_then(|q| serde_urlencoded::from_str(q).ok());
    let source = parse_source(body.source.or(query.and_then(|q| q.source)))
        .ok_or_else(|| ApiError::bad_request("`source` is required"))?;
    let users = store::list_by_source(&app.db, &source).await?;
    Ok(Answer(UsersBySource {
        data: users.iter().map(|u| User::of(u, None)).collect(),
        source,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    #[schemars(with = "serde_json::Map<String, Value>")]
    updates: Value,
    #[serde(rename = "forcePush", default)]
    force_push: bool,
}

fn may_manage(caller: &Caller, id: &str) -> Result<(), ApiError> {
    if caller.id == id || caller.is_admin() {
        Ok(())
    } else {
        Err(ApiError::forbidden("you can only change your own account"))
    }
}

/// `POST /api/users/update`: shallow-merges `updates` into `data` (`forcePush: true`
/// replaces `data`). Server-managed fields are refused with 400; `exemptions` is ignored
/// and always preserved.
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Answer<UserSaved>> {
    may_manage(&caller, &body.id)?;
    let Value::Object(updates) = body.updates else {
        return Err(ApiError::bad_request("`updates` must be a JSON object"));
    };
    let refused: Vec<&str> = SERVER_MANAGED
        .iter()
        .copied()
        .filter(|k| updates.contains_key(*k))
        .collect();
    if !refused.is_empty() {
        return Err(ApiError::bad_request(format!(
            "server-managed fields cannot be updated: {}",
            refused.join(", ")
        )));
    }
    let user = store::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(|| ApiError::not_found("user not found"))?;
    let force = body.force_push;
    let user = app
        .domain
        .accounts
        .modify_data(user, |data| {
            let exemptions = data.get("exemptions").cloned();
            if force {
                data.clear();
            }
            for (k, v) in &updates {
                if k != "exemptions" {
                    data.insert(k.clone(), v.clone());
                }
            }
            match &exemptions {
                Some(e) => data.insert("exemptions".into(), e.clone()),
                None => data.remove("exemptions"),
            };
        })
        .await?;
    let key = if user.id == caller.id {
        Some(app.domain.accounts.user_key(&user)?)
    } else {
        None
    };
    Ok(Answer(UserSaved {
        success: True,
        user: User::of(&user, key.as_deref()),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PasswordBody {
    #[schemars(length(min = 1))]
    password: String,
}

/// `POST /api/users/update-viewer-password`.
pub async fn update_viewer_password(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<PasswordBody>,
) -> ApiResult<Answer<Acknowledged>> {
    if body.password.is_empty() {
        return Err(ApiError::bad_request("`password` must not be empty"));
    }
    let p = body.password;
    let hash = tokio::task::spawn_blocking(move || crypto::hash_password(&p))
        .await
        .map_err(ApiError::internal)?;
    store::set_password(&app.db, &caller.id, &hash).await?;
    Ok(Answer(Acknowledged { success: True }))
}

/// `POST /api/users/update-viewer-username`: 409 when taken.
pub async fn update_viewer_username(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<UsernameBody>,
) -> ApiResult<Answer<UserSaved>> {
    let username = parse_username(&body.username)?;
    let user = store::set_username(&app.db, &caller.id, &username).await?;
    let user = app.caches.announce(user).await;
    let key = app.domain.accounts.user_key(&user)?;
    Ok(Answer(UserSaved {
        success: True,
        user: User::of(&user, Some(&key)),
    }))
}

/// `POST /api/users/regenerate-key`: a fresh key; the old one stops working at once.
pub async fn regenerate_key(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<KeyRegenerated>> {
    let (key, hash, cipher) = app.domain.accounts.new_key();
    let user = store::set_key(&app.db, &caller.id, &hash, &cipher).await?;
    let user = app.caches.announce(user).await;
    Ok(Answer(KeyRegenerated {
        user: User::of(&user, Some(&key)),
        key,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct WalletBody {
    wallet_address: NonBlank<256>,
    /// Kept server-side as proof of ownership; never returned.
    wallet_signature: Option<String>,
}

/// `POST /api/users/sync-wallet`.
pub async fn sync_wallet(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<WalletBody>,
) -> ApiResult<Answer<UserSaved>> {
    let address = body.wallet_address.trim();
    if address.is_empty() || address.len() > 256 {
        return Err(ApiError::bad_request(
            "`wallet_address` must be 1 to 256 characters",
        ));
    }
    let user = store::set_wallet(
        &app.db,
        &caller.id,
        Some(address),
        body.wallet_signature.as_deref(),
    )
    .await?;
    let user = app.caches.announce(user).await;
    let key = app.domain.accounts.user_key(&user)?;
    Ok(Answer(UserSaved {
        success: True,
        user: User::of(&user, Some(&key)),
    }))
}

/// `POST /api/users/desync-wallet`.
pub async fn desync_wallet(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<UserSaved>> {
    let user = store::set_wallet(&app.db, &caller.id, None, None).await?;
    let user = app.caches.announce(user).await;
    let key = app.domain.accounts.user_key(&user)?;
    Ok(Answer(UserSaved {
        success: True,
        user: User::of(&user, Some(&key)),
    }))
}

/// `POST /api/users/delete`: the caller's own account (or any, for an admin), with all
/// its data.
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<UserDeleted>> {
    let id = body.id;
    may_manage(&caller, &id)?;
    let deletion = store::delete(&app.db, &id).await?;
    match app.caches.announce(deletion).await {
        store::Deletion::Deleted => {}
        store::Deletion::NotFound => return Err(ApiError::not_found("user not found")),
        store::Deletion::LastAdmin(domains) => {
            return Err(ApiError::conflict(format!(
                "the account is the last admin of {}: make another member admin (or delete \
                 the organization) first",
                domains.join(", ")
            ))
            .with("organizations", domains))
        }
    }
    Ok(Answer(UserDeleted { success: True, id }))
}

/// `GET /api/users/viewer/likes`.
pub async fn viewer_likes(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<crate::wire::Data<Vec<crate::wire::likes::Like>>>> {
    let likes = crate::db::likes::by_user(&app.db, &caller.id).await?;
    Ok(Answer(crate::wire::Data {
        data: likes.iter().map(Into::into).collect(),
    }))
}

/// `GET /api/users/viewer/organizations`: organizations with the caller's role.
pub async fn viewer_organizations(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<
    crate::http::reply::Answer<crate::wire::Data<Vec<crate::wire::organizations::Organization>>>,
> {
    let orgs = crate::db::organizations::memberships(&app.db, &caller.id).await?;
    Ok(crate::http::reply::Answer(crate::wire::Data {
        data: orgs.iter().map(Into::into).collect(),
    }))
}
