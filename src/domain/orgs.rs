//! Who belongs to an organization, for rules that name a record rather than its
//! organization (the OrgMember and OrgAdmin rules of the route table, applied later).

use crate::caller::Caller;
use crate::state::AppState;

/// Whether the caller belongs to the organization (platform admins do): the OrgMember
/// rule for routes whose body names a record rather than its organization.
pub async fn in_org(app: &AppState, caller: &Caller, org_id: &str) -> Result<bool, sqlx::Error> {
    Ok(caller.is_admin()
        || crate::db::organizations::role_of(&app.db, org_id, &caller.id)
            .await?
            .is_some())
}

/// Whether the caller administers the organization (platform admins do): the OrgAdmin
/// rule for routes whose body names a record (an order, a license, a download link)
/// rather than its organization.
pub async fn org_admin(app: &AppState, caller: &Caller, org_id: &str) -> Result<bool, sqlx::Error> {
    Ok(caller.is_admin()
        || crate::db::organizations::role_of(&app.db, org_id, &caller.id).await?
            == Some(crate::states::OrgRole::Admin))
}
