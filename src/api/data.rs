//! Data objects and files: `/api/data*`. Today: upload URLs into object storage.

use std::time::Duration;

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::auth::OrgMember;
use crate::error::{ApiError, ApiResult};
use crate::reply::Reply;
use crate::state::AppState;

/// Largest upload through `generate-presigned-url` (the spec's 15 MB).
pub const UPLOAD_LIMIT: u64 = 15 * 1024 * 1024;
/// How long upload and download URLs stay valid.
pub const URL_TTL: Duration = Duration::from_secs(15 * 60);

#[derive(Deserialize)]
pub struct PresignBody {
    filename: String,
    #[serde(rename = "contentType")]
    content_type: String,
}

/// A file name kept to `[A-Za-z0-9._-]`, at most 128 characters; `field` names the
/// request field in the error.
pub fn clean_filename(raw: &str, field: &str) -> Result<String, ApiError> {
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches(|c| c == '.' || c == '-').to_owned();
    if name.is_empty() || name.len() > 128 {
        return Err(ApiError::bad_request(format!(
            "`{field}` must have 1 to 128 usable characters"
        )));
    }
    Ok(name)
}

/// Content types an organization may upload (finding L4). Objects are served from the
/// bucket's origin with the type they were uploaded with, so anything a browser would
/// execute there (HTML, SVG, XML, scripts) is refused; parameters such as `charset`
/// are allowed.
pub fn upload_type_allowed(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let Some((top, sub)) = essence.split_once('/') else {
        return false;
    };
    let token = |t: &str| {
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    if !token(top) || !token(sub) {
        return false;
    }
    match top {
        "audio" | "video" | "font" => true,
        "image" => matches!(
            sub,
            "png" | "jpeg" | "gif" | "webp" | "avif" | "bmp" | "tiff" | "heic" | "heif" | "x-icon"
        ),
        "text" => matches!(sub, "plain" | "csv" | "markdown" | "tab-separated-values"),
        "application" => {
            matches!(
                sub,
                "pdf"
                    | "json"
                    | "zip"
                    | "gzip"
                    | "x-tar"
                    | "x-7z-compressed"
                    | "octet-stream"
                    | "msword"
                    | "rtf"
                    | "epub+zip"
                    | "x-ndjson"
            ) || (sub.starts_with("vnd.") && !sub.ends_with("+xml") && !sub.contains("html"))
        }
        _ => false,
    }
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
