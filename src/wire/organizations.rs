//! `/api/organizations*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::organizations::{self as rows, OrgRow};
use crate::states::OrgRole;

/// An organization. Its members and platform administrators see `data` (settings and
/// email templates) and `updated_at`; `role` is the caller's, when a member. Others see
/// the public fields only.
#[derive(Serialize, JsonSchema)]
pub struct Organization {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    /// Its email domain, lower case.
    pub domain: String,
    pub name: Option<String>,
    /// A JSON object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    pub is_public: bool,
    pub created_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<OrgRole>,
}

impl Organization {
    /// Every field, with the caller's role when they have one.
    pub fn full(o: &OrgRow, role: Option<OrgRole>) -> Organization {
        Organization {
            data: Some(o.data.0.clone()),
            updated_at: Some(o.updated_at),
            role,
            ..Organization::public(o)
        }
    }

    /// What anyone may see.
    pub fn public(o: &OrgRow) -> Organization {
        Organization {
            id: o.id.clone(),
            domain: o.domain.clone(),
            name: o.name.clone(),
            data: None,
            is_public: o.is_public,
            created_at: o.created_at,
            updated_at: None,
            role: None,
        }
    }
}

impl From<&rows::Membership> for Organization {
    fn from(m: &rows::Membership) -> Organization {
        Organization::full(&m.org, Some(m.role))
    }
}

/// `delete`.
#[derive(Serialize, JsonSchema)]
pub struct OrgDeleted {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
}

/// `toggle-public-access`.
#[derive(Serialize, JsonSchema)]
pub struct PublicAccessToggled {
    pub success: True,
    /// The new value.
    pub is_public: bool,
    pub data: Organization,
}

/// `waitlist-toggle`.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistToggled {
    pub success: True,
    /// The new value of `data.waitlist_support`.
    pub waitlist_support: bool,
    pub data: Organization,
}

/// `membership/automatic`.
#[derive(Serialize, JsonSchema)]
pub struct AutomaticMembership {
    pub success: True,
    /// False when the caller already was a member.
    pub joined: bool,
    pub data: Organization,
}

/// A member and their role.
#[derive(Serialize, JsonSchema)]
pub struct OrgMember {
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    pub email: String,
    pub username: Option<String>,
    pub role: OrgRole,
    pub joined_at: DateTime<Utc>,
}

impl From<rows::Member> for OrgMember {
    fn from(m: rows::Member) -> OrgMember {
        OrgMember {
            user_id: m.user_id,
            email: m.email,
            username: m.username,
            role: m.role,
            joined_at: m.joined_at,
        }
    }
}

/// `users`.
#[derive(Serialize, JsonSchema)]
pub struct OrgMembers {
    pub data: Vec<OrgMember>,
    pub organization: Organization,
}

/// `users/add`.
#[derive(Serialize, JsonSchema)]
pub struct OrgMemberAdded {
    pub success: True,
    /// True when the account already was a member (nothing changed).
    pub already_member: bool,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    /// Every member now.
    pub members: Vec<OrgMember>,
}

/// `users/remove`.
#[derive(Serialize, JsonSchema)]
pub struct OrgMemberRemoved {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
}

/// `users/promote` and `users/demote`.
#[derive(Serialize, JsonSchema)]
pub struct OrgRoleChanged {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    pub role: OrgRole,
}
