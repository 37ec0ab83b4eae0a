//! Exports and their jobs: create, read (at once, or waiting for a change: `?wait=N`),
//! follow as server-sent events, cancel.

use std::time::Instant;

use axum::http::{header, HeaderMap, HeaderValue};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::*;
use crate::adapters::callbacks::BadCallback;
use crate::http::reply::{EventStream, HeadedAnswer, PrivateAnswer};
use crate::http::request::NonBlank;
use crate::wire::exports::JobView;
use plinth_vocab::{Export, ExportFormat, ExportStatus};

/// The job as `caller` reads it, with fresh artifact URLs. Its `callback_url` (which may
/// hold a token in its query) is shown to the one who asked for it only (security
/// review N-L1).
async fn job_view(app: &AppState, caller: &Caller, job: &JobRow) -> ApiResult<JobView> {
    let mut view = crate::wire::exports::job_view(&app.objects, job)
        .await
        .map_err(ApiError::from)?;
    if job.requested_by != caller.id {
        view.callback_url = None;
    }
    Ok(view)
}

/// Refuses a new export while the caller has as many queued or running as
/// `PLINTH_RENDERS_PER_ACCOUNT` (administrators: any): a renders' worth of CPU is the
/// most one account can keep busy (security review N-H3).
async fn live_render_cap(app: &AppState, caller: &Caller) -> ApiResult<()> {
    let cap = app.opts.limits.renders_per_account;
    if caller.is_admin() || store::live_jobs_of(&app.db, &caller.id).await? < cap as i64 {
        return Ok(());
    }
    Err(ApiError::new(
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        format!(
            "this account already has {cap} exports queued or running; wait for one to end \
             (or cancel it) before starting another"
        ),
    )
    .with("max_live_exports", cap))
}

/// Waits and event streams one account may hold open at once (administrators: any).
const FOLLOWERS_PER_ACCOUNT: usize = 64;

/// Counts an account's open waits and event streams; a slot is given back when dropped.
struct Following(String);

static FOLLOWING: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, usize>>> =
    std::sync::LazyLock::new(Default::default);

impl Following {
    fn start(caller: &Caller) -> ApiResult<Option<Following>> {
        if caller.is_admin() {
            return Ok(None);
        }
        let mut open = FOLLOWING.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(caller.id.clone()).or_default();
        if *n >= FOLLOWERS_PER_ACCOUNT {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "this account already follows {FOLLOWERS_PER_ACCOUNT} jobs at once (waits \
                     and event streams); close one first"
                ),
            )
            .with("max_followers", FOLLOWERS_PER_ACCOUNT));
        }
        *n += 1;
        Ok(Some(Following(caller.id.clone())))
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut open = FOLLOWING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.0);
            }
        }
    }
}

/// Where a client reads a job: `Location` of `exports/create`.
fn job_location(job_id: &str, deck_id: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("/api/slides/jobs/{job_id}?deck_id={deck_id}")).ok()
}

/// `notes` is for pdf and html, `zip` for png: the document says so, so a request it
/// allows is one the server takes.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("allOf" = [
    {"if": {"properties": {"zip": {"const": true}}, "required": ["zip"]},
     "then": {"properties": {"format": {"const": "png"}}}},
    {"if": {"properties": {"notes": {"const": true}}, "required": ["notes"]},
     "then": {"properties": {"format": {"enum": ["pdf", "html"]}}}}
]))]
pub struct ExportCreate {
    deck_id: NonBlank,
    /// `html`, `pdf` or `png` (any case).
    #[schemars(with = "ExportFormat")]
    format: String,
    /// Default: the deck's current revision.
    revision_id: Option<NonBlank>,
    /// Speaker notes for the presenter (default false): `pdf` gets a notes page after
    /// each slide with notes, `html` a presenter view (the slide, the next one, the
    /// notes, a timer). Not for `png`. Audience copies (publish) never carry notes.
    notes: Option<bool>,
    /// For `png` only (default false): the PNGs also as one `deck.zip` artifact (entries
    /// `slide-001.png`, … in slide order, stored uncompressed: PNGs are compressed
    /// already), at most 256 MiB, else the job fails saying so.
    zip: Option<bool>,
    /// An http(s) URL that receives a signed event when the job ends (succeeded, failed
    /// or cancelled): docs/api.md, "Completion callbacks".
    #[schemars(
        // A host is a name whose last label starts with a letter (a URL whose last label
        // is a number is read as an IPv4 address, and `0.0.0.0.0` is not one) or a
        // dotted quad; a private one is refused by policy (403), not by shape.
        regex(
            pattern = r"^https?://(([A-Za-z0-9]+\.)*[A-Za-z][A-Za-z0-9]*|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))(:[1-9][0-9]{0,3})?(/[!-~]*)?$"
        ),
        length(max = 2048)
    )]
    callback_url: Option<String>,
}

/// `POST /api/slides/exports/create` (Editor): queues rendering of a revision. Answers
/// the job with `Location: /api/slides/jobs/{id}?deck_id=` (also on a replay).
pub async fn export_create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<ExportCreate>,
) -> ApiResult<Recorded<JobView>> {
    let deck_id = required("deck_id", &body.deck_id)?;
    let lower = required("format", &body.format)?.to_ascii_lowercase();
    let Some(format) = ExportFormat::parse(&lower) else {
        let all: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.as_str()).collect();
        return Err(ApiError::bad_request(format!(
            "`format` must be one of {}",
            all.join(", ")
        )));
    };
    let notes = body.notes == Some(true);
    if notes && format == ExportFormat::Png {
        return Err(ApiError::bad_request(
            "`notes` applies to pdf and html exports (PNGs are the slides alone)",
        ));
    }
    let zip = body.zip == Some(true);
    if zip && format != ExportFormat::Png {
        return Err(ApiError::bad_request(
            "`zip` applies to png exports (a pdf or html export is one file already)",
        ));
    }
    // Stored as the job's format (`pdf+notes`, `png+zip`): the job answers `format`,
    // `notes` and `zip`.
    let format = Export { format, notes, zip }.to_string();
    let revision_id = match &body.revision_id {
        None => None,
        Some(r) => Some(required("revision_id", r)?),
    };
    let callback_url = body
        .callback_url
        .as_deref()
        .map(|u| crate::adapters::callbacks::check_url(u, app.opts.jobs.callback_private_networks))
        .transpose()
        .map_err(|e| match e {
            BadCallback::Invalid(m) => ApiError::bad_request(m),
            BadCallback::Internal => ApiError::forbidden(e.to_string()),
        })?
        .map(|u| u.to_string());
    let reply = on_deck(
        &app,
        &caller,
        &sent,
        &deck_id,
        Need::Editor,
        "exports/create",
        move |a, c, deck| async move {
            let revision_id = revision_id.unwrap_or_else(|| deck.current_revision_id.clone());
            let rev = deck_revision(&a, &deck, &revision_id).await?;
            live_render_cap(&a, &c).await?;
            // The row and its queued task commit together: nothing is left pending that
            // no worker will run.
            let job = store::create_job(
                &a.db,
                &deck.id,
                &rev.summary.id,
                &format,
                &c.id,
                callback_url.as_deref(),
            )
            .await?;
            job_view(&a, &c, &job).await
        },
    )
    .await?;
    // The location comes from the recorded value, so a replay carries it too.
    Ok(reply.map_reply(|reply| {
        let location = reply
            .body
            .get("id")
            .and_then(Value::as_str)
            .zip(reply.body.get("deck_id").and_then(Value::as_str))
            .and_then(|(job, deck)| job_location(job, deck));
        match location {
            Some(l) if reply.status.is_success() => reply.header_value(header::LOCATION, l),
            _ => reply,
        }
    }))
}

async fn deck_job(app: &AppState, deck: &DeckRow, job_id: &str) -> ApiResult<JobRow> {
    store::job(&app.db, job_id)
        .await?
        .filter(|j| j.deck_id == deck.id)
        .ok_or_else(|| ApiError::not_found("job not found"))
}

/// The longest `?wait=` (seconds).
const MAX_WAIT_SECS: u64 = 60;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct JobQuery {
    #[schemars(with = "NonBlank")]
    deck_id: Option<NonBlank>,
    /// Seconds (0 to 60) to wait for the job to change state before answering: the
    /// answer comes as soon as its status changes (or at once when it has ended), else
    /// after this long with the job as it is.
    #[schemars(regex(pattern = r"^\s*(0*([0-9]|[1-5][0-9]|60))?\s*$"))]
    wait: Option<String>,
}

fn wait_of(wait: Option<&str>) -> ApiResult<Option<std::time::Duration>> {
    let Some(w) = wait.map(str::trim).filter(|w| !w.is_empty()) else {
        return Ok(None);
    };
    match w.parse::<u64>() {
        Ok(n) if n <= MAX_WAIT_SECS => Ok((n > 0).then(|| std::time::Duration::from_secs(n))),
        _ => Err(ApiError::bad_request(format!(
            "`wait` must be a number of seconds from 0 to {MAX_WAIT_SECS}"
        ))),
    }
}

/// The job as the waiters of this process share it (`watch::Watch::latest`); its deck was
/// checked by the waiter's own first read and never changes.
async fn job_read(app: &AppState, job_id: &str) -> ApiResult<JobRow> {
    store::job(&app.db, job_id)
        .await?
        .ok_or_else(|| ApiError::not_found("job not found"))
}

/// What a fallback re-read accepts: a read another waiter of the job started in the last
/// half interval (the fallback only catches changes no notification reported).
fn fallback_since(every: std::time::Duration) -> Instant {
    let now = Instant::now();
    now.checked_sub(every / 2).unwrap_or(now)
}

/// How often a waiter reads its job again although nothing woke it (`watch::fallback`).
fn fallback(app: &AppState) -> std::time::Duration {
    let sqlite = matches!(app.db, crate::db::Db::Sqlite(_));
    let exports_here = !app.opts.jobs.no_workers
        && (app.opts.jobs.queues.iter().all(|q| q.trim().is_empty())
            || app.opts.jobs.queues.iter().any(|q| {
                plinth_workers::QueueName::parse(q) == Some(plinth_workers::QueueName::Export)
            }));
    crate::db::watch::fallback(sqlite, exports_here)
}

/// `GET /api/slides/jobs/{id}?deck_id=&wait=` (Editor). A job that has not ended answers
/// `Retry-After: 1`; with `wait`, the answer waits for the job's next change of status
/// (woken by the change itself: docs/api.md, "Waiting for a job").
pub async fn job(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<JobQuery>,
) -> ApiResult<HeadedAnswer<JobView>> {
    let wait = wait_of(q.wait.as_deref())?;
    let (deck, _) = open(&app, &caller, deck_id_of(&q.deck_id)?).await?;
    // Watching starts before the first read, so a change between the read and the wait
    // is not missed.
    // A notification wakes only a waiter already registered (`Notify::notify_waiters`),
    // so each wake-up is registered before the read it follows: a change made during a
    // read then wakes the wait after it instead of being lost until the fallback read.
    let following = match wait {
        Some(_) => Following::start(&caller)?,
        None => None,
    };
    let watch = wait.map(|_| crate::db::watch::watch(&id));
    let next = || {
        watch.as_ref().map(|w| {
            let mut n = Box::pin(w.notifier().notified_owned());
            n.as_mut().enable();
            n
        })
    };
    let mut woken = next();
    let mut job = Arc::new(deck_job(&app, &deck, &id).await?);
    if let (Some(wait), Some(w)) = (wait, &watch) {
        let deadline = Instant::now() + wait;
        let first = job.status;
        let every = fallback(&app);
        while !job.status.ended() && job.status == first {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            let since = match woken.as_mut() {
                Some(n) => tokio::select! {
                    _ = n => None,
                    _ = tokio::time::sleep(left.min(every)) => Some(fallback_since(every)),
                },
                None => None,
            };
            woken = next();
            job = w.latest(since, job_read(&app, &id)).await?;
        }
    }
    drop(woken);
    drop(watch);
    drop(following);
    if wait.is_some() {
        // The caller may have lost the deck while waiting.
        open(&app, &caller, &deck.id).await?;
    }
    let mut headers = HeaderMap::new();
    if !job.status.ended() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    Ok(HeadedAnswer {
        body: job_view(&app, &caller, &job).await?,
        headers,
    })
}

/// How long one event stream lasts before the client is asked to reconnect.
const STREAM_FOR: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// A comment line this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// One server-sent event.
fn sse(seq: u64, view: &JobView) -> bytes::Bytes {
    let data = serde_json::to_string(view).unwrap_or_else(|_| "{}".into());
    bytes::Bytes::from(format!("id: {seq}\nevent: job\ndata: {data}\n\n"))
}

struct Follow {
    app: AppState,
    caller: Arc<Caller>,
    deck_id: String,
    _slot: Option<Following>,
    id: String,
    watch: crate::db::watch::Watch,
    /// What the last event said: (status, done, total).
    last: Option<(ExportStatus, i64, i64)>,
    seq: u64,
    until: Instant,
    done: bool,
}

/// The next chunk of a job's event stream: an event when the job changed (the first
/// one at once), a keep-alive comment when quiet, nothing once the job ended.
async fn next_event(mut f: Follow) -> Option<(Result<bytes::Bytes, std::io::Error>, Follow)> {
    if f.done || Instant::now() > f.until {
        return None;
    }
    let every = fallback(&f.app);
    let quiet_until = Instant::now() + KEEP_ALIVE;
    let notify = f.watch.notifier();
    // The first event reads the job afresh; later ones share the reads of its waiters.
    let mut since = f.last.is_none().then(Instant::now);
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let job = match f.watch.latest(since, job_read(&f.app, &f.id)).await {
            Ok(j) => j,
            // Gone (its deck deleted): the stream ends.
            Err(_) => return None,
        };
        let now = (job.status, job.done, job.total);
        if f.last.as_ref() != Some(&now) {
            // Each event is the caller's to read only while the deck is theirs to read
            // (a removed member's stream ends: security review N-L1).
            open(&f.app, &f.caller, &f.deck_id).await.ok()?;
            f.last = Some(now);
            f.done = job.status.ended();
            f.seq += 1;
            let view = job_view(&f.app, &f.caller, &job).await.ok()?;
            return Some((Ok(sse(f.seq, &view)), f));
        }
        let Some(left) = quiet_until.checked_duration_since(Instant::now()) else {
            return Some((Ok(bytes::Bytes::from_static(b": keep-alive\n\n")), f));
        };
        since = tokio::select! {
            _ = notified => None,
            _ = tokio::time::sleep(left.min(every)) => Some(fallback_since(every)),
        };
    }
}

/// `GET /api/slides/jobs/{id}/events?deck_id=` (Editor; an addition): the job as
/// server-sent events (`event: job`, `data`: the job as `GET /api/slides/jobs/{id}`
/// answers it), one at once and one per change of its status or progress, until it
/// ends (or after 15 minutes: reconnect). Woken by the job's own changes, like `wait`.
pub async fn job_events(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    Query(q): Query<DeckQuery>,
) -> ApiResult<EventStream<JobView>> {
    follow_job(app, caller, id, deck_id_of(&q.deck_id)?).await
}

/// How long a stream token opens its job's stream: long enough for `EventSource`'s own
/// reconnects, short enough that a token seen in a log is soon worth nothing.
const STREAM_TOKEN_SECS: i64 = 10 * 60;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StreamTokenBody {
    deck_id: NonBlank,
}

/// A job's event stream for a browser's `EventSource` (which cannot send `x-api-key`).
#[derive(Serialize, schemars::JsonSchema)]
pub struct StreamToken {
    /// Opens this job's stream only, for this account, until `expires_at`; dead as soon
    /// as the account's key changes.
    token: String,
    /// The stream's path with the token: `new EventSource(url)` (relative to the API).
    url: String,
    expires_at: DateTime<Utc>,
}

/// The token's signature: the account, its current key (so a new key ends old tokens),
/// the deck, the job and the expiry, under a key derived for this purpose only.
fn stream_mac(
    app: &AppState,
    user: &crate::db::users::UserRow,
    deck: &str,
    job: &str,
    expires: i64,
) -> String {
    let key = app.key.subkey(b"plinth job stream token v1");
    let text = format!("{}\n{}\n{deck}\n{job}\n{expires}", user.id, user.key_hash);
    hex::encode(crate::crypto::hmac_sha256(&key, text.as_bytes()))
}

/// `POST /api/slides/jobs/{id}/events/token` (Editor; an addition): a short-lived token
/// that opens `GET /api/slides/jobs/{id}/stream`, the same event stream as
/// `GET …/events`, without the API key a browser's `EventSource` cannot send.
pub async fn job_stream_token(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<StreamTokenBody>,
) -> ApiResult<PrivateAnswer<StreamToken>> {
    let deck_id = required("deck_id", &body.deck_id)?;
    let (deck, _) = open(&app, &caller, &deck_id).await?;
    deck_job(&app, &deck, &id).await?;
    let expires = Utc::now().timestamp() + STREAM_TOKEN_SECS;
    let mac = stream_mac(&app, &caller.user, &deck.id, &id, expires);
    let token = format!("{}.{expires}.{mac}", caller.id);
    let query = serde_urlencoded::to_string([("deck_id", deck.id.as_str()), ("token", &token)])
        .map_err(ApiError::internal)?;
    Ok(PrivateAnswer(StreamToken {
        url: format!("/api/slides/jobs/{id}/stream?{query}"),
        token,
        expires_at: DateTime::from_timestamp(expires, 0).unwrap_or_default(),
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StreamQuery {
    #[schemars(with = "NonBlank")]
    deck_id: Option<NonBlank>,
    /// From `POST /api/slides/jobs/{id}/events/token`.
    #[schemars(length(min = 1, max = 200))]
    token: Option<String>,
}

/// `GET /api/slides/jobs/{id}/stream?deck_id=&token=` (a stream token; an addition): the
/// job's event stream as `GET …/events` sends it, for `EventSource`. 401 for a token
/// that is missing, expired, for another job, or from before the account's key changed.
pub async fn job_stream(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<StreamQuery>,
) -> ApiResult<EventStream<JobView>> {
    let deck_id = deck_id_of(&q.deck_id)?;
    let refused = || {
        ApiError::unauthorized(
            "a valid stream token is required (POST /api/slides/jobs/{id}/events/token)",
        )
    };
    let token = q.token.as_deref().ok_or_else(refused)?;
    let mut parts = token.splitn(3, '.');
    let (Some(user_id), Some(expires), Some(mac)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(refused());
    };
    let expires: i64 = expires.parse().map_err(|_| refused())?;
    if expires < Utc::now().timestamp() {
        return Err(refused());
    }
    let user = crate::db::users::by_id(&app.db, user_id)
        .await?
        .filter(|u| u.deleted_at.is_none())
        .ok_or_else(refused)?;
    let expected = stream_mac(&app, &user, deck_id, &id, expires);
    if !crate::crypto::ct_eq(expected.as_bytes(), mac.as_bytes()) {
        return Err(refused());
    }
    let caller = Arc::new(Caller::of(user));
    if caller.level < crate::caller::LEVEL_VERIFIED {
        return Err(refused());
    }
    follow_job(app, caller, id, deck_id).await
}

/// A job's event stream for a caller who may read its deck.
async fn follow_job(
    app: AppState,
    caller: Arc<Caller>,
    id: String,
    deck_id: &str,
) -> ApiResult<EventStream<JobView>> {
    let (deck, _) = open(&app, &caller, deck_id).await?;
    let slot = Following::start(&caller)?;
    let watch = crate::db::watch::watch(&id);
    deck_job(&app, &deck, &id).await?;
    let follow = Follow {
        app,
        caller,
        deck_id: deck.id,
        _slot: slot,
        id,
        watch,
        last: None,
        seq: 0,
        until: Instant::now() + STREAM_FOR,
        done: false,
    };
    let stream = futures::stream::unfold(follow, next_event);
    let response = axum::response::Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(axum::body::Body::from_stream(stream))
        .map_err(ApiError::internal)?;
    Ok(EventStream {
        response,
        of: std::marker::PhantomData,
    })
}

/// The account's secret for verifying completion callbacks.
#[derive(Serialize, schemars::JsonSchema)]
pub struct CallbackSecret {
    /// `whsec_...`: the HMAC-SHA256 key of the `Plinth-Signature` header of every
    /// completion event of this account's exports.
    secret: String,
    /// When it was made (a rotation makes a new one).
    created_at: DateTime<Utc>,
    /// After a rotation with an overlap: until when events also carry a signature with
    /// the secret before this one (null when they do not).
    previous_expires_at: Option<DateTime<Utc>>,
}

impl From<crate::adapters::callbacks::Signing> for CallbackSecret {
    fn from(s: crate::adapters::callbacks::Signing) -> Self {
        CallbackSecret {
            secret: s.secret,
            created_at: s.created_at,
            previous_expires_at: s.previous.map(|(_, until)| until),
        }
    }
}

/// `GET /api/slides/callbacks/secret` (V10; an addition): the caller's callback signing
/// secret, made on first use.
pub async fn callback_secret(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
) -> ApiResult<PrivateAnswer<CallbackSecret>> {
    let signing = crate::adapters::callbacks::secret(&app.db, &app.key, &caller.id)
        .await
        .map_err(ApiError::from_anyhow)?;
    Ok(PrivateAnswer(signing.into()))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RotateBody {
    /// Hours the replaced secret keeps signing beside the new one (both signatures are
    /// sent), so receivers can switch without missing an event: 0 (it stops at once, as
    /// after a leak) to 24; 24 when absent.
    #[schemars(range(min = 0, max = 24))]
    overlap_hours: Option<i64>,
}

/// `POST /api/slides/callbacks/secret/rotate` (V10; an addition): a new secret; events
/// signed from now on (retries of earlier ones included) use it, and the replaced one
/// too for `overlap_hours`.
pub async fn callback_secret_rotate(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<RotateBody>,
) -> ApiResult<PrivateAnswer<CallbackSecret>> {
    let max = crate::adapters::callbacks::MAX_OVERLAP_HOURS;
    let hours = body.overlap_hours.unwrap_or(max);
    if !(0..=max).contains(&hours) {
        return Err(ApiError::bad_request(format!(
            "`overlap_hours` must be 0 to {max}"
        )));
    }
    let signing = crate::adapters::callbacks::rotate(&app.db, &app.key, &caller.id, hours)
        .await
        .map_err(ApiError::from_anyhow)?;
    Ok(PrivateAnswer(signing.into()))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct JobRef {
    deck_id: NonBlank,
    job_id: NonBlank,
}

/// `POST /api/slides/jobs/cancel` (job requester or manager): a pending job never runs;
/// a running one stops at its next slide and leaves no artifacts.
pub async fn job_cancel(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    DeckChange(body, sent): DeckChange<JobRef>,
) -> ApiResult<Recorded<JobView>> {
    let deck_id = required("deck_id", &body.deck_id)?;
    let job_id = required("job_id", &body.job_id)?;
    let (deck, role) = open(&app, &caller, &deck_id).await?;
    let job = deck_job(&app, &deck, &job_id).await?;
    if job.requested_by != caller.id {
        require_manager(role)?;
    }
    let (a, who) = (app.clone(), caller.clone());
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
                .with("status", job.status.as_str()));
            }
            job_view(&a, &who, &job).await
        },
    )
    .await
}
