//! `Observability`: metrics and the log format.

use clap::Args;

/// Metrics (on the API listener with a token, or on a private listener) and logs.
#[derive(Args, Debug, Clone)]
pub struct Observability {
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
    /// Log format: text or json (RUST_LOG filters).
    #[arg(
        help_heading = "Server",
        long,
        env = "PLINTH_LOG_FORMAT",
        default_value = "text",
        value_parser = LogFormat::parse,
        global = true
    )]
    pub log_format: LogFormat,
}

/// `PLINTH_LOG_FORMAT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// `json`, or text for anything else (as plinth has always read it; no possible values
    /// are listed, so `--help` stays as it was).
    fn parse(s: &str) -> Result<LogFormat, String> {
        Ok(if s == "json" {
            LogFormat::Json
        } else {
            LogFormat::Text
        })
    }
}
