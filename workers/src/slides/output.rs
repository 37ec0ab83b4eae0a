//! The format writers of an export (PNG per slide, PDF, HTML) on the render pool, under
//! a render budget that stops when the run does, and the clock of a run's phases.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::BoxDynError;
use plinth_render::{Budget, Images, RenderError, Size};

use super::{artifact_key, Artifact, Env, ExportWork, PngZip, MAX_ZIP_BYTES};
use crate::pool::render_pool;

/// A whole export may render this long (under the job's 10-minute timeout), one slide
/// one minute.
const RENDER_LIMIT: Duration = Duration::from_secs(570);
const SLIDE_LIMIT: Duration = Duration::from_secs(60);

/// One run of an export: what its steps need to report progress under its lease.
pub(super) struct Run<'a> {
    pub(super) env: &'a Env,
    pub(super) job_id: &'a str,
    pub(super) owner: &'a str,
    /// Set when a renewal found the job cancelled or taken over.
    pub(super) lost: Arc<AtomicBool>,
}

impl Run<'_> {
    /// Records progress; false when this run should stop (cancelled, or taken over).
    pub(super) async fn progress(&self, done: usize, total: usize) -> Result<bool, BoxDynError> {
        if self.lost.load(Ordering::Relaxed) {
            return Ok(false);
        }
        self.env
            .progress(self.job_id, self.owner, done, total)
            .await
    }
}

/// The render budget of one run. A watcher keeps its flag current with the job (set
/// when the job is cancelled or its lease lost, checked every 200 ms); dropping it
/// (the run ended, or its future was dropped by the job timeout or at shutdown) sets
/// the flag too, so the render threads stop within a second whatever stopped the run
/// (security review N-H3).
pub(super) struct Stopper {
    pub(super) budget: Budget,
    /// Slides done, for the progress the watcher records.
    pub(super) done: Arc<std::sync::atomic::AtomicUsize>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Stopper {
    pub(super) fn watch(run: &Run<'_>, total: usize) -> Stopper {
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
pub(super) struct Output<'a> {
    pub(super) run: &'a Run<'a>,
    pub(super) work: &'a ExportWork,
    pub(super) stop: &'a Stopper,
    pub(super) size: Size,
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
            download: Some(super::download_name(
                self.work.content.title.as_deref(),
                &name,
            )),
            name,
            content_type: content_type.into(),
            size: bytes.len() as u64,
            slide,
        };
        self.run.env.put_object(&a.key, bytes, content_type).await?;
        Ok(a)
    }

    /// One PNG per slide, as many at once as the render pool has threads; with `zip`,
    /// also all of them as one `deck.zip`, stored after the last slide (or not at all).
    pub(super) async fn pngs(
        &self,
        slides: &[&plinth_slides::Slide],
        images: &Images,
        zip: bool,
        clock: &mut Clock,
        artifacts: &mut Vec<Artifact>,
    ) -> Rendered {
        let mut bundle = zip.then(|| PngZip::new(chrono::Utc::now(), MAX_ZIP_BYTES));
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
                if let Some(z) = bundle.as_mut() {
                    if let Err(e) = z.add(&name, &png) {
                        return Ok(Err(RenderError::Failed(e.to_string())));
                    }
                }
                artifacts.push(self.store(name, png, "image/png", Some(n)).await?);
                self.stop.done.store(n, Ordering::Relaxed);
            }
            clock.lap("store");
        }
        if let Some(z) = bundle {
            let bytes = match z.finish() {
                Ok(b) => b,
                Err(e) => return Ok(Err(RenderError::Failed(e.to_string()))),
            };
            let ct = "application/zip";
            artifacts.push(self.store("deck.zip".into(), bytes, ct, None).await?);
            clock.lap("store");
        }
        Ok(Ok(()))
    }

    pub(super) async fn pdf(
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

    pub(super) async fn html(
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
pub(super) struct Clock {
    last: std::time::Instant,
    spent: Vec<(&'static str, Duration)>,
}

impl Clock {
    pub(super) fn start() -> Clock {
        Clock {
            last: std::time::Instant::now(),
            spent: Vec::new(),
        }
    }

    pub(super) fn lap(&mut self, phase: &'static str) {
        let now = std::time::Instant::now();
        let d = now - self.last;
        self.last = now;
        match self.spent.iter_mut().find(|(p, _)| *p == phase) {
            Some((_, total)) => *total += d,
            None => self.spent.push((phase, d)),
        }
    }

    pub(super) fn ms(&self, phase: &str) -> f64 {
        self.spent
            .iter()
            .find(|(p, _)| *p == phase)
            .map_or(0.0, |(_, d)| d.as_secs_f64() * 1000.0)
    }
}
