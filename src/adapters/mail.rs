//! Emails the API sends. Handlers build the message and push it onto the email queue;
//! delivery (outbox file or SMTP) happens in the workers, never inline.
//!
//! An organization named by `source` may carry templates in its `data` (`email`,
//! `email_reset_password`, `email_send_password`, each `{from, subject, text}`); the link
//! or password is appended to the template text, and the platform's own footer (which
//! platform, which organization, "ignore this if it was not you") after it, always.

use plinth_actors::rate::RateLimiter;
use plinth_workers::{Email, Queue};
use serde_json::Value;

use crate::crypto::MasterKey;
use crate::db::users::UserRow;
use crate::db::Db;

/// The kinds of account email and their organization template keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Confirmation of the sign-up that opened the account (also resent, and after an
    /// expired code).
    Verify,
    /// Confirmation of a later sign-up attempt on an account nobody confirmed yet.
    AnotherSignUp,
    /// A one-time sign-in link (`authenticate-interstitial`).
    SignIn,
    Reset,
    SendPassword,
}

impl Kind {
    fn template_key(self) -> &'static str {
        match self {
            Kind::Verify | Kind::AnotherSignUp | Kind::SignIn => "email",
            Kind::Reset => "email_reset_password",
            Kind::SendPassword => "email_send_password",
        }
    }

    /// Default subject and text before the link or password.
    fn default_words(self) -> (&'static str, &'static str) {
        match self {
            Kind::Verify => (
                "Confirm your email",
                "Confirm your email address by opening this link (valid for 24 hours):",
            ),
            Kind::AnotherSignUp => (
                "Confirm your email",
                "Someone signed up with this address, which already has an account that \
                 nobody has confirmed yet. If it was you, open this link to confirm the \
                 address with the password chosen at that sign-up (valid for 24 hours):",
            ),
            Kind::SignIn => (
                "Your sign-in link",
                "Open this link to sign in (valid for 15 minutes):",
            ),
            Kind::Reset => (
                "Reset your password",
                "Open this link to choose a new password (valid for 1 hour):",
            ),
            Kind::SendPassword => (
                "Your password",
                "Your account was created. Sign in with this password:",
            ),
        }
    }

    /// The line of the footer that no template removes.
    fn ignore_line(self) -> &'static str {
        match self {
            Kind::Verify | Kind::AnotherSignUp => {
                "If you did not sign up, ignore this email: nothing is confirmed unless the \
                 link is opened and confirmed, and the page shows when and from where the \
                 sign-up was made."
            }
            Kind::SignIn => {
                "If you did not ask to sign in, ignore this email: nothing happens unless the \
                 link is opened."
            }
            Kind::Reset => {
                "If you did not ask for a password reset, ignore this email: your password \
                 stays as it is."
            }
            Kind::SendPassword => {
                "If you did not sign in with an identity provider, ignore this email."
            }
        }
    }
}

/// Which organization may dress a mail, and on what ground (spec part 1, Notes 7).
#[derive(Clone, Copy, Debug)]
pub enum Dress<'a> {
    /// No organization named.
    Plain,
    /// The confirmation mail of a sign-up attempt made with this `source` (or a resend
    /// its key holder asked for with it): the organization is that sign-up's choice.
    SignUp(&'a str),
    /// Any other mail naming `source` (reset, sign-in link, generated password), which
    /// anyone may ask for: dressed only when the organization is the account's own
    /// (review N-M1).
    Account(&'a str),
}

impl<'a> Dress<'a> {
    pub fn sign_up(source: Option<&'a str>) -> Self {
        source.map_or(Dress::Plain, Dress::SignUp)
    }
    pub fn account(source: Option<&'a str>) -> Self {
        source.map_or(Dress::Plain, Dress::Account)
    }
    pub fn source(self) -> Option<&'a str> {
        match self {
            Dress::Plain => None,
            Dress::SignUp(s) | Dress::Account(s) => Some(s),
        }
    }
}

/// The rate category of template mail per organization (outside the route categories).
const ORG_MAIL_CATEGORY: u8 = 200;
const HOUR_MS: u64 = 3_600_000;

struct Template {
    org: String,
    from: Option<String>,
    subject: Option<String>,
    text: Option<String>,
}

/// The account mails' sender with what it reads: the organizations' templates and
/// memberships, the template budget, the links' base, the sender, and the queue the
/// sealed mail waits in.
#[derive(Clone)]
pub struct Mailer {
    db: Db,
    key: MasterKey,
    queue: Queue,
    rate: RateLimiter,
    public_url: String,
    /// `PLINTH_APP_URL`, when the application hosts the pages that take codes.
    app_url: Option<String>,
    from: String,
    org_mails_per_hour: u64,
}

/// What [`Mailer`] is configured with.
pub struct MailerConfig {
    pub public_url: String,
    pub app_url: Option<String>,
    pub from: String,
    pub org_mails_per_hour: u64,
}

impl Mailer {
    pub fn new(db: Db, key: MasterKey, queue: Queue, rate: RateLimiter, c: MailerConfig) -> Self {
        Self {
            db,
            key,
            queue,
            rate,
            public_url: c.public_url,
            app_url: c.app_url,
            from: c.from,
            org_mails_per_hour: c.org_mails_per_hour,
        }
    }

    /// Whether the organization is the account's own choice: its confirmed sign-up's
    /// `source`, or a membership it took by its own act (not an admin's add).
    async fn own_organization(
        &self,
        user: &UserRow,
        org: &crate::db::organizations::OrgRow,
    ) -> bool {
        if user.source_by_self && user.source.as_deref() == Some(org.domain.as_str()) {
            return true;
        }
        match crate::db::organizations::self_joined(&self.db, &org.id, &user.id).await {
            Ok(joined) => joined == Some(true),
            Err(e) => {
                tracing::warn!(error = %e, "reading membership; using the default template");
                false
            }
        }
    }

    /// The organization template that may dress this mail ([`Dress`]), within the
    /// organization's hourly budget of dressed mail.
    async fn template(&self, dress: Dress<'_>, kind: Kind, user: &UserRow) -> Option<Template> {
        let source = dress.source()?;
        let org = match crate::db::organizations::by_domain(&self.db, source).await {
            Ok(o) => o?,
            Err(e) => {
                tracing::warn!(error = %e, "reading email templates; using the default");
                return None;
            }
        };
        if matches!(dress, Dress::Account(_)) && !self.own_organization(user, &org).await {
            return None;
        }
        let t = org.data.0.get(kind.template_key())?;
        let field = |k: &str| {
            t.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let limit = self.org_mails_per_hour;
        let budget = self
            .rate
            .check(
                &format!("org-mail:{}", org.id),
                ORG_MAIL_CATEGORY,
                limit,
                HOUR_MS,
            )
            .await;
        if !budget.allowed {
            tracing::warn!(organization = %org.domain, limit, "template mail budget spent; sending the platform's own words");
            return None;
        }
        Some(Template {
            from: field("from").filter(|f| sender_allowed(f, &org.domain)),
            subject: field("subject"),
            text: field("text"),
            org: org.domain,
        })
    }

    /// Builds the email (organization template or default) for `payload`, the link or
    /// password that is appended to the text, followed by the platform's footer.
    pub async fn compose(
        &self,
        dress: Dress<'_>,
        kind: Kind,
        user: &UserRow,
        payload: &str,
    ) -> Email {
        let t = self.template(dress, kind, user).await;
        let (default_subject, intro) = kind.default_words();
        let on_behalf = t
            .as_ref()
            .map(|t| format!(" on behalf of the organization {}", t.org))
            .unwrap_or_default();
        let footer = format!(
            "-- \nSent by plinth at {}{on_behalf}.\n{}",
            self.public_url,
            kind.ignore_line()
        );
        let (from, subject, text) = match t {
            Some(t) => (t.from, t.subject, t.text),
            None => (None, None, None),
        };
        Email {
            to: user.email.clone(),
            from: from.unwrap_or_else(|| self.from.clone()),
            subject: subject.unwrap_or_else(|| default_subject.to_owned()),
            text: format!(
                "{}\n\n{payload}\n\n{footer}\n",
                text.as_deref().unwrap_or(intro)
            ),
        }
    }

    /// Link for a one-time code: `<base>/<page>?code=<code>`, the base being
    /// `PLINTH_APP_URL` (the application's own pages) or else the public URL (plinth's pages,
    /// `api/pages.rs`).
    pub fn code_link(&self, page: &str, code: &str) -> String {
        let base = self
            .app_url
            .as_deref()
            .map(|u| u.trim().trim_end_matches('/'))
            .filter(|u| !u.is_empty())
            .unwrap_or(&self.public_url);
        format!("{base}/{page}?code={code}")
    }

    /// Queues an email; `true` when it was accepted for delivery (the `emailed` field).
    pub async fn send(&self, mut email: Email) -> bool {
        // The text holds one-time links: sealed under the master key while it waits in the
        // queue tables (and in every backup of them); the worker opens it to send it (N-M2).
        email.text = format!(
            "{}{}",
            plinth_workers::SEALED,
            self.key.encrypt(email.text.as_bytes())
        );
        match self
            .queue
            .enqueue(plinth_workers::EmailJob::new(email))
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "could not queue email");
                false
            }
        }
    }
}

/// A template's sender must parse (else every delivery fails) and be an address of the
/// organization's own domain or a subdomain: never the platform's or a third party's.
fn sender_allowed(from: &str, org_domain: &str) -> bool {
    let Some(domain) = plinth_workers::mailbox_domain(from) else {
        return false;
    };
    domain == org_domain || domain.ends_with(&format!(".{org_domain}"))
}
