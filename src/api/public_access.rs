//! Team-preview public access: `/api/public-access/*` (part 2, "Post rules" 4).
//! Managed by verified accounts on a permanent admin domain (`PLINTH_ADMIN_DOMAINS`,
//! matched against the caller's email domain, which is also the only `source` they may
//! write as). Matching is exact and case-insensitive; subdomains need their own entry.

use axum::extract::State;
use serde::Deserialize;

use crate::db::public_access as store;
use crate::domain::posts::email_domain;
use crate::domain::validate::parse_domain;
use crate::http::auth::{Caller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::wire::public_access::{
    AccessAdded, AccessDomain, AccessDomains, AccessRemoved, AccessStatus,
};
use crate::wire::True;

/// The caller's permanent admin domain, or 403.
fn admin_domain(app: &AppState, caller: &Caller) -> Result<String, ApiError> {
    let domain = email_domain(caller);
    if caller.user.verified && app.admin_domains.contains(&domain) {
        Ok(domain)
    } else {
        Err(ApiError::forbidden(
            "this requires a verified account on a permanent admin domain",
        ))
    }
}

/// `POST /api/public-access/list`: permanent admin domains and granted partner domains.
pub async fn list(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<AccessDomains>> {
    admin_domain(&app, &caller)?;
    let mut data: Vec<_> = app
        .admin_domains
        .iter()
        .map(|d| AccessDomain {
            domain: d.clone(),
            permanent: true,
            added_by: None,
            created_at: None,
        })
        .collect();
    for g in store::list(&app.db).await? {
        if !app.admin_domains.contains(&g.domain) {
            data.push(AccessDomain {
                domain: g.domain,
                permanent: false,
                added_by: Some(g.added_by),
                created_at: Some(g.created_at),
            });
        }
    }
    Ok(Answer(AccessDomains { data }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DomainBody {
    domain: String,
    source: String,
}

fn check_source(own: &str, source: &str) -> Result<(), ApiError> {
    if source.trim().to_lowercase() != own {
        return Err(ApiError::forbidden(format!(
            "`source` must be your own domain ({own})"
        )));
    }
    Ok(())
}

/// `POST /api/public-access/add-domain`: grants sign-up and team-preview access.
pub async fn add_domain(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<DomainBody>,
) -> ApiResult<Answer<AccessAdded>> {
    let own = admin_domain(&app, &caller)?;
    check_source(&own, &body.source)?;
    let domain = parse_domain(&body.domain)?;
    let added = if app.admin_domains.contains(&domain) {
        false
    } else {
        store::add(&app.db, &domain, &caller.id).await?
    };
    Ok(Answer(AccessAdded {
        success: True,
        domain,
        added,
    }))
}

/// `POST /api/public-access/remove-domain`: permanent admin domains cannot be removed.
pub async fn remove_domain(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<DomainBody>,
) -> ApiResult<Answer<AccessRemoved>> {
    let own = admin_domain(&app, &caller)?;
    check_source(&own, &body.source)?;
    let domain = parse_domain(&body.domain)?;
    if app.admin_domains.contains(&domain) {
        return Err(ApiError::forbidden(
            "permanent admin domains cannot be removed",
        ));
    }
    if !store::remove(&app.db, &domain).await? {
        return Err(ApiError::not_found("that domain has no access"));
    }
    Ok(Answer(AccessRemoved {
        success: True,
        domain,
    }))
}

/// `POST /api/public-access/status` (Key): always about the caller (a body email is
/// ignored). `accepted`: the caller's email domain is granted or a permanent admin
/// domain; `canPreviewTeamPosts`: accepted and verified.
pub async fn status(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<AccessStatus>> {
    let domain = email_domain(&caller);
    let accepted = app.admin_domains.contains(&domain) || store::contains(&app.db, &domain).await?;
    Ok(Answer(AccessStatus {
        accepted,
        can_preview_team_posts: accepted && caller.user.verified,
        domain,
    }))
}
