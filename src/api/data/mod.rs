//! Data objects and files: `/api/data*`. This file: uploaded files (a record per
//! presigned upload, listed and deleted by its uploader) and the administrators'
//! public distribution objects; localizations, prices and things have their own files.

mod localizations;
mod prices;
mod things;

pub use localizations::*;
pub use prices::*;
pub use things::*;

use crate::http::request::{Limit, Offset};
use std::time::Duration;

use axum::extract::{Query, State};
use serde::Deserialize;

use crate::db::files::{self as store, FileRow, NewFile};
use crate::domain::uploads::{content_type, declared_size, upload_bound, UPLOAD_LIMIT};
use crate::domain::validate::clean_filename;
use crate::http::auth::{OrgMember, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::Answer;
use crate::state::AppState;
use crate::wire::data::{File, PublicDeleted, PublicUpload, Upload, UploadMethod};
use crate::wire::{Deleted, Page, True};

/// How long upload and download URLs stay valid.
pub const URL_TTL: Duration = Duration::from_secs(15 * 60);

/// Largest public distribution object (`admin/upload`).
pub const PUBLIC_LIMIT: u64 = 1 << 30;

/// Where an organization's upload goes: a fresh folder per upload, so names never clash.
fn upload_key(org_id: &str, filename: &str) -> String {
    format!(
        "orgs/{org_id}/uploads/{}/{filename}",
        uuid::Uuid::new_v4().simple()
    )
}

/// Where the file of a catalog upload goes: under the organization's catalog, the only
/// place (with its uploads) a download link copies from (security round 2, H2).
fn catalog_key(org_id: &str, filename: &str) -> String {
    format!(
        "catalog/{org_id}/{}/{filename}",
        uuid::Uuid::new_v4().simple()
    )
}

/// Largest catalog upload (a product file sold through downloads).
pub const CATALOG_LIMIT: u64 = 1 << 30;

#[derive(Deserialize, schemars::JsonSchema, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A member's file (at most 15 MB), under `orgs/<organization id>/uploads/`.
    #[default]
    Upload,
    /// A product file for downloads (organization admins; `size` required, at most 1
    /// GiB), under `catalog/<organization id>/`: put the answer's `key` into an item's
    /// `data.download_asset.key`.
    Catalog,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PresignBody {
    filename: String,
    #[serde(rename = "contentType")]
    #[schemars(
        regex(
            pattern = r"^\s*((audio|video|font)/[a-z0-9!#$&^_.+-]+|image/(png|jpeg|gif|webp|avif|bmp|tiff|heic|heif|x-icon)|text/(plain|csv|markdown|tab-separated-values)|application/(pdf|json|zip|gzip|x-tar|x-7z-compressed|octet-stream|msword|rtf|epub\+zip|x-ndjson)) *(;[^\u0000-\u001f\u007f-\u009f]*)?\s*$"
        ),
        length(max = 128)
    )]
    content_type: String,
    /// The file's exact size in bytes (at most 15 MB). With it the URL accepts only that
    /// many bytes on every storage backend (S3 signs `Content-Length`); without it the
    /// local backend still refuses more than 15 MB.
    size: Option<u64>,
    /// `upload` (default) or `catalog`.
    #[serde(default)]
    purpose: Purpose,
}

/// The key and size bound of a presigned upload: `(key, max bytes, exact)`.
async fn upload_target(
    app: &AppState,
    g: &OrgMember<PresignBody>,
    filename: &str,
) -> ApiResult<(String, u64, bool)> {
    if g.body.purpose == Purpose::Upload {
        let (max, exact) = upload_bound(app.objects.backend() == "s3", g.body.size)?;
        return Ok((upload_key(&g.org.id, filename), max, exact));
    }
    if !app.domain.orgs.org_admin(&g.caller, &g.org.id).await? {
        return Err(ApiError::forbidden(
            "catalog uploads are for the organization's admins",
        ));
    }
    match g.body.size {
        Some(n) if (1..=CATALOG_LIMIT).contains(&n) => {
            Ok((catalog_key(&g.org.id, filename), n, true))
        }
        Some(_) => Err(ApiError::bad_request(format!(
            "`size` must be 1 to {CATALOG_LIMIT} bytes (1 GiB) for a catalog upload"
        ))
        .with("max_bytes", CATALOG_LIMIT)),
        None => Err(ApiError::bad_request(
            "a catalog upload needs `size` (the file's exact bytes)",
        )),
    }
}

/// `POST /api/data/generate-presigned-url` (OrgMember): a URL that accepts one `PUT` of
/// the file (at most 15 MB, with the given `Content-Type`) for 15 minutes, and a URL
/// that reads it back for as long.
pub async fn generate_presigned_url(
    State(app): State<AppState>,
    g: OrgMember<PresignBody>,
) -> ApiResult<Answer<Upload>> {
    let filename = clean_filename(&g.body.filename, "filename")?;
    let ct = content_type(&g.body.content_type, "contentType")?;
    let (key, max, exact) = upload_target(&app, &g, &filename).await?;
    let url = app
        .objects
        .presign_put(&key, &ct, max, exact, URL_TTL)
        .await?;
    let download_url = app.objects.presign_get(&key, URL_TTL).await?;
    let id = store::create(
        &app.db,
        &NewFile {
            user_id: &g.caller.id,
            organization_id: &g.org.id,
            object_key: &key,
            filename: &filename,
            content_type: &ct,
            max_bytes: max as i64,
            provider: app.objects.backend(),
        },
    )
    .await?;
    Ok(Answer(Upload {
        id,
        url,
        method: UploadMethod::Put,
        headers: [("Content-Type".to_owned(), ct)].into(),
        key,
        bucket: None,
        max_bytes: max,
        expires_in: URL_TTL.as_secs(),
        download_url,
    }))
}

/// `POST /api/data/generate-presigned-url-gcs` (OrgMember): as `generate-presigned-url`,
/// on Google Cloud Storage (V4 signed URLs). The PUT URL signs
/// `x-goog-content-length-range: 0,<max>`, so GCS itself refuses a larger body; the
/// client sends the returned `headers` as they are. 503 when `PLINTH_GCS_*` is unset.
pub async fn generate_presigned_url_gcs(
    State(app): State<AppState>,
    g: OrgMember<PresignBody>,
) -> ApiResult<Answer<Upload>> {
    if g.body.purpose == Purpose::Catalog {
        return Err(ApiError::bad_request(
            "catalog files live in the configured object store: use \
             /api/data/generate-presigned-url with `purpose: \"catalog\"`",
        ));
    }
    let gcs = app.gcs.as_ref().ok_or_else(|| {
        ApiError::not_offered(format!(
            "Google Cloud Storage is not offered by this server: an operator sets {}",
            crate::adapters::gcs::VARIABLES
        ))
    })?;
    let filename = clean_filename(&g.body.filename, "filename")?;
    let ct = content_type(&g.body.content_type, "contentType")?;
    let (min, max) = declared_size(g.body.size)?.map_or((0, UPLOAD_LIMIT), |n| (n, n));
    let key = upload_key(&g.org.id, &filename);
    let mut headers = std::collections::BTreeMap::new();
    headers.insert("content-type".to_owned(), ct.clone());
    headers.insert(
        "x-goog-content-length-range".to_owned(),
        format!("{min},{max}"),
    );
    let url = gcs.url("PUT", &key, &headers, URL_TTL);
    let download_url = gcs.url("GET", &key, &Default::default(), URL_TTL);
    let id = store::create(
        &app.db,
        &NewFile {
            user_id: &g.caller.id,
            organization_id: &g.org.id,
            object_key: &key,
            filename: &filename,
            content_type: &ct,
            max_bytes: max as i64,
            provider: "gcs",
        },
    )
    .await?;
    Ok(Answer(Upload {
        id,
        url,
        method: UploadMethod::Put,
        headers: [
            ("Content-Type".to_owned(), ct),
            (
                "x-goog-content-length-range".to_owned(),
                format!("{min},{max}"),
            ),
        ]
        .into(),
        key,
        bucket: Some(gcs.bucket.clone()),
        max_bytes: max,
        expires_in: URL_TTL.as_secs(),
        download_url,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct FilesQuery {
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

async fn file_view(app: &AppState, f: &FileRow) -> ApiResult<File> {
    let url = match (&app.gcs, f.provider.as_str()) {
        (Some(gcs), "gcs") => Some(gcs.url("GET", &f.object_key, &Default::default(), URL_TTL)),
        (None, "gcs") => None,
        _ => Some(app.objects.presign_get(&f.object_key, URL_TTL).await?),
    };
    Ok(File {
        id: f.id.clone(),
        filename: f.filename.clone(),
        content_type: f.content_type.clone(),
        key: f.object_key.clone(),
        max_bytes: f.max_bytes,
        domain: f.domain.clone(),
        organization_id: f.organization_id.clone(),
        provider: f.provider.clone(),
        created_at: f.created_at,
        url,
        url_expires_in: URL_TTL.as_secs(),
    })
}

/// `GET /api/data` (V10): the caller's uploaded files, newest first, each with a read URL
/// valid 15 minutes (an upload that never happened answers that URL with 404).
pub async fn list(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Query(q): Query<FilesQuery>,
) -> ApiResult<Answer<Page<File>>> {
    let (limit, offset) = (q.limit.get(), q.offset.get());
    let (rows, total) = store::of_user(&app.db, &caller.id, limit, offset).await?;
    let mut data = Vec::with_capacity(rows.len());
    for f in &rows {
        data.push(file_view(&app, f).await?);
    }
    Ok(Answer(Page::new(data, total, limit, offset)))
}

/// `POST /api/data/delete` (Key; the uploader or a platform admin, 404 for anyone
/// else): the object, then its record. If storage fails, the record stays (503) so the
/// delete can be retried.
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    let f = store::get(&app.db, &body.id)
        .await?
        .filter(|f| f.user_id == caller.id || caller.is_admin())
        .ok_or_else(|| ApiError::not_found("file not found"))?;
    if f.provider == "gcs" {
        delete_from_gcs(&app, &f).await?;
    } else {
        app.objects.delete(&f.object_key).await?;
    }
    store::delete(&app.db, &f.id).await?;
    Ok(Answer(Deleted::new(f.id)))
}

/// Deletes a GCS upload through a signed DELETE URL (no OAuth token needed); a missing
/// object counts as deleted.
async fn delete_from_gcs(app: &AppState, f: &FileRow) -> ApiResult<()> {
    let gcs = app.gcs.as_ref().ok_or_else(|| {
        ApiError::not_offered(format!(
            "Google Cloud Storage is not offered by this server: an operator sets {}",
            crate::adapters::gcs::VARIABLES
        ))
    })?;
    let url = gcs.url(
        "DELETE",
        &f.object_key,
        &Default::default(),
        Duration::from_secs(60),
    );
    let res = reqwest::Client::new()
        .delete(url)
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .map_err(|e| crate::adapters::storage::StorageError(e.to_string()))?;
    if res.status().is_success() || res.status() == reqwest::StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(ApiError::from(crate::adapters::storage::StorageError(
            format!("GCS answered {} to a delete", res.status()),
        )))
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PublicObject {
    /// One or more path segments (`releases/v2`) of letters, digits, `.`, `_`, `-`.
    #[schemars(regex(
        pattern = r"^\s*/*[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*/*\s*$"
    ))]
    folder: String,
    /// The file name.
    #[schemars(regex(pattern = r"[A-Za-z0-9_]"))]
    file: String,
}

/// An upload's object and its type (a delete names only the object).
#[derive(Deserialize, schemars::JsonSchema)]
pub struct PublicUploadBody {
    #[serde(flatten)]
    object: PublicObject,
    /// Default `application/octet-stream`.
    #[serde(rename = "contentType")]
    #[schemars(
        regex(
            pattern = r"^\s*((audio|video|font)/[a-z0-9!#$&^_.+-]+|image/(png|jpeg|gif|webp|avif|bmp|tiff|heic|heif|x-icon)|text/(plain|csv|markdown|tab-separated-values)|application/(pdf|json|zip|gzip|x-tar|x-7z-compressed|octet-stream|msword|rtf|epub\+zip|x-ndjson)) *(;[^\u0000-\u001f\u007f-\u009f]*)?\s*$"
        ),
        length(max = 128)
    )]
    content_type: Option<String>,
}

/// `public/<folder>/<file>`, checked.
fn public_key(o: &PublicObject) -> ApiResult<String> {
    let folder = o.folder.trim().trim_matches('/');
    let key = format!("public/{folder}/{}", clean_filename(&o.file, "file")?);
    if folder.is_empty() || !crate::adapters::storage::valid_key(&key) {
        return Err(ApiError::bad_request(
            "`folder` must be path segments of letters, digits, `.`, `_` and `-`",
        ));
    }
    Ok(key)
}

/// `POST /api/data/admin/upload` (Admin100): a PUT URL for a public distribution object
/// at `public/<folder>/<file>` (the same folder and file overwrite); no file record.
pub async fn admin_upload(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<PublicUploadBody>,
) -> ApiResult<Answer<PublicUpload>> {
    let key = public_key(&body.object)?;
    let ct = match &body.content_type {
        Some(ct) => content_type(ct, "contentType")?,
        None => "application/octet-stream".to_owned(),
    };
    let url = app
        .objects
        .presign_put(&key, &ct, PUBLIC_LIMIT, false, URL_TTL)
        .await?;
    Ok(Answer(PublicUpload {
        url,
        method: UploadMethod::Put,
        headers: [("Content-Type".to_owned(), ct)].into(),
        public_url: app.objects.public_url(&key),
        key,
        max_bytes: PUBLIC_LIMIT,
        expires_in: URL_TTL.as_secs(),
    }))
}

/// `POST /api/data/admin/delete` (Admin100): deletes `public/<folder>/<file>`.
pub async fn admin_delete(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<PublicObject>,
) -> ApiResult<Answer<PublicDeleted>> {
    let key = public_key(&body)?;
    app.objects.delete(&key).await?;
    Ok(Answer(PublicDeleted {
        success: True,
        key,
        deleted: True,
    }))
}
