//! Organizations: `/api/organizations*`.

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::organizations::{self as store, MemberChange, OrgRow};
use crate::domain::records;
use crate::domain::validate::parse_domain;
use crate::http::auth::{OrgAdmin, OrgMember, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody, NoFields};
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::states::OrgRole;
use crate::wire::organizations::{
    AutomaticMembership, OrgDeleted, OrgMember as MemberView, OrgMemberAdded, OrgMemberRemoved,
    OrgMembers, OrgRoleChanged, Organization, PublicAccessToggled, WaitlistToggled,
};
use crate::wire::{Data, Saved, True};

/// Keys of `data` whose values must be email templates (`{from, subject, text}`).
const TEMPLATE_KEYS: [&str; 3] = ["email", "email_reset_password", "email_send_password"];
/// Keys of `data` that must be booleans.
const FLAG_KEYS: [&str; 3] = [
    "waitlist_support",
    "inventory_private",
    "guest_checkout_enabled",
];

/// Checks the typed keys of an organization's `data`.
fn check_data(data: &Map<String, Value>) -> Result<(), ApiError> {
    for k in FLAG_KEYS {
        if let Some(v) = data.get(k) {
            if !v.is_boolean() && !v.is_null() {
                return Err(ApiError::bad_request(format!(
                    "`data.{k}` must be a boolean"
                )));
            }
        }
    }
    for k in TEMPLATE_KEYS {
        match data.get(k) {
            None | Some(Value::Null) => {}
            Some(Value::Object(t)) => {
                for (field, v) in t {
                    let Some(text) = v.as_str() else {
                        return Err(template_fields(k));
                    };
                    let (limit, one_line) = match field.as_str() {
                        "from" | "subject" => (MAX_TEMPLATE_LINE, true),
                        "text" => (MAX_TEMPLATE_TEXT, false),
                        _ => return Err(template_fields(k)),
                    };
                    // Every email sent from the template carries it: bounded here, once.
                    if text.len() > limit {
                        return Err(ApiError::bad_request(format!(
                            "`data.{k}.{field}` may hold at most {limit} bytes"
                        ))
                        .with("max_bytes", limit));
                    }
                    if one_line && text.contains(['\r', '\n']) {
                        return Err(ApiError::bad_request(format!(
                            "`data.{k}.{field}` must be one line"
                        )));
                    }
                }
            }
            Some(_) => {
                return Err(ApiError::bad_request(format!(
                    "`data.{k}` must be an object {{from, subject, text}}"
                )))
            }
        }
    }
    records::check_data(&Value::Object(data.clone()))?;
    Ok(())
}

fn template_fields(k: &str) -> ApiError {
    ApiError::bad_request(format!(
        "`data.{k}` is a template: string fields `from`, `subject`, `text`"
    ))
}

/// A template's `from` and `subject` (one header line each) and its `text`.
const MAX_TEMPLATE_LINE: usize = 200;
const MAX_TEMPLATE_TEXT: usize = 16 * 1024;
/// An organization's display name, in bytes.
const MAX_NAME: usize = 200;

/// A trimmed, non-empty name of at most [`MAX_NAME`] bytes.
fn parse_name(name: Option<&str>) -> ApiResult<Option<&str>> {
    let name = name.map(str::trim).filter(|n| !n.is_empty());
    if name.is_some_and(|n| n.len() > MAX_NAME) {
        return Err(
            ApiError::bad_request(format!("`name` may hold at most {MAX_NAME} bytes"))
                .with("max_bytes", MAX_NAME),
        );
    }
    Ok(name)
}

/// Shallow-merges `changes` into the organization's `data` with an optimistic version
/// check, retried on a concurrent write.
async fn merge_data(
    app: &AppState,
    mut org: OrgRow,
    name: Option<&str>,
    change: impl Fn(&mut Map<String, Value>),
) -> ApiResult<OrgRow> {
    for _ in 0..8 {
        let mut data = match &org.data.0 {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        change(&mut data);
        if let Some(o) =
            store::write_data(&app.db, &org.id, org.version, &Value::Object(data), name).await?
        {
            return Ok(o);
        }
        org = store::by_id(&app.db, &org.id)
            .await?
            .ok_or_else(|| ApiError::not_found("organization not found"))?;
    }
    Err(ApiError::conflict(
        "the organization is being updated concurrently; retry",
    ))
}

/// `GET /api/organizations` (V10): every organization (the spec: "lists all
/// organizations") with its id, domain, name and public flag; `data` and the caller's
/// `role` only for the caller's own organizations (all, for platform admins).
pub async fn list(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<Data<Vec<Organization>>>> {
    let orgs = store::list(&app.db, &caller.id, true).await?;
    let roles: std::collections::HashMap<String, OrgRole> = store::memberships(&app.db, &caller.id)
        .await?
        .into_iter()
        .map(|m| (m.org.id, m.role))
        .collect();
    let data: Vec<_> = orgs
        .iter()
        .map(|o| match roles.get(&o.id) {
            Some(role) => Organization::full(o, Some(*role)),
            None if caller.is_admin() => Organization::full(o, None),
            None => Organization::public(o),
        })
        .collect();
    Ok(Answer(Data { data }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    #[schemars(
        regex(
            pattern = r"^\s*([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?\s*$"
        ),
        length(max = 253)
    )]
    domain: String,
    name: Option<String>,
    data: Option<Map<String, Value>>,
}

/// `POST /api/organizations/create` (V10): the caller becomes its admin; 409 when the
/// domain is taken.
pub async fn create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<CreateBody>,
) -> ApiResult<Answer<Saved<Organization>>> {
    let domain = parse_domain(&body.domain)?;
    let data = body.data.unwrap_or_default();
    check_data(&data)?;
    let org = store::create(
        &app.db,
        &domain,
        parse_name(body.name.as_deref())?,
        &Value::Object(data),
        &caller.id,
    )
    .await?;
    Ok(Answer(Saved::new(Organization::full(
        &org,
        Some(OrgRole::Admin),
    ))))
}

/// `POST /api/organizations/get-by-id` (V10): private organizations only for members
/// and platform admins (404 otherwise, so existence cannot be probed).
pub async fn get_by_id(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Data<Organization>>> {
    let not_found = || ApiError::not_found("organization not found");
    let org = store::by_id(&app.db, &body.id)
        .await?
        .ok_or_else(not_found)?;
    let role = store::role_of(&app.db, &org.id, &caller.id).await?;
    if !org.is_public && role.is_none() && !caller.is_admin() {
        return Err(not_found());
    }
    Ok(Answer(Data {
        data: Organization::full(&org, role),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    data: Option<Map<String, Value>>,
    name: Option<String>,
}

/// `POST /api/organizations/update` (OrgAdmin): shallow-merges `data` (settings and
/// the email templates; `null` removes a key) and sets `name`.
pub async fn update(
    State(app): State<AppState>,
    g: OrgAdmin<UpdateBody>,
) -> ApiResult<Answer<Saved<Organization>>> {
    let changes = g.body.data.unwrap_or_default();
    let mut merged = g.org.data.0.as_object().cloned().unwrap_or_default();
    merged.extend(changes.clone());
    check_data(&merged)?;
    let name = parse_name(g.body.name.as_deref())?;
    let org = merge_data(&app, g.org, name, |data| {
        for (k, v) in &changes {
            if v.is_null() {
                data.remove(k);
            } else {
                data.insert(k.clone(), v.clone());
            }
        }
    })
    .await?;
    Ok(Answer(Saved::new(Organization::full(&org, None))))
}

/// `POST /api/organizations/delete` (OrgAdmin): the organization, its memberships and
/// its waitlist.
pub async fn delete(
    State(app): State<AppState>,
    g: OrgAdmin<NoFields>,
) -> ApiResult<Answer<OrgDeleted>> {
    store::delete(&app.db, &g.org.id).await?;
    Ok(Answer(OrgDeleted {
        success: True,
        id: g.org.id,
    }))
}

/// `POST /api/organizations/toggle-public-access` (OrgAdmin).
pub async fn toggle_public_access(
    State(app): State<AppState>,
    g: OrgAdmin<NoFields>,
) -> ApiResult<Answer<PublicAccessToggled>> {
    let org = store::toggle_public(&app.db, &g.org.id)
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))?;
    Ok(Answer(PublicAccessToggled {
        success: True,
        is_public: org.is_public,
        data: Organization::full(&org, None),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct WaitlistToggleBody {
    waitlist_support: Option<bool>,
}

/// `POST /api/organizations/waitlist-toggle` (OrgAdmin): an explicit boolean sets
/// `data.waitlist_support`, an omitted one flips it.
pub async fn waitlist_toggle(
    State(app): State<AppState>,
    g: OrgAdmin<WaitlistToggleBody>,
) -> ApiResult<Answer<WaitlistToggled>> {
    let explicit = g.body.waitlist_support;
    let org = merge_data(&app, g.org, None, |data| {
        let now = data.get("waitlist_support") == Some(&Value::Bool(true));
        data.insert(
            "waitlist_support".into(),
            Value::Bool(explicit.unwrap_or(!now)),
        );
    })
    .await?;
    Ok(Answer(WaitlistToggled {
        success: True,
        waitlist_support: org.waitlist_enabled(),
        data: Organization::full(&org, None),
    }))
}

/// `POST|GET /api/organizations/membership` (V10): the caller's memberships.
pub async fn membership(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<Data<Vec<Organization>>>> {
    let orgs = store::memberships(&app.db, &caller.id).await?;
    Ok(Answer(Data {
        data: orgs.iter().map(Organization::from).collect(),
    }))
}

/// `POST /api/organizations/membership/automatic` (V10): joins, as a member, the
/// organization whose domain is the caller's (verified) email domain.
pub async fn membership_automatic(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<Answer<AutomaticMembership>> {
    if !caller.user.verified {
        return Err(ApiError::forbidden("verify your email first"));
    }
    let email_domain = caller.user.email.rsplit('@').next().unwrap_or_default();
    let org = store::by_domain(&app.db, email_domain)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("no organization has the domain {email_domain}"))
        })?;
    let joined = store::add_member(&app.db, &org.id, &caller.id, OrgRole::Member, true).await?;
    let role = store::role_of(&app.db, &org.id, &caller.id).await?;
    Ok(Answer(AutomaticMembership {
        success: True,
        joined,
        data: Organization::full(&org, role),
    }))
}

/// `POST /api/organizations/users` (OrgMember): the members and their roles.
pub async fn users(
    State(app): State<AppState>,
    g: OrgMember<NoFields>,
) -> ApiResult<Answer<OrgMembers>> {
    let members = store::members(&app.db, &g.org.id).await?;
    Ok(Answer(OrgMembers {
        data: members.into_iter().map(MemberView::from).collect(),
        organization: Organization::full(&g.org, None),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddBody {
    #[schemars(email)]
    email: String,
}

/// `POST /api/organizations/users/add` (OrgAdmin): adds an existing account, by email,
/// as a member. Adding a member again changes nothing (`already_member: true`).
pub async fn users_add(
    State(app): State<AppState>,
    g: OrgAdmin<AddBody>,
) -> ApiResult<Answer<OrgMemberAdded>> {
    let email = crate::domain::accounts::parse_email(&g.body.email)?;
    let user = crate::db::users::by_email(&app.db, &email)
        .await?
        .ok_or_else(|| ApiError::not_found("no account with that email"))?;
    let added = store::add_member(&app.db, &g.org.id, &user.id, OrgRole::Member, false).await?;
    let members = store::members(&app.db, &g.org.id).await?;
    Ok(Answer(OrgMemberAdded {
        success: True,
        already_member: !added,
        user_id: user.id,
        members: members.into_iter().map(MemberView::from).collect(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct MemberBody {
    #[serde(rename = "userId", alias = "user_id")]
    user_id: String,
}

fn member_change_result(change: MemberChange) -> Result<(), ApiError> {
    match change {
        MemberChange::Done => Ok(()),
        MemberChange::NotMember => Err(ApiError::not_found("that user is not a member")),
        MemberChange::LastAdmin => Err(ApiError::conflict(
            "the organization's last admin cannot leave or be demoted: promote another member first, or delete the organization",
        )),
    }
}

/// `POST /api/organizations/users/remove` (OrgMember): an admin removes any member; a
/// member may only remove themself (leave). The last admin cannot go (409).
pub async fn users_remove(
    State(app): State<AppState>,
    g: OrgMember<MemberBody>,
) -> ApiResult<Answer<OrgMemberRemoved>> {
    let is_org_admin = g.role == Some(OrgRole::Admin) || g.caller.is_admin();
    if g.body.user_id != g.caller.id && !is_org_admin {
        return Err(ApiError::forbidden(
            "only an organization admin can remove other members",
        ));
    }
    member_change_result(store::change_member(&app.db, &g.org.id, &g.body.user_id, None).await?)?;
    Ok(Answer(OrgMemberRemoved {
        success: True,
        user_id: g.body.user_id,
    }))
}

/// `POST /api/organizations/users/promote` (OrgAdmin).
pub async fn users_promote(
    State(app): State<AppState>,
    g: OrgAdmin<MemberBody>,
) -> ApiResult<Answer<OrgRoleChanged>> {
    set_role(&app, g, OrgRole::Admin).await
}

/// `POST /api/organizations/users/demote` (OrgAdmin): not the last admin (409).
pub async fn users_demote(
    State(app): State<AppState>,
    g: OrgAdmin<MemberBody>,
) -> ApiResult<Answer<OrgRoleChanged>> {
    set_role(&app, g, OrgRole::Member).await
}

async fn set_role(
    app: &AppState,
    g: OrgAdmin<MemberBody>,
    role: OrgRole,
) -> ApiResult<Answer<OrgRoleChanged>> {
    member_change_result(
        store::change_member(&app.db, &g.org.id, &g.body.user_id, Some(role)).await?,
    )?;
    Ok(Answer(OrgRoleChanged {
        success: True,
        user_id: g.body.user_id,
        role,
    }))
}
