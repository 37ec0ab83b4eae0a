//! What a render may spend: a cancel flag its caller can set, a deadline, and a time
//! limit per slide. The renderer checks it between slides, images and drawing steps;
//! every step between two checks is bounded (an SVG image costlier than
//! [`crate::MAX_SVG_COST`] is refused before it is drawn), so a set flag or a passed
//! deadline stops the CPU within a fraction of a second.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::RenderError;

#[derive(Debug, Clone)]
pub struct Budget {
    cancel: Arc<AtomicBool>,
    /// The deadline and the limit it was set from (for the message).
    deadline: Option<(Instant, Duration)>,
    per_slide: Option<Duration>,
    /// Set on the budget of one slide: its own deadline and limit.
    slide: Option<(Instant, Duration)>,
}

impl Budget {
    /// A budget stopped by `cancel` (set it, or call [`Budget::cancel`]) or once
    /// `deadline` has passed.
    pub fn new(cancel: Arc<AtomicBool>, deadline: Option<Instant>) -> Budget {
        let now = Instant::now();
        Budget {
            cancel,
            deadline: deadline.map(|d| (d, d.saturating_duration_since(now))),
            per_slide: None,
            slide: None,
        }
    }

    /// No deadline and a flag nobody else holds.
    pub fn unlimited() -> Budget {
        Budget::new(Arc::new(AtomicBool::new(false)), None)
    }

    /// Also stop any one slide (of a PNG or PDF export) after `limit`.
    pub fn per_slide(mut self, limit: Duration) -> Budget {
        self.per_slide = Some(limit);
        self
    }

    /// Stops every render that checks this budget (or a clone of it).
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// The flag [`Budget::cancel`] sets, for a caller to share.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// `Err` once the flag is set or a deadline has passed. A load and a clock read.
    pub fn check(&self) -> Result<(), RenderError> {
        if self.is_cancelled() {
            return Err(RenderError::Cancelled);
        }
        if self.deadline.is_none() && self.slide.is_none() {
            return Ok(());
        }
        let now = Instant::now();
        if let Some((at, limit)) = self.slide {
            if now >= at {
                return Err(RenderError::TimedOut {
                    what: "one slide",
                    limit,
                });
            }
        }
        match self.deadline {
            Some((at, limit)) if now >= at => Err(RenderError::TimedOut {
                what: "the render",
                limit,
            }),
            _ => Ok(()),
        }
    }

    /// The budget of one slide starting now: this one, and the per-slide limit.
    pub(crate) fn for_slide(&self) -> Budget {
        let mut b = self.clone();
        b.slide = self.per_slide.map(|l| (Instant::now() + l, l));
        b
    }
}
