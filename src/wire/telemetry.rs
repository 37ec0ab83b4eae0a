//! `/api/telemetry*` answers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::True;
use crate::db::telemetry as rows;

/// `events` (202): how many were new and how many were already known by `event_id`.
#[derive(Serialize, JsonSchema)]
pub struct EventsAccepted {
    pub success: True,
    pub accepted: u64,
    pub duplicates: u64,
}

/// One day of `metrics/daily`.
#[derive(Serialize, JsonSchema)]
pub struct Day {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Distinct `client_id`s that sent an event that day.
    pub active_clients: i64,
    pub events: i64,
}

impl From<rows::Day> for Day {
    fn from(d: rows::Day) -> Day {
        Day {
            date: d.date,
            active_clients: d.active_clients,
            events: d.events,
        }
    }
}

/// Clients of one app version.
#[derive(Serialize, JsonSchema)]
pub struct Version {
    /// `data.app_version` as sent.
    pub version: String,
    /// Distinct clients that sent an event with this version in the range.
    pub clients: i64,
    pub events: i64,
}

impl From<rows::Version> for Version {
    fn from(v: rows::Version) -> Version {
        Version {
            version: v.version,
            clients: v.clients,
            events: v.events,
        }
    }
}

/// `metrics/daily`.
#[derive(Serialize, JsonSchema)]
pub struct Daily {
    pub product_id: String,
    pub from: String,
    pub to: String,
    /// Every day of the range, zeros included.
    pub days: Vec<Day>,
    /// The `data` key versions are read from.
    pub version_key: String,
    pub versions: Vec<Version>,
}

crate::text_enum! {
    /// What `metrics/query` counts.
    pub enum Metric {
        Events = "events",
        UniqueClients = "unique_clients",
    }
}

crate::text_enum! {
    /// How `metrics/query` buckets.
    pub enum Bucketing {
        None = "none",
        Day = "day",
    }
}

/// A row of `metrics/query`.
#[derive(Serialize, JsonSchema)]
pub struct QueryRow {
    /// The day, with `bucket: day`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Option<String>>,
    /// The event name or property value, with a `dimension`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimension: Option<Option<String>>,
    pub value: i64,
}

/// `metrics/query`.
#[derive(Serialize, JsonSchema)]
pub struct QueryAnswer {
    pub product_id: String,
    pub from: String,
    pub to: String,
    pub metric: Metric,
    pub bucket: Bucketing,
    /// By bucket, then largest value first.
    pub rows: Vec<QueryRow>,
}

/// The checkout funnel of `subscriptions/summary`.
#[derive(Serialize, JsonSchema)]
pub struct Funnel {
    pub started: i64,
    pub completed: i64,
    /// `completed / started`; `null` when nothing started.
    pub conversion_rate: Option<f64>,
}

/// Subscriptions by current status.
#[derive(Serialize, JsonSchema)]
pub struct Subscriptions {
    pub total: i64,
    pub by_status: BTreeMap<String, i64>,
}

/// `subscriptions/summary`.
#[derive(Serialize, JsonSchema)]
pub struct Summary {
    pub product_id: String,
    pub from: String,
    pub to: String,
    pub checkout: Funnel,
    pub subscriptions: Subscriptions,
}
