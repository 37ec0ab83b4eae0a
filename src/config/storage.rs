//! `Storage`: the object stores (S3-compatible, and GCS for presigned URLs).

use std::path::PathBuf;

use clap::Args;

/// Object storage: an S3-compatible bucket (else files under the data directory) and the
/// GCS bucket that `generate-presigned-url-gcs` signs for.
#[derive(Args, Debug, Clone)]
pub struct Storage {
    /// Google Cloud Storage bucket for `generate-presigned-url-gcs` (with
    /// PLINTH_GCS_CREDENTIALS; unset, that endpoint answers 503).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_GCS_BUCKET",
        global = true
    )]
    pub gcs_bucket: Option<String>,
    /// The service-account key JSON file Google issues (its `client_email` and
    /// `private_key` sign the URLs).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_GCS_CREDENTIALS",
        global = true
    )]
    pub gcs_credentials: Option<PathBuf>,
    /// Another GCS endpoint, e.g. an emulator [default: https://storage.googleapis.com]
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_GCS_ENDPOINT",
        global = true
    )]
    pub gcs_endpoint: Option<String>,
    /// S3-compatible object storage: bucket name (unset: files under <data-dir>/objects).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_BUCKET",
        global = true
    )]
    pub s3_bucket: Option<String>,
    /// S3 endpoint URL, e.g. http://127.0.0.1:9000.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_ENDPOINT",
        global = true
    )]
    pub s3_endpoint: Option<String>,
    /// S3 region.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_REGION",
        default_value = "us-east-1",
        global = true
    )]
    pub s3_region: String,
    /// S3 access key id.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_ACCESS_KEY_ID",
        hide_env_values = true,
        global = true
    )]
    pub s3_access_key_id: Option<String>,
    /// S3 secret access key.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_SECRET_ACCESS_KEY",
        hide_env_values = true,
        global = true
    )]
    pub s3_secret_access_key: Option<String>,
    /// Path-style S3 URLs (http://endpoint/bucket/key), as most self-hosted servers need.
    #[arg(help_heading = "Storage", long, env = "PLINTH_S3_PATH_STYLE", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub s3_path_style: bool,
}
