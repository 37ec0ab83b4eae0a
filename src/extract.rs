//! Request-body extraction with the API's error envelope. The whole body is one JSON
//! object (Conventions 1); an empty body counts as `{}` so that endpoints without
//! required fields accept a bare POST.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
            let essence = ct.split(';').next().unwrap_or("").trim();
            if !(essence == "application/json" || essence.ends_with("+json")) {
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
        let value: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Default::default())
        } else {
            serde_json::from_slice(&bytes)
                .map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?
        };
        if !value.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let parsed = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                ApiError::bad_request(format!("invalid request body: {inner}"))
            } else {
                ApiError::bad_request(format!("invalid field `{path}`: {inner}"))
            }
        })?;
        Ok(JsonBody(parsed))
    }
}
