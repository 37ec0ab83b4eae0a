//! Status and utility: `GET /api/status`, `POST /api/aes`, `POST /api/404`.

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::reply::Reply;
use crate::state::AppState;

/// Health of the server and each adapter. Always 200 while the server accepts requests;
/// `ok` says whether every service answered.
pub async fn status(State(app): State<AppState>) -> ApiResult {
    let (db_ok, queue, storage_ok) =
        tokio::join!(app.db.ping(), app.queue.health(), app.objects.healthy());
    let mail = app.mail.describe();
    let all_ok = db_ok && queue.ok && storage_ok && mail.ok;
    Ok(Reply::ok(json!({
        "ok": all_ok,
        "status": if all_ok { "ok" } else { "degraded" },
        "version": env!("CARGO_PKG_VERSION"),
        "api_version": "2.0.4",
        "services": {
            "database": {"backend": app.db.backend(), "ok": db_ok},
            "queue": queue,
            "storage": {"backend": app.objects.backend(), "location": app.objects.location(), "ok": storage_ok},
            "mail": mail,
            "payments": {"provider": app.payments.name(), "ok": true},
        },
    })))
}

#[derive(Deserialize)]
pub struct AesBody {
    /// Optional text to round-trip; a random probe otherwise.
    text: Option<String>,
}

/// A real AES-256-CTR round trip with the configured master key.
pub async fn aes(State(app): State<AppState>, JsonBody(body): JsonBody<AesBody>) -> ApiResult {
    let plaintext = body
        .text
        .unwrap_or_else(|| hex::encode(crate::crypto::random_bytes::<16>()));
    let ciphertext = app.key.encrypt(plaintext.as_bytes());
    let decrypted = app
        .key
        .decrypt(&ciphertext)
        .ok_or_else(|| ApiError::internal("AES round trip produced undecodable ciphertext"))?;
    let matched = decrypted == plaintext.as_bytes();
    Ok(Reply::ok(json!({
        "success": matched,
        "matched": matched,
        "algorithm": "AES-256-CTR",
        "ciphertext": ciphertext,
    })))
}

/// The spec's not-found handler.
pub async fn not_found() -> ApiError {
    ApiError::not_found("not found")
}
