//! `/api/events*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::db::events::EventRow;

/// An event.
#[derive(Serialize, JsonSchema)]
pub struct Event {
    pub id: String,
    pub organization_id: String,
    /// The organization's domain.
    pub domain: String,
    pub begins_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    /// Free text; `approved` with `visibility: public` shows the event to everybody.
    pub status: String,
    pub visibility: crate::states::Visibility,
    pub data: Value,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&EventRow> for Event {
    fn from(r: &EventRow) -> Event {
        Event {
            id: r.id.clone(),
            organization_id: r.organization_id.clone(),
            domain: r.domain.clone(),
            begins_at: r.begins_at,
            ends_at: r.ends_at,
            status: r.status.clone(),
            visibility: r.visibility,
            data: r.data.0.clone(),
            created_by: r.created_by.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// `conflicts`.
#[derive(Serialize, JsonSchema)]
pub struct Conflicts {
    /// Whether any event overlaps.
    pub conflict: bool,
    pub count: usize,
    /// The overlapping events (cancelled and rejected ones aside), in start order.
    pub data: Vec<Event>,
}
