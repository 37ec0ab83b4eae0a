//! Status and utility: `GET /api/status`, `POST /api/aes`, `POST /api/404`.

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use crate::http::auth::MaybeCaller;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::reply::{prebuild, Answer, Prebuilt};
use crate::state::AppState;

/// How long an answer of `GET /api/status` is reused: however often it is called, the
/// database, queue and storage probes run at most once a second (issue 46).
const FRESH_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// Health of the server and each adapter. Always 200 while the server accepts requests;
/// `ok` says whether every service answered. Simulated providers are named plainly
/// (`simulated`). Where things live (paths, hosts, buckets) is shown to administrators
/// only (finding L3).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct StatusAnswer {
    /// Every service answered.
    ok: bool,
    /// `ok` or `degraded`.
    status: &'static str,
    /// The server's version.
    version: &'static str,
    /// The spec version it serves.
    api_version: &'static str,
    /// Which providers are stand-ins (`payments`, `app_store`).
    simulated: Vec<&'static str>,
    /// One entry per adapter: `database`, `queue`, `storage`, `mail`, `payments`,
    /// `app_store`, `token_exchange`, each with its backend or provider and `ok`. `mail`
    /// is not ok while the relay refuses the latest email attempts: `failing_since` says
    /// since when (and, to administrators, `last_error` what it answered).
    services: serde_json::Value,
}

pub async fn status(
    State(app): State<AppState>,
    caller: MaybeCaller,
) -> ApiResult<Prebuilt<StatusAnswer>> {
    let admin = caller.0.as_ref().is_some_and(|c| c.is_admin());
    let cached = |app: &AppState| {
        let last = app.status_answers.last.read().ok()?;
        let (at, public, for_admin) = last.as_ref()?;
        let fresh = at.elapsed() < FRESH_FOR;
        let bytes = if admin { for_admin } else { public }.clone();
        fresh.then_some(bytes)
    };
    // Where things live is for administrators only: never kept by a shared cache.
    let reply = |bytes| match admin {
        true => Prebuilt::private(bytes),
        false => Prebuilt::public(bytes),
    };
    if let Some(bytes) = cached(&app) {
        return Ok(reply(bytes));
    }
    // One request runs the probes; the others waiting here take its answers.
    let _running = app.status_answers.refresh.lock().await;
    if let Some(bytes) = cached(&app) {
        return Ok(reply(bytes));
    }
    let at = std::time::Instant::now();
    let (db_ok, queue, storage_ok, relay) = tokio::join!(
        app.db.ping(),
        app.queue.health(),
        app.objects.healthy(),
        crate::db::jobs::relay_trouble(&app.db)
    );
    // A database that cannot say is already `database.ok: false`.
    let relay = relay.unwrap_or(None);
    let [public, for_admin] = [false, true].map(|admin| {
        let probes = Probes {
            db_ok,
            queue: queue.clone(),
            storage_ok,
            relay: relay.clone(),
        };
        prebuild(&answer(&app, admin, probes))
            .ok_or_else(|| ApiError::internal("a status answer that is not an object"))
    });
    let (public, for_admin) = (public?, for_admin?);
    if let Ok(mut last) = app.status_answers.last.write() {
        *last = Some((at, public.clone(), for_admin.clone()));
    }
    Ok(reply(if admin { for_admin } else { public }))
}

/// What the probes of one status answer found.
struct Probes {
    db_ok: bool,
    queue: plinth_workers::QueueStatus,
    storage_ok: bool,
    /// The mail relay refused the latest email attempts (`db::jobs::relay_trouble`).
    relay: Option<crate::db::jobs::RelayTrouble>,
}

/// The answer from the probes' outcome; where things live only for an administrator.
fn answer(app: &AppState, admin: bool, probes: Probes) -> StatusAnswer {
    let Probes {
        db_ok,
        queue,
        storage_ok,
        relay,
    } = probes;
    let mut mail = serde_json::to_value(app.mail.describe()).unwrap_or_default();
    if let Some(trouble) = &relay {
        // Configured is not delivering: the latest attempts were refused (O7).
        mail["ok"] = json!(false);
        mail["failing_since"] = json!(trouble.since);
        if admin {
            mail["last_error"] = json!(trouble.error);
        }
    }
    let mail_ok = mail["ok"].as_bool().unwrap_or(false);
    let all_ok = db_ok && queue.ok && storage_ok && mail_ok;
    let mut storage = json!({"backend": app.objects.backend(), "ok": storage_ok});
    if admin {
        storage["location"] = json!(app.objects.location());
    } else if let Some(m) = mail.as_object_mut() {
        m.remove("outbox");
        m.remove("host");
    }
    let payments = app.payments.name();
    let store = app.store_verifier.name();
    let simulated: Vec<&str> = [("payments", payments), ("app_store", store)]
        .into_iter()
        .filter(|(_, name)| *name == "simulated")
        .map(|(what, _)| what)
        .collect();
    StatusAnswer {
        ok: all_ok,
        status: if all_ok { "ok" } else { "degraded" },
        version: env!("CARGO_PKG_VERSION"),
        api_version: "2.0.4",
        simulated,
        services: json!({
            "database": {"backend": app.db.backend(), "ok": db_ok},
            "queue": queue,
            "storage": storage,
            "mail": mail,
            "payments": {"provider": payments, "simulated": payments == "simulated", "ok": true},
            "app_store": {"provider": store, "simulated": store == "simulated", "ok": true},
            "token_exchange": {"configured": app.auth_key.is_some()},
        }),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AesBody {
    /// Optional text to round-trip; a random probe otherwise. Never echoed encrypted.
    text: Option<String>,
}

/// `POST /api/aes`: a self-test of the configured keys (the spec: "round-trip test ...
/// to check configured environment keys"). It encrypts and decrypts a probe with the
/// master key and, when configured, seals and opens one with the token-exchange key,
/// and answers only whether each round trip matched. It never returns ciphertext: an
/// encryption of caller-chosen text under a server key is an oracle (finding C1).
pub async fn aes(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<AesBody>,
) -> ApiResult<Answer<AesCheck>> {
    let probe = body
        .text
        .unwrap_or_else(|| hex::encode(crate::crypto::random_bytes::<16>()));
    let master_ok = app
        .key
        .decrypt(&app.key.encrypt(probe.as_bytes()))
        .is_some_and(|d| d == probe.as_bytes());
    let exchange_ok = app.auth_key.as_ref().map(|k| {
        k.open(&k.seal(probe.as_bytes()))
            .is_some_and(|d| d == probe.as_bytes())
    });
    let matched = master_ok && exchange_ok.unwrap_or(true);
    Ok(Answer(AesCheck {
        success: matched,
        matched,
        algorithm: "AES-256-CTR",
        keys: AesKeys {
            master: KeyCheck {
                configured: None,
                ok: Some(master_ok),
            },
            token_exchange: KeyCheck {
                configured: Some(exchange_ok.is_some()),
                ok: exchange_ok,
            },
        },
    }))
}

/// `aes`: whether the server's keys encrypt and decrypt a probe back to itself.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct AesCheck {
    /// Every configured key round-tripped.
    success: bool,
    /// The same as `success`.
    matched: bool,
    algorithm: &'static str,
    keys: AesKeys,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct AesKeys {
    /// The master key (sealed secrets at rest).
    master: KeyCheck,
    /// The token-exchange key (`PLINTH_AUTH_KEY`), when configured.
    token_exchange: KeyCheck,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct KeyCheck {
    #[serde(skip_serializing_if = "Option::is_none")]
    configured: Option<bool>,
    /// `null` when the key is not configured.
    ok: Option<bool>,
}

/// The spec's not-found handler.
pub async fn not_found() -> ApiError {
    ApiError::not_found("not found")
}
