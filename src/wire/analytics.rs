//! `/api/analytics*` answers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::data::UploadMethod;
use super::True;
use crate::db::analytics::{Member as MemberRow, SiteRow};
use crate::domain::analytics::Standing;

/// A site as the caller stands to it.
#[derive(Serialize, JsonSchema)]
pub struct Site {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub name: String,
    pub owner_id: String,
    /// The caller's level on the site: 100 (admin, the owner), 10 (viewer), 0.
    pub access_level: i64,
    pub is_owner: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Site {
    pub fn of(s: &SiteRow, standing: &Standing) -> Site {
        Site {
            id: s.id.clone(),
            name: s.name.clone(),
            owner_id: s.owner_id.clone(),
            access_level: standing.access_level,
            is_owner: standing.is_owner,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// `{count, data}`: every item, no paging.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "{T}List")]
pub struct All<T> {
    pub count: usize,
    pub data: Vec<T>,
}

impl<T> All<T> {
    pub fn new(data: Vec<T>) -> All<T> {
        All {
            count: data.len(),
            data,
        }
    }
}

/// A direct member of a site (the owner is not one).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SiteMember")]
pub struct Member {
    pub user_id: String,
    #[schemars(email)]
    pub email: String,
    /// 10 (viewer) or 100 (admin).
    pub level: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<MemberRow> for Member {
    fn from(m: MemberRow) -> Member {
        Member {
            user_id: m.user_id,
            email: m.email,
            level: m.level,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

/// `members/add` and `members/update`: the membership now.
#[derive(Serialize, JsonSchema)]
pub struct Membership {
    pub site_id: String,
    pub user_id: String,
    /// `members/add` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(email)]
    pub email: Option<String>,
    pub level: i64,
}

/// `members/remove`.
#[derive(Serialize, JsonSchema)]
pub struct MemberRemoved {
    pub success: True,
    pub site_id: String,
    pub user_id: String,
    pub removed: True,
}

/// `track`: with `attachment: true`, the event id and its attachment token.
#[derive(Serialize, JsonSchema)]
pub struct Tracked {
    pub success: True,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub event_id: Option<String>,
    /// Creates the event's one attachment (`events/{id}/attachment/create`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attachment_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attachment_token_expires_at: Option<DateTime<Utc>>,
}

/// An event as `events` lists it.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "AnalyticsEvent")]
pub struct Event {
    #[schemars(extend("format" = "uuid"))]
    pub event_id: String,
    pub label: Option<String>,
    /// The derived, site-scoped visitor id.
    pub visitor_id: String,
    pub data: Option<Value>,
    pub created_at: DateTime<Utc>,
    /// Whether it has an attachment.
    pub attachment: bool,
}

/// `events`: newest first.
#[derive(Serialize, JsonSchema)]
pub struct Events {
    pub count: usize,
    pub data: Vec<Event>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

crate::text_enum! {
    /// The size of a stats bucket: hours for ranges up to 48 hours, else UTC days.
    pub enum Granularity {
        Hour = "hour",
        Day = "day",
    }
}

/// One bucket of `stats`.
#[derive(Serialize, JsonSchema)]
pub struct Bucket {
    /// `YYYY-MM-DDTHH:00:00Z` per hour, `YYYY-MM-DD` per day.
    pub time: String,
    pub hits: i64,
    pub visitors: u64,
}

/// Hits and unique visitors.
#[derive(Serialize, JsonSchema)]
pub struct Counts {
    pub hits: i64,
    pub visitors: u64,
}

/// A label ranked by `stats` (`include_labels`).
#[derive(Serialize, JsonSchema)]
pub struct LabelCount {
    pub label: String,
    pub hits: i64,
    pub visitors: u64,
}

/// `stats`.
#[derive(Serialize, JsonSchema)]
pub struct Stats {
    pub site_id: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub granularity: Granularity,
    /// Every bucket of the range, empty ones included.
    pub buckets: Vec<Bucket>,
    pub totals: Counts,
    /// Up to 100 non-empty labels by hits (with `include_labels`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<LabelCount>>,
}

/// `events/{id}/attachment/create`: one private `PUT` of the file.
#[derive(Serialize, JsonSchema)]
pub struct AttachmentUpload {
    pub success: True,
    #[schemars(extend("format" = "uuid"))]
    pub event_id: String,
    pub url: String,
    pub method: UploadMethod,
    pub headers: BTreeMap<String, String>,
    pub max_bytes: u64,
    pub expires_in: u64,
}
