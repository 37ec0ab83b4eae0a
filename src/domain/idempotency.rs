//! Idempotency keys of mutations: the key's rules, the hash that tells a repeat of a
//! request from a different request under the same key, and how long a record answers.
//! Deck changes use it today (through the deck actors); checkout and purchases will.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// How long a recorded answer replays; older records are expired and pruned.
pub const KEPT: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// A deck change's claim on its key that is still "in progress" after this long is
/// presumed dead (its process stopped between claim and answer; a change's caller gives
/// up after 30 s) and the same request may take it over.
pub const STALE_CLAIM: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// What a repeat that finds its key in progress is told to wait (`Retry-After`).
pub const RETRY_IN_PROGRESS_SECS: u64 = 1;

/// The `idempotency_key` a mutation may carry: 1 to 255 characters.
pub fn idempotency_key(body: &Map<String, Value>) -> ApiResult<Option<String>> {
    match body.get("idempotency_key") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 255 => Ok(Some(k.clone())),
        Some(_) => Err(ApiError::bad_request(
            "`idempotency_key` must be a string of 1 to 255 characters",
        )),
    }
}

/// JSON with object keys sorted, so that equal requests hash equally.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<_> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

pub fn request_hash(route: &str, caller: &str, body: &Map<String, Value>) -> String {
    let mut body = body.clone();
    body.remove("idempotency_key");
    let mut text = format!("{route}\n{caller}\n");
    canonical(&Value::Object(body), &mut text);
    crate::crypto::sha256_hex(text.as_bytes())
}
