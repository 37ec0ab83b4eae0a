//! The wire: the shape of every answer, as types. One module per area of the spec
//! (`wire::licenses` for `/api/licenses*`), each answer a `#[derive(Serialize,
//! JsonSchema)]` struct whose `///` field docs become the OpenAPI document's descriptions.
//! Handlers build these from rows and domain values (`From`/`of` constructors live here,
//! next to the shape), return them as `Answer<T>`, and the usage layer adds `_usage`.
//! Rows in `db/` never know the wire format.
//!
//! Conventions: fields keep the names and order the spec and docs/api.md give; ids are
//! strings with `format: uuid` where they are UUIDs; timestamps are RFC 3339 (`format:
//! date-time`); an optional field that is left out when absent says so
//! (`skip_serializing_if`), one that is `null` when absent is an `Option` without it.

pub mod analytics;
pub mod billing;
pub mod credits;
pub mod data;
pub mod documents;
pub mod downloads;
pub mod events;
pub mod exports;
pub mod inventory;
pub mod kv;
pub mod licenses;
pub mod likes;
pub mod localizations;
pub mod marketplace;
pub mod office;
pub mod organizations;
pub mod posts;
pub mod public_access;
pub mod slides;
pub mod telemetry;
pub mod things;
pub mod users;
pub mod waitlist;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

/// A string field that takes one of `names` (null too when `nullable`), as the document
/// states a closed set read from the parser's own table: one shape for every such field.
pub fn names_schema<'a>(
    names: impl IntoIterator<Item = &'a str>,
    nullable: bool,
) -> schemars::Schema {
    let names: Vec<&str> = names.into_iter().collect();
    match nullable {
        // `enum` restricts every value, so null is listed in it too.
        true => {
            let mut values: Vec<serde_json::Value> = names.into_iter().map(Into::into).collect();
            values.push(serde_json::Value::Null);
            schemars::json_schema!({"type": ["string", "null"], "enum": values})
        }
        false => schemars::json_schema!({"type": "string", "enum": names}),
    }
}

/// The literal `true` (`success`): a type, so the document says `const: true`.
#[derive(Debug, Clone, Copy, Default)]
pub struct True;

impl Serialize for True {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

impl JsonSchema for True {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "True".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({"type": "boolean", "const": true})
    }
}

/// One page of a list: `{data, count, total, limit, offset}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "{T}Page")]
pub struct Page<T> {
    pub data: Vec<T>,
    /// Items on this page.
    pub count: usize,
    /// Items in the whole list.
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// Most bytes of items one page answers: records hold up to 256 KiB each, so `limit`
/// of them could make an answer of a hundred megabytes, copied again per request. Past
/// this the page is cut (never below one item); `count` says how many came, and a
/// client pages on from `offset + count` as always.
pub const MAX_PAGE_BYTES: usize = 16 << 20;

impl<T: Serialize> Page<T> {
    pub fn new(mut data: Vec<T>, total: i64, limit: i64, offset: i64) -> Page<T> {
        let mut bytes = 0;
        if let Some(cut) = data.iter().position(|item| {
            bytes += crate::json_depth::json_len(item);
            bytes > MAX_PAGE_BYTES
        }) {
            data.truncate(cut.max(1));
        }
        Page {
            count: data.len(),
            data,
            total,
            limit,
            offset,
        }
    }
}

/// `{data}`: one record.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "{T}Data")]
pub struct Data<T> {
    pub data: T,
}

/// `{success: true}` and nothing else.
#[derive(Serialize, JsonSchema)]
pub struct Acknowledged {
    pub success: True,
}

/// `{success: true, data}`: a record after a change.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "{T}Saved")]
pub struct Saved<T> {
    pub success: True,
    pub data: T,
}

impl<T> Saved<T> {
    pub fn new(data: T) -> Saved<T> {
        Saved {
            success: True,
            data,
        }
    }
}

/// `{success: true, id, deleted: true}`: a record is gone.
#[derive(Serialize, JsonSchema)]
pub struct Deleted {
    pub success: True,
    pub id: String,
    pub deleted: True,
}

impl Deleted {
    pub fn new(id: String) -> Deleted {
        Deleted {
            success: True,
            id,
            deleted: True,
        }
    }
}
