//! `Server`: where the API listens, the URLs it answers for, and how long it waits.

use clap::Args;

use super::parse_net;

/// The listener, its public and application URLs, CORS, proxies and time limits.
#[derive(Args, Debug, Clone)]
pub struct Server {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_LISTEN",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub listen: String,
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
    /// Production mode: refuse to start with a simulated payment provider or App Store, a
    /// generated master key file, or local object storage on PostgreSQL.
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_PRODUCTION",
        global = true
    )]
    pub production: bool,
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
}

impl Server {
    /// The base of generated links: `--public-url`, else the bound address.
    pub fn public_url(&self, bound: &str) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"))
            .trim_end_matches('/')
            .to_owned()
    }

    /// What `serve` refuses before it opens anything: an application URL that is not the
    /// base of pages (the rules of other layers, CORS origins and the license prefix, are
    /// checked by `server::build`).
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(url) = self.app_url.as_deref().filter(|u| !u.trim().is_empty()) {
            let u = url.trim();
            if !(u.starts_with("https://") || u.starts_with("http://")) || u.contains('?') {
                anyhow::bail!(
                    "PLINTH_APP_URL must be an http(s) URL without a query, the base of your \
                     application's /verify, /reset-password and /sign-in pages, not `{url}`"
                );
            }
        }
        Ok(())
    }
}
