//! Process wiring for the CLI commands: configuration → database → queue → actors → HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use plinth_actors::credits::CreditAccounts;
use plinth_actors::decks::DeckActors;
use plinth_actors::rate::RateLimiter;
use plinth_workers::{MailBackend, Queue, WorkerConfig};
use tokio::sync::watch;

use crate::auth::CallerCache;
use crate::config::Opts;
use crate::crypto::MasterKey;
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
pub fn master_key(opts: &Opts) -> anyhow::Result<MasterKey> {
    if let Some(hex) = &opts.master_key {
        return MasterKey::from_hex(hex).context("PLINTH_MASTER_KEY");
    }
    let path = opts.data_dir.join("master.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => MasterKey::from_hex(&text).with_context(|| format!("{}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = MasterKey::generate();
            write_private(&path, &key.to_hex())?;
            tracing::info!(path = %path.display(), "generated a new master key");
            Ok(key)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

/// Database with migrations applied, and the job queue in it.
pub async fn open_database(opts: &Opts) -> anyhow::Result<(Db, Queue)> {
    std::fs::create_dir_all(&opts.data_dir)
        .with_context(|| format!("creating data dir {}", opts.data_dir.display()))?;
    let url = opts.database_url();
    let db = Db::connect(&url)
        .await
        .context("connecting to the database")?;
    db.migrate().await.context("running migrations")?;
    let queue = match &db {
        Db::Sqlite(p) => Queue::sqlite(p).await,
        Db::Postgres(p) => Queue::postgres(p).await,
    }
    .map_err(|e| anyhow::anyhow!("setting up the job queue: {e}"))?;
    Ok((db, queue))
}

/// SQLite has one writer: a single credit shard group-commits every change with no lock
/// contention. PostgreSQL commits in parallel, so changes spread over shards.
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

fn worker_config(opts: &Opts) -> WorkerConfig {
    WorkerConfig {
        name_prefix: opts.worker_name.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "plinth".into());
            format!("{host}-{}", std::process::id())
        }),
        email_concurrency: opts.email_concurrency,
        render_concurrency: opts.render_concurrency,
        image_concurrency: opts.image_concurrency,
    }
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

pub async fn serve(opts: Opts) -> anyhow::Result<()> {
    let store_verifier = crate::store::from_opts(&opts)?;
    let (db, queue) = open_database(&opts).await?;
    let key = master_key(&opts)?;
    let auth_key = match &opts.auth_token_key {
        Some(hex) => MasterKey::from_hex(hex).context("PLINTH_AUTH_TOKEN_KEY")?,
        None => key.clone(),
    };
    let mail = mail_backend(&opts)?;
    let webhook_secret = opts.stripe_webhook_secret.clone().unwrap_or_else(|| {
        format!(
            "whsec_{}",
            crate::crypto::sha256_hex(format!("webhook:{}", key.to_hex()).as_bytes())
        )
    });
    let routes = RouteIndex::new(&opts.token_costs()?)?;
    let rate = RateLimiter::start(opts.rate_shards)
        .await
        .map_err(|e| anyhow::anyhow!("starting rate-limit actors: {e}"))?;

    let credits = CreditAccounts::start(
        credit_shards(&db, &opts),
        std::sync::Arc::new(crate::db::credits::DbCredits(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting credit-account actors: {e}"))?;

    let listener = tokio::net::TcpListener::bind(&opts.listen)
        .await
        .with_context(|| format!("binding {}", opts.listen))?;
    let bound = listener.local_addr()?;
    let public_url = opts.public_url(&bound.to_string());
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
    let payments: std::sync::Arc<dyn crate::payments::PaymentProvider> =
        match (&opts.stripe_api_base, &opts.stripe_secret_key) {
            (Some(base), Some(secret)) => {
                std::sync::Arc::new(crate::payments::Stripe::new(base, secret))
            }
            (None, Some(secret)) => std::sync::Arc::new(crate::payments::Stripe::new(
                "https://api.stripe.com",
                secret,
            )),
            _ => std::sync::Arc::new(crate::payments::Simulated),
        };
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
        callers: CallerCache::default(),
        queue: queue.clone(),
        mail: mail.clone(),
        objects,
        routes,
        opts,
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let workers = (!state.opts.no_workers).then(|| {
        let cfg = worker_config(&state.opts);
        let queue = queue.clone();
        let env = slide_env(&state.db, &state.objects);
        let every = Duration::from_secs(state.opts.monthly_interval_secs.max(1));
        let periodic = tokio::spawn(crate::periodic::run(
            state.db.clone(),
            credits.clone(),
            every,
            stop_rx.clone(),
        ));
        tokio::spawn(async move {
            queue.run_workers(cfg, mail, env, stop_rx).await;
            let _ = periodic.await;
        })
    });

    // Tests and scripts read this line to learn the port when listening on port 0.
    println!("plinth listening on http://{bound}");
    tracing::info!(%bound, database = state.db.backend(), "plinth serving");

    axum::serve(
        listener,
        crate::app(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;

    let _ = stop_tx.send(true);
    if let Some(w) = workers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    rate.stop();
    credits.stop();
    decks.stop();
    Ok(())
}

pub async fn worker(opts: Opts) -> anyhow::Result<()> {
    let (db, queue) = open_database(&opts).await?;
    let mail = mail_backend(&opts)?;
    let key = master_key(&opts)?;
    // Workers only read and write objects; links are made by the API processes.
    let objects =
        crate::storage::ObjectStore::from_config(&opts, &key, &opts.public_url(&opts.listen))?;
    let env = slide_env(&db, &objects);
    let credits = CreditAccounts::start(
        credit_shards(&db, &opts),
        std::sync::Arc::new(crate::db::credits::DbCredits(db.clone())),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting credit-account actors: {e}"))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let periodic = tokio::spawn(crate::periodic::run(
        db,
        credits,
        Duration::from_secs(opts.monthly_interval_secs.max(1)),
        stop_rx.clone(),
    ));
    let run = tokio::spawn({
        let cfg = worker_config(&opts);
        async move {
            queue.run_workers(cfg, mail, env, stop_rx).await;
            let _ = periodic.await;
        }
    });
    println!("plinth worker running");
    shutdown_signal().await;
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(30), run).await;
    Ok(())
}

pub async fn migrate(opts: Opts) -> anyhow::Result<()> {
    let (db, _) = open_database(&opts).await?;
    println!("migrations applied ({})", db.backend());
    Ok(())
}

pub async fn set_level(opts: Opts, email: &str, level: i64) -> anyhow::Result<()> {
    if ![0, 10, 20, 30, 40, 100].contains(&level) {
        anyhow::bail!("level must be one of 0, 10, 20, 30, 40, 100");
    }
    let (db, _) = open_database(&opts).await?;
    let email = email.trim().to_lowercase();
    if !crate::db::users::set_level_by_email(&db, &email, level).await? {
        anyhow::bail!("no account with email {email}");
    }
    println!("{email} is now level {level}");
    Ok(())
}
