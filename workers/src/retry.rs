//! Why a run failed and when the job runs again.
//!
//! A handler that fails returns a [`JobError`]: a short `cause` (the label of the
//! failure metrics and the log line), the message operators read, and whether another
//! attempt could help. Errors of other types (a panic caught by apalis, the job timeout,
//! anything a handler passed up with `?`) are classified by [`classify`].
//!
//! A failure with attempts left waits out its queue's [`Backoff`]: exponential steps with
//! ±20 % jitter (email: 30 s, 2 min, 10 min, 1 h, 6 h). The wait is kept in the queue's
//! own row (apalis fetches a `Failed` job with attempts left again once its `run_at` is
//! due), never in a sleeping worker: a worker slot is free during the wait and the
//! schedule survives restarts (see `lifecycle`).

use std::time::Duration;

use apalis::prelude::{AbortError, BoxDynError};

/// A run's failure as operators read it.
#[derive(Debug)]
pub struct JobError {
    /// A short label: `smtp`, `smtp_rejected`, `render`, `asset`, `storage`...
    pub cause: &'static str,
    pub message: String,
    /// Another attempt cannot help (the deck cannot be rendered, the relay refused the
    /// recipient for good): the job fails now, whatever attempts it has left.
    pub permanent: bool,
    /// The job was cancelled (by its client or an operator): apalis records it as
    /// `Killed` and never runs it again.
    pub cancelled: bool,
}

impl JobError {
    /// A failure another attempt may cure (a relay or a store that is down).
    pub fn retry(cause: &'static str, message: impl std::fmt::Display) -> Self {
        Self {
            cause,
            message: message.to_string(),
            permanent: false,
            cancelled: false,
        }
    }

    /// A failure for good: no other attempt.
    pub fn permanent(cause: &'static str, message: impl std::fmt::Display) -> Self {
        Self {
            cause,
            message: message.to_string(),
            permanent: true,
            cancelled: false,
        }
    }

    /// The job was cancelled meanwhile: it ends as `cancelled`, never retried.
    pub fn cancelled(message: impl std::fmt::Display) -> Self {
        Self {
            cause: "cancelled",
            message: message.to_string(),
            permanent: true,
            cancelled: true,
        }
    }
}

/// An error passed up with `?`: a `JobError` or an abort inside stays what it is;
/// anything else is a failure another attempt may cure, as [`classify`] reads it.
impl From<BoxDynError> for JobError {
    fn from(e: BoxDynError) -> Self {
        let e = match e.downcast::<JobError>() {
            Ok(j) => return *j,
            Err(e) => e,
        };
        match e.downcast::<AbortError>() {
            Ok(a) => {
                JobError::cancelled(a.to_string().trim_start_matches("AbortError: ").to_owned())
            }
            Err(e) => JobError::retry("error", e),
        }
    }
}

impl From<crate::pool::PoolFailed> for JobError {
    fn from(e: crate::pool::PoolFailed) -> Self {
        JobError::retry("error", e)
    }
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobError {}

/// How a run failed: (cause, permanent, message, cancelled). `cancelled` is apalis's
/// `AbortError` (the job is `Killed`: cancelled, never retried).
pub fn classify(e: &BoxDynError) -> Failure {
    if let Some(j) = e.downcast_ref::<JobError>() {
        return Failure {
            cause: j.cause,
            permanent: j.permanent,
            message: j.message.clone(),
            cancelled: j.cancelled,
        };
    }
    if let Some(a) = e.downcast_ref::<AbortError>() {
        // apalis's catch_panic layer reports a panic as an abort; a handler aborts a job
        // that was cancelled meanwhile.
        let text = a.to_string();
        let panic = text.contains("panic");
        return Failure {
            cause: if panic { "panic" } else { "cancelled" },
            permanent: true,
            message: text
                .trim_start_matches("AbortError: ")
                .trim_start_matches("PanicError: ")
                .to_owned(),
            cancelled: !panic,
        };
    }
    if e.downcast_ref::<tower::timeout::error::Elapsed>().is_some() {
        return Failure {
            cause: "timeout",
            permanent: false,
            message: "the job ran past its timeout".into(),
            cancelled: false,
        };
    }
    Failure {
        cause: "error",
        permanent: false,
        message: e.to_string(),
        cancelled: false,
    }
}

/// A classified failure (see [`classify`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub cause: &'static str,
    pub permanent: bool,
    pub message: String,
    pub cancelled: bool,
}

/// A cancellation: apalis records the job as `Killed` and never runs it again.
pub fn cancelled(message: impl std::fmt::Display) -> BoxDynError {
    Box::new(AbortError::new(message.to_string()))
}

/// A queue's waits between attempts: attempt `n` (1-based) that fails waits `steps[n-1]`
/// (the last step repeats), ±`jitter` of it at random, before attempt `n + 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    pub steps: Vec<Duration>,
    /// Fraction of each wait added or taken at random (0.2: ±20 %), so that jobs that
    /// failed together (a relay restart) do not all come back in the same second.
    pub jitter: f64,
}

impl Backoff {
    /// Email: a relay restart, or an outage of an hour, loses nothing; the attempts span
    /// about 7 h 12 min.
    pub fn email() -> Self {
        Self::of(&[30, 120, 600, 3_600, 21_600])
    }

    /// Slide exports and image checks: storage or database trouble (a deck that cannot
    /// be rendered fails at once, permanently).
    pub fn slides() -> Self {
        Self::of(&[10, 60, 300])
    }

    /// Completion callbacks to a client's endpoint: about 1 day and 11 h in all.
    pub fn callbacks() -> Self {
        Self::of(&[10, 60, 300, 1_800, 7_200, 28_800, 86_400])
    }

    fn of(secs: &[u64]) -> Self {
        Self {
            steps: secs.iter().map(|s| Duration::from_secs(*s)).collect(),
            jitter: 0.2,
        }
    }

    /// Parses `30s,2m,10m,1h,6h` (units s, m, h; a bare number is seconds).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut steps = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (num, unit) = match part.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
                Some((at, _)) => part.split_at(at),
                None => (part, "s"),
            };
            let n: f64 = num
                .trim()
                .parse()
                .map_err(|_| format!("`{part}` is not a duration such as 30s, 2m or 1h"))?;
            let secs = match unit.trim() {
                "s" => n,
                "m" => n * 60.0,
                "h" => n * 3600.0,
                other => return Err(format!("`{part}`: unknown unit `{other}` (use s, m or h)")),
            };
            if !(secs.is_finite() && (0.0..=7.0 * 86_400.0).contains(&secs)) {
                return Err(format!("`{part}`: a wait is 0 s to 7 days"));
            }
            steps.push(Duration::from_secs_f64(secs));
        }
        if steps.is_empty() || steps.len() > 24 {
            return Err("give 1 to 24 waits, e.g. 30s,2m,10m,1h,6h".into());
        }
        Ok(Self { steps, jitter: 0.2 })
    }

    /// Attempts in all: the first and one after each wait.
    pub fn max_attempts(&self) -> usize {
        self.steps.len() + 1
    }

    /// The wait after failed attempt `attempt` (1-based), with jitter from `unit`, a
    /// number in [0, 1).
    pub fn delay_with(&self, attempt: usize, unit: f64) -> Duration {
        let Some(base) = self
            .steps
            .get(attempt.saturating_sub(1))
            .or(self.steps.last())
        else {
            return Duration::ZERO;
        };
        let factor = 1.0 + self.jitter * (2.0 * unit.clamp(0.0, 1.0) - 1.0);
        base.mul_f64(factor.max(0.0))
    }

    /// The wait after failed attempt `attempt`, with random jitter.
    pub fn delay(&self, attempt: usize) -> Duration {
        // 53 random bits from a v4 UUID: a uniform number in [0, 1).
        let bits = (uuid::Uuid::new_v4().as_u128() >> 75) as u64;
        self.delay_with(attempt, bits as f64 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_email_schedule_outlasts_a_ten_minute_outage() {
        let b = Backoff::email();
        assert_eq!(b.max_attempts(), 6);
        // Even with every wait at its shortest (-20 %), the fourth attempt comes ten
        // minutes after the first, and the last more than five and a half hours after.
        let shortest: Duration = (1..=3).map(|a| b.delay_with(a, 0.0)).sum();
        assert!(shortest >= Duration::from_secs(600), "{shortest:?}");
        let span: Duration = (1..=5).map(|a| b.delay_with(a, 0.0)).sum();
        assert!(span > Duration::from_secs(5 * 3600 + 1800), "{span:?}");
        let longest: Duration = (1..=5).map(|a| b.delay_with(a, 1.0)).sum();
        assert!(longest < Duration::from_secs(9 * 3600), "{longest:?}");
        assert_eq!(b.delay_with(1, 0.5), Duration::from_secs(30));
        assert_eq!(b.delay_with(5, 0.5), Duration::from_secs(6 * 3600));
        // Past the schedule the last step repeats.
        assert_eq!(b.delay_with(9, 0.5), Duration::from_secs(6 * 3600));
    }

    #[test]
    fn jitter_stays_within_twenty_percent() {
        let b = Backoff::email();
        for _ in 0..1000 {
            let d = b.delay(2).as_secs_f64();
            assert!((96.0..=144.0).contains(&d), "{d}");
        }
        assert_eq!(b.delay_with(2, 0.0), Duration::from_secs(96));
        assert_eq!(b.delay_with(2, 1.0), Duration::from_secs(144));
    }

    #[test]
    fn schedules_parse_from_the_command_line() {
        let b = Backoff::parse("30s, 2m,10m,1h,6h").unwrap();
        assert_eq!(b, Backoff::email());
        assert_eq!(
            Backoff::parse("1,2.5").unwrap().steps[1],
            Duration::from_millis(2500)
        );
        for bad in ["", "x", "5d", "-1s", "1h,", "10000h"] {
            if bad == "1h," {
                assert!(Backoff::parse(bad).is_ok());
                continue;
            }
            assert!(Backoff::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn failures_are_classified() {
        let e: BoxDynError = Box::new(JobError::permanent("render", "slide 3: too big"));
        let f = classify(&e);
        assert_eq!((f.cause, f.permanent, f.cancelled), ("render", true, false));
        assert_eq!(f.message, "slide 3: too big");
        let e: BoxDynError = "connection refused".into();
        assert_eq!(classify(&e).cause, "error");
        assert!(!classify(&e).permanent);
        let e = cancelled("cancelled by its client");
        let f = classify(&e);
        assert!(f.cancelled && f.permanent);
        let e: BoxDynError = Box::new(tower::timeout::error::Elapsed::new());
        assert_eq!(classify(&e).cause, "timeout");
    }
}
