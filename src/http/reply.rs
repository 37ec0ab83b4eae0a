//! Success bodies. A handler returns a JSON object; the usage layer (see `usage.rs`)
//! adds `_usage` and serialises it once, so bodies are never parsed twice.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

pub struct Reply {
    pub status: StatusCode,
    pub body: Map<String, Value>,
    /// The cause of a 5xx, for the usage layer's log line.
    pub(crate) cause: Option<String>,
    /// Headers of the answer (the usage layer keeps them).
    pub(crate) headers: axum::http::HeaderMap,
}

/// The cause of a 5xx, carried in the response extensions to the usage layer. (Errors
/// become replies in `error.rs`; replies know nothing of the error type.)
#[derive(Clone, Debug)]
pub struct ErrorCause(pub String);

/// A success body of a known shape: the handler's return type names it, so the OpenAPI
/// document lists its schema (`crate::http::schema`).
pub struct Answer<T>(pub T);

impl<T: Serialize> IntoResponse for Answer<T> {
    /// Serialised straight to bytes (no `Value` tree): the usage layer splices `_usage`
    /// into the object without parsing it.
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(bytes) if bytes.first() == Some(&b'{') => {
                let mut res = StatusCode::OK.into_response();
                res.extensions_mut()
                    .insert(Envelope::Json(bytes::Bytes::from(bytes)));
                res
            }
            _ => Reply::ok(self.0).into_response(),
        }
    }
}

/// An [`Answer`] with `202 Accepted`: the work was taken, and goes on (telemetry events
/// written, a job queued).
pub struct Accepted<T>(pub T);

impl<T: Serialize> IntoResponse for Accepted<T> {
    fn into_response(self) -> Response {
        let mut res = Answer(self.0).into_response();
        *res.status_mut() = StatusCode::ACCEPTED;
        res
    }
}

/// An [`Answer`] with headers of its own (`Location`, `Retry-After`).
pub struct HeadedAnswer<T> {
    pub body: T,
    pub headers: axum::http::HeaderMap,
}

impl<T: Serialize> IntoResponse for HeadedAnswer<T> {
    fn into_response(self) -> Response {
        let mut res = Answer(self.body).into_response();
        res.headers_mut().extend(self.headers);
        res
    }
}

/// A stream of server-sent events (`text/event-stream`) whose `data` are `T` objects:
/// outside the envelope (the usage layer passes a body that is not JSON as it is).
pub struct EventStream<T> {
    pub response: Response,
    pub of: std::marker::PhantomData<T>,
}

impl<T> IntoResponse for EventStream<T> {
    fn into_response(self) -> Response {
        self.response
    }
}

/// An [`Answer`] that holds what only this caller may see: `Cache-Control: private,
/// no-store`.
pub struct PrivateAnswer<T>(pub T);

impl<T: Serialize> IntoResponse for PrivateAnswer<T> {
    fn into_response(self) -> Response {
        let mut res = Answer(self.0).into_response();
        no_store(res.headers_mut());
        res
    }
}

/// The answer of a change recorded for replays (deck changes and credit changes run
/// behind an idempotency key): a `T` the first time, the recorded JSON of that same `T`
/// on a replay; a plain [`Answer`] when no key was sent. Only the document sees `T`, so
/// the one way in for a recorded reply is [`Recorded::of_record`], called only by the
/// runners that are generic in the `T` their work returns (`idempotency::recorded`, the
/// deck changes' `change`): a route's declared answer is what its change returns.
pub struct Recorded<T> {
    sent: Sent,
    of: std::marker::PhantomData<T>,
}

enum Sent {
    /// Built from `T` (no key), straight to bytes.
    Response(Response),
    /// The recorded JSON of a `T`, first time or replayed.
    Reply(Reply),
}

impl<T: Serialize> Recorded<T> {
    /// The recorded reply of a change whose work returned a `T`.
    pub(crate) fn of_record(reply: Reply) -> Self {
        Self {
            sent: Sent::Reply(reply),
            of: std::marker::PhantomData,
        }
    }

    /// Adds to the recorded reply (a `Location` read from its recorded body).
    pub(crate) fn map_reply(self, f: impl FnOnce(Reply) -> Reply) -> Self {
        match self.sent {
            Sent::Reply(r) => Self {
                sent: Sent::Reply(f(r)),
                of: self.of,
            },
            sent @ Sent::Response(_) => Self { sent, of: self.of },
        }
    }
}

impl<T: Serialize> From<Answer<T>> for Recorded<T> {
    fn from(answer: Answer<T>) -> Self {
        Self {
            sent: Sent::Response(answer.into_response()),
            of: std::marker::PhantomData,
        }
    }
}

impl<T> IntoResponse for Recorded<T> {
    fn into_response(self) -> Response {
        match self.sent {
            Sent::Response(r) => r,
            Sent::Reply(r) => r.into_response(),
        }
    }
}

/// Marks a response the usage layer sends as it is, even with an error status: an HTML
/// page (a browser's 404 page) that must not become the JSON error object.
#[derive(Clone, Copy, Debug)]
pub struct AsSent;

/// A `T` answer to an API client, or a page for a browser that asked for HTML (the
/// published deck URL: `Accept` decides). Only the document sees `T`; the page is sent
/// as it is.
pub struct OrPage<T> {
    response: Response,
    of: std::marker::PhantomData<T>,
}

impl<T: Serialize> OrPage<T> {
    pub fn answer(body: T) -> Self {
        Self::page(Answer(body).into_response())
    }
}

impl<T> OrPage<T> {
    pub fn page(response: Response) -> Self {
        Self {
            response,
            of: std::marker::PhantomData,
        }
    }
}

impl<T> IntoResponse for OrPage<T> {
    fn into_response(self) -> Response {
        self.response
    }
}

/// An answer serialised earlier (a cached one): the bytes of a `T` object, sent as they
/// are; `private` adds `Cache-Control: private, no-store` like [`PrivateAnswer`].
pub struct Prebuilt<T> {
    bytes: bytes::Bytes,
    private: bool,
    of: std::marker::PhantomData<T>,
}

/// The first byte of a serialised JSON object.
const OBJECT_START: u8 = b'{';

/// `value` as the bytes of a [`Prebuilt`] answer; `None` if it is not a JSON object.
pub fn prebuild<T: Serialize>(value: &T) -> Option<bytes::Bytes> {
    let bytes = serde_json::to_vec(value).ok()?;
    (bytes.first() == Some(&OBJECT_START)).then(|| bytes.into())
}

impl<T> Prebuilt<T> {
    /// `bytes` must come from [`prebuild`] of a `T`.
    pub fn public(bytes: bytes::Bytes) -> Self {
        Self {
            bytes,
            private: false,
            of: std::marker::PhantomData,
        }
    }
    pub fn private(bytes: bytes::Bytes) -> Self {
        Self {
            private: true,
            ..Self::public(bytes)
        }
    }
}

impl<T> IntoResponse for Prebuilt<T> {
    fn into_response(self) -> Response {
        let mut res = StatusCode::OK.into_response();
        res.extensions_mut().insert(Envelope::Json(self.bytes));
        if self.private {
            no_store(res.headers_mut());
        }
        res
    }
}

/// Carried in the response extensions from the handler to the usage layer: the answer's
/// JSON object, as a map or already serialised (always an object: `{...}`).
#[derive(Clone)]
pub enum Envelope {
    Map(Map<String, Value>),
    Json(bytes::Bytes),
}

impl Reply {
    /// A failure of ours: `internal error`, with its cause for the log (as
    /// `ApiError::internal`).
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        let mut body = Map::new();
        body.insert("error".into(), Value::Bool(true));
        body.insert("message".into(), Value::from("internal error"));
        let mut reply = Self::with_status(StatusCode::INTERNAL_SERVER_ERROR, body);
        reply.cause = Some(cause.to_string());
        reply
    }

    pub fn with_status(status: StatusCode, body: Map<String, Value>) -> Self {
        Self {
            status,
            body,
            cause: None,
            headers: Default::default(),
        }
    }

    /// `value` must serialise to a JSON object (the spec's one-object rule).
    pub fn ok(value: impl Serialize) -> Self {
        Self::status(StatusCode::OK, value)
    }

    pub fn status(status: StatusCode, value: impl Serialize) -> Self {
        let body = match serde_json::to_value(value) {
            Ok(Value::Object(m)) => m,
            Ok(other) => {
                let mut m = Map::new();
                m.insert("data".into(), other);
                m
            }
            Err(e) => return Reply::internal(e),
        };
        Self::with_status(status, body)
    }
}

impl Reply {
    /// Adds a header whose value is made at run time (a `Location`).
    pub fn header_value(
        mut self,
        name: axum::http::HeaderName,
        value: axum::http::HeaderValue,
    ) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Adds a header to the answer.
    pub fn header(mut self, name: &'static str, value: &'static str) -> Self {
        self.headers.insert(
            axum::http::HeaderName::from_static(name),
            axum::http::HeaderValue::from_static(value),
        );
        self
    }
}

fn no_store(headers: &mut axum::http::HeaderMap) {
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("private, no-store"),
    );
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut res = (self.status, self.headers).into_response();
        res.extensions_mut().insert(Envelope::Map(self.body));
        if let Some(cause) = self.cause {
            res.extensions_mut().insert(ErrorCause(cause));
        }
        res
    }
}

/// 302 to a short-lived signed storage URL: `Referrer-Policy: no-referrer` (the URL is a
/// credential) and `Cache-Control: no-store`. A type of its own so that the OpenAPI
/// document says 302 and `Location` for the routes that answer it.
pub struct SignedRedirect(Response);

impl SignedRedirect {
    pub fn to(url: &str) -> Self {
        use axum::http::{header, HeaderValue};
        let Ok(location) = HeaderValue::from_str(url) else {
            return Self(
                Reply::internal("a storage URL that is not a header value").into_response(),
            );
        };
        Self(
            (
                StatusCode::FOUND,
                [
                    (header::LOCATION, location),
                    (
                        header::REFERRER_POLICY,
                        HeaderValue::from_static("no-referrer"),
                    ),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                ],
            )
                .into_response(),
        )
    }
}

impl IntoResponse for SignedRedirect {
    fn into_response(self) -> Response {
        self.0
    }
}
