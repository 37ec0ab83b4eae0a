//! Who belongs to an organization, for rules that name a record rather than its
//! organization (the OrgMember and OrgAdmin rules of the route table, applied later).

use crate::caller::Caller;
use crate::db::organizations::{self as store, OrgRow};
use crate::db::Db;
use crate::states::OrgRole;

/// Why a caller may not act for an organization.
#[derive(Debug, thiserror::Error)]
pub enum OrgError {
    /// No organization has the domain (a 404).
    #[error("organization not found")]
    NotFound,
    /// A 403.
    #[error("you are not a member of this organization")]
    NotMember,
    /// A 403: `what` the caller wanted to list ("orders", "licenses").
    #[error("only the organization's admins list its {0}")]
    NotAdmin(&'static str),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The membership rules, with the database they read.
#[derive(Clone)]
pub struct Orgs {
    db: Db,
}

impl Orgs {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Whether the caller belongs to the organization (platform admins do): the
    /// OrgMember rule for routes whose body names a record rather than its organization.
    pub async fn in_org(&self, caller: &Caller, org_id: &str) -> Result<bool, sqlx::Error> {
        Ok(caller.is_admin()
            || store::role_of(&self.db, org_id, &caller.id)
                .await?
                .is_some())
    }

    /// Whether the caller administers the organization (platform admins do): the OrgAdmin
    /// rule for routes whose body names a record (an order, a license, a download link)
    /// rather than its organization.
    pub async fn org_admin(&self, caller: &Caller, org_id: &str) -> Result<bool, sqlx::Error> {
        Ok(caller.is_admin()
            || store::role_of(&self.db, org_id, &caller.id).await? == Some(OrgRole::Admin))
    }

    /// The organization `domain` names, for a caller who administers it: 404 when there
    /// is none, 403 otherwise (`what` names what the caller wanted: "orders", "licenses").
    pub async fn administered(
        &self,
        caller: &Caller,
        domain: &str,
        what: &'static str,
    ) -> Result<OrgRow, OrgError> {
        let org = store::by_domain(&self.db, domain)
            .await?
            .ok_or(OrgError::NotFound)?;
        if !self.org_admin(caller, &org.id).await? {
            return Err(OrgError::NotAdmin(what));
        }
        Ok(org)
    }

    /// The organization an optional `domain` names, for records created under one: 404
    /// when there is none, 403 when the caller is not a member (platform admins are);
    /// `None` without a domain.
    pub async fn member_org(
        &self,
        caller: &Caller,
        domain: Option<&str>,
    ) -> Result<Option<String>, OrgError> {
        let Some(d) = domain else {
            return Ok(None);
        };
        let org = store::by_domain(&self.db, d)
            .await?
            .ok_or(OrgError::NotFound)?;
        if !self.in_org(caller, &org.id).await? {
            return Err(OrgError::NotMember);
        }
        Ok(Some(org.id))
    }
}
