//! `/api/waitlist/*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::waitlist as rows;
use crate::states::WaitlistStatus;

/// A waitlist entry.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistEntry {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub organization_id: String,
    #[schemars(extend("format" = "email"))]
    pub email: String,
    pub status: WaitlistStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<rows::Entry> for WaitlistEntry {
    fn from(e: rows::Entry) -> WaitlistEntry {
        WaitlistEntry {
            id: e.id,
            organization_id: e.organization_id,
            email: e.email,
            status: e.status,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// `list-by-domain`: newest first.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistPage {
    pub data: Vec<WaitlistEntry>,
    pub limit: i64,
    pub offset: i64,
}

/// `accept-by-email`.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistAccepted {
    pub success: True,
    /// Present (true) when the entry already was accepted: nothing changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_accepted: Option<True>,
    pub data: WaitlistEntry,
    /// The account's exemption tags (`data.exemptions`), `[]` when none.
    pub exemptions: Value,
}

/// `revoke-by-email`.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistRevoked {
    pub success: True,
    /// Present (true) when the entry already was pending: nothing changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_pending: Option<True>,
    pub data: WaitlistEntry,
}

/// `accept-all`.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistAcceptedAll {
    pub success: True,
    /// Entries accepted by this call.
    pub accepted: u64,
    /// Entries on the list.
    pub total: i64,
}

/// `status`.
#[derive(Serialize, JsonSchema)]
pub struct WaitlistStanding {
    pub success: True,
    /// The entry, or null when the email is not on the list.
    pub data: Option<WaitlistEntry>,
    pub accepted: bool,
}
