//! Rules of the organization-scoped records (documents, calendar events, and the areas
//! that follow): how `data` merges on update, how big it may grow, how a concurrent
//! writer is retried, and how timestamps are read.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::Invalid;
use crate::json_depth;

/// Why a record's write is refused.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// `data` nests deeper than [`json_depth::MAX_DEPTH`] (a 400).
    #[error("`data` may nest at most {} levels", json_depth::MAX_DEPTH)]
    TooDeep,
    /// `data` is larger than [`MAX_DATA_BYTES`] (a 400: a field over its limit).
    #[error("`data` may hold at most {MAX_DATA_BYTES} bytes of JSON")]
    TooLarge,
    /// Other writers won every one of [`WRITE_TRIES`] tries (a 409).
    #[error("the record is being updated concurrently; retry")]
    Busy,
}

/// Largest `data` object a record keeps, serialized.
pub const MAX_DATA_BYTES: usize = 256 * 1024;

/// `data` after an update: the top-level keys of `changes` replace the stored ones and a
/// `null` removes its key (the merge of `users/update` and `organizations/update`).
pub fn merge(stored: &Value, changes: &Map<String, Value>) -> Result<Value, RecordError> {
    let mut data = stored.as_object().cloned().unwrap_or_default();
    for (k, v) in changes {
        if v.is_null() {
            data.remove(k);
        } else {
            data.insert(k.clone(), v.clone());
        }
    }
    let data = Value::Object(data);
    check_data(&data)?;
    Ok(data)
}

/// 400 when `data` nests deeper than [`json_depth::MAX_DEPTH`] (checked first, without
/// recursion: serialising it would recurse), 413 when it is larger than
/// [`MAX_DATA_BYTES`].
pub fn check_data(data: &Value) -> Result<(), RecordError> {
    if json_depth::depth_of(data) > json_depth::MAX_DEPTH {
        return Err(RecordError::TooDeep);
    }
    let size = serde_json::to_vec(data).map(|v| v.len()).unwrap_or(0);
    if size > MAX_DATA_BYTES {
        return Err(RecordError::TooLarge);
    }
    Ok(())
}

/// How many times an optimistic read-modify-write re-reads a record that somebody else
/// wrote in between before giving up with [`RecordError::Busy`].
pub const WRITE_TRIES: usize = 8;

/// An RFC 3339 timestamp (`2026-05-01T09:00:00Z`, any offset), as UTC.
pub fn timestamp(field: &str, raw: &str) -> Result<DateTime<Utc>, Invalid> {
    DateTime::parse_from_rfc3339(raw.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            Invalid::new(format!(
                "`{field}` must be an RFC 3339 timestamp such as 2026-05-01T09:00:00Z"
            ))
        })
}

/// A time range that starts before it ends.
pub fn range(begins_at: &str, ends_at: &str) -> Result<(DateTime<Utc>, DateTime<Utc>), Invalid> {
    let (b, e) = (
        timestamp("begins_at", begins_at)?,
        timestamp("ends_at", ends_at)?,
    );
    check_range(b, e)?;
    Ok((b, e))
}

pub fn check_range(begins_at: DateTime<Utc>, ends_at: DateTime<Utc>) -> Result<(), Invalid> {
    if begins_at >= ends_at {
        return Err(Invalid::new("`begins_at` must be before `ends_at`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_replaces_top_level_keys_and_null_removes() {
        let stored = json!({"a": 1, "b": {"x": 1}, "c": 3});
        let changes = json!({"b": {"y": 2}, "c": null, "d": 4});
        let merged = merge(&stored, changes.as_object().unwrap()).unwrap();
        assert_eq!(merged, json!({"a": 1, "b": {"y": 2}, "d": 4}));
    }

    #[test]
    fn oversized_data_is_refused() {
        let big = json!({"k": "x".repeat(MAX_DATA_BYTES)});
        assert!(matches!(
            merge(&json!({}), big.as_object().unwrap()),
            Err(RecordError::TooLarge)
        ));
    }

    #[test]
    fn ranges_must_start_before_they_end_and_offsets_are_normalized() {
        let (b, e) = range("2026-05-01T11:00:00+02:00", "2026-05-01T10:00:00Z").unwrap();
        assert_eq!(b.to_rfc3339(), "2026-05-01T09:00:00+00:00");
        assert!(b < e);
        assert!(range("2026-05-01T10:00:00Z", "2026-05-01T10:00:00Z").is_err());
        assert!(range("tomorrow", "2026-05-01T10:00:00Z").is_err());
    }
}
