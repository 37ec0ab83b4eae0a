//! The operator contract: command line, `PLINTH_*` environment, defaults.
//! Every option is a flag with an environment equivalent; `plinth --help` lists them.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "plinth",
    version,
    about = "plinth: a self-hosted platform backend (JSON REST API and background jobs)",
    long_about = "plinth serves the JSON REST API and runs its background jobs from one binary.\n\
        With no configuration it uses SQLite, local object storage, an email outbox folder and a \
        simulated payment provider, all under --data-dir."
)]
pub struct Cli {
    #[command(flatten)]
    pub opts: Opts,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the HTTP API (the default command); runs the job workers too unless --no-workers.
    Serve,
    /// Run only the job workers (scale worker pools independently of the API).
    Worker,
    /// Run database migrations and exit.
    Migrate,
    /// Manage accounts from the command line.
    #[command(subcommand)]
    Users(UsersCommand),
    /// Token-exchange grants (needs PLINTH_AUTH_TOKEN_KEY).
    #[command(subcommand)]
    Grants(GrantsCommand),
    /// Analytics maintenance.
    #[command(subcommand)]
    Analytics(AnalyticsCommand),
    /// Job control: queue counts, listing, retry and cancel.
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Back up the database while plinth runs: SQLite with VACUUM INTO, PostgreSQL with
    /// pg_dump (custom format). Then copy the objects, and keep the master key apart.
    Backup {
        /// The file to write (it must not exist).
        path: std::path::PathBuf,
    },
    /// Moving a deployment's data: `db copy --to postgres://…` copies a SQLite deployment
    /// into an empty PostgreSQL database.
    #[command(subcommand)]
    Db(DbCommand),
    /// Slide decks on this machine, no server needed: render a Markdown deck to PDF, PNG
    /// or HTML, or check it.
    #[command(subcommand)]
    Slides(SlidesCommand),
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// Jobs per queue by status, the oldest pending job's age, and jobs finished per
    /// minute over the last hour.
    Stats,
    /// Jobs, newest first (the attachment-expiry runs only with --queue expiry or --all).
    List {
        /// email, export, images, expiry or callbacks.
        #[arg(long)]
        queue: Option<String>,
        /// pending, scheduled, running, retrying, succeeded, failed or cancelled.
        #[arg(long)]
        status: Option<String>,
        /// A job's id, the id its client holds (an export's job id, an asset id, an
        /// email's id) or an email's recipient.
        #[arg(long)]
        search: Option<String>,
        /// Include the attachment-expiry runs (queued every 30 s).
        #[arg(long)]
        all: bool,
        /// At most this many (1 to 500).
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// One job with its arguments and every attempt's error: by its id, or by the id its
    /// client holds (an export's job id from GET /api/slides/jobs/{id}, an asset id, an
    /// email's id).
    Show { id: String },
    /// Runs failed or cancelled jobs again, now, with their attempts reset: the jobs named
    /// (their ids or their clients'), or every one a selection finds.
    Retry(Selection),
    /// Cancels pending, scheduled or retrying jobs so that they never run.
    Cancel(Selection),
    /// Deletes finished jobs (succeeded, failed, cancelled) with their attempt records.
    Discard(Selection),
    /// Pauses a queue: no worker of any process starts a job of it (each process sees it
    /// within a second); running jobs finish; new jobs wait.
    Pause { queue: String },
    /// Resumes a paused queue.
    Resume { queue: String },
    /// The processes that run workers, their pools and workers, and the jobs each holds.
    Workers,
}

/// The jobs a bulk command acts on: named, or selected by queue and/or status.
#[derive(Args, Debug)]
pub struct Selection {
    /// Job ids (apalis's, or the ids their clients hold).
    pub ids: Vec<String>,
    /// Instead of ids: every job of this queue (with --status, in that status; at most
    /// 500, newest first).
    #[arg(long)]
    pub queue: Option<String>,
    /// Instead of ids: every job in this status (of --queue, or of every queue).
    #[arg(long)]
    pub status: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Copies every table of the SQLite deployment (--data-dir, or a sqlite: --database-url)
    /// into an empty PostgreSQL database, checks the copy (rows per table, the ledger's
    /// sums) and commits it whole or not at all. Stop the deployment's processes first:
    /// what they write after the copy began is not in it. Then start the servers on the
    /// copy with the same master key and objects (docs/operations.md, Moving to PostgreSQL).
    Copy {
        /// The PostgreSQL database to copy into (postgres://…); it must be empty.
        #[arg(long, env = "PLINTH_COPY_TO", hide_env_values = true)]
        to: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum AnalyticsCommand {
    /// Recompute the hourly and daily rollups the stats read from the stored events, up
    /// to the current hour (after importing or changing events). Writes a day of events
    /// per transaction; stats stay right meanwhile (they read the events not rolled up).
    RebuildRollups,
}

#[derive(Subcommand, Debug)]
pub enum GrantsCommand {
    /// Print a grant for `POST /api/users/authenticate-token` (what an identity service
    /// mints; for operators and tests).
    Mint {
        #[arg(long)]
        email: String,
        /// Seconds the grant stays valid (at most 600).
        #[arg(long, default_value_t = 300)]
        ttl: i64,
        /// Optional application domain, as `source` on sign-in.
        #[arg(long)]
        source: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum UsersCommand {
    /// Change the level of an existing account (how the first admin is made: --level 100).
    SetLevel {
        #[arg(long)]
        email: String,
        #[arg(long)]
        level: i64,
    },
}

#[derive(Args, Debug, Clone)]
pub struct Opts {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_LISTEN",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub listen: String,
    /// Directory for the SQLite database, objects, outbox and master key (created by
    /// serve, worker and migrate; operator commands only open what is there).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_DATA_DIR",
        default_value = "./data",
        global = true
    )]
    pub data_dir: PathBuf,
    /// Database URL: sqlite://PATH or postgres://... [default: sqlite://<data-dir>/plinth.db]
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_DATABASE_URL",
        global = true
    )]
    pub database_url: Option<String>,
    /// Base URL of links in emails and of generated URLs [default: http://<listen>]
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_PUBLIC_URL",
        global = true
    )]
    pub public_url: Option<String>,
    /// Base URL of your application's own pages for the links in account emails
    /// (`<app-url>/verify?code=`, `/reset-password?code=`, `/sign-in?code=`): set it when a
    /// front end handles them [default: the public URL, whose pages plinth serves]
    #[arg(help_heading = "Server", long, env = "PLINTH_APP_URL", global = true)]
    pub app_url: Option<String>,
    /// AES-256 key for data encrypted at rest, 64 hex characters [default: generated once
    /// into <data-dir>/master.key]
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_MASTER_KEY",
        hide_env_values = true,
        global = true
    )]
    pub master_key: Option<String>,
    /// SMTP relay, e.g. smtp://host:port or smtps://user:pass@host [default: write .eml
    /// files to <data-dir>/outbox]
    #[arg(
        help_heading = "Email",
        long,
        env = "PLINTH_SMTP_URL",
        hide_env_values = true,
        global = true
    )]
    pub smtp_url: Option<String>,
    /// Sender of emails without an organization template.
    #[arg(
        help_heading = "Email",
        long,
        env = "PLINTH_MAIL_FROM",
        default_value = "plinth <noreply@plinth.localhost>",
        global = true
    )]
    pub mail_from: String,
    /// Emails one organization's templates may dress per hour (per process); past it
    /// the platform's own words are sent instead.
    #[arg(
        help_heading = "Email",
        long,
        env = "PLINTH_ORG_TEMPLATE_MAILS_PER_HOUR",
        default_value_t = 100,
        global = true
    )]
    pub org_template_mails_per_hour: u64,
    /// Comma-separated application domains whose users get no email.
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_EXEMPT_DOMAINS",
        value_delimiter = ',',
        global = true
    )]
    pub exempt_domains: Vec<String>,
    /// Comma-separated permanent admin domains (public-access area).
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_ADMIN_DOMAINS",
        value_delimiter = ',',
        global = true
    )]
    pub admin_domains: Vec<String>,
    /// Comma-separated registered telemetry product ids.
    #[arg(
        help_heading = "Rate limits and costs",
        long,
        env = "PLINTH_TELEMETRY_PRODUCTS",
        value_delimiter = ',',
        global = true
    )]
    pub telemetry_products: Vec<String>,
    /// Secret for Stripe-Signature verification on /api/webhooks/stripe.
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_STRIPE_WEBHOOK_SECRET",
        hide_env_values = true,
        global = true
    )]
    pub stripe_webhook_secret: Option<String>,
    /// Stripe API base URL; with PLINTH_STRIPE_SECRET_KEY selects the Stripe provider
    /// [default: the simulated provider]
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_STRIPE_API_BASE",
        global = true
    )]
    pub stripe_api_base: Option<String>,
    /// Stripe secret key (sk_...).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_STRIPE_SECRET_KEY",
        hide_env_values = true,
        global = true
    )]
    pub stripe_secret_key: Option<String>,
    /// App Store Server API base URL (the sandbox is
    /// https://api.storekit-sandbox.itunes.apple.com).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_APPLE_API_BASE",
        default_value = "https://api.storekit.itunes.apple.com",
        global = true
    )]
    pub apple_api_base: String,
    /// App Store Connect API issuer id; with the key id, private key, bundle id and root
    /// certificate selects the real App Store [default: the simulated store]
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_APPLE_ISSUER_ID",
        global = true
    )]
    pub apple_issuer_id: Option<String>,
    /// App Store Connect API key id (the `kid` of the request tokens).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_APPLE_KEY_ID",
        global = true
    )]
    pub apple_key_id: Option<String>,
    /// Path of the App Store Connect API private key (.p8: PKCS#8 PEM, P-256).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_APPLE_PRIVATE_KEY",
        global = true
    )]
    pub apple_private_key: Option<PathBuf>,
    /// The app's bundle id: `bid` of the request tokens and the `bundleId` that signed
    /// transactions must name.
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_APPLE_BUNDLE_ID",
        global = true
    )]
    pub apple_bundle_id: Option<String>,
    /// Path of the root certificate(s), PEM or DER, trusted for signed transactions
    /// (Apple Root CA - G3).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_APPLE_ROOT_CERT",
        global = true
    )]
    pub apple_root_cert: Option<PathBuf>,
    /// Multiplies every base rate limit (test suites raise it).
    #[arg(
        help_heading = "Rate limits and costs",
        long,
        env = "PLINTH_RATE_LIMIT_MULTIPLIER",
        default_value_t = 1.0,
        global = true
    )]
    pub rate_limit_multiplier: f64,
    /// Number of rate-limit actor shards.
    #[arg(
        help_heading = "Rate limits and costs",
        long,
        env = "PLINTH_RATE_SHARDS",
        default_value_t = 8,
        global = true
    )]
    pub rate_shards: usize,
    /// Origins whose browser pages may call the API (CORS), comma-separated: exact
    /// origins (https://app.example.com) may call every route, with credentials; `*` lets
    /// any origin read (GET, HEAD), never with credentials [default: none; the analytics
    /// track route always answers other origins]
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_CORS_ORIGINS",
        value_delimiter = ',',
        global = true
    )]
    pub cors_origins: Vec<String>,
    /// Load balancers and proxies (IP addresses or CIDR blocks, comma-separated) whose
    /// `X-Forwarded-For` / `Forwarded` header names the client; from
    /// any other peer those headers are ignored.
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = parse_net,
        global = true
    )]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Where rate windows are counted: `local` (each process its own; the default) or
    /// `postgres` (shared by every process on the database: set it when several `serve`
    /// processes share one PostgreSQL).
    #[arg(
        help_heading = "Rate limits and costs",
        long,
        env = "PLINTH_RATE_STORE",
        global = true
    )]
    pub rate_store: Option<RateStoreKind>,
    /// Token cost overrides: comma-separated `METHOD /path=N`, e.g.
    /// "GET /api/users/viewer=2,POST /api/aes=1" (every cost is 0 otherwise).
    #[arg(
        help_heading = "Rate limits and costs",
        long,
        env = "PLINTH_TOKEN_COSTS",
        global = true
    )]
    pub token_costs: Option<String>,
    /// Labelled prices for `POST /api/data/prices/by-label`: a JSON file shaped like
    /// `fixtures/prices.json` (which is used when unset).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_PRICES_FILE",
        global = true
    )]
    pub prices_file: Option<PathBuf>,
    /// Google Cloud Storage bucket for `generate-presigned-url-gcs` (with
    /// PLINTH_GCS_CREDENTIALS; unset, that endpoint answers 503).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_GCS_BUCKET",
        global = true
    )]
    pub gcs_bucket: Option<String>,
    /// The service-account key JSON file Google issues (its `client_email` and
    /// `private_key` sign the URLs).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_GCS_CREDENTIALS",
        global = true
    )]
    pub gcs_credentials: Option<PathBuf>,
    /// Another GCS endpoint, e.g. an emulator [default: https://storage.googleapis.com]
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_GCS_ENDPOINT",
        global = true
    )]
    pub gcs_endpoint: Option<String>,
    /// Where clients buy tokens; returned as `payment_url` with 402 answers
    /// [default: <public-url>/api/users/subscriptions]
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_PAYMENT_URL",
        global = true
    )]
    pub payment_url: Option<String>,
    /// OAuth client ids accepted as the `aud` of Google ID tokens (comma-separated);
    /// identity-provider sign-in answers 503 until one is set.
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_GOOGLE_CLIENT_IDS",
        value_delimiter = ',',
        global = true
    )]
    pub google_client_ids: Vec<String>,
    /// JWKS with the identity provider's signing keys: an http(s) URL or a file path.
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_GOOGLE_JWKS",
        default_value = "https://www.googleapis.com/oauth2/v3/certs",
        global = true
    )]
    pub google_jwks: String,
    /// Accepted `iss` values of ID tokens (comma-separated).
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_GOOGLE_ISSUERS",
        value_delimiter = ',',
        default_value = "https://accounts.google.com,accounts.google.com",
        global = true
    )]
    pub google_issuers: Vec<String>,
    /// The identity service that issues tokens for /api/users/authenticate-token.
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_AUTH_URL",
        global = true
    )]
    pub auth_url: Option<String>,
    /// Secret (64 hex) shared with that service for token-exchange grants; unset, token
    /// exchange answers 503. Must differ from the master key.
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_AUTH_TOKEN_KEY",
        hide_env_values = true,
        global = true
    )]
    pub auth_token_key: Option<String>,
    /// Production mode: refuse to start with a simulated payment provider or App Store, a
    /// generated master key file, or local object storage on PostgreSQL.
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_PRODUCTION",
        global = true
    )]
    pub production: bool,
    /// `serve` without embedded job workers (run `plinth worker` processes instead).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_NO_WORKERS",
        global = true
    )]
    pub no_workers: bool,
    /// Concurrent email deliveries per process.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_EMAIL_CONCURRENCY",
        default_value_t = 4,
        global = true
    )]
    pub email_concurrency: usize,
    /// Concurrent slide exports per process (each renders on a blocking thread).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_RENDER_CONCURRENCY",
        default_value_t = 2,
        global = true
    )]
    pub render_concurrency: usize,
    /// Concurrent slide image validations per process.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_IMAGE_CONCURRENCY",
        default_value_t = 2,
        global = true
    )]
    pub image_concurrency: usize,
    /// Queues this process runs workers for, comma-separated: email, export, images,
    /// expiry, callbacks [default: all five]. `serve --no-workers` runs none.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_QUEUES",
        value_delimiter = ',',
        global = true
    )]
    pub queues: Vec<String>,
    /// Workers per queue, e.g. `export=4,images=2,email=8` (overrides the
    /// PLINTH_*_CONCURRENCY flags for the queues it names; expiry is always 1).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_CONCURRENCY",
        value_delimiter = ',',
        global = true
    )]
    pub concurrency: Vec<String>,
    /// Milliseconds between an idle worker's looks for jobs it was not woken for: jobs
    /// queued by another process on SQLite (PostgreSQL tells every process at once),
    /// retries and delayed jobs that came due [default: 100 on SQLite, 1000 on
    /// PostgreSQL]. Jobs queued by this process wake its workers at once.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_QUEUE_POLL_MS",
        global = true
    )]
    pub queue_poll_ms: Option<u64>,
    /// Waits between the attempts of an email whose delivery failed (the relay is down or
    /// answers "try later"): exponential, each ±20 % at random; one more attempt than
    /// waits. Units s, m, h.
    #[arg(
        help_heading = "Email",
        long,
        env = "PLINTH_EMAIL_BACKOFF",
        default_value = "30s,2m,10m,1h,6h",
        global = true
    )]
    pub email_backoff: Option<String>,
    /// Waits between the attempts of a completion callback its receiver did not
    /// acknowledge with a 2xx (each ±20 %); one more attempt than waits.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_CALLBACK_BACKOFF",
        default_value = "10s,1m,5m,30m,2h,8h,24h",
        global = true
    )]
    pub callback_backoff: Option<String>,
    /// Let completion callbacks reach loopback and private-network addresses (off: a
    /// client could otherwise make this server call its internal network).
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_CALLBACK_PRIVATE_NETWORKS",
        global = true
    )]
    pub callback_private_networks: bool,
    /// Seconds an API request may take before it is answered 503 with `Retry-After` (a
    /// write also with `outcome_unknown: true`); a job status read with `?wait=N` gets N
    /// more. A database that hangs never holds a client longer.
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_REQUEST_TIMEOUT",
        default_value_t = 10,
        global = true
    )]
    pub request_timeout: u64,
    /// Seconds a stopping process (SIGTERM or Ctrl-C) gives in-flight requests and running
    /// jobs to finish; jobs still running then go back to their queue.
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_SHUTDOWN_TIMEOUT",
        default_value_t = 25,
        global = true
    )]
    pub shutdown_timeout: u64,
    /// Bearer token that `GET /metrics` on the API listener requires (unset: /metrics
    /// answers 404 there).
    #[arg(
        help_heading = "Observability",
        long,
        env = "PLINTH_METRICS_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub metrics_token: Option<String>,
    /// A separate address serving /metrics, /livez and /readyz without a token (keep it
    /// private). Metrics are recorded only when this or PLINTH_METRICS_TOKEN is set.
    #[arg(
        help_heading = "Observability",
        long,
        env = "PLINTH_METRICS_LISTEN",
        global = true
    )]
    pub metrics_listen: Option<String>,
    /// Prefix of this process's worker names [default: host and process id]; the full
    /// names are made unique per start, as apalis requires.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_WORKER_NAME",
        global = true
    )]
    pub worker_name: Option<String>,
    /// S3-compatible object storage: bucket name (unset: files under <data-dir>/objects).
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_BUCKET",
        global = true
    )]
    pub s3_bucket: Option<String>,
    /// S3 endpoint URL, e.g. http://127.0.0.1:9000.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_ENDPOINT",
        global = true
    )]
    pub s3_endpoint: Option<String>,
    /// S3 region.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_REGION",
        default_value = "us-east-1",
        global = true
    )]
    pub s3_region: String,
    /// S3 access key id.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_ACCESS_KEY_ID",
        hide_env_values = true,
        global = true
    )]
    pub s3_access_key_id: Option<String>,
    /// S3 secret access key.
    #[arg(
        help_heading = "Storage",
        long,
        env = "PLINTH_S3_SECRET_ACCESS_KEY",
        hide_env_values = true,
        global = true
    )]
    pub s3_secret_access_key: Option<String>,
    /// Path-style S3 URLs (http://endpoint/bucket/key), as most self-hosted servers need.
    #[arg(help_heading = "Storage", long, env = "PLINTH_S3_PATH_STYLE", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub s3_path_style: bool,
    /// Seconds between runs of the monthly credit distribution (with the workers).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_MONTHLY_INTERVAL_SECS",
        default_value_t = 3600,
        global = true
    )]
    pub monthly_interval_secs: u64,
    /// Days a finished job (done, failed for good, killed) stays in the queue tables;
    /// the upkeep (each monthly interval) deletes older ones. 0 keeps them forever.
    #[arg(
        help_heading = "Jobs and workers",
        long,
        env = "PLINTH_JOB_RETENTION_DAYS",
        default_value_t = 14,
        global = true
    )]
    pub job_retention_days: u64,
    /// Seconds a USD checkout holds its units while the payment is pending; the workers
    /// release expired holds (every 30 s, or the monthly interval when shorter).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_RESERVATION_SECS",
        default_value_t = 1800,
        global = true
    )]
    pub reservation_secs: u64,
    /// The 3-character brand prefix of license keys (Crockford base32: digits and
    /// letters but I, L, O, U); it leads the first two groups of every key.
    #[arg(
        help_heading = "Accounts and sign-in",
        long,
        env = "PLINTH_LICENSE_PREFIX",
        default_value = "PTH",
        global = true
    )]
    pub license_prefix: String,
    /// Log format: text or json (RUST_LOG filters).
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_LOG_FORMAT",
        default_value = "text",
        global = true
    )]
    pub log_format: String,
    /// What one client may hold of this process: connections, buffered bytes, time.
    #[command(flatten)]
    pub limits: Limits,
}

/// Resource limits on clients (docs/security.md "Budgets"). Every one is a flag and an
/// environment variable; the defaults suit a small server facing the internet.
#[derive(Args, Debug, Clone)]
pub struct Limits {
    /// Open connections the server holds at once; more wait in the kernel's backlog.
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_MAX_CONNECTIONS",
        default_value_t = 4096,
        global = true
    )]
    pub max_connections: usize,
    /// Open connections per client address (IPv6: per /64); one more is answered 429 and
    /// closed. Peers in PLINTH_TRUSTED_PROXIES are not capped.
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_MAX_CONNECTIONS_PER_CLIENT",
        default_value_t = 256,
        global = true
    )]
    pub max_connections_per_client: usize,
    /// Seconds a client has to send a request's head (method, path, headers); also how
    /// long an idle keep-alive connection stays open.
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_HEADER_TIMEOUT",
        default_value_t = 30,
        global = true
    )]
    pub header_timeout: u64,
    /// Seconds a request body may go without a byte arriving before it is answered 408.
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_BODY_TIMEOUT",
        default_value_t = 30,
        global = true
    )]
    pub body_timeout: u64,
    /// Slowest average a request body may arrive at, in bytes per second, once it has
    /// taken PLINTH_BODY_TIMEOUT seconds (a trickle of bytes cannot hold a request open).
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_MIN_BODY_RATE",
        default_value_t = 1024,
        global = true
    )]
    pub min_body_rate: u64,
    /// Largest request body read from a caller without a valid API key, in bytes (a
    /// route's own limit applies when it is smaller; the Stripe webhook has its own).
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_ANONYMOUS_BODY_LIMIT",
        default_value_t = 64 * 1024,
        global = true
    )]
    pub anonymous_body_limit: u64,
    /// Slide exports one account may have queued or running at once (administrators:
    /// any); one more is answered 429.
    #[arg(
        help_heading = "Limits",
        long,
        env = "PLINTH_RENDERS_PER_ACCOUNT",
        default_value_t = 4,
        global = true
    )]
    pub renders_per_account: usize,
}

/// The options each command uses (the others are hidden from its `--help`; `serve`, the
/// default command, and `plinth --help` show them all). By field name.
const DATABASE: &[&str] = &["data_dir", "database_url", "master_key", "log_format"];
const WORKER: &[&str] = &[
    "production",
    "public_url",
    "smtp_url",
    "s3_bucket",
    "s3_endpoint",
    "s3_region",
    "s3_access_key_id",
    "s3_secret_access_key",
    "s3_path_style",
    "queues",
    "concurrency",
    "email_concurrency",
    "render_concurrency",
    "image_concurrency",
    "queue_poll_ms",
    "email_backoff",
    "callback_backoff",
    "callback_private_networks",
    "shutdown_timeout",
    "metrics_listen",
    "worker_name",
    "monthly_interval_secs",
    "job_retention_days",
    "reservation_secs",
    "rate_shards",
];

/// The command line, with each subcommand's `--help` listing only the options it uses
/// (every option is global, so that `plinth --data-dir D users …` and
/// `plinth users … --data-dir D` both work).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let cmd = Cli::command();
    // Every option is global (defined once, on `plinth`): a subcommand that holds its own
    // copy of one is not given the root's, so a hidden copy hides it from that
    // subcommand's help (and, being global too, from its subcommands'), while its value
    // still reaches the root's matches.
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    let only = |sc: clap::Command, keep: &[&str]| -> clap::Command {
        globals
            .iter()
            .filter(|a| !keep.contains(&a.get_id().as_str()))
            .fold(sc, |sc, a| sc.arg(a.clone().hide(true)))
    };
    let worker: Vec<&str> = DATABASE.iter().chain(WORKER).copied().collect();
    let migrate: Vec<&str> = DATABASE.iter().chain(&["production"]).copied().collect();
    let mut cmd = cmd
        .mut_subcommand("worker", |sc| only(sc, &worker))
        .mut_subcommand("migrate", |sc| only(sc, &migrate));
    for name in ["users", "jobs", "analytics", "backup"] {
        cmd = cmd.mut_subcommand(name, |sc| only(sc, DATABASE));
    }
    cmd.mut_subcommand("grants", |sc| only(sc, &["auth_token_key", "log_format"]))
        // An author's command: none of the server's options apply.
        .mut_subcommand("slides", |sc| only(sc, &[]))
}

/// Largest accepted token cost of one call.
pub const MAX_TOKEN_COST: u64 = 1_000_000_000;

/// `PLINTH_RATE_STORE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RateStoreKind {
    Local,
    Postgres,
}

impl Opts {
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("plinth.db").display()))
    }

    pub fn public_url(&self, bound: &str) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"))
            .trim_end_matches('/')
            .to_owned()
    }

    /// Parses `PLINTH_TOKEN_COSTS`.
    pub fn token_costs(&self) -> anyhow::Result<HashMap<(String, String), u64>> {
        let mut out = HashMap::new();
        let Some(spec) = &self.token_costs else {
            return Ok(out);
        };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (route, cost) = item
                .rsplit_once('=')
                .ok_or_else(|| anyhow::anyhow!("token cost `{item}`: expected METHOD /path=N"))?;
            let (method, path) = route
                .trim()
                .split_once(' ')
                .ok_or_else(|| anyhow::anyhow!("token cost `{item}`: expected METHOD /path=N"))?;
            let cost: u64 = cost.trim().parse()?;
            // Costs are charged as signed ledger deltas: a cost past i64 would wrap into a
            // credit (finding L9). No real price comes near this bound.
            if cost > MAX_TOKEN_COST {
                anyhow::bail!("token cost `{item}`: at most {MAX_TOKEN_COST}");
            }
            out.insert((method.trim().to_uppercase(), path.trim().to_owned()), cost);
        }
        Ok(out)
    }

    pub fn normalized_domains(list: &[String]) -> Vec<String> {
        list.iter()
            .map(|d| d.trim().to_lowercase())
            .filter(|d| !d.is_empty())
            .collect()
    }
}

/// How this process names itself: the PostgreSQL `application_name` of its sessions and
/// the holder of the periodic rounds it claims. `role` is `serve`, `worker`, `migrate`
/// or `cli`; the start-up checks count the hosts of `serve` and `worker` processes.
pub fn process_name(role: &str) -> String {
    format!("plinth-{role}:{}:{}", host_name(), std::process::id())
}

/// This machine's host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else
/// `localhost`), without `:` and cut to 40 characters so the whole process name fits
/// PostgreSQL's 63-byte `application_name`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_graphic() && *c != ':')
                .take(40)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Parses one `PLINTH_TRUSTED_PROXIES` item: a CIDR (`10.0.0.0/8`) or a single address.
pub fn parse_net(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("`{s}` is neither an IP address nor a CIDR block"))
}

/// `plinth slides …` (`crate::cli::slides` runs them).
#[derive(Subcommand, Debug)]
pub enum SlidesCommand {
    /// Renders a Markdown deck (Marp decks as written) to PDF, PNG or HTML.
    ///
    /// The format comes from --format, else from the output's extension, else PDF. The
    /// output defaults to the deck's path with the format's extension. PNG writes one
    /// 1920×1080 file per visible slide: `<output stem>.001.png`, … (into the directory
    /// when the output is one).
    Render {
        /// The deck's Markdown file.
        deck: PathBuf,
        /// The file to write.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// pdf, png or html.
        #[arg(long, value_parser = ["pdf", "png", "html"])]
        format: Option<String>,
        /// Speaker notes for the presenter: a notes page after each slide with notes
        /// (PDF), a presenter view (HTML: press p).
        #[arg(long)]
        notes: bool,
        /// Read images the deck names outside its own folder (absolute paths, `..`,
        /// links leading out). Off: a deck from someone else cannot copy files of yours
        /// into its output.
        #[arg(long)]
        allow_outside_images: bool,
    },
    /// Checks a deck without rendering: what an export would refuse (exit 1, with the
    /// line), images that are missing or unreadable, and warnings.
    Check {
        /// The deck's Markdown file.
        deck: PathBuf,
        /// As for render.
        #[arg(long)]
        allow_outside_images: bool,
    },
}
