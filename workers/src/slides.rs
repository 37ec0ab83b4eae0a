//! Slide jobs: deck export (PDF, PNG, HTML) and image validation. The API's tables hold
//! the status clients poll; the queue only says "run job X". Storage and the database are
//! reached through [`SlideEnv`], which the server implements.
//!
//! Every handler is safe to run twice (a job interrupted by a crash runs again after
//! restart): artifact keys are fixed per job, so a rerun overwrites instead of
//! duplicating, and a job that already ended is skipped.

use std::collections::HashMap;
use std::sync::Arc;

use apalis::prelude::{BoxDynError, Data};
use futures::future::BoxFuture;
use plinth_render::{Image, Images, RenderError, Size};
use plinth_slides::Deck;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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

/// The server side of slide jobs: rows in the API's tables and object storage.
pub trait SlideEnv: Send + Sync + 'static {
    /// Marks the job running and counts the attempt; `None` when it already ended
    /// (succeeded, failed, cancelled) or is unknown.
    fn start_export<'a>(&'a self, job_id: &'a str) -> Fut<'a, Option<ExportWork>>;
    /// Records progress; false when the job was cancelled meanwhile.
    fn progress<'a>(&'a self, job_id: &'a str, done: usize, total: usize) -> Fut<'a, bool>;
    /// Succeeds a running job with its artifacts; false when it was cancelled meanwhile.
    fn succeed<'a>(&'a self, job_id: &'a str, artifacts: &'a [Artifact]) -> Fut<'a, bool>;
    fn fail<'a>(&'a self, job_id: &'a str, reason: &'a str) -> Fut<'a, ()>;
    fn load_asset<'a>(&'a self, asset_id: &'a str) -> Fut<'a, Option<AssetCheck>>;
    fn judge_asset<'a>(&'a self, asset_id: &'a str, verdict: &'a Verdict) -> Fut<'a, ()>;
    /// The object if it is at most `max` bytes; a larger one is never read (M7).
    fn get_object<'a>(&'a self, key: &'a str, max: u64) -> Fut<'a, Fetched>;
    fn put_object<'a>(&'a self, key: &'a str, bytes: Vec<u8>, content_type: &'a str)
        -> Fut<'a, ()>;
    fn delete_object<'a>(&'a self, key: &'a str) -> Fut<'a, ()>;
}

pub type Env = Arc<dyn SlideEnv>;

/// Where a job's artifacts live: fixed per job, so a rerun overwrites.
fn artifact_key(deck_id: &str, job_id: &str, name: &str) -> String {
    format!("slides/{deck_id}/jobs/{job_id}/{name}")
}

enum Outcome {
    Done(Vec<Artifact>),
    Cancelled(Vec<Artifact>),
    /// The deck cannot be rendered: not worth a retry.
    Failed(String),
}

pub async fn run_export(task: ExportTask, env: Data<Env>) -> Result<(), BoxDynError> {
    let env: &Env = &env;
    let job_id = task.job_id.as_str();
    let Some(work) = env.start_export(job_id).await? else {
        return Ok(());
    };
    if work.attempt > MAX_ATTEMPTS {
        env.fail(job_id, &format!("gave up after {MAX_ATTEMPTS} attempts"))
            .await?;
        return Ok(());
    }
    let outcome = match export(env, job_id, &work).await {
        Ok(o) => o,
        // Storage or database trouble: retried by the queue, unless this was the last try.
        Err(e) if work.attempt >= MAX_ATTEMPTS => Outcome::Failed(format!("export failed: {e}")),
        Err(e) => return Err(e),
    };
    match outcome {
        Outcome::Done(artifacts) => {
            if !env.succeed(job_id, &artifacts).await? {
                remove(env, &artifacts).await;
            }
        }
        Outcome::Cancelled(artifacts) => remove(env, &artifacts).await,
        Outcome::Failed(reason) => env.fail(job_id, &reason).await?,
    }
    Ok(())
}

/// A cancelled job leaves nothing behind.
async fn remove(env: &Env, artifacts: &[Artifact]) {
    for a in artifacts {
        if let Err(e) = env.delete_object(&a.key).await {
            tracing::warn!(error = %e, key = a.key, "artifact of a cancelled job not deleted");
        }
    }
}

async fn export(env: &Env, job_id: &str, work: &ExportWork) -> Result<Outcome, BoxDynError> {
    let mut images: Images = HashMap::new();
    for id in work.content.asset_ids() {
        let Some(img) = work.images.get(&id) else {
            return Ok(Outcome::Failed(format!("image asset {id} does not exist")));
        };
        if img.status != "ready" {
            return Ok(Outcome::Failed(format!(
                "image asset {id} is not ready (status {})",
                img.status
            )));
        }
        let bytes = match env.get_object(&img.object_key, img.size).await? {
            Fetched::Bytes(b)
                if hex::encode(Sha256::digest(&b)).eq_ignore_ascii_case(&img.sha256) =>
            {
                b
            }
            Fetched::Missing => {
                return Ok(Outcome::Failed(format!(
                    "image asset {id} has no stored file"
                )))
            }
            // Replaced through its upload URL after validation (L4).
            _ => {
                return Ok(Outcome::Failed(format!(
                    "image asset {id} changed after it was validated; upload it again"
                )))
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
    let deck = &work.content;
    let slides = plinth_render::visible(deck);
    let total = slides.len();
    let size = Size::default();
    let mut artifacts = Vec::new();
    match work.format.as_str() {
        "png" => {
            for (i, slide) in slides.iter().enumerate() {
                if !env.progress(job_id, i, total).await? {
                    return Ok(Outcome::Cancelled(artifacts));
                }
                let png = {
                    let (deck, slide, images) = (deck.clone(), (*slide).clone(), images.clone());
                    tokio::task::spawn_blocking(move || {
                        plinth_render::slide_png(&deck, &slide, &images, size)
                    })
                    .await?
                };
                let png = match png {
                    Ok(p) => p,
                    Err(e) => return Ok(Outcome::Failed(format!("slide {}: {e}", i + 1))),
                };
                let name = format!("slide-{:03}.png", i + 1);
                let a = Artifact {
                    key: artifact_key(&work.deck_id, job_id, &name),
                    name,
                    content_type: "image/png".into(),
                    size: png.len() as u64,
                    slide: Some(i + 1),
                };
                env.put_object(&a.key, png, "image/png").await?;
                artifacts.push(a);
            }
        }
        "pdf" => {
            // Cancellation is checked between slides from inside the renderer, through a
            // flag that a watcher task keeps current.
            let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let watcher = {
                let (env, job, cancelled, done) = (
                    env.clone(),
                    job_id.to_owned(),
                    cancelled.clone(),
                    done.clone(),
                );
                tokio::spawn(async move {
                    loop {
                        let n = done.load(std::sync::atomic::Ordering::Relaxed);
                        if let Ok(false) = env.progress(&job, n, total).await {
                            cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
                            return;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    }
                })
            };
            let pdf = {
                let (deck, images, cancelled, done) = (
                    deck.clone(),
                    images.clone(),
                    cancelled.clone(),
                    done.clone(),
                );
                tokio::task::spawn_blocking(move || {
                    plinth_render::deck_pdf(&deck, &images, size, &mut |i| {
                        done.store(i, std::sync::atomic::Ordering::Relaxed);
                        !cancelled.load(std::sync::atomic::Ordering::Relaxed)
                    })
                })
                .await
            };
            watcher.abort();
            let pdf = match pdf? {
                Ok(p) => p,
                Err(RenderError::Cancelled) => return Ok(Outcome::Cancelled(artifacts)),
                Err(e) => return Ok(Outcome::Failed(e.to_string())),
            };
            if !env.progress(job_id, total, total).await? {
                return Ok(Outcome::Cancelled(artifacts));
            }
            let a = Artifact {
                key: artifact_key(&work.deck_id, job_id, "deck.pdf"),
                name: "deck.pdf".into(),
                content_type: "application/pdf".into(),
                size: pdf.len() as u64,
                slide: None,
            };
            env.put_object(&a.key, pdf, "application/pdf").await?;
            artifacts.push(a);
        }
        "html" => {
            if !env.progress(job_id, 0, total).await? {
                return Ok(Outcome::Cancelled(artifacts));
            }
            let html = plinth_render::deck_html(deck, &images).into_bytes();
            let a = Artifact {
                key: artifact_key(&work.deck_id, job_id, "deck.html"),
                name: "deck.html".into(),
                content_type: "text/html; charset=utf-8".into(),
                size: html.len() as u64,
                slide: None,
            };
            env.put_object(&a.key, html, "text/html; charset=utf-8")
                .await?;
            artifacts.push(a);
        }
        other => return Ok(Outcome::Failed(format!("unknown export format `{other}`"))),
    }
    if !env.progress(job_id, total, total).await? {
        return Ok(Outcome::Cancelled(artifacts));
    }
    Ok(Outcome::Done(artifacts))
}

pub async fn run_image_check(task: ImageTask, env: Data<Env>) -> Result<(), BoxDynError> {
    let env: &Env = &env;
    let Some(asset) = env.load_asset(&task.asset_id).await? else {
        return Ok(());
    };
    if !asset.pending {
        return Ok(());
    }
    // Read at most the declared size (itself within the limit): anything larger is
    // refused on its size alone, before a byte of it is read (M7).
    let bound = asset.size.min(asset.max_size);
    let verdict = match env.get_object(&asset.object_key, bound).await? {
        Fetched::Missing => Verdict::Rejected("no file was uploaded to the upload URL".into()),
        Fetched::TooLarge { size } => Verdict::Rejected(format!(
            "the file is {size} bytes but {} were declared",
            asset.size
        )),
        // Decoding is CPU work: off the async threads.
        Fetched::Bytes(bytes) => tokio::task::spawn_blocking(move || judge(&asset, &bytes)).await?,
    };
    env.judge_asset(&task.asset_id, &verdict).await?;
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
    match plinth_render::inspect_image(bytes) {
        Err(reason) => Verdict::Rejected(reason),
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
