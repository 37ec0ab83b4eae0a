//! A slide export job as its client reads it: the answer of `GET /api/slides/jobs/{id}`,
//! the `data` of its event stream and the `data.job` of its completion callback, built
//! once here from the job's row (fresh signed artifact URLs on every build).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::adapters::storage::{ObjectStore, StorageError};
use crate::db::slides::JobRow;
use plinth_vocab::ExportStatus;

/// Artifact download URLs (spec: five minutes).
pub const ARTIFACT_URL_TTL: Duration = Duration::from_secs(5 * 60);

/// A file an export produced.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ArtifactView {
    pub name: String,
    pub content_type: String,
    pub size: u64,
    /// The slide (1-based) of a PNG; null for a whole-deck file (`deck.pdf`, `deck.html`,
    /// the PNGs' `deck.zip`).
    pub slide: Option<usize>,
    /// A signed download URL, valid five minutes (`artifacts_expire_at`).
    pub url: String,
}

/// Text an export could not draw (docs/slides.md, "Fonts").
#[derive(Serialize, schemars::JsonSchema)]
pub struct WarningView {
    /// The slide (1-based, among the exported slides).
    pub slide: usize,
    /// The text (marks removed), cut to 80 characters.
    pub text: String,
    /// The characters no font has, each once.
    pub missing: String,
}

/// An export job as its client reads it (docs/slides.md, "Exports").
#[derive(Serialize, schemars::JsonSchema)]
pub struct JobView {
    pub id: String,
    pub deck_id: String,
    pub revision_id: String,
    /// Always `export`.
    pub kind: &'static str,
    /// `html`, `pdf` or `png`.
    pub format: String,
    /// Whether the export carries speaker notes (`exports/create` with `notes: true`).
    pub notes: bool,
    /// Whether the PNGs also come as one `deck.zip` artifact (`exports/create` with
    /// `zip: true`).
    pub zip: bool,
    pub status: ExportStatus,
    /// 0 to 1.
    pub progress: f64,
    pub slides_done: i64,
    pub slides_total: i64,
    /// Runs of the job so far.
    pub attempts: i64,
    /// Why it failed.
    pub error: Option<String>,
    /// Once succeeded: the files, with fresh signed URLs on every read.
    pub artifacts: Vec<ArtifactView>,
    pub artifacts_expire_at: Option<DateTime<Utc>>,
    /// Once succeeded: text the export could not draw because no installed font has
    /// some of its characters (they show as boxes); empty when everything drew.
    pub warnings: Vec<WarningView>,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Where the completion event is POSTed (docs/api.md, "Completion callbacks").
    pub callback_url: Option<String>,
}

pub async fn job_view(objects: &ObjectStore, job: &JobRow) -> Result<JobView, StorageError> {
    let progress = if job.status == ExportStatus::Succeeded {
        1.0
    } else if job.total > 0 {
        job.done as f64 / job.total as f64
    } else {
        0.0
    };
    // The stored `pdf+notes` as the format and whether notes are on.
    let export = plinth_vocab::Export::parse(&job.format);
    let mut artifacts = Vec::new();
    if job.status == ExportStatus::Succeeded {
        let list = plinth_workers::slides::Results::from_value(&job.artifacts.0).files;
        for a in list {
            let file = a.download.as_deref().unwrap_or(&a.name);
            let url = objects
                .presign_download(&a.key, ARTIFACT_URL_TTL, Some((&a.content_type, file)))
                .await?;
            artifacts.push(ArtifactView {
                name: a.name,
                content_type: a.content_type,
                size: a.size,
                slide: a.slide,
                url,
            });
        }
    }
    Ok(JobView {
        id: job.id.clone(),
        deck_id: job.deck_id.clone(),
        revision_id: job.revision_id.clone(),
        kind: "export",
        format: export.map_or_else(|text| text.to_owned(), |e| e.format.to_string()),
        notes: export.is_ok_and(|e| e.notes),
        zip: export.is_ok_and(|e| e.zip),
        status: job.status,
        progress,
        slides_done: job.done,
        slides_total: job.total,
        attempts: job.attempts,
        error: job.error.clone(),
        artifacts,
        warnings: if job.status == ExportStatus::Succeeded {
            plinth_workers::slides::Results::from_value(&job.artifacts.0)
                .warnings
                .into_iter()
                .map(|w| WarningView {
                    slide: w.slide,
                    text: w.text,
                    missing: w.missing,
                })
                .collect()
        } else {
            Vec::new()
        },
        artifacts_expire_at: (job.status == ExportStatus::Succeeded)
            .then(|| Utc::now() + ARTIFACT_URL_TTL),
        requested_by: job.requested_by.clone(),
        created_at: job.created_at,
        started_at: job.started_at,
        finished_at: job.finished_at,
        callback_url: job.callback_url.clone(),
    })
}

/// The completion event POSTed to a job's `callback_url`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Event {
    /// `evt_...`: the same on every delivery attempt of this event (drop repeats by it).
    pub id: String,
    /// `export.succeeded`, `export.failed` or `export.cancelled`.
    #[serde(rename = "type")]
    pub kind: String,
    /// When this attempt was made, Unix seconds (the signature's `t`).
    pub created: i64,
    /// 1 on the first delivery attempt.
    pub attempt: usize,
    pub data: EventData,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct EventData {
    /// The job as `GET /api/slides/jobs/{id}` answers it now.
    pub job: JobView,
}
