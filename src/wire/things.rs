//! `/api/data/things*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::db::things::ThingRow;

/// A thing.
#[derive(Serialize, JsonSchema)]
pub struct Thing {
    pub id: String,
    pub title: String,
    pub category: String,
    pub slug: String,
    /// The organization's domain, for things created under one.
    pub domain: Option<String>,
    pub user_id: Option<String>,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&ThingRow> for Thing {
    fn from(r: &ThingRow) -> Thing {
        Thing {
            id: r.id.clone(),
            title: r.title.clone(),
            category: r.category.clone(),
            slug: r.slug.clone(),
            domain: r.domain.clone(),
            user_id: r.user_id.clone(),
            data: r.data.0.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// `things/list`: a page, and the cursor of the next one.
#[derive(Serialize, JsonSchema)]
pub struct ThingPage {
    #[serde(flatten)]
    pub page: super::Page<Thing>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// `things/list/search`: best match first.
#[derive(Serialize, JsonSchema)]
pub struct ThingMatches {
    pub data: Vec<Thing>,
    pub count: usize,
    pub limit: i64,
    pub offset: i64,
    /// The words searched for.
    pub search: String,
}
