//! The HTTP side of idempotency keys, shared by every handler that takes one (the rules,
//! the hash, the record protocol and the answers are `idempotency`): the one key
//! of a request, from its `Idempotency-Key` header or its body's `idempotency_key` (400
//! when they differ), and the answers of a deck change run behind its key by the deck
//! actors (a replay marked `Idempotent-Replayed`, 409 with `Retry-After` while the first
//! runs, 422 for another request). Credit changes, checkouts and purchases take the header
//! as an `extract::IdempotencyKey` argument and run through `idempotency::recorded`.
//!
//! The one module under `src/api/` that other handler modules import (the architecture
//! test allows it): it holds no handler.

use axum::http::HeaderMap;
use plinth_actors::decks::{Answer, ChangeError};
use serde_json::{Map, Value};

use crate::http::error::{ApiError, ApiResult};
use crate::http::idempotency as rules;
use crate::http::reply::Reply;

/// The request's key: the header's or the body's (the same key; both different: 400).
pub fn key(headers: &HeaderMap, body: &Map<String, Value>) -> ApiResult<Option<String>> {
    let header = rules::header_key(headers.get(rules::HEADER))?;
    rules::key_of(header, rules::idempotency_key(body)?)
}

/// The answer of a change the deck actors ran (or replayed) behind its key.
pub fn answer(result: Result<Answer, ChangeError>) -> ApiResult<Reply> {
    match result {
        Ok(a) if a.replayed => Ok(rules::replayed(a.status, a.body)),
        Ok(a) => {
            let body = match a.body {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let status =
                axum::http::StatusCode::from_u16(a.status).unwrap_or(axum::http::StatusCode::OK);
            Ok(Reply::with_status(status, body))
        }
        Err(e @ ChangeError::KeyReused) => Err(rules::reused(&e.to_string())),
        // The first request with this key still runs (here or in another process).
        Err(e @ ChangeError::InProgress) => Ok(rules::in_progress(&e.to_string())),
        Err(other) => Err(ApiError::internal(other)),
    }
}
