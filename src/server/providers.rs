//! The outside services a process talks to, chosen and checked at start: object storage,
//! mail, payments and the App Store, identity providers, token-exchange grants.

use std::time::Duration;

use anyhow::Context;
use plinth_workers::MailBackend;
use tokio::sync::watch;

use crate::config::{Accounts, Mail, Payments, Storage};
use crate::crypto::{GrantKey, MasterKey};
use crate::db::Db;

/// What `--production` refuses, found from the configuration alone and reported together,
/// so an operator fixes them in one round instead of one restart each.
pub(super) fn refuse_unsafe_production(opts: &crate::config::Opts) -> anyhow::Result<()> {
    if !opts.server.production {
        return Ok(());
    }
    let mut problems = Vec::new();
    if opts.database.master_key.is_none() {
        problems.push(
            "no PLINTH_MASTER_KEY: a generated master key file is refused (make one with \
             `openssl rand -hex 32` and keep it in a secret store)"
                .to_owned(),
        );
    }
    let stripe = opts.payments.stripe_secret_key.as_deref();
    if stripe.is_none_or(|k| k.trim().is_empty())
        && !crate::adapters::appstore::configured(&opts.payments)
    {
        problems.push(
            "simulated payments and a simulated App Store: configure \
             PLINTH_STRIPE_SECRET_KEY and/or PLINTH_APPLE_*"
                .to_owned(),
        );
    }
    let url = opts.database.url();
    if opts.storage.s3_bucket.is_none() && url.starts_with("postgres") {
        problems.push(
            "local object storage with PostgreSQL: objects would live on one host only; \
             configure PLINTH_S3_*"
                .to_owned(),
        );
    }
    if problems.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
    anyhow::bail!(
        "--production refuses to start ({} problem{}):\n{}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        list.join("\n")
    )
}

/// Local object storage keeps objects on one host's disk: with `serve` or `worker`
/// processes on more than one host, what one host stored is missing on the others.
/// That is refused under `--production` and warned about loudly otherwise. On SQLite
/// every process shares the database file's host, so there is one host by construction.
/// `--production` also refuses local storage on PostgreSQL with one host (yet).
pub(super) async fn check_object_storage(
    storage: &Storage,
    production: bool,
    db: &Db,
) -> anyhow::Result<()> {
    if storage.s3_bucket.is_some() {
        return Ok(());
    }
    match crate::db::settings::plinth_hosts(db).await {
        Ok(hosts) if hosts.len() > 1 => {
            let problem = several_hosts(&hosts);
            if production {
                anyhow::bail!("--production refuses {problem}");
            }
            tracing::warn!("UNSAFE DEPLOYMENT: {problem}");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not list the plinth processes on the database"),
    }
    if production && matches!(db, Db::Postgres(_)) {
        anyhow::bail!(
            "--production refuses local object storage with PostgreSQL: objects would live on \
             one host only; configure PLINTH_S3_*"
        );
    }
    Ok(())
}

pub(super) fn several_hosts(hosts: &[String]) -> String {
    format!(
        "local object storage (no PLINTH_S3_*) with plinth processes on {} hosts ({}): \
         objects stored on one host are missing on the others; configure PLINTH_S3_*",
        hosts.len(),
        hosts.join(", ")
    )
}

/// Repeats the host count of `check_object_storage` every minute, for hosts that joined
/// after this process started, warning once each time the set of hosts changes.
pub(super) fn watch_hosts(storage: &Storage, db: &Db, mut stop: watch::Receiver<bool>) {
    if storage.s3_bucket.is_some() || !matches!(db, Db::Postgres(_)) {
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

/// SMTP, or the outbox folder of the data directory.
pub(super) fn mail_backend(mail: &Mail, data_dir: &std::path::Path) -> anyhow::Result<MailBackend> {
    MailBackend::new(mail.smtp_url.as_deref(), data_dir.join("outbox"))
        .map_err(|e| anyhow::anyhow!("mail configuration: {e}"))
}

/// The token-exchange key: unset disables the exchange; equal to the master key is
/// refused (finding C1: the master key also encrypts what `/api/aes` and stored secrets
/// touch, so it must never sign in anyone).
pub(super) fn grant_key(
    accounts: &Accounts,
    master: &MasterKey,
) -> anyhow::Result<Option<GrantKey>> {
    let Some(hex) = accounts
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
pub(super) fn providers(
    config: &Payments,
    production: bool,
) -> anyhow::Result<(
    std::sync::Arc<dyn crate::adapters::payments::PaymentProvider>,
    std::sync::Arc<dyn crate::adapters::appstore::StoreVerifier>,
)> {
    let stripe = config
        .stripe_secret_key
        .as_deref()
        .filter(|k| !k.trim().is_empty());
    let simulated_ok = stripe.is_none() && !crate::adapters::appstore::configured(config);
    if production && simulated_ok {
        anyhow::bail!(
            "--production refuses simulated payments and a simulated App Store: configure \
             PLINTH_STRIPE_SECRET_KEY and/or PLINTH_APPLE_*"
        );
    }
    let payments: std::sync::Arc<dyn crate::adapters::payments::PaymentProvider> = match stripe {
        Some(secret) => std::sync::Arc::new(crate::adapters::payments::Stripe::new(
            config
                .stripe_api_base
                .as_deref()
                .unwrap_or("https://api.stripe.com"),
            secret,
        )),
        None if simulated_ok => std::sync::Arc::new(crate::adapters::payments::Simulated),
        None => std::sync::Arc::new(crate::adapters::payments::Unconfigured),
    };
    let store = crate::adapters::appstore::from_config(config, simulated_ok)?;
    for (what, name) in [("payments", payments.name()), ("App Store", store.name())] {
        match name {
            "simulated" => tracing::warn!(
                "{what}: SIMULATED (no real provider configured; anyone can pay with test \
                 cards and test transactions; never expose this to real users)"
            ),
            "unconfigured" => tracing::warn!("{what}: not configured (its endpoints answer 404)"),
            real => tracing::info!("{what}: {real}"),
        }
    }
    Ok((payments, store))
}
