//! Process wiring for the CLI commands: configuration → database → queue → actors → HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use plinth_actors::batch::BatchWriter;
use plinth_actors::credits::CreditAccounts;
use plinth_actors::decks::DeckActors;
use plinth_actors::rate::RateLimiter;
use plinth_workers::{MailBackend, Queue, QueueName, WorkerConfig};
use tokio::sync::watch;

use crate::config::Opts;
use crate::crypto::{GrantKey, MasterKey};
use crate::db::Db;
use crate::state::{AppState, Inner, RouteIndex};

pub fn init_logging(opts: &Opts) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if opts.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// `PLINTH_MASTER_KEY`, or `<data-dir>/master.key`, generated once with mode 0600.
/// Under `--production` a key file is refused: a key that lives only next to the data
/// is lost with the disk and differs on every host.
pub fn master_key(opts: &Opts) -> anyhow::Result<MasterKey> {
    if opts.production && opts.master_key.is_none() {
        anyhow::bail!(
            "--production needs PLINTH_MASTER_KEY (64 hex characters, kept outside the data \
             directory); a generated master key file is refused"
        );
    }
    if let Some(hex) = &opts.master_key {
        return MasterKey::from_hex(hex).context("PLINTH_MASTER_KEY");
    }
    std::fs::create_dir_all(&opts.data_dir)
        .with_context(|| format!("creating data dir {}", opts.data_dir.display()))?;
    let path = opts.data_dir.join("master.key");
    let (key, generated) = MasterKey::load_or_create(&path)?;
    if generated {
        tracing::info!(path = %path.display(), "generated a new master key");
    }
    Ok(key)
}

/// The name of the setting that holds `MasterKey::check_value`.
const MASTER_KEY_CHECK: &str = "master_key_check";

/// Refuses a master key other than the one the database was set up with: data encrypted
/// under one key does not decrypt under another (sign-in would answer 500), and signed
/// URLs and the derived webhook secret would differ between processes. The first process
/// stores the key's check value; every later one compares with it.
async fn check_master_key(opts: &Opts, db: &Db, key: &MasterKey) -> anyhow::Result<()> {
    let mine = key.check_value();
    crate::db::settings::put_if_absent(db, MASTER_KEY_CHECK, &mine).await?;
    let stored = crate::db::settings::get(db, MASTER_KEY_CHECK)
        .await?
        .context("the master key check value is missing after storing it")?;
    if !crate::crypto::ct_eq(stored.as_bytes(), mine.as_bytes()) {
        let source = match opts.master_key {
            Some(_) => "PLINTH_MASTER_KEY".to_owned(),
            None => format!(
                "{} (PLINTH_MASTER_KEY is unset)",
                opts.data_dir.join("master.key").display()
            ),
        };
        anyhow::bail!(
            "the master key from {source} does not match this database: the database was set \
             up with another key. Start every plinth process on this database with the \
             PLINTH_MASTER_KEY it was set up with"
        );
    }
    Ok(())
}

/// Database with migrations applied and the master key checked, and the job queue in it.
/// `process` names this process's database sessions (`config::process_name`).
pub async fn open_database(
    opts: &Opts,
    process: &str,
    key: &MasterKey,
) -> anyhow::Result<(Db, Queue)> {
    std::fs::create_dir_all(&opts.data_dir)
        .with_context(|| format!("creating data dir {}", opts.data_dir.display()))?;
    let url = opts.database_url();
    let db = Db::connect(&url, process)
        .await
        .context("connecting to the database")?;
    db.migrate().await.context("running migrations")?;
    check_master_key(opts, &db, key).await?;
    let queue = match &db {
        Db::Sqlite(p) => Queue::sqlite(p).await,
        Db::Postgres(p) => Queue::postgres(p).await,
    }
    .map_err(|e| anyhow::anyhow!("setting up the job queue: {e}"))?;
    Ok((db, queue))
}

/// Local object storage keeps objects on one host's disk: with `serve` or `worker`
/// processes on more than one host, what one host stored is missing on the others.
/// That is refused under `--production` and warned about loudly otherwise. On SQLite
/// every process shares the database file's host, so there is one host by construction.
/// `--production` also refuses local storage on PostgreSQL with one host (yet).
async fn check_object_storage(opts: &Opts, db: &Db) -> anyhow::Result<()> {
    if opts.s3_bucket.is_some() {
        return Ok(());
    }
    match crate::db::settings::plinth_hosts(db).await {
        Ok(hosts) if hosts.len() > 1 => {
            let problem = several_hosts(&hosts);
            if opts.production {
                anyhow::bail!("--production refuses {problem}");
            }
            tracing::warn!("UNSAFE DEPLOYMENT: {problem}");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not list the plinth processes on the database"),
    }
    if opts.production && matches!(db, Db::Postgres(_)) {
        anyhow::bail!(
            "--production refuses local object storage with PostgreSQL: objects would live on \
             one host only; configure PLINTH_S3_*"
        );
    }
    Ok(())
}

fn several_hosts(hosts: &[String]) -> String {
    format!(
        "local object storage (no PLINTH_S3_*) with plinth processes on {} hosts ({}): \
         objects stored on one host are missing on the others; configure PLINTH_S3_*",
        hosts.len(),
        hosts.join(", ")
    )
}

/// Repeats the host count of `check_object_storage` every minute, for hosts that joined
/// after this process started, warning once each time the set of hosts changes.
fn watch_hosts(opts: &Opts, db: &Db, mut stop: watch::Receiver<bool>) {
    if opts.s3_bucket.is_some() || !matches!(db, Db::Postgres(_)) {
        return;
    }
    let db = db.clone();
    tokio::spawn(async move {
        let mut seen: Vec<String> = Vec::new();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            if let Ok(hosts) = crate::db::settings::plinth_hosts(&db).await {
                if hosts.len() > 1 && hosts != seen {
                    tracing::warn!("UNSAFE DEPLOYMENT: {}", several_hosts(&hosts));
                }
                seen = hosts;
            }
        }
    });
}

/// SQLite has one writer: a single credit shard group-commits every change with no lock
/// contention. PostgreSQL commits in parallel, so changes spread over shards.
/// Most telemetry events or analytics hits one ingest transaction writes.
const INGEST_ROWS: usize = 2_000;

fn credit_shards(db: &Db, opts: &Opts) -> usize {
    match db {
        Db::Sqlite(_) => 1,
        Db::Postgres(_) => opts.rate_shards,
    }
}

fn mail_backend(opts: &Opts) -> anyhow::Result<MailBackend> {
    MailBackend::new(opts.smtp_url.as_deref(), opts.data_dir.join("outbox"))
        .map_err(|e| anyhow::anyhow!("mail configuration: {e}"))
}

fn slide_env(db: &Db, objects: &crate::storage::ObjectStore) -> plinth_workers::slides::Env {
    std::sync::Arc::new(crate::slide_jobs::Env {
        db: db.clone(),
        objects: objects.clone(),
    })
}

fn expiry_env(db: &Db, objects: &crate::storage::ObjectStore) -> plinth_workers::expiry::Env {
    std::sync::Arc::new(crate::slide_jobs::Env {
        db: db.clone(),
        objects: objects.clone(),
    })
}

/// The worker pools of `--queues` and `--concurrency`; refused with a clear message on
/// a name or number that is not one.
pub fn worker_config(opts: &Opts) -> anyhow::Result<WorkerConfig> {
    let parse = |name: &str, flag: &str| {
        QueueName::parse(name).with_context(|| {
            format!(
                "unknown queue `{name}` in {flag}: the queues are email, export, images, expiry"
            )
        })
    };
    let named: Vec<&String> = opts
        .queues
        .iter()
        .filter(|q| !q.trim().is_empty())
        .collect();
    let selected = if named.is_empty() {
        QueueName::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for q in named {
            let q = parse(q, "--queues (PLINTH_QUEUES)")?;
            if !v.contains(&q) {
                v.push(q);
            }
        }
        v
    };
    let mut queues: Vec<(QueueName, usize)> = selected
        .into_iter()
        .map(|q| {
            let n = match q {
                QueueName::Email => opts.email_concurrency,
                QueueName::Export => opts.render_concurrency,
                QueueName::Images => opts.image_concurrency,
                QueueName::Expiry => 1,
            };
            (q, n.max(1))
        })
        .collect();
    for entry in opts.concurrency.iter().filter(|e| !e.trim().is_empty()) {
        let flag = "--concurrency (PLINTH_CONCURRENCY)";
        let (name, n) = entry
            .split_once('=')
            .with_context(|| format!("`{entry}` in {flag} is not QUEUE=N, e.g. export=4"))?;
        let q = parse(name, flag)?;
        let n: usize = n
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=1024).contains(n))
            .with_context(|| format!("`{entry}` in {flag}: N must be a number from 1 to 1024"))?;
        match queues.iter_mut().find(|(p, _)| *p == q) {
            // Expiry runs one sweep at a time by design.
            Some((QueueName::Expiry, _)) => {}
            Some((_, c)) => *c = n,
            None => tracing::warn!(
                queue = q.name(),
                "{flag} names a queue this process does not run (--queues)"
            ),
        }
    }
    Ok(WorkerConfig {
        name_prefix: opts.worker_name.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "plinth".into());
            format!("{host}-{}", std::process::id())
        }),
        queues,
    })
}

/// Installs the metrics recorder when the operator asked for metrics.
fn start_metrics(opts: &Opts) -> anyhow::Result<()> {
    let token = opts.metrics_token.as_deref().is_some_and(|t| !t.is_empty());
    if token || opts.metrics_listen.is_some() {
        crate::observe::install()?;
    }
    Ok(())
}

/// `--metrics-listen`: /metrics, /livez and /readyz without a token, until `stop`.
async fn serve_metrics(
    opts: &Opts,
    ops: crate::observe::OpsState,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(addr) = &opts.metrics_listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding --metrics-listen {addr}"))?;
    let bound = listener.local_addr()?;
    // Tests read this line to learn the port when listening on port 0.
    println!("plinth metrics on http://{bound}");
    let app: axum::Router = crate::routes::ops(crate::observe::OpsState { open: true, ..ops });
    Ok(Some(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(stopped(stop))
            .await
        {
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

/// The token-exchange key: unset disables the exchange; equal to the master key is
/// refused (finding C1: the master key also encrypts what `/api/aes` and stored secrets
/// touch, so it must never sign in anyone).
fn grant_key(opts: &Opts, master: &MasterKey) -> anyhow::Result<Option<GrantKey>> {
    let Some(hex) = opts
        .auth_token_key
        .as_deref()
        .filter(|h| !h.trim().is_empty())
    else {
        return Ok(None);
    };
    let secret = MasterKey::from_hex(hex).context("PLINTH_AUTH_TOKEN_KEY")?;
    if secret.same_as(master) {
        anyhow::bail!(
            "PLINTH_AUTH_TOKEN_KEY equals the master key; give token exchange its own key"
        );
    }
    Ok(Some(GrantKey::new(&secret)))
}

/// The payment provider and the App Store of the configuration. The simulated ones run
/// only when no real provider at all is configured (finding H2); next to a real one the
/// missing one answers 503. `--production` refuses any simulated provider.
fn providers(
    opts: &Opts,
) -> anyhow::Result<(
    std::sync::Arc<dyn crate::payments::PaymentProvider>,
    std::sync::Arc<dyn crate::store::StoreVerifier>,
)> {
    let stripe = opts
        .stripe_secret_key
        .as_deref()
        .filter(|k| !k.trim().is_empty());
    let simulated_ok = stripe.is_none() && !crate::store::configured(opts);
    if opts.production && simulated_ok {
        anyhow::bail!(
            "--production refuses simulated payments and a simulated App Store: configure \
             PLINTH_STRIPE_SECRET_KEY and/or PLINTH_APPLE_*"
        );
    }
    let payments: std::sync::Arc<dyn crate::payments::PaymentProvider> = match stripe {
        Some(secret) => std::sync::Arc::new(crate::payments::Stripe::new(
            opts.stripe_api_base
                .as_deref()
                .unwrap_or("https://api.stripe.com"),
            secret,
        )),
        None if simulated_ok => std::sync::Arc::new(crate::payments::Simulated),
        None => std::sync::Arc::new(crate::payments::Unconfigured),
    };
    let store = crate::store::from_opts(opts, simulated_ok)?;
    for (what, name) in [("payments", payments.name()), ("App Store", store.name())] {
        match name {
            "simulated" => tracing::warn!(
                "{what}: SIMULATED (no real provider configured; anyone can pay with test \
                 cards and test transactions; never expose this to real users)"
            ),
            "unconfigured" => tracing::warn!("{what}: not configured (its endpoints answer 503)"),
            real => tracing::info!("{what}: {real}"),
        }
    }
    Ok((payments, store))
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
        self.state.orders.stop();
    }
}

/// Opens the database and queue, starts the actors and builds the state of an API
/// reachable at `bound` (the listening address, for the default public URL).
pub async fn build(opts: Opts, bound: &str) -> anyhow::Result<Built> {
    let (payments, store_verifier) = providers(&opts)?;
    let key = master_key(&opts)?;
    let auth_key = grant_key(&opts, &key)?;
    let (db, queue) = open_database(&opts, &crate::config::process_name("serve"), &key).await?;
    check_object_storage(&opts, &db).await?;
    let mail = mail_backend(&opts)?;
    let webhook_secret = opts.stripe_webhook_secret.clone().unwrap_or_else(|| {
        format!(
            "whsec_{}",
            crate::crypto::sha256_hex(format!("webhook:{}", key.to_hex()).as_bytes())
        )
    });
    let routes = RouteIndex::new(&opts.token_costs()?)?;
    let prices = crate::domain::prices::PriceList::load(opts.prices_file.as_deref())?;
    if !crate::domain::licenses::valid_prefix(&opts.license_prefix.to_ascii_uppercase()) {
        anyhow::bail!(
            "PLINTH_LICENSE_PREFIX must be 3 Crockford base32 characters (digits and letters but I, L, O, U), not `{}`",
            opts.license_prefix
        );
    }
    let gcs = crate::gcs::Gcs::from_config(&opts)?;
    let posts = crate::db::posts::Writer::start(&db)
        .await
        .map_err(|e| anyhow::anyhow!("starting the post writer: {e}"))?;
    let orders = crate::db::orders::Placer::start(&db)
        .await
        .map_err(|e| anyhow::anyhow!("starting the order writer: {e}"))?;
    // On PostgreSQL the `auth` category (sign-in, resets, verification mail, token
    // exchange) is always counted in the shared store, so a brute-force client gains
    // nothing from reaching several processes (security round 2); PLINTH_RATE_STORE
    // decides for the high-volume categories.
    use plinth_actors::rate::Shared;
    let rate_store: Option<(std::sync::Arc<dyn plinth_actors::rate::RateStore>, Shared)> =
        match (&db, opts.rate_store) {
            (Db::Postgres(pool), kind) => Some((
                std::sync::Arc::new(crate::db::rate::PgRateStore(pool.clone())),
                if kind == Some(crate::config::RateStoreKind::Postgres) {
                    Shared::ALL
                } else {
                    Shared::only(&[crate::routes::Category::Auth as u8])
                },
            )),
            (Db::Sqlite(_), Some(crate::config::RateStoreKind::Postgres)) => {
                anyhow::bail!("PLINTH_RATE_STORE=postgres needs a PostgreSQL database")
            }
            _ => None,
        };
    if rate_store.as_ref().is_some_and(|(_, s)| *s != Shared::ALL) {
        // Windows per process: N serve processes allow about N times each limit.
        if let Ok(n @ 2..) = crate::db::settings::serve_processes(&db).await {
            tracing::warn!(
                serve_processes = n,
                "several plinth serve processes count rate windows each on their own \
                 (PLINTH_RATE_STORE=local; `auth` is always shared): a limit of R allows \
                 about {n}R; set PLINTH_RATE_STORE=postgres to share them (docs/scaling.md)"
            );
        }
    }
    let rate = RateLimiter::start_sharing(opts.rate_shards, rate_store)
        .await
        .map_err(|e| anyhow::anyhow!("starting rate-limit actors: {e}"))?;

    let credits = CreditAccounts::start(
        credit_shards(&db, &opts),
        std::sync::Arc::new(crate::db::credits::DbCredits(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting credit-account actors: {e}"))?;

    let public_url = opts.public_url(bound);
    let payment_url = opts
        .payment_url
        .clone()
        .unwrap_or_else(|| format!("{public_url}/api/users/subscriptions"));

    let objects = crate::storage::ObjectStore::from_config(&opts, &key, &public_url)?;
    let decks = DeckActors::start(
        opts.rate_shards,
        std::sync::Arc::new(crate::slide_jobs::Idempotency(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting deck actors: {e}"))?;
    let telemetry = BatchWriter::start(
        "telemetry",
        credit_shards(&db, &opts),
        INGEST_ROWS,
        std::sync::Arc::new(crate::db::telemetry::Ingest(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting the telemetry writer: {e}"))?;
    let analytics = BatchWriter::start(
        "analytics",
        credit_shards(&db, &opts),
        INGEST_ROWS,
        std::sync::Arc::new(crate::db::analytics::Ingest(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting the analytics writer: {e}"))?;
    let caches = std::sync::Arc::new(crate::cache::Caches::new(db.clone(), credits.clone()));
    if let Db::Postgres(pool) = &db {
        tokio::spawn(crate::cache::listen(pool.clone(), caches.clone()));
    }
    let state = AppState::new(Inner {
        exempt_domains: Opts::normalized_domains(&opts.exempt_domains),
        admin_domains: Opts::normalized_domains(&opts.admin_domains),
        public_url,
        payment_url,
        db,
        key,
        auth_key,
        jwks: Default::default(),
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
        orders,
        opts,
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

/// The API and, unless `--no-workers`, the job workers. On SIGTERM or Ctrl-C it stops
/// accepting connections and gives in-flight requests and running jobs
/// `--shutdown-timeout` to finish, side by side; jobs still running then go back to
/// their queue (`Queue::run_workers`).
pub async fn serve(opts: Opts) -> anyhow::Result<()> {
    let cfg = (!opts.no_workers)
        .then(|| worker_config(&opts))
        .transpose()?;
    start_metrics(&opts)?;
    let listener = tokio::net::TcpListener::bind(&opts.listen)
        .await
        .with_context(|| format!("binding {}", opts.listen))?;
    let bound = listener.local_addr()?;
    let built = build(opts, &bound.to_string()).await?;
    let state = built.state.clone();
    let grace = Duration::from_secs(state.opts.shutdown_timeout);

    let (stop_tx, stop_rx) = watch::channel(false);
    let metrics = serve_metrics(
        &state.opts,
        crate::observe::OpsState::of_api(&state),
        stop_rx.clone(),
    )
    .await?;
    watch_hosts(&state.opts, &state.db, stop_rx.clone());
    let workers = cfg.map(|cfg| {
        let queue = state.queue.clone();
        let mail = state.mail.clone();
        let env = slide_env(&state.db, &state.objects);
        let expiry = expiry_env(&state.db, &state.objects);
        let every = Duration::from_secs(state.opts.monthly_interval_secs.max(1));
        let periodic = tokio::spawn(crate::periodic::run(
            state.db.clone(),
            crate::config::process_name("serve"),
            state.credits.clone(),
            queue.clone(),
            (every, state.opts.job_retention_days),
            stop_rx.clone(),
        ));
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            queue.run_workers(cfg, mail, env, expiry, stop, grace).await;
            let _ = periodic.await;
        })
    });

    // Tests and scripts read this line to learn the port when listening on port 0.
    println!("plinth listening on http://{bound}");
    tracing::info!(%bound, database = state.db.backend(), "plinth serving");

    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!(
            timeout_secs = grace.as_secs(),
            "stopping: finishing in-flight requests and jobs"
        );
        let _ = stop_tx.send(true);
    });
    let http = axum::serve(
        listener,
        crate::app(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(stopped(stop_rx.clone()));
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

/// Only job workers (`--queues`, `--concurrency`), stopping as `serve` does.
pub async fn worker(opts: Opts) -> anyhow::Result<()> {
    let cfg = worker_config(&opts)?;
    start_metrics(&opts)?;
    let key = master_key(&opts)?;
    let me = crate::config::process_name("worker");
    let (db, queue) = open_database(&opts, &me, &key).await?;
    check_object_storage(&opts, &db).await?;
    let mail = mail_backend(&opts)?;
    // Workers only read and write objects; links are made by the API processes.
    let objects =
        crate::storage::ObjectStore::from_config(&opts, &key, &opts.public_url(&opts.listen))?;
    let env = slide_env(&db, &objects);
    let expiry = expiry_env(&db, &objects);
    let credits = CreditAccounts::start(
        credit_shards(&db, &opts),
        std::sync::Arc::new(crate::db::credits::DbCredits(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting credit-account actors: {e}"))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    if opts.metrics_token.is_some() && opts.metrics_listen.is_none() {
        tracing::warn!("a worker serves /metrics only on --metrics-listen (PLINTH_METRICS_LISTEN)");
    }
    let ops = crate::observe::OpsState {
        db: db.clone(),
        queue: queue.clone(),
        objects: objects.clone(),
        token: None,
        open: true,
    };
    let metrics = serve_metrics(&opts, ops, stop_rx.clone()).await?;
    watch_hosts(&opts, &db, stop_rx.clone());
    let periodic = tokio::spawn(crate::periodic::run(
        db,
        me,
        credits,
        queue.clone(),
        (
            Duration::from_secs(opts.monthly_interval_secs.max(1)),
            opts.job_retention_days,
        ),
        stop_rx.clone(),
    ));
    let grace = Duration::from_secs(opts.shutdown_timeout);
    let run = tokio::spawn(async move {
        queue
            .run_workers(cfg, mail, env, expiry, stop_rx, grace)
            .await;
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

/// `plinth grants mint`: prints a grant sealed with PLINTH_AUTH_TOKEN_KEY.
pub fn mint_grant(
    opts: &Opts,
    email: &str,
    ttl: i64,
    source: Option<String>,
) -> anyhow::Result<()> {
    let hex = opts
        .auth_token_key
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .context("PLINTH_AUTH_TOKEN_KEY is not set")?;
    let key = GrantKey::new(&MasterKey::from_hex(hex).context("PLINTH_AUTH_TOKEN_KEY")?);
    if !(1..=crate::domain::grants::MAX_TTL_SECS).contains(&ttl) {
        anyhow::bail!(
            "--ttl must be 1 to {} seconds",
            crate::domain::grants::MAX_TTL_SECS
        );
    }
    let email = email.trim().to_lowercase();
    println!("{}", crate::domain::grants::mint(&key, &email, ttl, source));
    Ok(())
}

pub async fn migrate(opts: Opts) -> anyhow::Result<()> {
    let key = master_key(&opts)?;
    let (db, _) = open_database(&opts, &crate::config::process_name("migrate"), &key).await?;
    println!("migrations applied ({})", db.backend());
    Ok(())
}

pub async fn rebuild_rollups(opts: Opts) -> anyhow::Result<()> {
    let key = master_key(&opts)?;
    let (db, _) = open_database(&opts, &crate::config::process_name("cli"), &key).await?;
    let until = crate::domain::analytics::hour_of(chrono::Utc::now());
    let read = crate::db::analytics::rebuild_rollups(&db, until).await?;
    println!("analytics rollups rebuilt from {read} events (up to {until})");
    Ok(())
}

pub async fn set_level(opts: Opts, email: &str, level: i64) -> anyhow::Result<()> {
    if ![0, 10, 20, 30, 40, 100].contains(&level) {
        anyhow::bail!("level must be one of 0, 10, 20, 30, 40, 100");
    }
    let key = master_key(&opts)?;
    let (db, _) = open_database(&opts, &crate::config::process_name("cli"), &key).await?;
    let email = email.trim().to_lowercase();
    if !crate::db::users::set_level_by_email(&db, &email, level).await? {
        anyhow::bail!("no account with email {email}");
    }
    // Running servers drop the account's cached key at once (PostgreSQL); on SQLite
    // their 5 s cache expiry keeps the operator contract's 10 s.
    if let (Db::Postgres(pool), Some(id)) = (
        &db,
        crate::db::users::by_email(&db, &email).await?.map(|u| u.id),
    ) {
        crate::cache::notify(pool, &crate::cache::Stale::User(id)).await?;
    }
    println!("{email} is now level {level}");
    Ok(())
}
