//! Reading request bodies on a budget: a size limit, a timeout on progress and a minimum
//! rate, so that a body that never ends holds neither memory nor a request slot
//! (security review N-H1). Small bodies are kept in memory; uploads are spooled to a
//! file under the data directory; a refused request's body is drained, never kept.

use std::path::Path;
use std::time::{Duration, Instant};

use axum::body::{Body, BodyDataStream};
use axum::http::{header, HeaderMap, StatusCode};
use bytes::Bytes;
use futures::StreamExt;
use sha2::Digest;

use crate::http::error::ApiError;

/// How much of a body may arrive, and how fast it must.
#[derive(Debug, Clone, Copy)]
pub struct BodyBudget {
    pub max: u64,
    /// Longest wait for the next piece.
    pub idle: Duration,
    /// Slowest average rate (bytes per second), enforced once `idle` has passed.
    pub min_rate: u64,
    /// The caller sent no valid key: the limit is the anonymous one (said in the 413).
    pub anonymous: bool,
}

impl BodyBudget {
    pub fn new(limits: &crate::config::Limits, max: u64, anonymous: bool) -> BodyBudget {
        BodyBudget {
            max,
            idle: Duration::from_secs(limits.body_timeout.max(1)),
            min_rate: limits.min_body_rate,
            anonymous,
        }
    }
}

/// Why a body was not read.
#[derive(Debug)]
pub enum BodyError {
    TooLarge { max: u64, anonymous: bool },
    Stalled { secs: u64 },
    TooSlow { min_rate: u64 },
    Broken,
    Spool(std::io::Error),
}

impl BodyError {
    fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::Stalled { .. } | BodyError::TooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken => StatusCode::BAD_REQUEST,
            BodyError::Spool(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { max, anonymous } => {
                if *max >= 1 << 20 {
                    write!(f, "request body is larger than the {} MiB limit", max >> 20)?;
                } else {
                    let kib = max.div_ceil(1024);
                    write!(f, "request body is larger than the {kib} KiB limit")?;
                }
                if *anonymous {
                    f.write_str(" for a request without a valid API key")?;
                }
                Ok(())
            }
            BodyError::Stalled { secs } => {
                write!(f, "the request body stopped arriving: nothing for {secs} s")
            }
            BodyError::TooSlow { min_rate } => write!(
                f,
                "the request body arrived slower than {min_rate} bytes per second"
            ),
            BodyError::Broken => f.write_str("the request body could not be read"),
            BodyError::Spool(_) => f.write_str("the upload could not be stored; try again"),
        }
    }
}

impl From<BodyError> for ApiError {
    fn from(e: BodyError) -> ApiError {
        let mut err = ApiError::new(e.status(), e.to_string());
        match e {
            BodyError::TooLarge { max, .. } => err = err.with("max_bytes", max),
            BodyError::TooSlow { min_rate } => err = err.with("min_bytes_per_second", min_rate),
            BodyError::Spool(io) => err.cause = Some(format!("spooling a request body: {io}")),
            BodyError::Stalled { .. } | BodyError::Broken => {}
        }
        err
    }
}

/// The length the client declared, if any.
pub fn declared(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// A body's pieces as they arrive, each checked against the budget.
struct Guarded {
    stream: BodyDataStream,
    budget: BodyBudget,
    started: Instant,
    total: u64,
}

impl Guarded {
    fn new(body: Body, budget: BodyBudget) -> Guarded {
        Guarded {
            stream: body.into_data_stream(),
            budget,
            started: Instant::now(),
            total: 0,
        }
    }

    async fn next(&mut self) -> Option<Result<Bytes, BodyError>> {
        let b = self.budget;
        let chunk = match tokio::time::timeout(b.idle, self.stream.next()).await {
            Err(_) => {
                return Some(Err(BodyError::Stalled {
                    secs: b.idle.as_secs(),
                }))
            }
            Ok(None) => return None,
            Ok(Some(Err(_))) => return Some(Err(BodyError::Broken)),
            Ok(Some(Ok(chunk))) => chunk,
        };
        self.total += chunk.len() as u64;
        if self.total > b.max {
            return Some(Err(BodyError::TooLarge {
                max: b.max,
                anonymous: b.anonymous,
            }));
        }
        let elapsed = self.started.elapsed();
        if elapsed > b.idle && (self.total as f64) < b.min_rate as f64 * elapsed.as_secs_f64() {
            return Some(Err(BodyError::TooSlow {
                min_rate: b.min_rate,
            }));
        }
        Some(Ok(chunk))
    }
}

/// A body as a stream of pieces within the budget (for handlers that stream it on, such
/// as the local object store's signed uploads).
pub fn stream(
    body: Body,
    budget: BodyBudget,
) -> impl futures::Stream<Item = Result<Bytes, BodyError>> + Unpin {
    Box::pin(futures::stream::unfold(
        Guarded::new(body, budget),
        |mut g| async move { g.next().await.map(|piece| (piece, g)) },
    ))
}

/// Reads a whole body into memory, within the budget. A declared length over the limit
/// is refused before anything is read.
pub async fn read(headers: &HeaderMap, body: Body, budget: BodyBudget) -> Result<Bytes, BodyError> {
    if declared(headers).is_some_and(|n| n > budget.max) {
        return Err(BodyError::TooLarge {
            max: budget.max,
            anonymous: budget.anonymous,
        });
    }
    // A body known to be empty (most GETs): nothing to read.
    if http_body::Body::is_end_stream(&body) {
        return Ok(Bytes::new());
    }
    let mut pieces = Guarded::new(body, budget);
    // A body that arrives in one piece (most) is kept as it came, without a copy.
    let mut first: Option<Bytes> = None;
    let mut buf = bytes::BytesMut::new();
    while let Some(chunk) = pieces.next().await {
        let chunk = chunk?;
        match first.take() {
            None if buf.is_empty() => first = Some(chunk),
            earlier => {
                if let Some(earlier) = earlier {
                    buf.extend_from_slice(&earlier);
                }
                buf.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| buf.freeze()))
}

/// A request body written to a temporary file (deleted when dropped), with its length and
/// sha256, for routes whose bodies are too large to hold in memory.
#[derive(Debug)]
pub struct Spooled {
    pub path: tempfile::TempPath,
    pub len: u64,
    pub sha256: String,
}

/// Writes a body to a new file in `dir`, within the budget; nothing is left behind when
/// it fails.
pub async fn spool(
    headers: &HeaderMap,
    body: Body,
    budget: BodyBudget,
    dir: &Path,
) -> Result<Spooled, BodyError> {
    use tokio::io::AsyncWriteExt;
    if declared(headers).is_some_and(|n| n > budget.max) {
        return Err(BodyError::TooLarge {
            max: budget.max,
            anonymous: budget.anonymous,
        });
    }
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(BodyError::Spool)?;
    let dir = dir.to_owned();
    let (file, path) = tokio::task::spawn_blocking(move || tempfile::NamedTempFile::new_in(dir))
        .await
        .map_err(|e| BodyError::Spool(std::io::Error::other(e)))?
        .map_err(BodyError::Spool)?
        .into_parts();
    let mut file = tokio::fs::File::from_std(file);
    let mut pieces = Guarded::new(body, budget);
    let mut sha = sha2::Sha256::new();
    let mut len = 0u64;
    while let Some(chunk) = pieces.next().await {
        let chunk = chunk?;
        sha.update(&chunk);
        len += chunk.len() as u64;
        file.write_all(&chunk).await.map_err(BodyError::Spool)?;
    }
    file.flush().await.map_err(BodyError::Spool)?;
    Ok(Spooled {
        path,
        len,
        sha256: hex::encode(sha.finalize()),
    })
}

/// Reads and drops what is left of a refused request's body, so that a client still
/// writing gets to read the answer: at most `max` bytes within `within`. False when the
/// body was larger or slower (the connection then closes).
pub async fn drain(body: Body, max: u64, within: Duration) -> bool {
    let mut stream = body.into_data_stream();
    let mut total = 0u64;
    let read_all = async {
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { return false };
            total += chunk.len() as u64;
            if total > max {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(within, read_all)
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max: u64, idle_ms: u64, min_rate: u64) -> BodyBudget {
        BodyBudget {
            max,
            idle: Duration::from_millis(idle_ms),
            min_rate,
            anonymous: false,
        }
    }

    /// A body that sends `pieces` of `size` bytes, `gap` apart.
    fn trickle(pieces: usize, size: usize, gap: Duration) -> Body {
        let stream = futures::stream::iter(0..pieces).then(move |_| async move {
            tokio::time::sleep(gap).await;
            Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; size]))
        });
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn a_body_that_stops_arriving_is_refused_after_the_idle_wait() {
        let body = trickle(2, 10, Duration::from_millis(300));
        let err = read(&HeaderMap::new(), body, budget(1000, 100, 0)).await;
        assert!(matches!(err, Err(BodyError::Stalled { .. })), "{err:?}");
    }

    #[tokio::test]
    async fn a_trickle_slower_than_the_minimum_rate_is_refused() {
        // 10 bytes every 50 ms is 200 B/s; the minimum is 1000 B/s once 100 ms passed.
        let body = trickle(20, 10, Duration::from_millis(50));
        let err = read(&HeaderMap::new(), body, budget(1000, 100, 1000)).await;
        assert!(matches!(err, Err(BodyError::TooSlow { .. })), "{err:?}");
    }

    #[tokio::test]
    async fn bodies_within_budget_are_read_whole_and_larger_ones_refused() {
        let ok = read(
            &HeaderMap::new(),
            trickle(4, 10, Duration::ZERO),
            budget(40, 1000, 0),
        )
        .await;
        assert_eq!(ok.unwrap().len(), 40);
        let big = read(
            &HeaderMap::new(),
            trickle(5, 10, Duration::ZERO),
            budget(40, 1000, 0),
        )
        .await;
        assert!(matches!(big, Err(BodyError::TooLarge { max: 40, .. })));
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, "41".parse().unwrap());
        let declared = read(&h, Body::empty(), budget(40, 1000, 0)).await;
        assert!(matches!(declared, Err(BodyError::TooLarge { .. })));
    }

    #[tokio::test]
    async fn a_spooled_body_is_on_disk_with_its_digest_and_gone_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let s = spool(
            &HeaderMap::new(),
            trickle(3, 4, Duration::ZERO),
            budget(100, 1000, 0),
            dir.path(),
        )
        .await
        .unwrap();
        assert_eq!(s.len, 12);
        assert_eq!(std::fs::read(&s.path).unwrap(), b"xxxxxxxxxxxx");
        assert_eq!(s.sha256, hex::encode(sha2::Sha256::digest(b"xxxxxxxxxxxx")));
        let path = s.path.to_path_buf();
        drop(s);
        assert!(!path.exists());
        // A refused body leaves no file.
        let err = spool(
            &HeaderMap::new(),
            trickle(3, 50, Duration::ZERO),
            budget(100, 1000, 0),
            dir.path(),
        )
        .await;
        assert!(err.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
