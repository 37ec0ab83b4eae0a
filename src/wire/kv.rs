//! `/api/kv*` answers.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::True;
use crate::db::kv as rows;

/// A namespace of the caller's.
#[derive(Serialize, JsonSchema)]
pub struct Namespace {
    pub name: String,
    pub created_at: DateTime<Utc>,
}

impl From<rows::Namespace> for Namespace {
    fn from(n: rows::Namespace) -> Namespace {
        Namespace {
            name: n.name,
            created_at: n.created_at,
        }
    }
}

/// `GET /api/kv/namespaces`.
#[derive(Serialize, JsonSchema)]
pub struct Namespaces {
    pub count: usize,
    pub data: Vec<Namespace>,
}

/// An entry.
#[derive(Serialize, JsonSchema)]
pub struct Entry {
    pub namespace: String,
    pub key: String,
    /// A string of at most 256 KiB.
    pub value: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<rows::Entry> for Entry {
    fn from(e: rows::Entry) -> Entry {
        Entry {
            namespace: e.namespace,
            key: e.key,
            value: e.value,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// `namespaces/delete`.
#[derive(Serialize, JsonSchema)]
pub struct NamespaceDeleted {
    pub success: True,
    pub namespace: String,
    pub deleted: True,
}

/// `entries/delete`.
#[derive(Serialize, JsonSchema)]
pub struct EntryDeleted {
    pub success: True,
    pub namespace: String,
    pub key: String,
    pub deleted: True,
}
