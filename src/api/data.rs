//! Data objects and files: `/api/data*`. Today: upload URLs into object storage.

use std::time::Duration;

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::auth::OrgMember;
use crate::domain::validate::{clean_filename, upload_type_allowed};
use crate::error::{ApiError, ApiResult};
use crate::reply::Reply;
use crate::state::AppState;

/// Largest upload through `generate-presigned-url` (the spec's 15 MB).
pub const UPLOAD_LIMIT: u64 = 15 * 1024 * 1024;
/// How long upload and download URLs stay valid.
pub const URL_TTL: Duration = Duration::from_secs(15 * 60);

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PresignBody {
    filename: String,
    #[serde(rename = "contentType")]
    content_type: String,
}

/// `POST /api/data/generate-presigned-url` (OrgMember): a URL that accepts one `PUT` of
/// the file (at most 15 MB, with the given `Content-Type`) for 15 minutes, and a URL
/// that reads it back for as long.
pub async fn generate_presigned_url(
    State(app): State<AppState>,
    g: OrgMember<PresignBody>,
) -> ApiResult {
    let filename = clean_filename(&g.body.filename, "filename")?;
    let ct = g.body.content_type.trim();
    if ct.is_empty() || !ct.contains('/') || ct.len() > 128 || ct.chars().any(|c| c.is_control()) {
        return Err(ApiError::bad_request(
            "`contentType` must be a MIME type such as image/png",
        ));
    }
    if !upload_type_allowed(ct) {
        return Err(ApiError::bad_request(format!(
            "`contentType` {ct} is not accepted: uploads are served from the storage origin, \
             so types a browser runs (HTML, SVG, XML, scripts) are refused (docs/api.md)"
        )));
    }
    let key = format!(
        "orgs/{}/uploads/{}/{filename}",
        g.org.id,
        uuid::Uuid::new_v4().simple()
    );
    let unavailable = |e: crate::storage::StorageError| {
        tracing::error!(error = %e, "object storage");
        ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "object storage is unavailable",
        )
    };
    let url = app
        .objects
        .presign_put(&key, ct, UPLOAD_LIMIT, URL_TTL)
        .await
        .map_err(unavailable)?;
    let download_url = app
        .objects
        .presign_get(&key, URL_TTL)
        .await
        .map_err(unavailable)?;
    Ok(Reply::ok(json!({
        "url": url,
        "method": "PUT",
        "headers": {"Content-Type": ct},
        "key": key,
        "max_bytes": UPLOAD_LIMIT,
        "expires_in": URL_TTL.as_secs(),
        "download_url": download_url,
    })))
}
