//! The usage layer, run around every route and the fallback: identifies the caller,
//! counts the request in its rate window, enforces the route's access rule and token
//! cost, and stamps `_usage` (body and headers) on every response. It also turns any
//! non-JSON error (axum rejections, 405, 413) into the `{error, message}` envelope.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plinth_actors::credits::{Applied, Change, Entry};
use serde_json::{json, Map, Value};

use crate::domain::ledger::LedgerError;
use crate::http::auth::{self, Caller, CallerExt, LEVEL_ADMIN, LEVEL_VERIFIED};
use crate::http::error::ApiError;
use crate::http::keyed::{self, KeyRule};
use crate::http::reply::Envelope;
use crate::http::routes::key_rule;
use crate::route_spec::{Access, Category};
use crate::state::{AppState, RouteEntry};
use crate::states::LedgerKind;

/// Set on every request (echoed when the client sent one) and every response.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// What `_usage` reports for one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub cost: u64,
    pub tokens_remaining: Option<i64>,
    /// 0 with `interval_ms` 0 means "not rate limited" (admins, category unlimited).
    pub limit: u64,
    pub remaining: u64,
    pub interval_ms: u64,
    pub retry_after_ms: u64,
}

/// Tier multiplier by level; `None` is unlimited (ADMIN).
pub fn tier_multiplier(level: i64) -> Option<u64> {
    match level {
        l if l >= LEVEL_ADMIN => None,
        l if l >= 40 => Some(1200),
        l if l >= 30 => Some(120),
        l if l >= 20 => Some(12),
        l if l >= LEVEL_VERIFIED => Some(6),
        _ => Some(1),
    }
}

/// The limit for a category and level after the operator's multiplier; `None` = unlimited.
pub fn limit_for(category: Category, level: i64, multiplier: f64) -> Option<u64> {
    let base = category.base_limit()?;
    let tier = tier_multiplier(level)?;
    Some(((base * tier) as f64 * multiplier).ceil().max(1.0) as u64)
}

pub async fn usage_layer(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let started = crate::observe::enabled().then(std::time::Instant::now);
    let method = req.method().clone();
    // A clone of the URI shares its bytes: no copy of the path per request.
    let uri = req.uri().clone();
    let path = uri.path();
    let (mut parts, body) = req.into_parts();
    let entry = parts
        .extensions
        .get::<MatchedPath>()
        .and_then(|p| app.routes.get(method.as_str(), p.as_str()));
    let ip = client_address(&app, &parts);
    // Header values share the request's bytes: cloned, not copied.
    let key = parts.headers.get(API_KEY).cloned();
    let key = key.as_ref().map(|v| v.to_str().unwrap_or("").trim());
    let request_id = parts.headers.get(REQUEST_ID).cloned();
    let request_id = request_id.as_ref().and_then(|v| v.to_str().ok());
    let idempotency_header = parts.headers.get(crate::http::idempotency::HEADER).cloned();

    let mut usage = Usage {
        cost: entry.map_or(0, |e| e.cost),
        ..Usage::default()
    };
    let route = entry.map_or("unmatched", |e| e.spec.path);
    let deadline = deadline(&app.opts.server, &uri);
    // The request's time, less what its body took to arrive (bounded on its own).
    let mut due = tokio::time::Instant::now() + deadline;

    // Everything that can refuse a request from its head alone (key, access, rate window)
    // is decided before a byte of its body is read: a refused request holds no memory
    // (security review N-H1).
    let replayable = replayable(entry);
    let head = tokio::time::timeout_at(due, async {
        without_nul(&uri)?;
        admit(&app, entry, key, ip, replayable, &mut usage).await
    })
    .await;
    let caller = match head.unwrap_or_else(|_| Err(past_deadline(&method, deadline))) {
        Ok(caller) => caller,
        Err(e) => {
            let resp = refused(&app, e, &parts.headers, body, &usage, &method, path).await;
            return observed(resp, route, &method, started);
        }
    };

    let reading = std::time::Instant::now();
    let sent = match read_body(&app, entry, caller.is_none(), &mut parts, body).await {
        Ok(sent) => sent,
        Err(e) => {
            let mut resp = finish(e.into_response(), &usage, &method, path).await;
            // The rest of the body stays unread: the connection cannot be reused.
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return observed(resp, route, &method, started);
        }
    };
    due += reading.elapsed();
    let mut req = Request::from_parts(parts, Body::from(sent.clone()));

    let ran = tokio::time::timeout_at(due, async {
        // A repeat of a request already answered under its idempotency key gets the
        // recorded answer before anything is counted: retrying safely uses up no rate
        // window.
        if let (true, Some(c)) = (replayable, caller.as_ref()) {
            if let Some(r) = replay_of(&app, entry, &c.id, idempotency_header.as_ref(), &sent).await
            {
                return Ran::Replayed(r.into_response());
            }
            if let Err(e) = rate(&app, entry, &caller, ip, &mut usage).await {
                return Ran::Answered(caller.clone(), e.into_response());
            }
        }
        let charged = match charge(&app, entry, &caller).await {
            Ok(charged) => charged,
            Err(e) => return Ran::Answered(caller.clone(), e.into_response()),
        };
        req.extensions_mut().insert(CallerExt(caller.clone()));
        let route = entry.and_then(|e| Some((e.spec.path, key_rule(e.spec.method, e.spec.path)?)));
        let (who, header) = (caller.as_deref(), idempotency_header.as_ref());
        let resp = keyed::around(&app, route, who, header, &sent, next.run(req)).await;
        if charged && !resp.status().is_success() {
            refund(&app, caller.as_deref(), &usage, &method, path).await;
        }
        Ran::Answered(caller.clone(), resp)
    })
    .await;
    let (caller, resp) = match ran {
        Ok(Ran::Answered(caller, resp)) => (caller, resp),
        Ok(Ran::Replayed(replay)) => {
            if let Some(c) = &caller {
                current_window(&app, entry, c, &mut usage).await;
            }
            if let Some(started) = started {
                crate::observe::http(route, &method, replay.status(), started);
            }
            return finish(replay, &usage, &method, path).await;
        }
        Err(_) => (None, past_deadline(&method, deadline).into_response()),
    };
    // The balance after the request, from the credit actors' cache (no database read).
    if let Some(c) = &caller {
        usage.tokens_remaining = Some(app.credits.balance(&c.id).await.ok().flatten().unwrap_or(0));
    }
    // 501 is a documented answer (an endpoint not built yet), not a failure.
    if resp.status().is_server_error() && resp.status() != StatusCode::NOT_IMPLEMENTED {
        log_failure(&resp, &method, entry, path, caller.as_deref(), request_id);
        crate::observe::server_error(&method, route, resp.status(), request_id);
    }
    if let Some(started) = started {
        crate::observe::http(route, &method, resp.status(), started);
    }
    finish(resp, &usage, &method, path).await
}

/// The client's address: the peer, or what a trusted proxy's header names.
fn client_address(app: &AppState, parts: &axum::http::request::Parts) -> Option<IpAddr> {
    parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| {
        crate::http::client_ip::client_ip(
            c.0.ip(),
            &parts.headers,
            &app.opts.server.trusted_proxies,
        )
    })
}

/// Refuses a URL with an encoded NUL: it is never valid input, and PostgreSQL cannot
/// store it.
fn without_nul(uri: &axum::http::Uri) -> Result<(), ApiError> {
    if uri.path().contains("%00") || uri.query().is_some_and(|q| q.contains("%00")) {
        return Err(ApiError::bad_request(
            "the URL may not contain NUL characters (%00)",
        ));
    }
    Ok(())
}

/// Counts an answer given before the handler in the HTTP metrics, as every other.
fn observed(
    resp: Response,
    route: &'static str,
    method: &Method,
    started: Option<std::time::Instant>,
) -> Response {
    if let Some(started) = started {
        crate::observe::http(route, method, resp.status(), started);
    }
    resp
}

/// Whether a request may be a repeat of one answered under its idempotency key (the
/// `Idempotency-Key` header or the body's `idempotency_key`): its rate window is then
/// counted only after the recorded answers were looked at.
/// The recorded answer a repeat under its key gets, before it is counted: a deck
/// change's (the deck actors' records) or a route recorded by `keyed`.
async fn replay_of(
    app: &AppState,
    entry: Option<RouteEntry>,
    caller_id: &str,
    header: Option<&HeaderValue>,
    sent: &[u8],
) -> Option<crate::http::reply::Reply> {
    let path = entry.map_or("", |e| e.spec.path);
    if crate::http::idempotency::hash_route(path).is_some() {
        return crate::http::idempotency::recorded_answer(app, path, caller_id, header, sent).await;
    }
    keyed::recorded_answer(app, path, caller_id, header, sent).await
}

fn replayable(entry: Option<RouteEntry>) -> bool {
    entry.is_some_and(|e| {
        e.spec.method == "POST"
            && (crate::http::idempotency::hash_route(e.spec.path).is_some()
                || key_rule(e.spec.method, e.spec.path) == Some(KeyRule::Recorded))
    })
}

/// The answer to a request refused from its head, sent at once. Its body, if any, is
/// read and dropped meanwhile (a little of it, for a little while) so that a client still
/// writing gets to read the answer; a body declared larger closes the connection.
async fn refused(
    app: &AppState,
    e: ApiError,
    headers: &axum::http::HeaderMap,
    body: Body,
    usage: &Usage,
    method: &Method,
    path: &str,
) -> Response {
    let mut resp = e.into_response();
    if !http_body::Body::is_end_stream(&body) {
        // Drained, not kept: it costs time (bounded) and bandwidth, never memory.
        let max = (crate::BODY_LIMIT as u64).max(app.opts.limits.anonymous_body_limit);
        if crate::http::body::declared(headers).is_some_and(|n| n > max) {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        } else {
            tokio::spawn(crate::http::body::drain(body, max, REFUSAL_DRAIN_TIME));
        }
    }
    finish(resp, usage, method, path).await
}

/// How long a refused request's body may take to be drained.
const REFUSAL_DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads the body of an admitted request within its budget: into memory (the route's
/// limit, or the anonymous limit for a caller without a valid key), or, for routes that
/// take uploads, into a file under the data directory that the handler finds in the
/// request's extensions ([`crate::http::body::Spooled`]).
async fn read_body(
    app: &AppState,
    entry: Option<RouteEntry>,
    anonymous: bool,
    parts: &mut axum::http::request::Parts,
    body: Body,
) -> Result<bytes::Bytes, ApiError> {
    let limits = &app.opts.limits;
    let route_limit = entry.map_or(crate::BODY_LIMIT, |e| e.spec.body_limit) as u64;
    let (max, anonymous) = match entry.map(|e| e.spec.anonymous_body) {
        Some(Some(own)) => (route_limit.min(own as u64), false),
        _ if anonymous && limits.anonymous_body_limit < route_limit => {
            (limits.anonymous_body_limit, true)
        }
        _ => (route_limit, false),
    };
    let budget = crate::http::body::BodyBudget::new(limits, max, anonymous);
    if route_limit > crate::BODY_LIMIT as u64 && !anonymous {
        let dir = app.opts.database.data_dir.join("tmp");
        let spooled = crate::http::body::spool(&parts.headers, body, budget, &dir).await?;
        parts.extensions.insert(std::sync::Arc::new(spooled));
        return Ok(bytes::Bytes::new());
    }
    Ok(crate::http::body::read(&parts.headers, body, budget).await?)
}

async fn refund(
    app: &AppState,
    caller: Option<&Caller>,
    usage: &Usage,
    method: &Method,
    path: &str,
) {
    // Nothing was delivered: give the reserved tokens back.
    let Some(c) = caller else { return };
    let refund = usage_entry(
        &c.id,
        usage.cost as i64,
        LedgerKind::UsageRefund,
        method,
        path,
    );
    if let Err(e) = app
        .credits
        .apply(Change {
            entries: vec![refund],
        })
        .await
    {
        tracing::error!(error = %e, "token refund failed");
    }
}

/// What became of a request within its deadline.
enum Ran {
    /// The recorded answer of a repeat under an idempotency key.
    Replayed(Response),
    Answered(Option<Arc<Caller>>, Response),
}

/// How long a request may take: `PLINTH_REQUEST_TIMEOUT`, plus the `wait` a job status
/// read asks for (at most 60 s).
fn deadline(server: &crate::config::Server, uri: &axum::http::Uri) -> std::time::Duration {
    let wait = uri
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("wait="))
        .and_then(|w| w.parse::<u64>().ok())
        .map_or(0, |w| w.min(60));
    std::time::Duration::from_secs(server.request_timeout.max(1) + wait)
}

/// The answer to a request that did not finish in time (a database or a provider that
/// hangs): 503 with `Retry-After`; a write may still land, and says so.
fn past_deadline(method: &Method, deadline: std::time::Duration) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the request did not finish within {} s; try again shortly",
            deadline.as_secs()
        ),
    );
    e.cause = Some("request deadline passed".into());
    if !method.is_safe() {
        e = e.with("outcome_unknown", true);
        e.message = format!(
            "the request did not finish within {} s; a change may still be applied: retry \
             with the same Idempotency-Key, or check before retrying",
            deadline.as_secs()
        );
    }
    e
}

/// The one log line of a 5xx: what failed (the cause the handler attached) with the
/// request's context, so an operator can find the request from a client's report.
fn log_failure(
    resp: &Response,
    method: &Method,
    entry: Option<RouteEntry>,
    path: &str,
    caller: Option<&Caller>,
    request_id: Option<&str>,
) {
    let cause = resp
        .extensions()
        .get::<crate::http::error::ErrorCause>()
        .map_or("(no cause recorded)", |c| c.0.as_str());
    let route = entry.map_or(path, |e| e.spec.path);
    let caller = caller.map_or("-", |c| c.id.as_str());
    let (status, request_id) = (resp.status().as_u16(), request_id.unwrap_or("-"));
    // 503 is a dependency or a provider that is down: worth a look,
    // not a bug of ours.
    if resp.status() == StatusCode::SERVICE_UNAVAILABLE {
        tracing::warn!(status, request_id, method = %method, route, caller, cause, "request failed");
    } else {
        tracing::error!(status, request_id, method = %method, route, caller, cause, "request failed");
    }
}

fn usage_entry(user_id: &str, delta: i64, kind: LedgerKind, method: &Method, path: &str) -> Entry {
    let route = json!({"route": format!("{method} {path}")});
    crate::domain::ledger::entry(user_id, delta, kind, None, route)
}

/// Everything decided from a request's head: the caller (when the key is valid), its
/// rate window (but for a possible replay, counted after the replay check) and the
/// route's access rule.
async fn admit(
    app: &AppState,
    entry: Option<RouteEntry>,
    key: Option<&str>,
    ip: Option<IpAddr>,
    replayable: bool,
    usage: &mut Usage,
) -> Result<Option<Arc<Caller>>, ApiError> {
    let caller = match key {
        Some(k) if !k.is_empty() => auth::resolve(app, k).await?,
        _ => None,
    };
    // Rate limit first: refused and unauthenticated requests count too, which is what
    // bounds brute force on sign-in and verification.
    if !replayable || caller.is_none() {
        rate(app, entry, &caller, ip, usage).await?;
    }
    let Some(entry) = entry else {
        return Ok(caller); // unknown route or method: the router answers 404/405
    };
    let need = |min_level: Option<i64>| -> Result<(), ApiError> {
        let c = match (&caller, key) {
            (Some(c), _) => c,
            (None, Some(k)) if !k.is_empty() => {
                return Err(ApiError::unauthorized("invalid API key"))
            }
            _ => {
                return Err(ApiError::unauthorized(
                    "this endpoint requires an API key in the x-api-key header",
                ))
            }
        };
        match min_level {
            Some(l) if c.level < l => Err(ApiError::forbidden(if l >= LEVEL_ADMIN {
                "this endpoint requires an administrator (level 100)"
            } else {
                "this endpoint requires a verified account (level 10); verify your email first"
            })),
            _ => Ok(()),
        }
    };
    match entry.spec.access {
        Access::Public | Access::Custom => {}
        Access::Key | Access::OrgMember | Access::OrgAdmin => need(None)?,
        Access::V10 => need(Some(LEVEL_VERIFIED))?,
        Access::Admin100 => need(Some(LEVEL_ADMIN))?,
    }
    Ok(caller)
}

/// Counts the request in its rate windows.
async fn rate(
    app: &AppState,
    entry: Option<RouteEntry>,
    caller: &Option<Arc<Caller>>,
    ip: Option<IpAddr>,
    usage: &mut Usage,
) -> Result<(), ApiError> {
    let category = entry.map_or(Category::Read, |e| e.spec.category);
    let level = caller.as_ref().map_or(0, |c| c.level);
    // Anonymous clients are counted by address; an IPv6 client by its /64, which one
    // subscriber holds whole (security review N-M3).
    let ip_key = || match ip {
        Some(ip) => format!("ip:{}", crate::http::client_ip::prefix(ip)),
        None => "ip:unknown".to_owned(),
    };
    // Public sign-in, reset and verification routes are counted by client address
    // always, at the anonymous limit, and by account too when a key is sent: a key (and
    // accounts are free) must never buy a fresh window for guessing passwords or sending
    // email (finding H3). Auth routes that need a key are bounded by the account's own
    // window. Administrators stay unlimited.
    let open_door = entry.is_some_and(|e| matches!(e.spec.access, Access::Public | Access::Custom));
    let by_address = category == Category::Auth && open_door;
    if by_address && tier_multiplier(level).is_some() {
        if let Some(limit) = limit_for(category, 0, app.opts.rates.rate_limit_multiplier) {
            rate_check(app, &ip_key(), category, limit, usage).await?;
        }
    }
    if let Some(limit) = limit_for(category, level, app.opts.rates.rate_limit_multiplier) {
        let by_ip;
        let who = match caller {
            Some(c) => c.rate_key.as_str(),
            None if by_address => "", // counted above
            None => {
                by_ip = ip_key();
                by_ip.as_str()
            }
        };
        if !who.is_empty() {
            rate_check(app, who, category, limit, usage).await?;
        }
    }
    Ok(())
}

/// A replayed answer's rate figures: the caller's window as it is now, counting nothing
/// (the replay used up none of it), so a client pacing itself by the headers is not told
/// the first answer's figures or zero.
async fn current_window(app: &AppState, entry: Option<RouteEntry>, c: &Caller, usage: &mut Usage) {
    let category = entry.map_or(Category::Read, |e| e.spec.category);
    let Some(limit) = limit_for(category, c.level, app.opts.rates.rate_limit_multiplier) else {
        return;
    };
    let interval = category.interval_ms();
    if let Some(d) = app
        .rate
        .peek(&c.rate_key, category as u8, limit, interval)
        .await
    {
        usage.limit = d.limit;
        usage.remaining = d.remaining;
        usage.interval_ms = d.interval_ms;
    }
    usage.tokens_remaining = Some(app.credits.balance(&c.id).await.ok().flatten().unwrap_or(0));
}

/// Reserves the route's token cost; true when tokens were taken (and are given back if
/// the handler fails).
async fn charge(
    app: &AppState,
    entry: Option<RouteEntry>,
    caller: &Option<Arc<Caller>>,
) -> Result<bool, ApiError> {
    let Some(entry) = entry.filter(|e| e.cost > 0) else {
        return Ok(false);
    };
    let cost = entry.cost as i64;
    let Some(c) = caller else {
        return Err(app.domain.ledger.insufficient(cost, 0).into());
    };
    let charge = usage_entry(
        &c.id,
        -cost,
        LedgerKind::Usage,
        &Method::from_bytes(entry.spec.method.as_bytes()).unwrap_or(Method::GET),
        entry.spec.path,
    );
    match app
        .credits
        .apply(Change {
            entries: vec![charge],
        })
        .await
    {
        Ok(Applied::Done { .. }) => Ok(true),
        Ok(Applied::Insufficient { balance, .. }) => {
            Err(app.domain.ledger.insufficient(cost, balance).into())
        }
        Ok(_) => Err(app.domain.ledger.insufficient(cost, 0).into()),
        Err(e) => Err(LedgerError::Unanswered(e).into()),
    }
}

/// Counts the request in `who`'s window of `category`; 429 when it is full. With two
/// windows (auth), `_usage` reports the one with fewer requests left.
async fn rate_check(
    app: &AppState,
    who: &str,
    category: Category,
    limit: u64,
    usage: &mut Usage,
) -> Result<(), ApiError> {
    let d = app
        .rate
        .check(who, category as u8, limit, category.interval_ms())
        .await;
    if usage.interval_ms == 0 || d.remaining < usage.remaining || !d.allowed {
        usage.limit = d.limit;
        usage.remaining = d.remaining;
        usage.interval_ms = d.interval_ms;
        usage.retry_after_ms = d.retry_after_ms;
    }
    if !d.allowed {
        crate::observe::rate_limited(category.name());
        return Err(too_many(
            category,
            who,
            d.limit,
            d.interval_ms,
            d.retry_after_ms,
        ));
    }
    Ok(())
}

/// A 429 that says which window is full (its category and whose it is), its size, and
/// when it reopens, in words and as fields, with where the limits are listed.
fn too_many(
    category: Category,
    who: &str,
    limit: u64,
    interval_ms: u64,
    retry_ms: u64,
) -> ApiError {
    let whose = if who.starts_with("ip:") {
        "this client address"
    } else {
        "this account"
    };
    let reopens = chrono::Utc::now() + chrono::TimeDelta::milliseconds(retry_ms as i64);
    let reopens_at = reopens.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "rate limit exceeded: the `{}` window of {whose} takes {limit} requests per {} s \
             and reopens in {} s (at {reopens_at}); every route's category and limit is in \
             GET /api/credits/pricing",
            category.name(),
            interval_ms / 1000,
            retry_ms.div_ceil(1000).max(1),
        ),
    )
    .with("retry_after_ms", retry_ms)
    .with("window", category.name())
    .with("limit", limit)
    .with("interval_ms", interval_ms)
    .with("reopens_at", reopens_at)
}

/// The answer's object with `_usage` as its first member, written around the object's
/// bytes (an object serialised by serde_json starts with `{`), so the body is never
/// parsed or rebuilt. `_usage` holds only numbers: written directly, without serde.
fn with_usage(object: &[u8], u: &Usage) -> Vec<u8> {
    fn member(out: &mut Vec<u8>, label: &[u8], n: impl itoa::Integer) {
        out.extend_from_slice(label);
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }
    let mut out = Vec::with_capacity(object.len() + 160);
    member(&mut out, br#"{"_usage":{"tokens":{"cost":"#, u.cost);
    if let Some(r) = u.tokens_remaining {
        member(&mut out, br#","remaining":"#, r);
    }
    member(&mut out, br#"},"rate_limit":{"limit":"#, u.limit);
    member(&mut out, br#","remaining":"#, u.remaining);
    member(&mut out, br#","interval_ms":"#, u.interval_ms);
    out.extend_from_slice(b"}}");
    let rest = object.trim_ascii_start().strip_prefix(b"{").unwrap_or(b"}");
    if rest.trim_ascii_start().first() != Some(&b'}') {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    out
}

/// Largest body the layer will buffer to wrap a non-envelope response.
const WRAP_LIMIT: usize = 1 << 20;

async fn finish(resp: Response, u: &Usage, method: &Method, path: &str) -> Response {
    let mut u = *u;
    let u = &mut u;
    let (mut parts, body) = resp.into_parts();
    let status = parts.status;
    // Room for what is added below and `x-request-id` at once: growing the map header by
    // header costs more than the inserts.
    parts.headers.reserve(8);

    let object = match parts.extensions.remove::<Envelope>() {
        Some(Envelope::Json(bytes)) => bytes,
        Some(Envelope::Map(mut m)) => {
            // A 429 of a handler's own window (a password guessed too often) says when
            // it reopens in the standard header too.
            if status == StatusCode::TOO_MANY_REQUESTS {
                if let Some(ms) = m.get("retry_after_ms").and_then(Value::as_u64) {
                    u.retry_after_ms = ms;
                }
            }
            // A read changes nothing: a database failure under it has no outcome to doubt.
            if method.is_safe() && m.remove("outcome_unknown").is_some() {
                m.insert(
                    "message".into(),
                    Value::from("the database is unavailable; try again shortly"),
                );
            }
            to_bytes(&m)
        }
        None if parts
            .extensions
            .remove::<crate::http::reply::AsSent>()
            .is_some() =>
        {
            return with_headers(Response::from_parts(parts, body), u);
        }
        None => {
            let ct_json = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            let is_error = status.is_client_error() || status.is_server_error();
            if ct_json || is_error {
                let bytes = axum::body::to_bytes(body, WRAP_LIMIT)
                    .await
                    .unwrap_or_default();
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Object(_)) => bytes,
                    _ if is_error => to_bytes(&error_object(status, &bytes, method, path)),
                    _ => {
                        // JSON that is not an object, from a success: pass it through.
                        return with_headers(Response::from_parts(parts, Body::from(bytes)), u);
                    }
                }
            } else {
                // Redirects, files and other non-JSON successes keep their body.
                return with_headers(Response::from_parts(parts, body), u);
            }
        }
    };

    let bytes = with_usage(&object, u);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    with_headers(Response::from_parts(parts, Body::from(bytes)), u)
}

fn to_bytes(m: &Map<String, Value>) -> bytes::Bytes {
    serde_json::to_vec(m)
        .unwrap_or_else(|_| b"{}".to_vec())
        .into()
}

fn error_object(
    status: StatusCode,
    body: &[u8],
    method: &Method,
    path: &str,
) -> Map<String, Value> {
    let text = String::from_utf8_lossy(body).trim().to_owned();
    let message = match status {
        StatusCode::METHOD_NOT_ALLOWED => format!("method {method} is not allowed on {path}"),
        StatusCode::PAYLOAD_TOO_LARGE => "request body is larger than the 1 MiB limit".to_owned(),
        _ if status.is_server_error() => "internal error".to_owned(),
        _ if !text.is_empty() => text,
        _ => status
            .canonical_reason()
            .unwrap_or("request failed")
            .to_owned(),
    };
    ApiError::new(status, message).body()
}

// Names built at compile time: inserting by `&str` would parse the name on every call.
const X_TOKENS_COST: HeaderName = HeaderName::from_static("x-tokens-cost");
const X_TOKENS_REMAINING: HeaderName = HeaderName::from_static("x-tokens-remaining");
const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const X_RATELIMIT_INTERVAL: HeaderName = HeaderName::from_static("x-ratelimit-interval-ms");

fn with_headers(mut resp: Response, u: &Usage) -> Response {
    // The numbers are written into one buffer and each header value is a slice of it:
    // one allocation, not one per header.
    let mut buf = bytes::BytesMut::with_capacity(96);
    let cost = digits(&mut buf, u.cost);
    let limit = digits(&mut buf, u.limit);
    let remaining = digits(&mut buf, u.remaining);
    let interval = digits(&mut buf, u.interval_ms);
    let tokens = u.tokens_remaining.map(|r| digits(&mut buf, r));
    // On a 429, the standard header too, in whole seconds rounded up.
    let retry = (resp.status() == StatusCode::TOO_MANY_REQUESTS)
        .then(|| digits(&mut buf, u.retry_after_ms.div_ceil(1000).max(1)));
    let buf = buf.freeze();
    let value = |r: std::ops::Range<usize>| {
        HeaderValue::from_maybe_shared(buf.slice(r)).expect("digits are a valid header value")
    };
    let h = resp.headers_mut();
    h.insert(X_TOKENS_COST, value(cost));
    if let Some(r) = tokens {
        h.insert(X_TOKENS_REMAINING, value(r));
    }
    h.insert(X_RATELIMIT_LIMIT, value(limit));
    h.insert(X_RATELIMIT_REMAINING, value(remaining));
    h.insert(X_RATELIMIT_INTERVAL, value(interval));
    if let Some(r) = retry {
        h.insert(header::RETRY_AFTER, value(r));
    }
    resp
}

/// Appends `n` in decimal; the range it took.
fn digits(buf: &mut bytes::BytesMut, n: impl itoa::Integer) -> std::ops::Range<usize> {
    let start = buf.len();
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    start..buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_spliced_in_as_the_first_member() {
        let u = Usage {
            cost: 2,
            tokens_remaining: Some(5),
            limit: 10,
            remaining: 9,
            interval_ms: 60_000,
            retry_after_ms: 0,
        };
        let usage = json!({"tokens": {"cost": 2, "remaining": 5},
            "rate_limit": {"limit": 10, "remaining": 9, "interval_ms": 60000}});
        for (object, expected) in [
            (&b"{}"[..], json!({"_usage": usage})),
            (b" { }", json!({"_usage": usage})),
            (
                br#"{"a":[1,{"b":null}]}"#,
                json!({"_usage": usage, "a": [1, {"b": null}]}),
            ),
        ] {
            let out: Value = serde_json::from_slice(&with_usage(object, &u)).unwrap();
            assert_eq!(out, expected, "{}", String::from_utf8_lossy(object));
        }
        // No balance (no caller): no `remaining` under `tokens`; a negative one as is.
        for (remaining, tokens) in [
            (None, json!({"cost": 2})),
            (Some(-3), json!({"cost": 2, "remaining": -3})),
        ] {
            let u = Usage {
                tokens_remaining: remaining,
                ..u
            };
            let out: Value = serde_json::from_slice(&with_usage(b"{}", &u)).unwrap();
            assert_eq!(out["_usage"]["tokens"], tokens);
        }
    }

    #[test]
    fn limits_follow_the_tier_table() {
        assert_eq!(limit_for(Category::Read, 0, 1.0), Some(120));
        assert_eq!(limit_for(Category::Write, 10, 1.0), Some(180));
        assert_eq!(limit_for(Category::Read, 20, 1.0), Some(1440));
        assert_eq!(limit_for(Category::Write, 30, 1.0), Some(3600));
        assert_eq!(limit_for(Category::Read, 40, 1.0), Some(144000));
        assert_eq!(limit_for(Category::Read, 100, 1.0), None);
        assert_eq!(limit_for(Category::Unlimited, 0, 1.0), None);
        assert_eq!(limit_for(Category::Auth, 0, 100.0), Some(500));
    }
}
