//! Emails the API sends. Handlers build the message and push it onto the email queue;
//! delivery (outbox file or SMTP) happens in the workers, never inline.
//!
//! An organization named by `source` may carry templates in its `data` (`email`,
//! `email_reset_password`, `email_send_password`, each `{from, subject, text}`); the link
//! or password is appended to the template text.

use plinth_workers::Email;
use serde_json::Value;

use crate::db::users::UserRow;
use crate::state::AppState;

/// The three kinds of account email and their organization template keys.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Verification (new account, verify-resend, expired code) and one-time sign-in links.
    Verify,
    Reset,
    SendPassword,
}

impl Kind {
    fn template_key(self) -> &'static str {
        match self {
            Kind::Verify => "email",
            Kind::Reset => "email_reset_password",
            Kind::SendPassword => "email_send_password",
        }
    }
}

struct Template {
    from: Option<String>,
    subject: Option<String>,
    text: Option<String>,
}

/// The organization template for `user`, if `source` names an organization the user
/// joined by their own act: a verified account that signed up through it, or a member who
/// created it or joined it themselves. Never for an unverified account, whose sign-up may
/// have been somebody else's (security round 2, H3), nor for a member an admin added or
/// an account a waitlist accept created (M1): otherwise anyone could dress the platform's
/// genuine links in their own words by naming their organization.
async fn template(
    app: &AppState,
    source: Option<&str>,
    kind: Kind,
    user: &UserRow,
) -> Option<Template> {
    let source = source?;
    if !user.verified {
        return None;
    }
    let org = match crate::db::organizations::by_domain(&app.db, source).await {
        Ok(o) => o?,
        Err(e) => {
            tracing::warn!(error = %e, "reading email templates; using the default");
            return None;
        }
    };
    let signed_up_here = user.source_by_self && user.source.as_deref() == Some(org.domain.as_str());
    if !signed_up_here {
        match crate::db::organizations::self_joined(&app.db, &org.id, &user.id).await {
            Ok(Some(true)) => {}
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "reading membership; using the default template");
                return None;
            }
        }
    }
    let t = org.data.0.get(kind.template_key())?;
    let field = |k: &str| {
        t.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(Template {
        from: field("from").filter(|f| sender_allowed(f, &org.domain)),
        subject: field("subject"),
        text: field("text"),
    })
}

/// A template's sender must parse (else every delivery fails) and be an address of the
/// organization's own domain or a subdomain: never the platform's or a third party's.
fn sender_allowed(from: &str, org_domain: &str) -> bool {
    let Some(domain) = plinth_workers::mailbox_domain(from) else {
        return false;
    };
    domain == org_domain || domain.ends_with(&format!(".{org_domain}"))
}

/// Builds the email (organization template or default) for `payload`, the link or
/// password that is appended to the text.
pub async fn compose(
    app: &AppState,
    source: Option<&str>,
    kind: Kind,
    user: &UserRow,
    payload: &str,
) -> Email {
    let t = template(app, source, kind, user).await;
    let to = user.email.as_str();
    let (subject, intro) = match kind {
        Kind::Verify => (
            "Verify your email",
            "Confirm your email address by opening this link (valid for 24 hours):",
        ),
        Kind::Reset => (
            "Reset your password",
            "Open this link to choose a new password (valid for 1 hour):",
        ),
        Kind::SendPassword => (
            "Your password",
            "Your account was created. Sign in with this password:",
        ),
    };
    let t = t.unwrap_or(Template {
        from: None,
        subject: None,
        text: None,
    });
    Email {
        to: to.to_owned(),
        from: t.from.unwrap_or_else(|| app.opts.mail_from.clone()),
        subject: t.subject.unwrap_or_else(|| subject.to_owned()),
        text: format!("{}\n\n{payload}\n", t.text.as_deref().unwrap_or(intro)),
    }
}

/// Link for a one-time code: `<base>/<page>?code=<code>`, the base being
/// `PLINTH_APP_URL` (the application's own pages) or else the public URL (plinth's pages,
/// `api/pages.rs`).
pub fn code_link(app: &AppState, page: &str, code: &str) -> String {
    let base = app
        .opts
        .app_url
        .as_deref()
        .map(|u| u.trim().trim_end_matches('/'))
        .filter(|u| !u.is_empty())
        .unwrap_or(&app.public_url);
    format!("{base}/{page}?code={code}")
}

/// Queues an email; `true` when it was accepted for delivery (the `emailed` field).
pub async fn send(app: &AppState, email: Email) -> bool {
    match app.queue.push_email(email).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, "could not queue email");
            false
        }
    }
}
