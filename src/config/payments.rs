//! `Payments`: the Stripe and App Store providers (simulated when unset), prices, and the
//! periods of credit distribution and checkout holds.

use std::path::PathBuf;

use clap::Args;

/// Payment providers, prices and their periods.
#[derive(Args, Debug, Clone)]
pub struct Payments {
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
    /// Labelled prices for `POST /api/data/prices/by-label`: a JSON file shaped like
    /// `fixtures/prices.json` (which is used when unset).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_PRICES_FILE",
        global = true
    )]
    pub prices_file: Option<PathBuf>,
    /// Where clients buy tokens; returned as `payment_url` with 402 answers
    /// [default: <public-url>/api/users/subscriptions]
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_PAYMENT_URL",
        global = true
    )]
    pub payment_url: Option<String>,
    /// Seconds between runs of the monthly credit distribution (with the workers).
    #[arg(
        help_heading = "Payments",
        long,
        env = "PLINTH_MONTHLY_INTERVAL_SECS",
        default_value_t = 3600,
        global = true
    )]
    pub monthly_interval_secs: u64,
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
}
