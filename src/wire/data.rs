//! `/api/data*` answers (uploads and distribution objects; things, localizations and
//! prices have their own modules).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::True;

crate::text_enum! {
    /// The HTTP method an upload URL takes.
    pub enum UploadMethod {
        Put = "PUT",
    }
}

/// A presigned upload: one `PUT` of the file to `url` with `headers`.
#[derive(Serialize, JsonSchema)]
pub struct Upload {
    /// The file record.
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub url: String,
    pub method: UploadMethod,
    /// Send these with the `PUT`, as they are.
    pub headers: BTreeMap<String, String>,
    /// The object's key (`orgs/<organization id>/uploads/...`, or `catalog/...`).
    pub key: String,
    /// The GCS bucket (the GCS route only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    pub max_bytes: u64,
    /// Seconds both URLs stay valid.
    pub expires_in: u64,
    /// Reads the object back.
    pub download_url: String,
}

/// An uploaded file's record.
#[derive(Serialize, JsonSchema)]
pub struct File {
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub filename: String,
    pub content_type: String,
    pub key: String,
    pub max_bytes: i64,
    pub domain: Option<String>,
    pub organization_id: Option<String>,
    /// `local`, `s3` or `gcs`.
    pub provider: String,
    pub created_at: DateTime<Utc>,
    /// Reads the object (`null` for a GCS upload when GCS is no longer configured).
    pub url: Option<String>,
    pub url_expires_in: u64,
}

/// `admin/upload`: a `PUT` URL for a public distribution object.
#[derive(Serialize, JsonSchema)]
pub struct PublicUpload {
    pub url: String,
    pub method: UploadMethod,
    pub headers: BTreeMap<String, String>,
    /// `public/<folder>/<file>`.
    pub key: String,
    pub max_bytes: u64,
    pub expires_in: u64,
    /// Reads it without a signature.
    pub public_url: String,
}

/// `admin/delete`.
#[derive(Serialize, JsonSchema)]
pub struct PublicDeleted {
    pub success: True,
    pub key: String,
    pub deleted: True,
}
