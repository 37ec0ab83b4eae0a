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
        // apalis's own INFO lines ("Worker … stopped" at SIGTERM while jobs still drain,
        // paused, resumed) are said better by plinth's.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,apalis_core=warn"));
    // Colour only for a person at a terminal: never escape codes in a file or a pipe.
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
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

/// Where a SQLite URL's file is (`sqlite://PATH`, `sqlite:PATH`, with any `?options`).
fn sqlite_path(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| std::path::PathBuf::from(path))
}

/// What operator commands (`users set-level`, `jobs`, `analytics rebuild-rollups`) work
/// on: the database and master key a server already made. Nothing is created: no data
/// directory, no database file, no key file, no binding of a key to the database. Says
/// on stderr which database it opened, and what it looked for when there is none.
pub async fn open_operator_database(opts: &Opts) -> anyhow::Result<(Db, Queue)> {
    let url = opts.database_url();
    let shown = redact_url(&url);
    let from = match &opts.database_url {
        Some(_) => "--database-url (PLINTH_DATABASE_URL)".to_owned(),
        None => format!("--data-dir {}", opts.data_dir.display()),
    };
    if let Some(path) = sqlite_path(&url) {
        if !path.exists() {
            anyhow::bail!(
                "no database at {} (from {from}); nothing was created. Run this with the \
                 server's --data-dir or --database-url",
                path.display()
            );
        }
    }
    let key = match &opts.master_key {
        Some(hex) => MasterKey::from_hex(hex).context("PLINTH_MASTER_KEY")?,
        None => {
            let path = opts.data_dir.join("master.key");
            if !path.exists() {
                anyhow::bail!(
                    "no master key: PLINTH_MASTER_KEY is unset and {} does not exist; set \
                     PLINTH_MASTER_KEY, or run this with the server's --data-dir",
                    path.display()
                );
            }
            MasterKey::load_or_create(&path)?.0
        }
    };
    let db = Db::connect_existing(&url, &crate::config::process_name("cli"))
        .await
        .with_context(|| format!("opening the database {shown}"))?;
    eprintln!("plinth: database {shown}");
    db.migrate().await.context("running migrations")?;
    // Compare with the key the database was set up with, never set one.
    match crate::db::settings::get(&db, MASTER_KEY_CHECK).await? {
        None => anyhow::bail!(
            "the database {shown} was never set up by a plinth server (it has no master key \
             check); start `plinth serve` or run `plinth migrate` on it first"
        ),
        Some(stored) if !crate::crypto::ct_eq(stored.as_bytes(), key.check_value().as_bytes()) => {
            anyhow::bail!(
                "the master key does not match the database {shown}: the database was set up with \
                 another key. Use the PLINTH_MASTER_KEY (or --data-dir with master.key) its \
                 server uses"
            )
        }
        Some(_) => {}
    }
    let queue = match &db {
        Db::Sqlite(p) => Queue::sqlite(p).await,
        Db::Postgres(p) => Queue::postgres(p).await,
    }
    .map_err(|e| anyhow::anyhow!("opening the job queue: {e}"))?;
    Ok((db, queue))
}

/// A database URL without its password, for messages.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
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

/// What the workers of this process (`role`: serve or worker) reach the outside through.
fn ports(
    opts: &Opts,
    db: &Db,
    objects: &crate::storage::ObjectStore,
    key: &MasterKey,
    mail: MailBackend,
    (role, worker_prefix): (&'static str, &str),
) -> plinth_workers::Ports {
    plinth_workers::Ports {
        mail,
        slides: slide_env(db, objects),
        expiry: expiry_env(db, objects),
        callbacks: std::sync::Arc::new(crate::callbacks::Deliverer {
            db: db.clone(),
            objects: objects.clone(),
            key: key.clone(),
            private_ok: opts.callback_private_networks,
        }),
        control: std::sync::Arc::new(crate::slide_jobs::Control {
            db: db.clone(),
            name: crate::config::process_name(role),
            role,
            worker_prefix: worker_prefix.to_owned(),
            started_at: chrono::Utc::now(),
        }),
    }
}

/// The worker pools of `--queues` and `--concurrency`; refused with a clear message on
/// a name or number that is not one. Also sets this process's email back-off
/// (`--email-backoff`), refused the same way.
pub fn worker_pools(opts: &Opts) -> anyhow::Result<Vec<(QueueName, usize)>> {
    configure_backoff(opts)?;
    let parse = |name: &str, flag: &str| {
        QueueName::parse(name).with_context(|| {
            format!(
                "unknown queue `{name}` in {flag}: the queues are email, export, images, expiry, callbacks"
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
                QueueName::Callbacks => 4,
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
    Ok(queues)
}

/// The worker pools of this process over its database.
fn worker_config(opts: &Opts, db: &Db, queues: Vec<(QueueName, usize)>) -> WorkerConfig {
    WorkerConfig {
        log: std::sync::Arc::new(crate::slide_jobs::JobRuns(db.clone())),
        poll: opts
            .queue_poll_ms
            .map(|ms| Duration::from_millis(ms.clamp(10, 60_000))),
        name_prefix: opts.worker_name.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "plinth".into());
            format!("{host}-{}", std::process::id())
        }),
        queues,
    }
}

/// `--email-backoff` and `--callback-backoff`: the waits between the attempts of an
/// email and of a completion callback.
fn configure_backoff(opts: &Opts) -> anyhow::Result<()> {
    let parse = |text: Option<&str>, flag: &str, default: plinth_workers::Backoff| match text {
        Some(t) => plinth_workers::Backoff::parse(t).map_err(|e| anyhow::anyhow!("{flag}: {e}")),
        None => Ok(default),
    };
    let email = parse(
        opts.email_backoff.as_deref(),
        "--email-backoff (PLINTH_EMAIL_BACKOFF)",
        plinth_workers::Backoff::email(),
    )?;
    let callbacks = parse(
        opts.callback_backoff.as_deref(),
        "--callback-backoff (PLINTH_CALLBACK_BACKOFF)",
        plinth_workers::Backoff::callbacks(),
    )?;
    plinth_workers::configure_backoff(email, callbacks);
    Ok(())
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
    // New emails get as many attempts as the email back-off has waits, plus one.
    configure_backoff(&opts)?;
    crate::CorsPolicy::check(&opts.cors_origins).map_err(anyhow::Error::msg)?;
    if let Some(url) = opts.app_url.as_deref().filter(|u| !u.trim().is_empty()) {
        let u = url.trim();
        if !(u.starts_with("https://") || u.starts_with("http://")) || u.contains('?') {
            anyhow::bail!(
                "PLINTH_APP_URL must be an http(s) URL without a query, the base of your \
                 application's /verify, /reset-password and /sign-in pages, not `{url}`"
            );
        }
    }
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
        // Waiting clients hear job changes made by every process.
        tokio::spawn(crate::watch::listen(pool.clone()));
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
    // Refused before anything starts: a bad --queues, --concurrency or --email-backoff.
    let pools = (!opts.no_workers)
        .then(|| worker_pools(&opts))
        .transpose()?;
    start_metrics(&opts)?;
    let listener = tokio::net::TcpListener::bind(&opts.listen)
        .await
        .with_context(|| format!("binding {}", opts.listen))?;
    let bound = listener.local_addr()?;
    let built = build(opts, &bound.to_string()).await?;
    let state = built.state.clone();
    let cfg = pools.map(|q| worker_config(&state.opts, &state.db, q));
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
        let ports = ports(
            &state.opts,
            &state.db,
            &state.objects,
            &state.key,
            state.mail.clone(),
            ("serve", &cfg.name_prefix),
        );
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

/// What to open next, printed once the server listens: the console, the OpenAPI
/// document and, while no account is an administrator, how to make the first one (with
/// the options that reach this database).
async fn next_steps(state: &AppState) {
    let base = &state.public_url;
    let admins = crate::db::settings::administrators(&state.db)
        .await
        .unwrap_or(1);
    let on = match &state.opts.database_url {
        Some(url) => format!("--database-url '{}'", redact_url(url)),
        None => format!("--data-dir {}", state.opts.data_dir.display()),
    };
    let first_admin = (admins == 0).then(|| {
        format!(
            "sign up (POST {base}/api/users/authenticate), then: plinth users set-level \
             --email you@example.com --level 100 {on}"
        )
    });
    if state.opts.log_format == "json" {
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
    start_metrics(&opts)?;
    let key = master_key(&opts)?;
    let me = crate::config::process_name("worker");
    let (db, queue) = open_database(&opts, &me, &key).await?;
    let cfg = worker_config(&opts, &db, pools);
    check_object_storage(&opts, &db).await?;
    let mail = mail_backend(&opts)?;
    // Workers only read and write objects; links are made by the API processes.
    let objects =
        crate::storage::ObjectStore::from_config(&opts, &key, &opts.public_url(&opts.listen))?;
    let ports = ports(
        &opts,
        &db,
        &objects,
        &key,
        mail,
        ("worker", &cfg.name_prefix),
    );
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
        credits: Some(credits.clone()),
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

/// `plinth migrate`. On PostgreSQL it never binds the database to a generated key file:
/// without `PLINTH_MASTER_KEY` it works only on a database already set up with the key
/// file in `--data-dir` (a key generated here would differ from the one the servers get
/// from their secret store, and they would all be refused).
pub async fn migrate(opts: Opts) -> anyhow::Result<()> {
    let url = opts.database_url();
    let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
    if postgres && opts.master_key.is_none() {
        let path = opts.data_dir.join("master.key");
        let db = Db::connect(&url, &crate::config::process_name("migrate"))
            .await
            .context("connecting to the database")?;
        db.migrate().await.context("running migrations")?;
        let stored = crate::db::settings::get(&db, MASTER_KEY_CHECK).await?;
        let file_key = path
            .exists()
            .then(|| MasterKey::load_or_create(&path).map(|(k, _)| k))
            .transpose()?;
        match (stored, file_key) {
            (Some(stored), Some(key))
                if crate::crypto::ct_eq(stored.as_bytes(), key.check_value().as_bytes()) => {}
            (Some(_), file_key) => anyhow::bail!(
                "the database was set up with another key than {}: run plinth migrate with \
                 the PLINTH_MASTER_KEY its servers use",
                match file_key {
                    Some(_) => format!("{} (PLINTH_MASTER_KEY is unset)", path.display()),
                    None => "none (PLINTH_MASTER_KEY is unset and there is no master.key)".into(),
                }
            ),
            (None, _) => anyhow::bail!(
                "plinth migrate on PostgreSQL needs PLINTH_MASTER_KEY (64 hex characters, the \
                 one every server will use): without it the database would be bound to a key \
                 generated here, and servers started with their own key would be refused. \
                 The migrations ran; no key was bound"
            ),
        }
        let queue = match &db {
            Db::Postgres(p) => Queue::postgres(p).await,
            Db::Sqlite(p) => Queue::sqlite(p).await,
        };
        queue.map_err(|e| anyhow::anyhow!("setting up the job queue: {e}"))?;
        println!("migrations applied ({})", db.backend());
        return Ok(());
    }
    let key = master_key(&opts)?;
    let (db, _) = open_database(&opts, &crate::config::process_name("migrate"), &key).await?;
    println!("migrations applied ({})", db.backend());
    Ok(())
}

pub async fn rebuild_rollups(opts: Opts) -> anyhow::Result<()> {
    let (db, _) = open_operator_database(&opts).await?;
    let until = crate::domain::analytics::hour_of(chrono::Utc::now());
    let read = crate::db::analytics::rebuild_rollups(&db, until).await?;
    println!("analytics rollups rebuilt from {read} events (up to {until})");
    Ok(())
}

pub async fn set_level(opts: Opts, email: &str, level: i64) -> anyhow::Result<()> {
    if ![0, 10, 20, 30, 40, 100].contains(&level) {
        anyhow::bail!("level must be one of 0, 10, 20, 30, 40, 100");
    }
    let (db, _) = open_operator_database(&opts).await?;
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
