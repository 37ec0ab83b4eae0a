//! `Accounts`: sign-in through identity providers, exempt and admin domains, and the
//! brand prefix of license keys.

use clap::Args;

/// Accounts and sign-in.
#[derive(Args, Debug, Clone)]
pub struct Accounts {
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
}

impl Accounts {
    /// A comma-separated domain list as compared: trimmed, lower case, no empty items.
    pub fn normalized_domains(list: &[String]) -> Vec<String> {
        list.iter()
            .map(|d| d.trim().to_lowercase())
            .filter(|d| !d.is_empty())
            .collect()
    }
}
