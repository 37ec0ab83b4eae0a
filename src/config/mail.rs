//! `Mail`: how emails leave (SMTP or the outbox folder), their sender and retries.

use clap::Args;

/// The relay, the default sender, the per-organization template budget and the
/// back-off of failed deliveries.
#[derive(Args, Debug, Clone)]
pub struct Mail {
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
}
