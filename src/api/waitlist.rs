//! Waitlist: `/api/waitlist/*`. An organization with `data.waitlist_support: true`
//! collects emails (`pending`); its managers accept them (creating or reusing a VERIFIED
//! account) or revoke them back to `pending`.

use std::sync::Arc;

use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::db::organizations::{self as orgs, OrgRow};
use crate::db::users as users_db;
use crate::db::waitlist::{self as store, Entry};
use crate::domain::accounts::{parse_email, AccountError};
use crate::http::auth::{Caller, OrgAdmin, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, NoFields};
use crate::http::reply::Answer;
use crate::http::request::{Limit, NonBlank, Offset};
use crate::state::AppState;
use crate::states::WaitlistStatus::{Accepted, Pending};
use crate::wire::waitlist::{
    WaitlistAccepted, WaitlistAcceptedAll, WaitlistEntry, WaitlistPage, WaitlistRevoked,
    WaitlistStanding,
};
use crate::wire::True;

pub const LIST_DEFAULT: i64 = 50;
pub const LIST_MAX: i64 = 200;

async fn org_by_domain(app: &AppState, domain: &str) -> ApiResult<OrgRow> {
    orgs::by_domain(&app.db, domain)
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))
}

/// The spec's rule: a verified user whose email ends in `@<domain>`, an admin of the
/// organization, or a platform admin.
async fn can_manage(app: &AppState, caller: &Caller, org: &OrgRow) -> ApiResult<bool> {
    if caller.is_admin()
        || (caller.user.verified && caller.user.email.ends_with(&format!("@{}", org.domain)))
    {
        return Ok(true);
    }
    Ok(orgs::role_of(&app.db, &org.id, &caller.id).await? == Some(crate::states::OrgRole::Admin))
}

async fn manager(app: &AppState, caller: &Arc<Caller>, domain: &str) -> ApiResult<OrgRow> {
    let org = org_by_domain(app, domain).await?;
    if !can_manage(app, caller, &org).await? {
        return Err(ApiError::forbidden(
            "managing this waitlist needs a verified account on the organization's email domain, an organization admin or a platform admin",
        ));
    }
    Ok(org)
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DomainEmail {
    domain: String,
    #[schemars(email)]
    email: String,
}

/// `POST /api/waitlist/add` (Public): 400 malformed email, 404 unknown organization,
/// 403 waitlist off; `{success: true}` for new and duplicate emails alike.
pub async fn add(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<DomainEmail>,
) -> ApiResult<Answer<crate::wire::Acknowledged>> {
    let email = parse_email(&body.email)?;
    let org = org_by_domain(&app, &body.domain).await?;
    if !org.waitlist_enabled() {
        return Err(ApiError::forbidden(
            "this organization's waitlist is not enabled",
        ));
    }
    store::add(&app.db, &org.id, &email).await?;
    Ok(Answer(crate::wire::Acknowledged { success: True }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListQuery {
    #[schemars(with = "NonBlank")]
    domain: Option<NonBlank>,
    /// 1 or more (default 50); more than 200 reads as 200.
    #[serde(default)]
    limit: Limit<LIST_DEFAULT, { i64::MAX }>,
    #[serde(default)]
    offset: Offset,
}

/// `GET /api/waitlist/list-by-domain`: newest first; `limit` default 50, at most 200
/// (larger values are clamped), `offset`.
pub async fn list_by_domain(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<ListQuery>,
) -> ApiResult<Answer<WaitlistPage>> {
    let domain = q
        .domain
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("query parameter `domain` is required"))?;
    let (limit, offset) = (q.limit.get().min(LIST_MAX), q.offset.get());
    let org = manager(&app, &caller, &domain).await?;
    let data = store::list(&app.db, &org.id, limit, offset).await?;
    Ok(Answer(WaitlistPage {
        data: data.into_iter().map(WaitlistEntry::from).collect(),
        limit,
        offset,
    }))
}

/// Creates the account of an accepted email (VERIFIED, with no password and a key no
/// one is shown: its owner gets in only by proving the mailbox, through a reset link or
/// an identity provider), or reuses the existing one AS IT IS. A manager's word never
/// verifies an existing account (finding C2): only its mailbox owner can.
/// Returns the account's exemption tags.
async fn admit(app: &AppState, org: &OrgRow, email: &str) -> ApiResult<Value> {
    let user = match users_db::by_email(&app.db, email).await? {
        Some(u) => u,
        // Its owner did not choose the organization: no email templates (security round
        // 2, L7).
        None => match app
            .domain
            .accounts
            .create_account_for(email, &org.domain)
            .await
        {
            Ok((u, _)) => u,
            // Created concurrently by another accept: reuse it.
            Err(AccountError::Db(e)) if crate::db::unique_violation(&e).is_some() => {
                users_db::by_email(&app.db, email)
                    .await?
                    .ok_or_else(|| ApiError::internal("account vanished after a conflict"))?
            }
            Err(e) => return Err(e.into()),
        },
    };
    Ok(user
        .data
        .0
        .get("exemptions")
        .cloned()
        .unwrap_or_else(|| json!([])))
}

async fn entry(app: &AppState, org: &OrgRow, email: &str) -> ApiResult<Entry> {
    store::get(&app.db, &org.id, email)
        .await?
        .ok_or_else(|| ApiError::not_found("no waitlist entry for that email"))
}

/// `POST /api/waitlist/accept-by-email`: pending → accepted, creating or reusing a
/// VERIFIED account; `already_accepted: true` on repeat.
pub async fn accept_by_email(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<DomainEmail>,
) -> ApiResult<Answer<WaitlistAccepted>> {
    let email = parse_email(&body.email)?;
    let org = manager(&app, &caller, &body.domain).await?;
    let current = entry(&app, &org, &email).await?;
    let exemptions = admit(&app, &org, &email).await?;
    let (entry, already) =
        match store::transition(&app.db, &org.id, &email, Pending, Accepted).await? {
            Some(e) => (e, None),
            None => (
                store::get(&app.db, &org.id, &email)
                    .await?
                    .unwrap_or(current),
                Some(True),
            ),
        };
    Ok(Answer(WaitlistAccepted {
        success: True,
        already_accepted: already,
        data: entry.into(),
        exemptions,
    }))
}

/// `POST /api/waitlist/revoke-by-email`: accepted → pending (the account is kept);
/// `already_pending: true` on repeat.
pub async fn revoke_by_email(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<DomainEmail>,
) -> ApiResult<Answer<WaitlistRevoked>> {
    let email = parse_email(&body.email)?;
    let org = manager(&app, &caller, &body.domain).await?;
    let current = entry(&app, &org, &email).await?;
    let (entry, already) =
        match store::transition(&app.db, &org.id, &email, Accepted, Pending).await? {
            Some(e) => (e, None),
            None => (current, Some(True)),
        };
    Ok(Answer(WaitlistRevoked {
        success: True,
        already_pending: already,
        data: entry.into(),
    }))
}

/// `POST /api/waitlist/accept-all` (OrgAdmin or Admin100): every pending entry.
pub async fn accept_all(
    State(app): State<AppState>,
    g: OrgAdmin<NoFields>,
) -> ApiResult<Answer<WaitlistAcceptedAll>> {
    let mut accepted = 0;
    for email in store::pending_emails(&app.db, &g.org.id).await? {
        admit(&app, &g.org, &email).await?;
        if store::transition(&app.db, &g.org.id, &email, Pending, Accepted)
            .await?
            .is_some()
        {
            accepted += 1;
        }
    }
    let total = store::count(&app.db, &g.org.id).await?;
    Ok(Answer(WaitlistAcceptedAll {
        success: True,
        accepted,
        total,
    }))
}

/// An email address, a blank string (read as none) or null: what `status` takes.
fn email_or_blank(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"anyOf": [
        {"type": "string", "format": "email"},
        {"type": "string", "pattern": "^\\s*$"},
        {"type": "null"}
    ]})
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StatusBody {
    domain: String,
    /// An address; blank or absent: the caller's own standing.
    #[serde(default)]
    #[schemars(schema_with = "email_or_blank")]
    email: Option<String>,
}

/// `POST /api/waitlist/status` (Key): the caller's own entry; `email` names another
/// entry only for those who may manage the waitlist (others always get their own).
pub async fn status(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<StatusBody>,
) -> ApiResult<Answer<WaitlistStanding>> {
    let org = org_by_domain(&app, &body.domain).await?;
    let mut subject = caller.user.email.clone();
    if let Some(raw) = body.email.filter(|e| !e.trim().is_empty()) {
        let email = parse_email(&raw)?;
        if email != subject && can_manage(&app, &caller, &org).await? {
            subject = email;
        }
    }
    let entry = store::get(&app.db, &org.id, &subject).await?;
    let accepted = entry.as_ref().is_some_and(|e| e.status == Accepted);
    Ok(Answer(WaitlistStanding {
        success: True,
        data: entry.map(WaitlistEntry::from),
        accepted,
    }))
}
