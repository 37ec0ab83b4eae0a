//! Presigned uploads: the rules shared by data uploads and analytics attachments (the
//! size bound, accepted types, and the answer when storage is down).

use crate::domain::validate::upload_type_allowed;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Largest upload through `generate-presigned-url` (the spec's 15 MB).
pub const UPLOAD_LIMIT: u64 = 15 * 1024 * 1024;
/// When object storage fails: 503, the cause logged.
pub fn unavailable(e: crate::storage::StorageError) -> ApiError {
    tracing::error!(error = %e, "object storage");
    ApiError::service_unavailable("object storage is unavailable")
}

/// A MIME type a client may upload (types a browser would run are refused: L4).
pub fn content_type(raw: &str, field: &str) -> ApiResult<String> {
    let ct = raw.trim();
    if ct.is_empty() || !ct.contains('/') || ct.len() > 128 || ct.chars().any(|c| c.is_control()) {
        return Err(ApiError::bad_request(format!(
            "`{field}` must be a MIME type such as image/png"
        )));
    }
    if !upload_type_allowed(ct) {
        return Err(ApiError::bad_request(format!(
            "`{field}` {ct} is not accepted: uploads are served from the storage origin, \
             so types a browser runs (HTML, SVG, XML, scripts) are refused (docs/api.md)"
        )));
    }
    Ok(ct.to_owned())
}

/// What a presigned upload URL is bound to: `(max bytes, exact)`. The declared size when
/// sent (signed exactly), else 15 MB; a presigned S3 PUT can only bound the size by
/// signing it exactly, so S3 storage needs `size` (400 without).
pub fn upload_bound(app: &AppState, size: Option<u64>) -> ApiResult<(u64, bool)> {
    match declared_size(size)? {
        Some(n) => Ok((n, true)),
        None if app.objects.backend() == "s3" => Err(ApiError::bad_request(
            "send `size` (the file's bytes, at most 15 MB): this server's S3 storage \
             enforces the limit through a signed Content-Length",
        )),
        None => Ok((UPLOAD_LIMIT, false)),
    }
}

/// A declared upload size: 1 to 15 MB (413 beyond).
pub fn declared_size(size: Option<u64>) -> ApiResult<Option<u64>> {
    match size {
        Some(n) if !(1..=UPLOAD_LIMIT).contains(&n) => Err(ApiError::too_large(format!(
            "`size` must be 1 to {UPLOAD_LIMIT} bytes (15 MB)"
        ))
        .with("max_bytes", UPLOAD_LIMIT)),
        other => Ok(other),
    }
}
