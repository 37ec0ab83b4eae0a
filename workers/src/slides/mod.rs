//! Slide jobs: deck export (PDF, PNG, HTML) and image validation. The API's tables hold
//! the status clients poll; the queue only says "run job X". Storage and the database are
//! reached through [`SlideEnv`], which the server implements.
//!
//! Every handler is safe to run twice, even at once in two processes (apalis delivers at
//! least once: a job whose worker died or stalled past its heartbeats is handed to
//! another worker):
//! - a run of an export holds a *lease* on its row (owner and expiry, renewed while it
//!   works): it starts only on a pending job or one whose lease lapsed, and its progress
//!   and its end are conditional on still holding it, so a stale duplicate stops at its
//!   next step;
//! - each run is an attempt with its own artifact keys (`.../jobs/<job>/<attempt>/...`),
//!   published by the one conditional update that ends the job; a run that does not
//!   publish deletes its own objects, never another attempt's, and the publishing run
//!   clears the objects of earlier attempts (which can no longer publish);
//! - an image check's verdict is written only while the asset is still `validating`.

mod bundle;
mod export;
mod image;
mod output;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::BoxDynError;
use futures::future::BoxFuture;
use plinth_slides::Deck;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::job::{Job, Retry};
use crate::retry::{Backoff, JobError};

pub use bundle::{PngZip, ZipError, MAX_ZIP_BYTES};
pub use export::release_live_runs;
pub use plinth_vocab::{AssetStatus, Export, ExportFormat, ImageFormat};

/// Queue payloads: just the id of the row in the API's tables.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportTask {
    pub job_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageTask {
    pub asset_id: String,
}

/// A job runs at most this many times; the last failure is recorded as its reason.
pub const MAX_ATTEMPTS: i64 = 3;

/// Slide jobs count their own attempts (see [`MAX_ATTEMPTS`]); the queue's limit is a
/// backstop one above it so that the last run can record the failure. Storage or
/// database trouble waits `Backoff::slides` (a deck that cannot be rendered fails at
/// once, permanently).
fn slide_retry() -> Retry {
    Retry {
        max_attempts: MAX_ATTEMPTS as usize + 1,
        backoff: Arc::new(Backoff::slides()),
    }
}

/// Exports of large decks take a while; the timeout only stops runaway jobs.
const SLIDE_TIMEOUT: Duration = Duration::from_secs(600);

impl Job for ExportTask {
    const NAME: &'static str = "export";
    const TABLE: &'static str = "slide-export";
    const TIMEOUT: Duration = SLIDE_TIMEOUT;
    const CLIENT_ID: Option<&'static str> = Some("/job_id");
    type Port = Env;

    fn retry() -> Retry {
        slide_retry()
    }

    /// The client's job id: the job is found by it and queued at most once.
    fn key(&self) -> Option<String> {
        Some(self.job_id.clone())
    }

    async fn run(self, env: &Env, _attempt: usize) -> Result<(), JobError> {
        export::run(self, env).await.map_err(JobError::from)
    }
}

impl Job for ImageTask {
    const NAME: &'static str = "images";
    const TABLE: &'static str = "slide-images";
    const TIMEOUT: Duration = SLIDE_TIMEOUT;
    const CLIENT_ID: Option<&'static str> = Some("/asset_id");
    type Port = Env;

    fn retry() -> Retry {
        slide_retry()
    }

    async fn run(self, env: &Env, _attempt: usize) -> Result<(), JobError> {
        image::run(self, env).await.map_err(JobError::from)
    }
}

/// Compiles the common languages' highlighting patterns (about 0.3 s) off the request
/// path, so the first export using one does not pay for it; scans the font directories
/// (PLINTH_FONTS_DIR, the system's) and loads the embedded faces likewise.
pub(crate) fn warm_up() {
    tokio::task::spawn_blocking(plinth_render::warm_up_highlighting);
    tokio::task::spawn_blocking(plinth_render::warm_up_fonts);
}

/// What an export needs, loaded when it starts.
pub struct ExportWork {
    pub deck_id: String,
    /// As stored: an [`Export`] (`pdf+notes`...), or a text no worker knows (the export
    /// then fails, naming it).
    pub format: String,
    pub content: Deck,
    /// The deck's image assets by id.
    pub images: HashMap<String, ImageRef>,
    /// Runs of this job so far, this one included.
    pub attempt: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Artifact {
    pub name: String,
    /// The file name a download gets: the deck's title in it (`quarterly-review.pdf`,
    /// `quarterly-review-slide-001.png`); `name` for artifacts made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<String>,
    pub key: String,
    pub content_type: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slide: Option<usize>,
}

/// Most font warnings kept for one export (the first ones, in slide order).
pub const MAX_WARNINGS: usize = 100;
/// Most missing characters named in one warning.
pub const MAX_MISSING_CHARS: usize = 64;

/// Text an export could not draw: characters no installed font has (docs/slides.md,
/// "Fonts"). The export still succeeds; its answer lists these.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Warning {
    /// 1-based position among the exported (visible) slides.
    pub slide: usize,
    /// The text (marks removed), cut to 80 characters.
    pub text: String,
    /// Each missing character once.
    pub missing: String,
}

/// What a succeeded run stores in the job's `artifacts` column: its files and the
/// warnings (rows written before warnings existed hold the bare list of files).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Results {
    pub files: Vec<Artifact>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl Results {
    pub fn from_value(v: &serde_json::Value) -> Results {
        if v.is_array() {
            return Results {
                files: serde_json::from_value(v.clone()).unwrap_or_default(),
                warnings: Vec::new(),
            };
        }
        serde_json::from_value(v.clone()).unwrap_or_default()
    }
}

/// An image asset as an export sees it.
pub struct ImageRef {
    pub object_key: String,
    pub status: AssetStatus,
    /// The validated type (the upload was checked against it).
    pub mime: String,
    /// The validated file's size and hex sha256: an export uses the stored object only
    /// if it is still that file (an upload URL stays usable for its whole lifetime).
    pub size: u64,
    pub sha256: String,
}

/// An object read with a size limit.
pub enum Fetched {
    Missing,
    /// Larger than the limit; the body was not read.
    TooLarge {
        size: u64,
    },
    Bytes(Vec<u8>),
}

/// Why a stored image cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// No object under its key.
    Missing,
    /// Not the file that was validated: replaced through its upload URL afterwards (L4).
    Changed,
}

impl Fetched {
    /// The bytes of a validated image asset, if they are still the file whose hex
    /// `sha256` was recorded when it was validated: what exports and the viewer draw.
    pub fn verified(self, sha256: &str) -> Result<Vec<u8>, Unusable> {
        match self {
            Fetched::Bytes(b) if hex::encode(Sha256::digest(&b)).eq_ignore_ascii_case(sha256) => {
                Ok(b)
            }
            Fetched::Missing => Err(Unusable::Missing),
            // A larger object than the validated one, or other bytes.
            _ => Err(Unusable::Changed),
        }
    }
}

/// An uploaded asset awaiting validation.
pub struct AssetCheck {
    pub object_key: String,
    pub declared_type: String,
    pub size: u64,
    pub sha256: String,
    pub max_size: u64,
    /// False when the asset is no longer waiting for validation (done, deleted).
    pub pending: bool,
}

pub enum Verdict {
    Ready {
        format: ImageFormat,
        width: u32,
        height: u32,
    },
    Rejected(String),
}

type Fut<'a, T> = BoxFuture<'a, Result<T, BoxDynError>>;

/// How long a run's lease on its job lasts without renewal. A run renews it every
/// [`RENEW_EVERY`]; a job whose run died is taken over once this has passed (apalis hands
/// the task on after the worker misses its heartbeats, about as long).
pub const LEASE: Duration = Duration::from_secs(20);
/// How often a running export renews its lease.
pub const RENEW_EVERY: Duration = Duration::from_secs(4);

/// What starting an export found.
pub enum Start {
    /// This run holds the job now (the attempt is counted).
    Run(Box<ExportWork>),
    /// Another run holds a live lease for about this long.
    Leased(Duration),
    /// The job ended (succeeded, failed, cancelled) or is unknown: nothing to do.
    Ended,
    /// The job's client (or an operator) cancelled it before it ran.
    Cancelled,
}

/// The server side of slide jobs: rows in the API's tables and object storage. `owner`
/// names one run of a job; every change a run makes to its row is conditional on it
/// still holding the job's lease.
pub trait SlideEnv: Send + Sync + 'static {
    /// Claims the job for `owner` (pending, or running with a lapsed lease) for [`LEASE`]
    /// and counts the attempt.
    fn start_export<'a>(&'a self, job_id: &'a str, owner: &'a str) -> Fut<'a, Start>;
    /// Renews the lease; false when the job was cancelled or taken over meanwhile.
    fn renew<'a>(&'a self, job_id: &'a str, owner: &'a str) -> Fut<'a, bool>;
    /// Records progress and renews the lease; false as for `renew`.
    fn progress<'a>(
        &'a self,
        job_id: &'a str,
        owner: &'a str,
        done: usize,
        total: usize,
    ) -> Fut<'a, bool>;
    /// Succeeds the job with its artifacts (publishing them); false when the run no
    /// longer holds it.
    fn succeed<'a>(
        &'a self,
        job_id: &'a str,
        owner: &'a str,
        artifacts: &'a [Artifact],
        warnings: &'a [Warning],
    ) -> Fut<'a, bool>;
    fn fail<'a>(&'a self, job_id: &'a str, owner: &'a str, reason: &'a str) -> Fut<'a, ()>;
    /// Gives the lease up at once (the run failed and is retried).
    fn release<'a>(&'a self, job_id: &'a str, owner: &'a str) -> Fut<'a, ()>;
    fn load_asset<'a>(&'a self, asset_id: &'a str) -> Fut<'a, Option<AssetCheck>>;
    fn judge_asset<'a>(&'a self, asset_id: &'a str, verdict: &'a Verdict) -> Fut<'a, ()>;
    /// The object if it is at most `max` bytes; a larger one is never read (M7).
    fn get_object<'a>(&'a self, key: &'a str, max: u64) -> Fut<'a, Fetched>;
    fn put_object<'a>(&'a self, key: &'a str, bytes: Vec<u8>, content_type: &'a str)
        -> Fut<'a, ()>;
    fn delete_object<'a>(&'a self, key: &'a str) -> Fut<'a, ()>;
}

pub type Env = Arc<dyn SlideEnv>;

/// Where an attempt's artifacts live: each run of a job writes its own keys, so a stale
/// duplicate never overwrites or deletes what another attempt published.
/// An artifact's download file name from the deck's title: lower-case ASCII letters and
/// digits joined by `-` (at most 60), `deck` when none are left; `deck.pdf` becomes
/// `<title>.pdf`, `slide-001.png` `<title>-slide-001.png`.
pub fn download_name(title: Option<&str>, name: &str) -> String {
    let mut slug = String::new();
    for c in title.unwrap_or_default().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= 60 {
            break;
        }
    }
    let slug = match slug.trim_end_matches('-') {
        "" => "deck",
        s => s,
    };
    match name.strip_prefix("deck.") {
        Some(ext) => format!("{slug}.{ext}"),
        None => format!("{slug}-{name}"),
    }
}

fn artifact_key(deck_id: &str, job_id: &str, attempt: i64, name: &str) -> String {
    format!("slides/{deck_id}/jobs/{job_id}/{attempt}/{name}")
}

#[cfg(test)]
mod tests {
    use super::download_name;

    #[test]
    fn downloads_are_named_after_the_deck() {
        let t = Some("Quarterly Review: Q3 / 2026!");
        assert_eq!(download_name(t, "deck.pdf"), "quarterly-review-q3-2026.pdf");
        assert_eq!(
            download_name(t, "slide-001.png"),
            "quarterly-review-q3-2026-slide-001.png"
        );
        assert_eq!(download_name(Some("会議"), "deck.html"), "deck.html");
        assert_eq!(download_name(None, "deck.pdf"), "deck.pdf");
        let long = "a".repeat(200);
        assert_eq!(download_name(Some(&long), "deck.pdf").len(), 64);
    }
}
