//! `/api/documents*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::db::documents::DocumentRow;

/// A document.
#[derive(Serialize, JsonSchema)]
pub struct Document {
    pub id: String,
    pub organization_id: String,
    /// The organization's domain.
    pub domain: String,
    pub r#type: String,
    pub data: Value,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&DocumentRow> for Document {
    fn from(r: &DocumentRow) -> Document {
        Document {
            id: r.id.clone(),
            organization_id: r.organization_id.clone(),
            domain: r.domain.clone(),
            r#type: r.r#type.clone(),
            data: r.data.0.clone(),
            created_by: r.created_by.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}
