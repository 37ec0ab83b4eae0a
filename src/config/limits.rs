//! `Limits`: what one client may hold of this process, and `Rates`: the rate windows and
//! token costs of the API.

use std::collections::HashMap;

use clap::Args;

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

/// Rate limits and costs.
#[derive(Args, Debug, Clone)]
pub struct Rates {
    /// Comma-separated registered telemetry product ids.
    #[arg(
        help_heading = "Rate limits and costs",
        long,
        env = "PLINTH_TELEMETRY_PRODUCTS",
        value_delimiter = ',',
        global = true
    )]
    pub telemetry_products: Vec<String>,
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
}

/// Largest accepted token cost of one call.
pub const MAX_TOKEN_COST: u64 = 1_000_000_000;

/// `PLINTH_RATE_STORE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RateStoreKind {
    Local,
    Postgres,
}

impl Rates {
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

    /// What `serve` refuses: token costs it cannot read.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.token_costs().map(drop)
    }
}
