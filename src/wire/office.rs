//! `/api/users/office*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::True;
use crate::db::office::Application as Row;

/// A workspace-access application.
#[derive(Serialize, JsonSchema)]
pub struct OfficeApplication {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    #[schemars(extend("format" = "uuid"))]
    pub user_id: String,
    /// `pending`, `approved` or `rejected`.
    pub status: crate::states::ApplicationStatus,
    /// A JSON object.
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Row> for OfficeApplication {
    fn from(a: Row) -> OfficeApplication {
        OfficeApplication {
            id: a.id,
            user_id: a.user_id,
            status: a.status,
            data: a.data.0,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// `office/status`: the caller's application, or `data: null`.
#[derive(Serialize, JsonSchema)]
pub struct OfficeStanding {
    pub data: Option<OfficeApplication>,
    pub status: Option<crate::states::ApplicationStatus>,
}

/// `office/delete`.
#[derive(Serialize, JsonSchema)]
pub struct OfficeDeleted {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
}
