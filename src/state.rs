//! Shared application state handed to every handler.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;

use plinth_actors::credits::CreditAccounts;
use plinth_actors::rate::RateLimiter;
use plinth_workers::{MailBackend, Queue};

use crate::config::Opts;
use crate::crypto::MasterKey;
use crate::db::Db;
use crate::route_spec::RouteMeta;

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub opts: Opts,
    pub db: Db,
    pub key: MasterKey,
    /// Key of token-exchange grants (`PLINTH_AUTH_TOKEN_KEY`); `None` disables the
    /// exchange (503). Never the master key.
    pub auth_key: Option<crate::crypto::GrantKey>,
    /// The domain handles: each rule set with exactly what it needs.
    pub domain: Handles,
    pub payments: std::sync::Arc<dyn crate::adapters::payments::PaymentProvider>,
    /// The app store vouching for in-app purchases (`PLINTH_APPLE_*`, else simulated).
    pub store_verifier: std::sync::Arc<dyn crate::adapters::appstore::StoreVerifier>,
    /// `Stripe-Signature` secret (`PLINTH_STRIPE_WEBHOOK_SECRET`, else derived from the
    /// master key for the simulated provider).
    pub webhook_secret: String,
    pub public_url: String,
    pub payment_url: String,
    /// Permanent admin domains (public-access area), lower-case.
    pub admin_domains: Vec<String>,
    pub rate: RateLimiter,
    pub credits: CreditAccounts,
    pub decks: plinth_actors::decks::DeckActors,
    /// Writes telemetry events (group commit through `plinth_actors::batch`).
    pub telemetry: plinth_actors::batch::BatchWriter<crate::db::telemetry::EventRow>,
    /// Writes analytics hits (group commit, as telemetry).
    pub analytics: plinth_actors::batch::BatchWriter<crate::db::analytics::HitRow>,
    /// Active analytics sites for the track path (5 s).
    pub analytics_sites: crate::domain::analytics::SiteCache,
    /// Read caches (API keys, KV entries, posts) and the announcer of changes.
    pub caches: std::sync::Arc<crate::db::cache::Caches>,
    pub queue: Queue,
    pub mail: MailBackend,
    pub objects: crate::adapters::storage::ObjectStore,
    pub routes: RouteIndex,
    /// Labelled prices (`PLINTH_PRICES_FILE`, else `fixtures/prices.json`).
    pub prices: crate::domain::prices::PriceList,
    /// Google Cloud Storage signed URLs, when configured (`PLINTH_GCS_*`).
    pub gcs: Option<crate::adapters::gcs::Gcs>,
    /// Post inserts (group commit on SQLite).
    pub posts: crate::db::posts::Writer,
    /// Builds the OpenAPI document (`crate::http::openapi::document`): a function the server
    /// hands in, since what reads the route table sits above the handlers in it.
    pub openapi: fn(&AppState) -> serde_json::Value,
    /// The document, serialised on first request and then shared: it depends only on the
    /// configuration, and building it per request cost milliseconds an anonymous client
    /// could ask for in a loop (issue 41).
    pub openapi_doc: std::sync::OnceLock<bytes::Bytes>,
    /// `GET /api/status`'s last answers, reused for a second (a probe load balancers call often).
    pub status_answers: StatusAnswers,
}

/// The last answers of `GET /api/status` (to anyone, to an administrator) and when the
/// probes behind them ran; `refresh` lets one request at a time run the probes again.
#[derive(Default)]
pub struct StatusAnswers {
    pub last: std::sync::RwLock<Option<(std::time::Instant, bytes::Bytes, bytes::Bytes)>>,
    pub refresh: tokio::sync::Mutex<()>,
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        Self(Arc::new(inner))
    }
}

/// The route table keyed by (method, matched path), with configured costs applied.
pub struct RouteIndex {
    map: HashMap<(&'static str, &'static str), RouteEntry>,
    /// Every route in the table's order.
    listed: Vec<&'static RouteMeta>,
}

#[derive(Clone, Copy)]
pub struct RouteEntry {
    pub spec: &'static RouteMeta,
    pub cost: u64,
}

impl RouteIndex {
    /// `routes`: the spec's routes and the additions alike (`routes::all`).
    pub fn new(
        routes: impl IntoIterator<Item = &'static RouteMeta>,
        overrides: &HashMap<(String, String), u64>,
    ) -> anyhow::Result<Self> {
        let mut map = HashMap::new();
        let mut listed = Vec::new();
        for spec in routes {
            listed.push(spec);
            let cost = overrides
                .get(&(spec.method.to_owned(), spec.path.to_owned()))
                .copied()
                .unwrap_or(spec.cost);
            let entry = RouteEntry { spec, cost };
            map.insert((spec.method, spec.path), entry);
            if let Some(also) = spec.also {
                map.insert((also, spec.path), entry);
            }
        }
        for (method, path) in overrides.keys() {
            if !map.contains_key(&(method.as_str(), path.as_str())) {
                anyhow::bail!("PLINTH_TOKEN_COSTS names an unknown route: {method} {path}");
            }
        }
        Ok(Self { map, listed })
    }

    /// Every route in the table's order (the spec's, then the additions).
    pub fn listed(&self) -> impl Iterator<Item = &'static RouteMeta> + '_ {
        self.listed.iter().copied()
    }

    pub fn get(&self, method: &str, path: &str) -> Option<RouteEntry> {
        self.map.get(&(method, path)).copied()
    }

    pub fn cost_of(&self, spec: &RouteMeta) -> u64 {
        self.get(spec.method, spec.path)
            .map_or(spec.cost, |e| e.cost)
    }
}

/// The domain handles, built once at start from the configuration and the shared
/// resources; each is a cheap clone of what its rules read.
pub struct Handles {
    pub ledger: crate::domain::ledger::Ledger,
    pub identity: crate::domain::idp::Identity,
    pub orgs: crate::domain::orgs::Orgs,
    pub readers: crate::domain::posts::Readers,
    /// Checkouts and orders; holds the order writer (group commit on SQLite).
    pub checkout: crate::domain::checkout::Checkout,
    pub accounts: crate::domain::accounts::Accounts,
    /// Account mails and receipts.
    pub mailer: crate::adapters::mail::Mailer,
}

/// What the handles are made of, besides the configuration.
pub struct Resources<'a> {
    pub db: &'a Db,
    pub auth_key: Option<crate::crypto::GrantKey>,
    pub credits: &'a CreditAccounts,
    pub payments: &'a Arc<dyn crate::adapters::payments::PaymentProvider>,
    pub orders: crate::db::orders::Placer,
    pub payment_url: &'a str,
    pub public_url: &'a str,
    pub key: &'a MasterKey,
    pub caches: &'a Arc<crate::db::cache::Caches>,
    pub queue: &'a plinth_workers::Queue,
    pub rate: &'a RateLimiter,
}

impl Handles {
    pub fn new(opts: &Opts, r: Resources<'_>) -> Self {
        use crate::adapters::mail;
        use crate::domain::{accounts, checkout, idp, ledger, orgs, posts};
        let db = r.db;
        let mailer = mail::Mailer::new(
            db.clone(),
            r.key.clone(),
            r.queue.clone(),
            r.rate.clone(),
            mail::MailerConfig {
                public_url: r.public_url.to_owned(),
                app_url: opts.server.app_url.clone(),
                from: opts.mail.mail_from.clone(),
                org_mails_per_hour: opts.mail.org_template_mails_per_hour,
            },
        );
        let orgs = orgs::Orgs::new(db.clone());
        let ledger = ledger::Ledger::new(r.credits.clone(), r.payment_url.to_owned());
        let identity = idp::IdentityConfig {
            jwks_source: opts.accounts.google_jwks.clone(),
            audiences: opts.accounts.google_client_ids.clone(),
            issuers: opts.accounts.google_issuers.clone(),
            auth_key: r.auth_key,
        };
        Self {
            identity: idp::Identity::new(db.clone(), identity),
            readers: posts::Readers::new(
                db.clone(),
                orgs.clone(),
                crate::config::Accounts::normalized_domains(&opts.accounts.admin_domains),
            ),
            checkout: checkout::Checkout {
                db: db.clone(),
                ledger: ledger.clone(),
                orgs: orgs.clone(),
                payments: r.payments.clone(),
                orders: Arc::new(r.orders),
                reservation_secs: opts.payments.reservation_secs,
                public_url: r.public_url.to_owned(),
            },
            accounts: accounts::Accounts::new(
                db.clone(),
                r.key.clone(),
                r.caches.clone(),
                mailer.clone(),
                crate::config::Accounts::normalized_domains(&opts.accounts.exempt_domains),
            ),
            mailer,
            ledger,
            orgs,
        }
    }
}
