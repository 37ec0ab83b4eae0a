//! Exports and their jobs: create, poll, cancel.

use super::*;

async fn job_json(app: &AppState, job: &JobRow) -> ApiResult<Value> {
    let progress = if job.status == "succeeded" {
        1.0
    } else if job.total > 0 {
        job.done as f64 / job.total as f64
    } else {
        0.0
    };
    let mut artifacts = Vec::new();
    if job.status == "succeeded" {
        let list: Vec<plinth_workers::slides::Artifact> =
            serde_json::from_value(job.artifacts.0.clone()).unwrap_or_default();
        for a in list {
            let url = app
                .objects
                .presign_get(&a.key, DOWNLOAD_TTL)
                .await
                .map_err(unavailable("object storage"))?;
            artifacts.push(json!({
                "name": a.name,
                "content_type": a.content_type,
                "size": a.size,
                "slide": a.slide,
                "url": url,
            }));
        }
    }
    Ok(json!({
        "id": job.id,
        "deck_id": job.deck_id,
        "revision_id": job.revision_id,
        "kind": "export",
        "format": job.format,
        "status": job.status,
        "progress": progress,
        "slides_done": job.done,
        "slides_total": job.total,
        "attempts": job.attempts,
        "error": job.error,
        "artifacts": artifacts,
        "artifacts_expire_at": (job.status == "succeeded").then(|| chrono::Utc::now() + DOWNLOAD_TTL),
        "requested_by": job.requested_by,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ExportCreate {
    deck_id: String,
    /// `html`, `pdf` or `png`.
    format: String,
    /// Default: the deck's current revision.
    revision_id: Option<String>,
}

/// `POST /api/slides/exports/create` (Editor): queues rendering of a revision.
pub async fn export_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<ExportCreate>,
) -> ApiResult {
    let deck_id = required("deck_id", &body.deck_id)?;
    let format = required("format", &body.format)?.to_ascii_lowercase();
    if !FORMATS.contains(&format.as_str()) {
        return Err(ApiError::bad_request(
            "`format` must be one of html, pdf, png",
        ));
    }
    let revision_id = match &body.revision_id {
        None => None,
        Some(r) => Some(required("revision_id", r)?),
    };
    on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Editor,
        "exports/create",
        move |a, c, deck| async move {
            let revision_id = revision_id.unwrap_or_else(|| deck.current_revision_id.clone());
            let rev = deck_revision(&a, &deck, &revision_id).await?;
            // The row and its queued task commit together: nothing is left pending that
            // no worker will run.
            let job = store::create_job(&a.db, &deck.id, &rev.summary.id, &format, &c.id).await?;
            Ok(Reply::ok(job_json(&a, &job).await?))
        },
    )
    .await
}

async fn deck_job(app: &AppState, deck: &DeckRow, job_id: &str) -> ApiResult<JobRow> {
    store::job(&app.db, job_id)
        .await?
        .filter(|j| j.deck_id == deck.id)
        .ok_or_else(|| ApiError::not_found("job not found"))
}

/// `GET /api/slides/jobs/{id}?deck_id=` (Editor).
pub async fn job(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult {
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    let job = deck_job(&app, &deck, &id).await?;
    Ok(Reply::ok(job_json(&app, &job).await?))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct JobRef {
    deck_id: String,
    job_id: String,
}

/// `POST /api/slides/jobs/cancel` (job requester or manager): a pending job never runs;
/// a running one stops at its next slide and leaves no artifacts.
pub async fn job_cancel(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<JobRef>,
) -> ApiResult {
    let deck_id = required("deck_id", &body.deck_id)?;
    let job_id = required("job_id", &body.job_id)?;
    let (deck, role) = open(&app, &caller, &deck_id).await?;
    let job = deck_job(&app, &deck, &job_id).await?;
    if job.requested_by != caller.id {
        require_manager(role)?;
    }
    let a = app.clone();
    change(
        &app,
        format!("deck:{}", deck.id),
        "jobs/cancel",
        &caller,
        &sent,
        async move {
            let (cancelled, job) = store::cancel_job(&a.db, &job.id)
                .await?
                .ok_or_else(|| ApiError::not_found("job not found"))?;
            if !cancelled {
                return Err(ApiError::conflict(format!(
                    "the job already ended ({}); only pending or running jobs can be cancelled",
                    job.status
                ))
                .with("status", job.status));
            }
            Ok(Reply::ok(job_json(&a, &job).await?))
        },
    )
    .await
}
