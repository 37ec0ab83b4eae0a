//! `Idempotency-Key` on every POST that creates or changes something (issue 45, review
//! A6: the same key twice made two analytics sites). Each POST route has one rule, read
//! off the route table: the deck actors and the credit, checkout and purchase handlers
//! run the key themselves (`Handler`); every other write, upload or render is recorded
//! here, around the handler, per caller (`Recorded`); sign-in, secret and beacon routes
//! refuse a key with a 400 that says why (`Refused`); reads ignore it (a repeat is safe).
//! The protocol (claim, replay, 409, 422) is `idempotency`'s.

use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::http::error::ApiError;
use crate::http::idempotency::{self as rules, Keyed};
use crate::http::reply::Envelope;
use crate::route_spec::{Category, RouteMeta};
use crate::state::AppState;

/// What a POST route does with an `Idempotency-Key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRule {
    /// The handler (or the deck actors) runs the key itself.
    Handler,
    /// Recorded around the handler by [`around`].
    Recorded,
    /// A 400 saying why this route takes no key.
    Refused(&'static str),
    /// A read: the key changes nothing, a repeat is safe anyway.
    Ignored,
}

impl KeyRule {
    /// The name the OpenAPI document gives the rule (`x-idempotency`).
    pub fn name(self) -> &'static str {
        match self {
            KeyRule::Handler | KeyRule::Recorded => "honoured",
            KeyRule::Refused(_) => "refused",
            KeyRule::Ignored => "ignored",
        }
    }
}

/// A POST route's rule: `handler_keyed` when its handler (or the deck actors) reads the key.
pub fn rule_of(r: &RouteMeta, handler_keyed: bool) -> KeyRule {
    if handler_keyed {
        return KeyRule::Handler;
    }
    match r.category {
        Category::Read => KeyRule::Ignored,
        Category::Write | Category::Upload | Category::Render | Category::Financial => {
            KeyRule::Recorded
        }
        Category::Auth => {
            KeyRule::Refused("its answer (a session, a secret or a code) is never kept for replay")
        }
        Category::Beacon => KeyRule::Refused("beacons are counted as they come, never replayed"),
        Category::Unlimited => KeyRule::Refused("it is called by a provider, not an API client"),
    }
}

/// The hash of a recorded route's request: its JSON object canonically (key order does
/// not matter), any other body as its bytes.
fn body_hash(path: &str, caller: &str, body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => rules::request_hash(path, caller, &m),
        _ => {
            let mut text = format!("{path}\n{caller}\n").into_bytes();
            text.extend_from_slice(body);
            crate::crypto::sha256_hex(&text)
        }
    }
}

fn refused(path: &str, why: &str) -> Response {
    ApiError::bad_request(format!(
        "POST {path} does not take an Idempotency-Key: {why}; send the request without the \
         header"
    ))
    .with("code", "idempotency_key_not_accepted")
    .into_response()
}

/// Runs a request's handler (`run`) under its rule: a recorded route's first request
/// under a key is run and its answer kept for 24 hours (answers on our side, 5xx, are
/// not kept); a repeat gets that answer, marked `Idempotent-Replayed`.
pub async fn around(
    app: &AppState,
    route: Option<(&'static str, KeyRule)>,
    caller: Option<&Caller>,
    header: Option<&HeaderValue>,
    body: &[u8],
    run: impl std::future::Future<Output = Response>,
) -> Response {
    let Some((path, rule)) = route else {
        return run.await;
    };
    if matches!(rule, KeyRule::Handler | KeyRule::Ignored) {
        return run.await;
    }
    let key = match rules::header_key(header) {
        Ok(Some(key)) => key,
        Ok(None) => return run.await,
        Err(e) => return e.into_response(),
    };
    let caller = match (rule, caller) {
        (KeyRule::Refused(why), _) => return refused(path, why),
        (_, None) => {
            return refused(
                path,
                "keys are kept per API key, and none was sent (x-api-key)",
            )
        }
        (_, Some(c)) => c,
    };
    let keyed = Keyed {
        scope: format!("u:{}", caller.id),
        hash: body_hash(path, &caller.id, body),
        key,
        retry_unknown: false,
    };
    match rules::begin(app, &keyed, Some(rules::STALE_CLAIM)).await {
        Err(e) => e.into_response(),
        Ok(Some(earlier)) => earlier.into_response(),
        Ok(None) => {
            let (resp, body) = answer_of(run.await).await;
            rules::settle(app, &keyed, resp.status(), body).await;
            resp
        }
    }
}

/// The JSON object of an answer, to keep: the handler's envelope, or (an extractor's
/// rejection) its body read and put back, as the usage layer will send it. A success
/// that is not JSON (a file) is not kept.
async fn answer_of(resp: Response) -> (Response, Option<Map<String, Value>>) {
    let body = match resp.extensions().get::<Envelope>() {
        Some(Envelope::Map(m)) => Some(m.clone()),
        Some(Envelope::Json(b)) => serde_json::from_slice(b).ok(),
        None => None,
    };
    let json = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let rejected = resp.status().is_client_error();
    if body.is_some() || !(json || rejected) {
        return (resp, body);
    }
    let (parts, bytes) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(bytes, 1 << 20).await else {
        let failed = ApiError::internal("an answer could not be read to keep it");
        return (failed.into_response(), None);
    };
    let body = match serde_json::from_slice(&bytes) {
        Ok(m) => Some(m),
        // An extractor's plain-text rejection, as the usage layer words it.
        Err(_) if rejected => {
            let text = String::from_utf8_lossy(&bytes).trim().to_owned();
            let reason = parts.status.canonical_reason().unwrap_or("request failed");
            let message = if text.is_empty() {
                reason.to_owned()
            } else {
                text
            };
            Some(ApiError::new(parts.status, message).body())
        }
        Err(_) => None,
    };
    (
        Response::from_parts(parts, axum::body::Body::from(bytes)),
        body,
    )
}

/// The recorded answer of a recorded route's repeat, for the usage layer to replay before
/// the request is counted in a rate window.
pub async fn recorded_answer(
    app: &AppState,
    path: &str,
    caller_id: &str,
    header: Option<&HeaderValue>,
    body: &[u8],
) -> Option<crate::http::reply::Reply> {
    let key = rules::header_key(header).ok()??;
    let hash = body_hash(path, caller_id, body);
    let since = chrono::Utc::now() - rules::KEPT;
    let (status, answer) = crate::db::idempotency::recorded(&app.db, &key, &hash, since)
        .await
        .ok()??;
    let answer = rules::unseal(app, answer)?;
    Some(rules::replayed(status as u16, Value::Object(answer)))
}
