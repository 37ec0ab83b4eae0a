//! Idempotency keys of mutations, one mechanism for deck changes and checkouts: the key's
//! rules (from the `Idempotency-Key` header or the body's `idempotency_key`, one key),
//! the hash that tells a repeat of a request from a different request under the same
//! key, the claim / finish / abandon protocol over `idempotency_records`
//! (`db::idempotency`), the answers a repeat gets (a replay, 409 while the first still
//! runs, 422 for another request), and the recorded answer the usage layer replays
//! before a request is counted in a rate window.
//!
//! Deck changes run the protocol through the deck actors (they also keep changes to one
//! deck in order); checkouts and purchases through [`run`]. The HTTP side (reading the
//! key off a request, mapping the actors' errors) is `src/api/idempotent.rs`.

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::http::error::{ApiError, ApiResult};
use crate::http::reply::{Answer, Recorded, Reply};
use crate::state::AppState;

// How long records live and when a claim is presumed dead are facts of the stored
// records, kept with them (the periodic sweep and the deck actors read them too).
pub use crate::db::idempotency::{KEPT, LEDGER_STALE_CLAIM, STALE_CLAIM};

/// What a repeat that finds its key in progress is told to wait (`Retry-After`).
pub const RETRY_IN_PROGRESS_SECS: u64 = 1;

/// The header carrying a key.
pub const HEADER: &str = "idempotency-key";

/// The routes that take an `idempotency_key` (every mutating slide route), by path, with
/// the name their requests are hashed under (kept from before the header was read, so
/// that records made then still replay).
pub const KEYED_ROUTES: &[(&str, &str)] = &[
    ("/api/slides/create", "create"),
    ("/api/slides/update", "update"),
    ("/api/slides/delete", "delete"),
    ("/api/slides/revisions/restore", "restore"),
    ("/api/slides/assets/create", "assets/create"),
    ("/api/slides/assets/complete", "assets/complete"),
    ("/api/slides/assets/delete", "assets/delete"),
    ("/api/slides/exports/create", "exports/create"),
    ("/api/slides/jobs/cancel", "jobs/cancel"),
    ("/api/slides/publish", "publish"),
    ("/api/slides/unpublish", "unpublish"),
];

/// The hash name of a keyed route, by path.
pub fn hash_route(path: &str) -> Option<&'static str> {
    KEYED_ROUTES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, name)| *name)
}

fn valid(key: &str) -> bool {
    !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
}

/// The `idempotency_key` a mutation's body may carry: 1 to 255 characters.
pub fn idempotency_key(body: &Map<String, Value>) -> ApiResult<Option<String>> {
    match body.get("idempotency_key") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(k)) if !k.is_empty() && k.len() <= 255 => Ok(Some(k.clone())),
        Some(_) => Err(ApiError::bad_request(
            "`idempotency_key` must be a string of 1 to 255 characters",
        )),
    }
}

/// The `Idempotency-Key` header: 1 to 255 visible ASCII characters.
pub fn header_key(header: Option<&axum::http::HeaderValue>) -> ApiResult<Option<String>> {
    let Some(value) = header else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .filter(|k| valid(k))
        .map(|k| Some(k.to_owned()))
        .ok_or_else(|| {
            ApiError::bad_request("`Idempotency-Key` must be 1 to 255 visible characters")
        })
}

/// The one key of a request: the header's or the body's; both are the same key, so two
/// different values are a 400.
pub fn key_of(header: Option<String>, body: Option<String>) -> ApiResult<Option<String>> {
    match (header, body) {
        (Some(h), Some(b)) if h != b => Err(ApiError::bad_request(
            "the Idempotency-Key header and the body's `idempotency_key` differ; they are one \
             key: send it once, or the same in both",
        )),
        (Some(h), _) => Ok(Some(h)),
        (None, b) => Ok(b),
    }
}

/// JSON with object keys sorted, so that equal requests hash equally.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<_> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The hash of a request: its route, its caller (or scope) and its body without the key.
pub fn request_hash(route: &str, caller: &str, body: &Map<String, Value>) -> String {
    let mut body = body.clone();
    body.remove("idempotency_key");
    let mut text = format!("{route}\n{caller}\n");
    canonical(&Value::Object(body), &mut text);
    crate::crypto::sha256_hex(text.as_bytes())
}

/// A repeat's answer: the recorded one, marked `Idempotent-Replayed: true`.
pub fn replayed(status: u16, body: Value) -> Reply {
    let body = match body {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    Reply::with_status(status, body).header("idempotent-replayed", "true")
}

/// A repeat while the first request with its key still runs: 409 with when to ask again
/// (the IETF Idempotency-Key draft's answer).
pub fn in_progress(message: &str) -> Reply {
    let err = ApiError::conflict(message.to_owned())
        .with("retry_after_ms", RETRY_IN_PROGRESS_SECS * 1000);
    Reply::from(err).header("retry-after", "1")
}

/// The same key with another request: 422.
pub fn reused(message: &str) -> ApiError {
    ApiError::unprocessable(message.to_owned())
}

/// A request under a key: where its record lives and what it is.
pub struct Keyed {
    /// The record's scope (a deck's changes, a buyer's checkouts).
    pub scope: String,
    pub key: String,
    /// `request_hash` of the request.
    pub hash: String,
    /// Whether an answer with `outcome_unknown` lets a retry run again (its work is
    /// at most once by itself: a credit change carries a ledger key derived from the
    /// idempotency key) instead of replaying "unknown" for a day.
    pub retry_unknown: bool,
}

/// Runs `work` once under its key: a repeat with the same request replays the first
/// answer for 24 hours, a different request under the same key is a 422, and a repeat
/// while the first runs is a 409. Answers on our side (5xx) are not kept, so a retry runs
/// again, except an outcome the credit ledger could not tell (`outcome_unknown`), which
/// replays. Checkouts and purchases use it; deck changes run the same protocol in the
/// deck actors.
pub async fn run<F>(app: &AppState, keyed: Keyed, work: F) -> ApiResult<Reply>
where
    F: std::future::Future<Output = ApiResult<Reply>>,
{
    // Work that is at most once by itself may take over a claim left in progress soon:
    // a claim whose release failed with the database (an outage) must not hold the
    // client's retries for a minute.
    let stale = keyed.retry_unknown.then_some(LEDGER_STALE_CLAIM);
    if let Some(earlier) = begin(app, &keyed, stale).await? {
        return Ok(earlier);
    }
    let reply = work.await.unwrap_or_else(Reply::from);
    let unknown = reply.body.get("outcome_unknown") == Some(&Value::Bool(true));
    let kept = !reply.status.is_server_error() || (unknown && !keyed.retry_unknown);
    let body = kept.then(|| reply.body.clone());
    settle_or_fail(app, &keyed, reply.status, body).await?;
    Ok(reply)
}

/// Claims the request's key: `None` when this request is to run, or the answer a repeat
/// gets (a replay, 409 while the first runs; 422 for another request under the key). A
/// claim in progress for longer than `stale` may be taken over.
pub async fn begin(
    app: &AppState,
    keyed: &Keyed,
    stale: Option<chrono::TimeDelta>,
) -> ApiResult<Option<Reply>> {
    use crate::db::idempotency as records;
    let now = chrono::Utc::now();
    let Some((hash, status, answer)) = records::claim(
        &app.db,
        &keyed.scope,
        &keyed.key,
        &keyed.hash,
        now - KEPT,
        stale.map(|s| now - s),
    )
    .await?
    else {
        return Ok(None);
    };
    if hash != keyed.hash {
        return Err(reused(
            "this Idempotency-Key was already used with a different request",
        ));
    }
    if status == records::IN_PROGRESS {
        return Ok(Some(in_progress(
            "a request with this Idempotency-Key is still running; retry shortly",
        )));
    }
    let answer = unseal(app, answer).ok_or_else(|| {
        ApiError::internal("a recorded answer does not decrypt with the master key")
    })?;
    Ok(Some(replayed(status as u16, Value::Object(answer))))
}

/// Keeps a claimed request's answer (`Some`) or lets the key go (`None`: the answer is
/// not to be replayed, a retry runs again).
async fn settle_or_fail(
    app: &AppState,
    keyed: &Keyed,
    status: StatusCode,
    body: Option<Map<String, Value>>,
) -> ApiResult<()> {
    use crate::db::idempotency as records;
    match body {
        Some(body) => {
            let sealed = seal(app, &body);
            records::finish(
                &app.db,
                &keyed.scope,
                &keyed.key,
                status.as_u16() as i64,
                &sealed,
            )
            .await?
        }
        None => records::abandon(&app.db, &keyed.scope, &keyed.key).await?,
    }
    Ok(())
}

/// [`settle_or_fail`] for an answer already made: a 5xx is not kept, and a failure to
/// keep the answer is logged (the answer still goes out; the claim turns stale).
pub async fn settle(
    app: &AppState,
    keyed: &Keyed,
    status: StatusCode,
    body: Option<Map<String, Value>>,
) {
    let body = body.filter(|_| !status.is_server_error());
    if let Err(e) = settle_or_fail(app, keyed, status, body).await {
        tracing::warn!(error = %e.message, cause = ?e.cause, "an idempotency record could not be kept");
    }
}

/// Runs `work` behind the request's `Idempotency-Key` (without one, `work` just runs):
/// `route` names the request in its hash, `scope` is where its record lives (the
/// caller's checkouts, credit changes). `work` is given the key, to derive a ledger key
/// from it when it moves tokens. The answer is `work`'s `T`, or on a repeat the recorded
/// JSON of that same `T`.
pub async fn recorded<T, F, Fut>(
    app: &AppState,
    key: Option<String>,
    route: &str,
    scope: String,
    body: &impl serde::Serialize,
    retry_unknown: bool,
    work: F,
) -> ApiResult<Recorded<T>>
where
    T: serde::Serialize,
    F: FnOnce(Option<String>) -> Fut,
    Fut: std::future::Future<Output = ApiResult<T>>,
{
    let Some(key) = key else {
        return Ok(Recorded::from(Answer(work(None).await?)));
    };
    let json = match serde_json::to_value(body).map_err(ApiError::internal)? {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let hash = request_hash(route, &scope, &json);
    let keyed = Keyed {
        scope,
        key: key.clone(),
        hash,
        retry_unknown,
    };
    let reply = run(app, keyed, async { work(Some(key)).await.map(Reply::ok) }).await?;
    Ok(Recorded::of_record(reply))
}

/// A checkout or purchase behind its key: [`recorded`] under the route name `checkout`,
/// an unknown outcome replayed (the payment is not at most once by itself).
pub async fn checkout<T, Fut>(
    app: &AppState,
    key: Option<String>,
    scope: String,
    body: &impl serde::Serialize,
    run: Fut,
) -> ApiResult<Recorded<T>>
where
    T: serde::Serialize,
    Fut: std::future::Future<Output = ApiResult<T>>,
{
    recorded(app, key, "checkout", scope, body, false, |_| run).await
}

/// A recorded answer as stored by [`run`]: encrypted under the master key, since checkout
/// and purchase answers carry plaintext license keys and download tokens that are
/// otherwise kept only as hashes (security round 2, L3). Deck changes' answers, recorded
/// by the deck actors, carry no secret and are kept as they are.
fn seal(app: &AppState, body: &Map<String, Value>) -> Value {
    let plain = serde_json::to_vec(body).unwrap_or_default();
    serde_json::json!({"sealed": app.key.encrypt(&plain)})
}

/// The answer [`seal`] stored (answers recorded before sealing are read as they are).
pub(crate) fn unseal(app: &AppState, stored: Value) -> Option<Map<String, Value>> {
    match stored {
        Value::Object(m) => match m.get("sealed").and_then(Value::as_str) {
            Some(hex) if m.len() == 1 => serde_json::from_slice(&app.key.decrypt(hex)?).ok(),
            _ => Some(m),
        },
        _ => Some(Map::new()),
    }
}

/// The recorded answer to replay for a request to a keyed route, found before the request
/// is counted in a rate window (a replay uses up nothing): `None` unless the request
/// carries a key (header or body, the same one), its route takes one and the same caller
/// already made the same request under it and got a final answer.
pub async fn recorded_answer(
    app: &AppState,
    path: &str,
    caller_id: &str,
    header: Option<&axum::http::HeaderValue>,
    body: &[u8],
) -> Option<Reply> {
    let route = hash_route(path)?;
    let header = header_key(header).ok()?;
    // Most requests carry no key: nothing is parsed for them.
    if header.is_none() && !body.windows(15).any(|w| w == b"idempotency_key") {
        return None;
    }
    let json = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => m,
        _ if body.is_empty() => Map::new(),
        _ => return None,
    };
    let key = key_of(header, idempotency_key(&json).ok()?).ok()??;
    let hash = request_hash(route, caller_id, &json);
    let since = chrono::Utc::now() - KEPT;
    let (status, answer) = crate::db::idempotency::recorded(&app.db, &key, &hash, since)
        .await
        .ok()??;
    let location = (route == "exports/create")
        .then(|| {
            let id = answer.get("id")?.as_str()?;
            let deck = answer.get("deck_id")?.as_str()?;
            axum::http::HeaderValue::from_str(&format!("/api/slides/jobs/{id}?deck_id={deck}")).ok()
        })
        .flatten();
    let reply = replayed(status as u16, answer);
    Some(match location {
        Some(l) if (200..300).contains(&status) => {
            reply.header_value(axum::http::header::LOCATION, l)
        }
        _ => reply,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_and_body_are_one_key() {
        assert_eq!(
            key_of(Some("a".into()), None).unwrap().as_deref(),
            Some("a")
        );
        assert_eq!(
            key_of(None, Some("b".into())).unwrap().as_deref(),
            Some("b")
        );
        assert_eq!(
            key_of(Some("c".into()), Some("c".into()))
                .unwrap()
                .as_deref(),
            Some("c")
        );
        assert!(key_of(Some("c".into()), Some("d".into())).is_err());
        assert_eq!(key_of(None, None).unwrap(), None);
        let bad = axum::http::HeaderValue::from_static("");
        assert!(header_key(Some(&bad)).is_err());
        let long = axum::http::HeaderValue::from_str(&"k".repeat(256)).unwrap();
        assert!(header_key(Some(&long)).is_err());
    }

    #[test]
    fn the_key_is_not_part_of_the_hash() {
        let a = json!({"deck_id": "d", "format": "pdf", "idempotency_key": "k1"});
        let b = json!({"format": "pdf", "deck_id": "d"});
        let (Value::Object(a), Value::Object(b)) = (a, b) else {
            unreachable!()
        };
        assert_eq!(
            request_hash("exports/create", "u", &a),
            request_hash("exports/create", "u", &b)
        );
        assert_ne!(
            request_hash("exports/create", "u", &a),
            request_hash("exports/create", "v", &a)
        );
        assert_eq!(hash_route("/api/slides/revisions/restore"), Some("restore"));
        assert_eq!(hash_route("/api/slides/jobs/{id}"), None);
    }
}
