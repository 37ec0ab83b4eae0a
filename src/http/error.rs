//! The one error type of the API. Renders `{error: true, message, ...extra}` with the
//! right status; the usage layer adds `_usage` like on every other response, and logs a
//! 5xx once, with the request id, method, route and caller (the cause travels with the
//! response, never in its body).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::http::reply::Reply;

mod domain;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub extra: Map<String, Value>,
    /// What went wrong on our side (logged by the usage layer, never sent).
    pub cause: Option<String>,
}

pub use crate::http::reply::ErrorCause;

pub type ApiResult<T = Reply> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            extra: Map::new(),
            cause: None,
        }
    }
    pub fn bad_request(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, m)
    }
    pub fn unauthorized(m: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, m)
    }
    pub fn forbidden(m: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, m)
    }
    pub fn not_found(m: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, m)
    }
    pub fn conflict(m: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, m)
    }
    /// 422: well-formed, but not what this request may carry.
    pub fn unprocessable(m: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, m)
    }
    /// 404: a feature this server does not offer because its operator did not configure
    /// it (identity-provider sign-in, token exchange, Google Cloud Storage, a payment
    /// provider or a store). Not a 503: nothing is down and retrying will not help.
    pub fn not_offered(m: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::NOT_FOUND, m);
        e.extra.insert("not_configured".into(), Value::Bool(true));
        e
    }
    /// 503 (with `Retry-After`): a service plinth depends on is down;
    /// for the database, see [`ApiError::unavailable`].
    pub fn service_unavailable(m: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, m)
    }
    /// A failure that is ours, not the client's: reported vaguely, logged in full once
    /// by the usage layer with the request's context.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        let mut e = Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        e.cause = Some(err.to_string());
        e
    }

    /// The `{error: true, message, ...extra}` body: the one place it is built.
    pub fn body(&self) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("error".into(), Value::Bool(true));
        body.insert("message".into(), Value::String(self.message.clone()));
        body.extend(self.extra.clone());
        body
    }
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        if crate::db::unstorable_text(&err) {
            return ApiError::bad_request("text may not contain NUL characters (\\u0000)");
        }
        if let Some(outage) = crate::db::outage(&err) {
            crate::db::note_outage();
            return ApiError::unavailable(outage, err);
        }
        if crate::db::foreign_key_violation(&err) {
            return ApiError::conflict(
                "a record this change refers to was deleted meanwhile (or others still refer \
                 to the one it deletes); nothing was changed",
            );
        }
        match crate::db::unique_violation(&err) {
            Some(what) => ApiError::conflict(conflict_message(&what)),
            None => ApiError::internal(err),
        }
    }
}

impl ApiError {
    /// An error of a helper that returns `anyhow`: a database failure keeps its meaning
    /// (an outage is a 503, a duplicate a 409), anything else is ours.
    pub fn from_anyhow(err: anyhow::Error) -> Self {
        match err.downcast::<sqlx::Error>() {
            Ok(sql) => sql.into(),
            Err(other) => Self::internal(other),
        }
    }

    /// The database is down, full, read-only or too slow: 503 (with `Retry-After`, like
    /// every 503), saying whether the change may have been applied. A write that may
    /// have landed carries `outcome_unknown: true`; retried with the same
    /// `Idempotency-Key` it is safe (docs/api.md).
    pub fn unavailable(outage: crate::db::Outage, cause: impl std::fmt::Display) -> Self {
        let mut e = match outage {
            crate::db::Outage::NotApplied => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the database is unavailable; nothing was changed, try again shortly",
            ),
            crate::db::Outage::Unknown => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the database connection failed; a change may have been applied: retry with \
                 the same Idempotency-Key, or check before retrying",
            )
            .with("outcome_unknown", true),
        };
        e.cause = Some(cause.to_string());
        e
    }
}

/// Turns a constraint or column name into words a client can act on.
fn conflict_message(what: &str) -> String {
    for (needle, msg) in [
        ("username", "that username is already taken"),
        ("email", "an account with that email already exists"),
        ("domain", "that domain is already registered"),
        ("slug", "that slug is already taken"),
        ("src", "a post with that src already exists"),
    ] {
        if what.contains(needle) {
            return msg.to_owned();
        }
    }
    "a record with the same unique value already exists".to_owned()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        Reply::from(self).into_response()
    }
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Self {
        let mut headers = axum::http::HeaderMap::new();
        // Every 503 is a dependency that is down or busy: say when to ask again.
        if e.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        Reply {
            status: e.status,
            body: e.body(),
            cause: e.cause,
            headers,
        }
    }
}
