//! Presigned uploads: the rules shared by data uploads and analytics attachments (the
//! size bound, accepted types, and the answer when storage is down).

use crate::domain::validate::upload_type_allowed;
use crate::domain::Invalid;

/// Largest upload through `generate-presigned-url` (the spec's 15 MB).
pub const UPLOAD_LIMIT: u64 = 15 * 1024 * 1024;

/// Why an upload is refused or cannot be offered.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A declared size of 0 or beyond [`UPLOAD_LIMIT`] (a 400 naming the limit).
    #[error("`size` must be 1 to {UPLOAD_LIMIT} bytes (15 MB)")]
    TooLarge,
    /// Object storage failed (a 503; the cause is logged, never sent).
    #[error("object storage is unavailable")]
    Storage(#[from] crate::adapters::storage::StorageError),
}

/// A MIME type a client may upload (types a browser would run are refused: L4).
pub fn content_type(raw: &str, field: &str) -> Result<String, Invalid> {
    let ct = raw.trim();
    if ct.is_empty() || !ct.contains('/') || ct.len() > 128 || ct.chars().any(|c| c.is_control()) {
        return Err(Invalid::new(format!(
            "`{field}` must be a MIME type such as image/png"
        )));
    }
    if !upload_type_allowed(ct) {
        return Err(Invalid::new(format!(
            "`{field}` {ct} is not accepted: uploads are served from the storage origin, \
             so types a browser runs (HTML, SVG, XML, scripts) are refused (docs/api.md)"
        )));
    }
    Ok(ct.to_owned())
}

/// What a presigned upload URL is bound to: `(max bytes, exact)`. The declared size when
/// sent (signed exactly), else 15 MB; a presigned S3 PUT can only bound the size by
/// signing it exactly, so S3 storage (`signed_size_only`) needs `size` (400 without).
pub fn upload_bound(signed_size_only: bool, size: Option<u64>) -> Result<(u64, bool), UploadError> {
    match declared_size(size)? {
        Some(n) => Ok((n, true)),
        None if signed_size_only => Err(Invalid::new(
            "send `size` (the file's bytes, at most 15 MB): this server's S3 storage \
             enforces the limit through a signed Content-Length",
        )
        .into()),
        None => Ok((UPLOAD_LIMIT, false)),
    }
}

/// A declared upload size: 1 to 15 MB (a 400 otherwise).
pub fn declared_size(size: Option<u64>) -> Result<Option<u64>, UploadError> {
    match size {
        Some(n) if !(1..=UPLOAD_LIMIT).contains(&n) => Err(UploadError::TooLarge),
        other => Ok(other),
    }
}
