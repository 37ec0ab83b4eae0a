//! One export run: it takes the job's lease (waiting out another live run's), renders
//! the deck in its format under the lease, and publishes or cleans up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::BoxDynError;
use plinth_render::{Image, Images, RenderError, Size};

use super::output::{Clock, Output, Run, Stopper};
use super::{
    artifact_key, Artifact, AssetStatus, Env, Export, ExportFormat, ExportTask, ExportWork, Start,
    Unusable, Warning, MAX_ATTEMPTS, MAX_MISSING_CHARS, MAX_WARNINGS, RENEW_EVERY,
};
use crate::pool::render_pool;
use crate::retry::{cancelled, JobError};

enum Outcome {
    Done,
    /// Cancelled, or the lease was lost to another run.
    Stopped,
    /// The deck cannot be rendered (`render`) or an image it needs is not usable
    /// (`asset`): not worth a retry. The cause and the reason the client reads.
    Failed(&'static str, String),
}

/// The longest a run waits for another run's live lease to end (the job's own timeout is
/// longer; a live holder finishes first, a dead one's lease lapses within [`LEASE`]).
const LEASE_WAIT: Duration = Duration::from_secs(540);

pub(super) async fn run(task: ExportTask, env: &Env) -> Result<(), BoxDynError> {
    let job_id = task.job_id.as_str();
    let owner = uuid::Uuid::new_v4().to_string();
    let waiting_since = std::time::Instant::now();
    let work = loop {
        match env
            .start_export(job_id, &owner)
            .await
            .map_err(|e| JobError::retry("storage", e))?
        {
            Start::Run(work) => break *work,
            Start::Ended => return Ok(()),
            Start::Cancelled => return Err(cancelled("the export was cancelled before it ran")),
            // A duplicate delivery while another run holds the job: if that run is alive
            // it ends the job (then `Ended`), if it died its lease lapses and this run
            // takes over. Returning now would lose the job in the second case.
            Start::Leased(left) => {
                if waiting_since.elapsed() > LEASE_WAIT {
                    return Err(JobError::retry("lease", "the job is held by another run").into());
                }
                let pause = left.clamp(Duration::from_millis(200), RENEW_EVERY);
                tokio::time::sleep(pause).await;
            }
        }
    };
    let mut live = LiveRun::enter(job_id, &owner);
    let result = run_leased(env, job_id, &owner, work).await;
    live.returned = true;
    result
}

/// An export run that holds the job's lease.
async fn run_leased(
    env: &Env,
    job_id: &str,
    owner: &str,
    work: ExportWork,
) -> Result<(), BoxDynError> {
    let owner = owner.to_owned();
    if work.attempt > MAX_ATTEMPTS {
        let reason = format!("gave up after {MAX_ATTEMPTS} attempts");
        env.fail(job_id, &owner, &reason)
            .await
            .map_err(|e| JobError::retry("storage", e))?;
        return Err(JobError::permanent("attempts", reason).into());
    }
    let run = Run {
        env,
        job_id,
        owner: &owner,
        lost: Arc::new(AtomicBool::new(false)),
    };
    // The lease is renewed on a timer too, so that a slow step (one large object, a long
    // render between progress calls) never lets it lapse while this run is alive.
    let keeper = KeepLease(tokio::spawn({
        let (env, job, owner, lost) = (
            env.clone(),
            job_id.to_owned(),
            owner.clone(),
            run.lost.clone(),
        );
        async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                if let Ok(false) = env.renew(&job, &owner).await {
                    lost.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    }));
    let mut artifacts = Vec::new();
    let mut warnings = Vec::new();
    let outcome = export(&run, &work, &mut artifacts, &mut warnings).await;
    drop(keeper);
    let outcome = match outcome {
        Ok(o) => o,
        // Storage or database trouble: retried by the queue, unless this was the last try.
        Err(e) if work.attempt >= MAX_ATTEMPTS => {
            Outcome::Failed("storage", format!("export failed: {e}"))
        }
        Err(e) => {
            remove(env, &artifacts).await;
            if let Err(e) = env.release(job_id, &owner).await {
                tracing::warn!(error = %e, job_id, "lease not released; a retry waits for it");
            }
            return Err(JobError::retry("storage", e).into());
        }
    };
    let storage = |e: BoxDynError| JobError::retry("storage", e);
    match outcome {
        Outcome::Done => {
            if env
                .succeed(job_id, &owner, &artifacts, &warnings)
                .await
                .map_err(storage)?
            {
                remove_superseded(env, &work, job_id, &artifacts).await;
            } else {
                remove(env, &artifacts).await;
            }
            Ok(())
        }
        // Cancelled by its client (or an operator), or taken over by another run (whose
        // result is the one apalis keeps: this run no longer holds the job).
        Outcome::Stopped => {
            remove(env, &artifacts).await;
            Err(cancelled("the export was cancelled while it ran"))
        }
        // What the client reads as `failed` is a failed job for operators too.
        Outcome::Failed(cause, reason) => {
            remove(env, &artifacts).await;
            env.fail(job_id, &owner, &reason).await.map_err(storage)?;
            Err(JobError::permanent(cause, reason).into())
        }
    }
}

/// The exports of this process that started and did not return, (job id, run owner): a
/// stopping process gives their leases up at once (`release_live_runs`), so that the
/// job's next run, here after a restart or on another worker, need not wait for the lease
/// to lapse. A run whose future was dropped (the shutdown timeout, the job timeout) stays
/// listed: its lease is still held.
static LIVE_RUNS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

struct LiveRun {
    owner: String,
    returned: bool,
}

impl LiveRun {
    fn enter(job_id: &str, owner: &str) -> LiveRun {
        LIVE_RUNS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((job_id.to_owned(), owner.to_owned()));
        LiveRun {
            owner: owner.to_owned(),
            returned: false,
        }
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        if self.returned {
            LIVE_RUNS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|(_, owner)| *owner != self.owner);
        }
    }
}

/// Gives up the leases of the exports still running in this process (at its stop, after
/// the grace period). A run that goes on anyway loses its lease at its next conditional
/// update and stops.
pub async fn release_live_runs(env: &Env) {
    let runs = std::mem::take(&mut *LIVE_RUNS.lock().unwrap_or_else(|e| e.into_inner()));
    for (job_id, owner) in runs {
        if let Err(e) = env.release(&job_id, &owner).await {
            tracing::warn!(error = %e, job_id, "lease not released at shutdown; it lapses");
        }
    }
}

/// Stops the lease renewals of a run when the run ends (or its future is dropped: the
/// job's timeout).
struct KeepLease(tokio::task::JoinHandle<()>);

impl Drop for KeepLease {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Deletes this run's own objects (a run that did not publish leaves nothing behind).
async fn remove(env: &Env, artifacts: &[Artifact]) {
    for a in artifacts {
        if let Err(e) = env.delete_object(&a.key).await {
            tracing::warn!(error = %e, key = a.key, "artifact of an unpublished run not deleted");
        }
    }
}

/// After publishing, the objects that earlier attempts of the job may have left (a run
/// killed mid-way never cleans up). Those attempts can no longer publish: the job ended
/// under this run's lease. Names are the same for every attempt of one revision; a stale
/// duplicate that writes after this deletes its own objects when its publish fails.
async fn remove_superseded(env: &Env, work: &ExportWork, job_id: &str, artifacts: &[Artifact]) {
    for attempt in 1..work.attempt {
        for a in artifacts {
            let key = artifact_key(&work.deck_id, job_id, attempt, &a.name);
            if let Err(e) = env.delete_object(&key).await {
                tracing::warn!(error = %e, key, "artifact of an earlier attempt not deleted");
            }
        }
    }
}

async fn export(
    run: &Run<'_>,
    work: &ExportWork,
    artifacts: &mut Vec<Artifact>,
    warnings: &mut Vec<Warning>,
) -> Result<Outcome, BoxDynError> {
    // Where an export's time goes, for the debug log at its end (`store` counts the
    // objects written and the progress recorded).
    let mut clock = Clock::start();
    let images = match load_images(run.env, work).await? {
        Ok(images) => images,
        Err(outcome) => return Ok(outcome),
    };
    clock.lap("images");
    *warnings = font_warnings(run.job_id, work).await?;
    clock.lap("fonts");
    let slides = plinth_render::visible(&work.content);
    let total = slides.len();
    let stop = Stopper::watch(run, total);
    let out = Output {
        run,
        work,
        stop: &stop,
        size: Size::default(),
    };
    let rendered = match Export::parse(&work.format) {
        Ok(Export { format, notes, zip }) => {
            // `pdf+notes`, `html+notes`: the export carries speaker notes.
            let options = plinth_render::Options {
                notes,
                created: Some(chrono::Utc::now().timestamp()),
            };
            match format {
                ExportFormat::Png => {
                    out.pngs(&slides, &images, zip, &mut clock, artifacts)
                        .await?
                }
                ExportFormat::Pdf => out.pdf(&images, options, &mut clock, artifacts).await?,
                ExportFormat::Html => out.html(&images, options, &mut clock, artifacts).await?,
            }
        }
        Err(other) => Err(RenderError::Failed(format!(
            "unknown export format `{other}`"
        ))),
    };
    drop(stop);
    match rendered {
        Ok(()) => {}
        Err(RenderError::Cancelled) => return Ok(Outcome::Stopped),
        Err(e) => return Ok(Outcome::Failed("render", e.to_string())),
    }
    if !run.progress(total, total).await? {
        return Ok(Outcome::Stopped);
    }
    clock.lap("store");
    tracing::debug!(
        job_id = run.job_id,
        format = work.format,
        images_ms = clock.ms("images"),
        fonts_ms = clock.ms("fonts"),
        render_ms = clock.ms("render"),
        store_ms = clock.ms("store"),
        "export timings"
    );
    Ok(Outcome::Done)
}

/// The deck's images, read and checked against what was validated; an image that is
/// missing, not ready or changed fails the export (`asset`).
async fn load_images(env: &Env, work: &ExportWork) -> Result<Result<Images, Outcome>, BoxDynError> {
    let unusable = |text: String| Err(Outcome::Failed("asset", text));
    let mut images: Images = HashMap::new();
    for id in work.content.asset_ids() {
        let Some(img) = work.images.get(&id) else {
            return Ok(unusable(format!("image asset {id} does not exist")));
        };
        if img.status != AssetStatus::Ready {
            return Ok(unusable(format!(
                "image asset {id} is not ready (status {})",
                img.status
            )));
        }
        let bytes = match env
            .get_object(&img.object_key, img.size)
            .await?
            .verified(&img.sha256)
        {
            Ok(b) => b,
            Err(Unusable::Missing) => {
                return Ok(unusable(format!("image asset {id} has no stored file")))
            }
            Err(Unusable::Changed) => {
                return Ok(unusable(format!(
                    "image asset {id} changed after it was validated; upload it again"
                )))
            }
        };
        // Validated when it was uploaded; not decoded twice.
        let mime = img.mime.clone();
        images.insert(id, Image { mime, bytes });
    }
    Ok(Ok(images))
}

/// Characters no font has: the export goes on (they draw as boxes), the job's answer
/// lists them (bounded, whatever the deck: they are stored with the job and sent with
/// every read of it), and the log says so once per run.
async fn font_warnings(job_id: &str, work: &ExportWork) -> Result<Vec<Warning>, BoxDynError> {
    let missing = {
        let deck = work.content.clone();
        render_pool()
            .run(move || plinth_render::missing_glyphs(&deck))
            .await?
    };
    if !missing.is_empty() {
        let chars: std::collections::BTreeSet<char> =
            missing.iter().flat_map(|m| m.missing.chars()).collect();
        tracing::warn!(
            job_id,
            deck_id = work.deck_id,
            texts = missing.len(),
            missing = chars.into_iter().collect::<String>(),
            "characters no installed font has are drawn as boxes; install fonts for them \
             (docs/slides.md, \"Fonts\") or set PLINTH_FONTS_DIR"
        );
    }
    Ok(missing
        .into_iter()
        .take(MAX_WARNINGS)
        .map(|m| Warning {
            slide: m.slide,
            text: m.text,
            missing: m.missing.chars().take(MAX_MISSING_CHARS).collect(),
        })
        .collect())
}
