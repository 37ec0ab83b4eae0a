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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::{BoxDynError, Data};
use futures::future::BoxFuture;
use plinth_render::{Budget, Image, Images, RenderError, Size};

use crate::pool::render_pool;
use plinth_slides::Deck;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::retry::{cancelled, JobError};

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

/// What an export needs, loaded when it starts.
pub struct ExportWork {
    pub deck_id: String,
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
    pub key: String,
    pub content_type: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slide: Option<usize>,
}

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
    pub status: String,
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
        format: String,
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
fn artifact_key(deck_id: &str, job_id: &str, attempt: i64, name: &str) -> String {
    format!("slides/{deck_id}/jobs/{job_id}/{attempt}/{name}")
}

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

pub async fn run_export(task: ExportTask, env: Data<Env>) -> Result<(), BoxDynError> {
    let env: &Env = &env;
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

/// One run of an export: what its steps need to report progress under its lease.
struct Run<'a> {
    env: &'a Env,
    job_id: &'a str,
    owner: &'a str,
    /// Set when a renewal found the job cancelled or taken over.
    lost: Arc<AtomicBool>,
}

impl Run<'_> {
    /// Records progress; false when this run should stop (cancelled, or taken over).
    async fn progress(&self, done: usize, total: usize) -> Result<bool, BoxDynError> {
        if self.lost.load(Ordering::Relaxed) {
            return Ok(false);
        }
        self.env
            .progress(self.job_id, self.owner, done, total)
            .await
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
    let (env, job_id) = (run.env, run.job_id);
    // Where an export's time goes, for the debug log at its end (`store` counts the
    // objects written and the progress recorded).
    let mut clock = Clock::start();
    let mut images: Images = HashMap::new();
    for id in work.content.asset_ids() {
        let Some(img) = work.images.get(&id) else {
            return Ok(Outcome::Failed(
                "asset",
                format!("image asset {id} does not exist"),
            ));
        };
        if img.status != "ready" {
            return Ok(Outcome::Failed(
                "asset",
                format!("image asset {id} is not ready (status {})", img.status),
            ));
        }
        let bytes = match env
            .get_object(&img.object_key, img.size)
            .await?
            .verified(&img.sha256)
        {
            Ok(b) => b,
            Err(Unusable::Missing) => {
                return Ok(Outcome::Failed(
                    "asset",
                    format!("image asset {id} has no stored file"),
                ))
            }
            Err(Unusable::Changed) => {
                return Ok(Outcome::Failed(
                    "asset",
                    format!("image asset {id} changed after it was validated; upload it again"),
                ))
            }
        };
        images.insert(
            id,
            // Validated when it was uploaded; not decoded twice.
            Image {
                mime: img.mime.clone(),
                bytes,
            },
        );
    }
    clock.lap("images");
    let deck = &work.content;
    // Characters no font has: the export goes on (they draw as boxes), the job's
    // answer lists them, and the log says so once per run.
    let missing = {
        let deck = deck.clone();
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
    *warnings = missing
        .into_iter()
        .map(|m| Warning {
            slide: m.slide,
            text: m.text,
            missing: m.missing,
        })
        .collect();
    clock.lap("fonts");
    let slides = plinth_render::visible(deck);
    let total = slides.len();
    let size = Size::default();
    // `pdf+notes`, `html+notes`: the export carries speaker notes.
    let (format, notes) = match work.format.split_once('+') {
        Some((format, "notes")) => (format, true),
        _ => (work.format.as_str(), false),
    };
    let options = plinth_render::Options { notes };
    let stop = Stopper::watch(run, total);
    let out = Output {
        run,
        work,
        stop: &stop,
        size,
    };
    let rendered = match format {
        "png" => out.pngs(&slides, &images, &mut clock, artifacts).await?,
        "pdf" => out.pdf(&images, options, &mut clock, artifacts).await?,
        "html" => out.html(&images, options, &mut clock, artifacts).await?,
        other => Err(RenderError::Failed(format!(
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
        job_id,
        format = work.format,
        images_ms = clock.ms("images"),
        fonts_ms = clock.ms("fonts"),
        render_ms = clock.ms("render"),
        store_ms = clock.ms("store"),
        "export timings"
    );
    Ok(Outcome::Done)
}

/// A whole export may render this long (under the job's 10-minute timeout), one slide
/// one minute.
const RENDER_LIMIT: Duration = Duration::from_secs(570);
const SLIDE_LIMIT: Duration = Duration::from_secs(60);

/// The render budget of one run. A watcher keeps its flag current with the job (set
/// when the job is cancelled or its lease lost, checked every 200 ms); dropping it
/// (the run ended, or its future was dropped by the job timeout or at shutdown) sets
/// the flag too, so the render threads stop within a second whatever stopped the run
/// (security review N-H3).
struct Stopper {
    budget: Budget,
    /// Slides done, for the progress the watcher records.
    done: Arc<std::sync::atomic::AtomicUsize>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Stopper {
    fn watch(run: &Run<'_>, total: usize) -> Stopper {
        let deadline = std::time::Instant::now() + RENDER_LIMIT;
        let budget = Budget::new(Arc::default(), Some(deadline)).per_slide(SLIDE_LIMIT);
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (env, job, owner, lost, flag, n) = (
            run.env.clone(),
            run.job_id.to_owned(),
            run.owner.to_owned(),
            run.lost.clone(),
            budget.flag(),
            done.clone(),
        );
        let watcher = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let n = n.load(Ordering::Relaxed);
                let held = !lost.load(Ordering::Relaxed)
                    && !matches!(env.progress(&job, &owner, n, total).await, Ok(false));
                if !held {
                    flag.store(true, Ordering::Relaxed);
                    return;
                }
            }
        });
        Stopper {
            budget,
            done,
            watcher,
        }
    }
}

impl Drop for Stopper {
    fn drop(&mut self) {
        self.budget.cancel();
        self.watcher.abort();
    }
}

/// What the format writers of one run share.
struct Output<'a> {
    run: &'a Run<'a>,
    work: &'a ExportWork,
    stop: &'a Stopper,
    size: Size,
}

type Rendered = Result<Result<(), RenderError>, BoxDynError>;

impl Output<'_> {
    async fn store(
        &self,
        name: String,
        bytes: Vec<u8>,
        content_type: &str,
        slide: Option<usize>,
    ) -> Result<Artifact, BoxDynError> {
        let a = Artifact {
            key: artifact_key(
                &self.work.deck_id,
                self.run.job_id,
                self.work.attempt,
                &name,
            ),
            name,
            content_type: content_type.into(),
            size: bytes.len() as u64,
            slide,
        };
        self.run.env.put_object(&a.key, bytes, content_type).await?;
        Ok(a)
    }

    /// One PNG per slide, as many at once as the render pool has threads.
    async fn pngs(
        &self,
        slides: &[&plinth_slides::Slide],
        images: &Images,
        clock: &mut Clock,
        artifacts: &mut Vec<Artifact>,
    ) -> Rendered {
        let deck = Arc::new(self.work.content.clone());
        let images = Arc::new(images.clone());
        let at_once = render_pool().threads();
        for (first, batch) in slides.chunks(at_once).enumerate() {
            let first = first * at_once;
            let renders = batch.iter().map(|slide| {
                let (deck, images, slide) = (deck.clone(), images.clone(), (*slide).clone());
                let (budget, size) = (self.stop.budget.clone(), self.size);
                render_pool()
                    .run(move || plinth_render::slide_png(&deck, &slide, &images, size, &budget))
            });
            let pngs = futures::future::join_all(renders).await;
            clock.lap("render");
            for (i, png) in pngs.into_iter().enumerate() {
                let n = first + i + 1;
                let png = match png? {
                    Ok(p) => p,
                    Err(RenderError::Cancelled) => return Ok(Err(RenderError::Cancelled)),
                    Err(e) => return Ok(Err(RenderError::Failed(format!("slide {n}: {e}")))),
                };
                let name = format!("slide-{n:03}.png");
                artifacts.push(self.store(name, png, "image/png", Some(n)).await?);
                self.stop.done.store(n, Ordering::Relaxed);
            }
            clock.lap("store");
        }
        Ok(Ok(()))
    }

    async fn pdf(
        &self,
        images: &Images,
        options: plinth_render::Options,
        clock: &mut Clock,
        artifacts: &mut Vec<Artifact>,
    ) -> Rendered {
        let (deck, images, budget, done, size) = (
            self.work.content.clone(),
            images.clone(),
            self.stop.budget.clone(),
            self.stop.done.clone(),
            self.size,
        );
        let pdf = render_pool()
            .run(move || {
                plinth_render::deck_pdf_with(&deck, &images, size, options, &budget, &mut |i| {
                    done.store(i, Ordering::Relaxed);
                    !budget.is_cancelled()
                })
            })
            .await?;
        clock.lap("render");
        let pdf = match pdf {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        artifacts.push(
            self.store("deck.pdf".into(), pdf, "application/pdf", None)
                .await?,
        );
        clock.lap("store");
        Ok(Ok(()))
    }

    async fn html(
        &self,
        images: &Images,
        options: plinth_render::Options,
        clock: &mut Clock,
        artifacts: &mut Vec<Artifact>,
    ) -> Rendered {
        let (deck, images, budget) = (
            self.work.content.clone(),
            images.clone(),
            self.stop.budget.clone(),
        );
        let html = render_pool()
            .run(move || plinth_render::deck_html_with(&deck, &images, options, &budget))
            .await?;
        clock.lap("render");
        let html = match html {
            Ok(h) => h.into_bytes(),
            Err(e) => return Ok(Err(e)),
        };
        let ct = "text/html; charset=utf-8";
        artifacts.push(self.store("deck.html".into(), html, ct, None).await?);
        clock.lap("store");
        Ok(Ok(()))
    }
}

/// Time spent per phase of a run, summed over laps: each lap is charged the time since
/// the previous one.
struct Clock {
    last: std::time::Instant,
    spent: Vec<(&'static str, Duration)>,
}

impl Clock {
    fn start() -> Clock {
        Clock {
            last: std::time::Instant::now(),
            spent: Vec::new(),
        }
    }

    fn lap(&mut self, phase: &'static str) {
        let now = std::time::Instant::now();
        let d = now - self.last;
        self.last = now;
        match self.spent.iter_mut().find(|(p, _)| *p == phase) {
            Some((_, total)) => *total += d,
            None => self.spent.push((phase, d)),
        }
    }

    fn ms(&self, phase: &str) -> f64 {
        self.spent
            .iter()
            .find(|(p, _)| *p == phase)
            .map_or(0.0, |(_, d)| d.as_secs_f64() * 1000.0)
    }
}

/// An image check: a rejected file is the check's verdict (the asset says why), not a
/// failure of the job; storage or database trouble is retried.
pub async fn run_image_check(task: ImageTask, env: Data<Env>) -> Result<(), BoxDynError> {
    let env: &Env = &env;
    let storage = |e: BoxDynError| JobError::retry("storage", e);
    let Some(asset) = env.load_asset(&task.asset_id).await.map_err(storage)? else {
        return Ok(());
    };
    if !asset.pending {
        return Ok(());
    }
    // Read at most the declared size (itself within the limit): anything larger is
    // refused on its size alone, before a byte of it is read (M7).
    let bound = asset.size.min(asset.max_size);
    let verdict = match env
        .get_object(&asset.object_key, bound)
        .await
        .map_err(storage)?
    {
        Fetched::Missing => Verdict::Rejected("no file was uploaded to the upload URL".into()),
        Fetched::TooLarge { size } => Verdict::Rejected(format!(
            "the file is {size} bytes but {} were declared",
            asset.size
        )),
        // Decoding is CPU work: off the async threads.
        Fetched::Bytes(bytes) => render_pool().run(move || judge(&asset, &bytes)).await?,
    };
    env.judge_asset(&task.asset_id, &verdict)
        .await
        .map_err(storage)?;
    Ok(())
}

fn judge(asset: &AssetCheck, bytes: &[u8]) -> Verdict {
    let len = bytes.len() as u64;
    if len > asset.max_size {
        return Verdict::Rejected(format!(
            "the file is {len} bytes; the limit is {} bytes",
            asset.max_size
        ));
    }
    if len != asset.size {
        return Verdict::Rejected(format!(
            "the file is {len} bytes but {} were declared",
            asset.size
        ));
    }
    let digest = hex::encode(Sha256::digest(bytes));
    if !digest.eq_ignore_ascii_case(&asset.sha256) {
        return Verdict::Rejected(format!(
            "sha256 mismatch: the file hashes to {digest}, {} was declared",
            asset.sha256
        ));
    }
    // Bounded by the image limits themselves (pixels, SVG structure and cost).
    match plinth_render::inspect_image(bytes, &Budget::unlimited()) {
        Err(reason) => Verdict::Rejected(reason.to_string()),
        Ok(info) if info.mime != asset.declared_type => Verdict::Rejected(format!(
            "declared {} but the file is {}",
            asset.declared_type, info.mime
        )),
        Ok(info) => Verdict::Ready {
            format: info.format.to_owned(),
            width: info.width,
            height: info.height,
        },
    }
}
