//! `/api/public-access/*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::True;

/// A domain with access: a permanent admin domain (`PLINTH_ADMIN_DOMAINS`) or a granted
/// partner domain (with who added it, and when).
#[derive(Serialize, JsonSchema)]
pub struct AccessDomain {
    pub domain: String,
    pub permanent: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_by: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
}

/// `list`.
#[derive(Serialize, JsonSchema)]
pub struct AccessDomains {
    pub data: Vec<AccessDomain>,
}

/// `add-domain`.
#[derive(Serialize, JsonSchema)]
pub struct AccessAdded {
    pub success: True,
    pub domain: String,
    /// False when the domain already had access.
    pub added: bool,
}

/// `remove-domain`.
#[derive(Serialize, JsonSchema)]
pub struct AccessRemoved {
    pub success: True,
    pub domain: String,
}

/// `status`: always about the caller.
#[derive(Serialize, JsonSchema)]
pub struct AccessStatus {
    /// The caller's email domain is granted or a permanent admin domain.
    pub accepted: bool,
    /// Accepted and verified.
    #[serde(rename = "canPreviewTeamPosts")]
    pub can_preview_team_posts: bool,
    pub domain: String,
}
