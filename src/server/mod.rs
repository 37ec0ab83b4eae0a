//! Process wiring for the CLI commands: configuration → database → queue → actors → HTTP.
//! Here: logging, `serve` and `worker` (the composition root, `build`). Beside it:
//! `database` (opening it under the master key), `providers` (storage, mail, payments,
//! identity, chosen and checked at start), `pools` (job workers and what each job needs)
//! and `commands` (the one-shot operator commands).

use std::time::Duration;

use anyhow::Context;
use plinth_actors::batch::BatchWriter;
use plinth_actors::credits::CreditAccounts;
use plinth_actors::decks::DeckActors;
use plinth_actors::rate::RateLimiter;
use tokio::sync::watch;

use crate::config::{
    process_name, Accounts, Limits, LogFormat, Observability, Opts, Payments, RateStoreKind, Rates,
};
use crate::db::Db;
use crate::state::{AppState, Inner, RouteIndex};

mod commands;
mod database;
mod listener;
mod pools;
mod providers;

pub use commands::{migrate, mint_grant, rebuild_rollups, set_level};
pub use database::{
    master_key, open_database, open_operator_database, redact_url, MASTER_KEY_CHECK,
};
pub use pools::worker_pools;

use pools::{configure_backoff, credit_shards, ingest_shards, ports, worker_config};
use providers::{
    check_object_storage, grant_key, mail_backend, providers, refuse_unsafe_production, watch_hosts,
};

pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // apalis's own INFO lines ("Worker … stopped" at SIGTERM while jobs still drain,
        // paused, resumed) are said better by plinth's.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,apalis_core=warn"));
    // Colour only for a person at a terminal: never escape codes in a file or a pipe.
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        // A log that cannot be written (its disk full) must not stop a request: the
        // default reports the failure with `eprintln!`, which panics when stderr fails,
        // and a panic in the usage layer drops the client's connection.
        .log_internal_errors(false);
    if format == LogFormat::Json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Most telemetry events or analytics hits one ingest transaction writes.
const INGEST_ROWS: usize = 2_000;

/// Installs the metrics recorder when the operator asked for metrics.
fn start_metrics(obs: &Observability) -> anyhow::Result<()> {
    let token = obs.metrics_token.as_deref().is_some_and(|t| !t.is_empty());
    if token || obs.metrics_listen.is_some() {
        crate::observe::install()?;
    }
    Ok(())
}

/// `--metrics-listen`: /metrics, /livez and /readyz without a token, until `stop`.
async fn serve_metrics(
    obs: &Observability,
    limits: &Limits,
    ops: crate::observe::OpsState,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(addr) = &obs.metrics_listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding --metrics-listen {addr}"))?;
    let bound = listener.local_addr()?;
    // Tests read this line to learn the port when listening on port 0.
    println!("plinth metrics on http://{bound}");
    let app: axum::Router =
        crate::http::routes::ops(crate::observe::OpsState { open: true, ..ops });
    let limits = limits.clone();
    Ok(Some(tokio::spawn(async move {
        if let Err(e) = listener::serve(listener, app, &limits, &[], stop).await {
            tracing::error!(error = %e, "metrics listener failed");
        }
    })))
}

/// Resolves once `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Everything a running API holds: the state its handlers see and the actors to stop
/// at the end. `serve` puts it behind a listener; in-process tests call
/// `crate::app(built.state.clone())` and send requests with tower's `oneshot`.
pub struct Built {
    pub state: AppState,
    rate: RateLimiter,
    credits: CreditAccounts,
    decks: DeckActors,
    telemetry: BatchWriter<crate::db::telemetry::EventRow>,
    analytics: BatchWriter<crate::db::analytics::HitRow>,
}

impl Built {
    pub fn stop(&self) {
        self.rate.stop();
        self.credits.stop();
        self.decks.stop();
        self.telemetry.stop();
        self.analytics.stop();
        self.state.posts.stop();
        self.state.domain.checkout.stop();
    }
}

/// The settings checked by rules of the layers above configuration: CORS origins the
/// HTTP edge can honour and a license prefix keys can carry.
fn check_rules(opts: &Opts) -> anyhow::Result<()> {
    crate::http::cors::CorsPolicy::check(&opts.server.cors_origins).map_err(anyhow::Error::msg)?;
    let prefix = &opts.accounts.license_prefix;
    if !crate::domain::licenses::valid_prefix(&prefix.to_ascii_uppercase()) {
        anyhow::bail!(
            "PLINTH_LICENSE_PREFIX must be 3 Crockford base32 characters (digits and letters but I, L, O, U), not `{prefix}`"
        );
    }
    Ok(())
}

/// Opens the database and queue, starts the actors and builds the state of an API
/// reachable at `bound` (the listening address, for the default public URL).
pub async fn build(opts: Opts, bound: &str) -> anyhow::Result<Built> {
    // New emails get as many attempts as the email back-off has waits, plus one.
    configure_backoff(&opts.mail, &opts.jobs)?;
    opts.validate()?;
    check_rules(&opts)?;
    refuse_unsafe_production(&opts)?;
    let production = opts.server.production;
    let (payments, store_verifier) = providers(&opts.payments, production)?;
    let key = master_key(&opts.database, production)?;
    let auth_key = grant_key(&opts.accounts, &key)?;
    let (db, queue) = open_database(&opts.database, &process_name("serve"), &key).await?;
    check_object_storage(&opts.storage, production, &db).await?;
    db.spawn_checkpointer();
    let mail = mail_backend(&opts.mail, &opts.database.data_dir)?;
    let webhook_secret = webhook_secret(&opts.payments, &key);
    let routes = RouteIndex::new(
        crate::http::routes::all().map(|r| &r.meta),
        &opts.rates.token_costs()?,
    )?;
    let prices = crate::domain::prices::PriceList::load(opts.payments.prices_file.as_deref())?;
    let gcs = crate::adapters::gcs::Gcs::from_config(&opts.storage)?;
    let posts = crate::db::posts::Writer::start(&db)
        .await
        .map_err(|e| anyhow::anyhow!("starting the post writer: {e}"))?;
    let orders = crate::db::orders::Placer::start(&db)
        .await
        .map_err(|e| anyhow::anyhow!("starting the order writer: {e}"))?;
    let rate = rate_limiter(&db, &opts.rates).await?;
    let credits = credit_accounts(&db, &opts.rates).await?;

    let public_url = opts.server.public_url(bound);
    let payment_url = opts
        .payments
        .payment_url
        .clone()
        .unwrap_or_else(|| format!("{public_url}/api/users/subscriptions"));

    let objects = crate::adapters::storage::ObjectStore::from_config(
        &opts.storage,
        &opts.database.data_dir,
        &key,
        &public_url,
    )?;
    let decks = DeckActors::start(
        opts.rates.rate_shards,
        std::sync::Arc::new(crate::jobs::slides::Idempotency(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting deck actors: {e}"))?;
    let (telemetry, analytics) = ingest_writers(&db, &opts.rates).await?;
    let caches = std::sync::Arc::new(crate::db::cache::Caches::new(db.clone(), credits.clone()));
    if let Db::Postgres(pool) = &db {
        tokio::spawn(crate::db::cache::listen(pool.clone(), caches.clone()));
        // Waiting clients hear job changes made by every process.
        tokio::spawn(crate::db::watch::listen(pool.clone()));
    }
    let handles = crate::state::Handles::new(
        &opts,
        crate::state::Resources {
            db: &db,
            auth_key: auth_key.clone(),
            credits: &credits,
            payments: &payments,
            orders,
            payment_url: &payment_url,
            public_url: &public_url,
            key: &key,
            caches: &caches,
            queue: &queue,
            rate: &rate,
        },
    );
    let state = AppState::new(Inner {
        openapi: crate::http::openapi::document,
        openapi_doc: Default::default(),
        admin_domains: Accounts::normalized_domains(&opts.accounts.admin_domains),
        public_url,
        payment_url,
        db,
        key,
        auth_key,
        domain: handles,
        payments,
        store_verifier,
        webhook_secret,
        rate: rate.clone(),
        credits: credits.clone(),
        decks: decks.clone(),
        telemetry: telemetry.clone(),
        analytics: analytics.clone(),
        analytics_sites: Default::default(),
        caches: caches.clone(),
        queue,
        mail,
        objects,
        routes,
        prices,
        gcs,
        posts,
        opts,
        status_answers: Default::default(),
    });
    Ok(Built {
        state,
        rate,
        credits,
        decks,
        telemetry,
        analytics,
    })
}

/// `PLINTH_STRIPE_WEBHOOK_SECRET`, else one derived from the master key (the same in
/// every process of the deployment).
fn webhook_secret(payments: &Payments, key: &crate::crypto::MasterKey) -> String {
    payments.stripe_webhook_secret.clone().unwrap_or_else(|| {
        format!(
            "whsec_{}",
            crate::crypto::sha256_hex(format!("webhook:{}", key.to_hex()).as_bytes())
        )
    })
}

/// The rate-limit actors, counting where `PLINTH_RATE_STORE` and the database say.
async fn rate_limiter(db: &Db, rates: &Rates) -> anyhow::Result<RateLimiter> {
    // On PostgreSQL the `auth` category (sign-in, resets, verification mail, token
    // exchange) is always counted in the shared store, so a brute-force client gains
    // nothing from reaching several processes (security round 2); PLINTH_RATE_STORE
    // decides for the high-volume categories.
    use plinth_actors::rate::Shared;
    let rate_store: Option<(std::sync::Arc<dyn plinth_actors::rate::RateStore>, Shared)> =
        match (db, rates.rate_store) {
            (Db::Postgres(pool), kind) => Some((
                std::sync::Arc::new(crate::db::rate::PgRateStore(pool.clone())),
                if kind == Some(RateStoreKind::Postgres) {
                    Shared::ALL
                } else {
                    Shared::only(&[crate::http::routes::Category::Auth as u8])
                },
            )),
            (Db::Sqlite(_), Some(RateStoreKind::Postgres)) => {
                anyhow::bail!("PLINTH_RATE_STORE=postgres needs a PostgreSQL database")
            }
            _ => None,
        };
    if rate_store.as_ref().is_some_and(|(_, s)| *s != Shared::ALL) {
        // Windows per process: N serve processes allow about N times each limit.
        if let Ok(n @ 2..) = crate::db::settings::serve_processes(db).await {
            tracing::warn!(
                serve_processes = n,
                "several plinth serve processes count rate windows each on their own \
                 (PLINTH_RATE_STORE=local; `auth` is always shared): a limit of R allows \
                 about {n}R; set PLINTH_RATE_STORE=postgres to share them (docs/scaling.md)"
            );
        }
    }
    RateLimiter::start_sharing(rates.rate_shards, rate_store)
        .await
        .map_err(|e| anyhow::anyhow!("starting rate-limit actors: {e}"))
}

/// The credit-account actors over the database's ledger.
async fn credit_accounts(db: &Db, rates: &Rates) -> anyhow::Result<CreditAccounts> {
    CreditAccounts::start(
        credit_shards(db, rates),
        std::sync::Arc::new(crate::db::credits::DbCredits(db.serial_writer())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting credit-account actors: {e}"))
}

/// The batch writers of telemetry events and analytics hits.
async fn ingest_writers(
    db: &Db,
    rates: &Rates,
) -> anyhow::Result<(
    BatchWriter<crate::db::telemetry::EventRow>,
    BatchWriter<crate::db::analytics::HitRow>,
)> {
    let telemetry = BatchWriter::start(
        "telemetry",
        ingest_shards(db, rates),
        INGEST_ROWS,
        std::sync::Arc::new(crate::db::telemetry::Ingest(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting the telemetry writer: {e}"))?;
    let analytics = BatchWriter::start(
        "analytics",
        ingest_shards(db, rates),
        INGEST_ROWS,
        std::sync::Arc::new(crate::db::analytics::Ingest(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting the analytics writer: {e}"))?;
    Ok((telemetry, analytics))
}

/// The API and, unless `--no-workers`, the job workers. On SIGTERM or Ctrl-C it stops
/// accepting connections and gives in-flight requests and running jobs
/// `--shutdown-timeout` to finish, side by side; jobs still running then go back to
/// their queue (`Queue::run_workers`).
pub async fn serve(opts: Opts) -> anyhow::Result<()> {
    // Refused before anything starts: a bad --queues, --concurrency or --email-backoff.
    let pools = (!opts.jobs.no_workers)
        .then(|| worker_pools(&opts))
        .transpose()?;
    start_metrics(&opts.observability)?;
    let listener = tokio::net::TcpListener::bind(&opts.server.listen)
        .await
        .with_context(|| format!("binding {}", opts.server.listen))?;
    let bound = listener.local_addr()?;
    let built = build(opts, &bound.to_string()).await?;
    let state = built.state.clone();
    let cfg = pools.map(|q| worker_config(&state.opts.jobs, &state.db, q));
    let grace = Duration::from_secs(state.opts.server.shutdown_timeout);

    let (stop_tx, stop_rx) = watch::channel(false);
    let metrics = serve_metrics(
        &state.opts.observability,
        &state.opts.limits,
        crate::observe::OpsState::of_api(&state),
        stop_rx.clone(),
    )
    .await?;
    watch_hosts(&state.opts.storage, &state.db, stop_rx.clone());
    let workers = cfg.map(|cfg| {
        let queue = state.queue.clone();
        let ports = ports(
            &state.opts.jobs,
            &state.db,
            &state.objects,
            &state.key,
            state.mail.clone(),
            (plinth_vocab::ProcessRole::Serve, &cfg.name_prefix),
        );
        let every = Duration::from_secs(state.opts.payments.monthly_interval_secs.max(1));
        let periodic = tokio::spawn(crate::jobs::periodic::run(
            state.db.clone(),
            process_name("serve"),
            state.credits.clone(),
            queue.clone(),
            (every, state.opts.jobs.job_retention_days),
            stop_rx.clone(),
        ));
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            queue.run_workers(cfg, ports, stop, grace).await;
            let _ = periodic.await;
        })
    });

    // Tests and scripts read this line to learn the port when listening on port 0.
    println!("plinth listening on http://{bound}");
    tracing::info!(%bound, database = state.db.backend(), "plinth serving");
    next_steps(&state).await;

    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!(
            timeout_secs = grace.as_secs(),
            "stopping: finishing in-flight requests and jobs"
        );
        let _ = stop_tx.send(true);
    });
    let (limits, trusted) = (
        state.opts.limits.clone(),
        state.opts.server.trusted_proxies.clone(),
    );
    let http = listener::serve(
        listener,
        crate::app(state),
        &limits,
        &trusted,
        stop_rx.clone(),
    );
    tokio::select! {
        served = http => served?,
        // Requests still running when the timeout ends are cut off.
        _ = async { stopped(stop_rx).await; tokio::time::sleep(grace).await } => {
            tracing::warn!("requests still in flight after the shutdown timeout; closing them");
        }
    }
    if let Some(w) = workers {
        let _ = tokio::time::timeout(grace + Duration::from_secs(5), w).await;
    }
    if let Some(m) = metrics {
        let _ = tokio::time::timeout(Duration::from_secs(1), m).await;
    }
    built.stop();
    tracing::info!("plinth stopped");
    Ok(())
}

/// What to open next, printed once the server listens: the console, the OpenAPI
/// document and, while no account is an administrator, how to make the first one (with
/// the options that reach this database).
async fn next_steps(state: &AppState) {
    let base = &state.public_url;
    let admins = crate::db::settings::administrators(&state.db)
        .await
        .unwrap_or(1);
    let on = match &state.opts.database.database_url {
        Some(url) => format!("--database-url '{}'", redact_url(url)),
        None => format!("--data-dir {}", state.opts.database.data_dir.display()),
    };
    let first_admin = (admins == 0).then(|| {
        format!(
            "sign up (POST {base}/api/users/authenticate), then: plinth users set-level \
             --email you@example.com --level 100 {on}"
        )
    });
    if state.opts.observability.log_format == LogFormat::Json {
        tracing::info!(
            console = %format!("{base}/console"),
            openapi = %format!("{base}/api/openapi.json"),
            first_administrator = first_admin.as_deref().unwrap_or("-"),
            "next steps"
        );
        return;
    }
    println!("plinth console: {base}/console (sign in with an administrator's API key)");
    println!("plinth OpenAPI: {base}/api/openapi.json");
    if let Some(steps) = first_admin {
        println!("plinth first administrator: {steps}");
    }
}

/// Only job workers (`--queues`, `--concurrency`), stopping as `serve` does.
pub async fn worker(opts: Opts) -> anyhow::Result<()> {
    let pools = worker_pools(&opts)?;
    refuse_unsafe_production(&opts)?;
    start_metrics(&opts.observability)?;
    let key = master_key(&opts.database, opts.server.production)?;
    let me = process_name("worker");
    let (db, queue) = open_database(&opts.database, &me, &key).await?;
    let cfg = worker_config(&opts.jobs, &db, pools);
    check_object_storage(&opts.storage, opts.server.production, &db).await?;
    let mail = mail_backend(&opts.mail, &opts.database.data_dir)?;
    // Workers only read and write objects; links are made by the API processes.
    let objects = crate::adapters::storage::ObjectStore::from_config(
        &opts.storage,
        &opts.database.data_dir,
        &key,
        &opts.server.public_url(&opts.server.listen),
    )?;
    let ports = ports(
        &opts.jobs,
        &db,
        &objects,
        &key,
        mail,
        (plinth_vocab::ProcessRole::Worker, &cfg.name_prefix),
    );
    let credits = credit_accounts(&db, &opts.rates).await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    if opts.observability.metrics_token.is_some() && opts.observability.metrics_listen.is_none() {
        tracing::warn!("a worker serves /metrics only on --metrics-listen (PLINTH_METRICS_LISTEN)");
    }
    let ops = crate::observe::OpsState {
        db: db.clone(),
        credits: Some(credits.clone()),
        queue: queue.clone(),
        objects: objects.clone(),
        token: None,
        open: true,
    };
    let metrics = serve_metrics(&opts.observability, &opts.limits, ops, stop_rx.clone()).await?;
    watch_hosts(&opts.storage, &db, stop_rx.clone());
    let periodic = tokio::spawn(crate::jobs::periodic::run(
        db,
        me,
        credits,
        queue.clone(),
        (
            Duration::from_secs(opts.payments.monthly_interval_secs.max(1)),
            opts.jobs.job_retention_days,
        ),
        stop_rx.clone(),
    ));
    let grace = Duration::from_secs(opts.server.shutdown_timeout);
    let run = tokio::spawn(async move {
        queue.run_workers(cfg, ports, stop_rx, grace).await;
        let _ = periodic.await;
    });
    println!("plinth worker running");
    shutdown_signal().await;
    tracing::info!(
        timeout_secs = grace.as_secs(),
        "stopping: finishing running jobs"
    );
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(grace + Duration::from_secs(5), run).await;
    if let Some(m) = metrics {
        let _ = tokio::time::timeout(Duration::from_secs(1), m).await;
    }
    tracing::info!("plinth worker stopped");
    Ok(())
}
