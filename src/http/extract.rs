//! Request-body extraction with the API's error envelope. The whole body is one JSON
//! object (Conventions 1); an empty body counts as `{}` so that endpoints without
//! required fields accept a bare POST.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::http::error::ApiError;
use crate::json_depth;

pub struct JsonBody<T>(pub T);

/// The body of the many endpoints that take just an `id`.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct IdBody {
    pub id: String,
}

/// The request's `Idempotency-Key` header, for the routes that honour it outside the
/// slide routes (credit changes, checkouts, purchases): 1 to 255 visible ASCII
/// characters, else a 400. Taking it as an argument is what lists the header in the
/// OpenAPI document for the route.
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, ApiError> {
        let header = parts.headers.get(crate::http::idempotency::HEADER);
        crate::http::idempotency::header_key(header).map(IdempotencyKey)
    }
}

/// A body with no fields of its own (the organization guards still read theirs).
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoFields {}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_json_bytes(req, state).await?;
        // The usual case straight from the bytes; anything it refuses goes the long way
        // (through a `Value`), which names the offending field, so answers are the same.
        if bytes.trim_ascii_start().first() == Some(&b'{') {
            if let Ok(value) = serde_json::from_slice::<T>(&bytes) {
                return Ok(JsonBody(value));
            }
        }
        Ok(JsonBody(from_object(parse_object(&bytes)?)?))
    }
}

/// For a route that takes no fields: a body, when sent, must still be a JSON object
/// (`{}` is fine; its keys are ignored), with a JSON content type, as
/// the OpenAPI document says. The usage layer has already read the body into memory.
pub async fn object_or_empty(
    req: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = req.into_parts();
    let req = Request::from_parts(parts.clone(), body);
    let bytes = match read_json_bytes(req, &()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = parse_object(&bytes) {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Reads the body as one JSON object (`{}` when empty), checking the content type.
pub async fn read_object<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<Map<String, Value>, ApiError> {
    parse_object(&read_json_bytes(req, state).await?)
}

/// `application/json` or a `+json` type, in any case (compared without allocating: this
/// runs on every JSON request).
fn json_type(essence: &str) -> bool {
    let suffix = essence
        .len()
        .checked_sub(5)
        .filter(|&at| essence.is_char_boundary(at));
    essence.eq_ignore_ascii_case("application/json")
        || suffix.is_some_and(|at| essence[at..].eq_ignore_ascii_case("+json"))
}

/// The raw body of a JSON request, after the content-type check.
pub async fn read_json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !json_type(essence) {
            let essence = essence.to_ascii_lowercase();
            return Err(ApiError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("unsupported Content-Type `{essence}`: send application/json"),
            ));
        }
    }
    let bytes = Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(e.status(), "request body is larger than the 1 MiB limit")
        } else {
            ApiError::bad_request(format!("could not read the request body: {e}"))
        }
    })?;
    // Before any parser or walk sees it: whatever is accepted here can be stored, merged
    // and read back (security round 2, H1).
    if json_depth::depth_of_text(&bytes) > json_depth::MAX_DEPTH {
        return Err(ApiError::bad_request(format!(
            "the request body nests JSON deeper than the limit of {} levels",
            json_depth::MAX_DEPTH
        ))
        .with("max_depth", json_depth::MAX_DEPTH));
    }
    Ok(bytes)
}

/// One JSON object (`{}` for an empty body). Whitespace alone is not JSON: a 400, as
/// any other body that is not JSON (the OpenAPI document says so; schemathesis checks it).
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request(
            "the request body must be a JSON object",
        )),
        Err(e) => Err(ApiError::bad_request(format!("malformed JSON: {e}"))),
    }
}

/// Typed view of a body object; the error names the offending field.
pub fn from_object<T: DeserializeOwned>(object: Map<String, Value>) -> Result<T, ApiError> {
    let mut value = Value::Object(object);
    whole_numbers_as_integers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ApiError::bad_request(format!("invalid request body: {inner}"))
        } else {
            ApiError::bad_request(format!("invalid field `{path}`: {inner}"))
        }
    })
}

/// `174.0` is an integer to JSON Schema (and to the OpenAPI document's clients), but
/// serde refuses it for an `i64`: every whole number becomes an integer before a body is
/// read into its type. Walked with a stack (the body is at most 100 levels deep anyway).
fn whole_numbers_as_integers(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
                    *v = Value::from(f as i64);
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(fields) => stack.extend(fields.values_mut()),
            _ => {}
        }
    }
}

/// An integer sent as a JSON number or, in a query string read into a body (the GET
/// form of the organization routes), as a numeral.
fn lenient_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    use serde::de::Error;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| D::Error::custom("expected an integer")),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| D::Error::custom("expected an integer")),
        Some(_) => Err(D::Error::custom("expected an integer")),
    }
}

/// A page bound (`Limit`, `Offset`) sent as a number or a numeral (see `lenient_i64`).
pub fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: crate::http::request::Bound,
{
    T::from_count(lenient_i64(d)?).map_err(serde::de::Error::custom)
}

/// A field where `null` means something (clear it) and absence means "no change": with
/// `#[serde(default, deserialize_with = "crate::http::extract::present")]`, absent is `None`,
/// `null` is `Some(None)`.
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The client's address as a handler extracts it (`None` without a socket, in process).
pub struct ClientAddr(pub Option<std::net::IpAddr>);

impl axum::extract::FromRequestParts<crate::state::AppState> for ClientAddr {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &crate::state::AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>();
        Ok(ClientAddr(peer.map(|c| {
            crate::http::client_ip::client_ip(
                c.0.ip(),
                &parts.headers,
                &app.opts.server.trusted_proxies,
            )
        })))
    }
}

#[cfg(test)]
mod content_type_tests {
    #[test]
    fn json_types_in_any_case_and_nothing_else() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/vnd.api+json",
            "APPLICATION/LD+JSON",
            "+json",
        ] {
            assert!(super::json_type(ok), "{ok}");
        }
        for no in [
            "",
            "text/plain",
            "application/jsonx",
            "json",
            "application/x-www-form-urlencoded",
            "é+jso",
        ] {
            assert!(!super::json_type(no), "{no}");
        }
    }
}
