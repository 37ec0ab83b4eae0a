//! Email delivery: `.eml` files in an outbox folder, or an SMTP relay.

use std::path::PathBuf;

use std::time::Duration;

use apalis::prelude::BoxDynError;
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::Body;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};

use crate::job::{Job, Retry};
use crate::retry::JobError;

/// One email.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Email {
    pub to: String,
    pub from: String,
    pub subject: String,
    pub text: String,
}

/// The email queue's job. `id` names the outbox file and the Message-ID, so a delivery
/// that runs twice (retry after a crash) overwrites instead of duplicating in the
/// outbox, and SMTP receivers can de-duplicate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EmailJob {
    pub id: String,
    pub email: Email,
}

impl EmailJob {
    /// A new delivery of `email`, with a fresh id.
    pub fn new(email: Email) -> EmailJob {
        EmailJob {
            id: uuid::Uuid::new_v4().to_string(),
            email,
        }
    }
}

impl Job for EmailJob {
    const NAME: &'static str = "email";
    const TABLE: &'static str = "email";
    const TIMEOUT: Duration = Duration::from_secs(60);
    const CLIENT_ID: Option<&'static str> = Some("/id");
    type Port = Mailer;

    /// The email back-off (`PLINTH_EMAIL_BACKOFF`): an attempt after each wait.
    fn retry() -> Retry {
        let backoff = crate::email_backoff();
        Retry {
            max_attempts: backoff.max_attempts(),
            backoff,
        }
    }

    async fn run(self, mailer: &Mailer, _attempt: usize) -> Result<(), JobError> {
        Ok(mailer.deliver(&self.id, &self.email).await?)
    }
}

#[derive(Clone)]
pub enum MailBackend {
    /// Writes RFC 5322 files to this folder (the zero set-up default).
    Outbox(PathBuf),
    Smtp {
        transport: AsyncSmtpTransport<Tokio1Executor>,
        host: String,
    },
}

/// Opens the text of a queued email sealed by the API process (`sealed:` and the
/// ciphertext): the one-time links in it are secrets at rest, kept out of the queue
/// tables and the backups in the clear (security review N-M2).
pub type Opener = std::sync::Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The prefix of a sealed email text.
pub const SEALED: &str = "sealed:";

/// The email worker's port: where mail goes, and how its sealed text is opened.
#[derive(Clone)]
pub struct Mailer {
    pub backend: MailBackend,
    pub open: Opener,
}

impl Mailer {
    pub async fn deliver(&self, id: &str, email: &Email) -> Result<(), BoxDynError> {
        let Some(sealed) = email.text.strip_prefix(SEALED) else {
            // Queued by an older release: delivered as it is.
            return self.backend.deliver(id, email).await;
        };
        let text = (self.open)(sealed).ok_or_else(|| {
            JobError::permanent(
                "sealed_email",
                "the email was sealed under another master key and cannot be opened",
            )
        })?;
        let email = Email {
            text,
            ..email.clone()
        };
        self.backend.deliver(id, &email).await
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MailStatus {
    pub backend: &'static str,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbox: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl MailBackend {
    /// `smtp_url` as lettre understands it: `smtp://host:port` (plain, for local relays
    /// and sinks), `smtp://host:port?tls=required`, `smtps://user:pass@host`.
    pub fn new(smtp_url: Option<&str>, outbox: PathBuf) -> Result<Self, BoxDynError> {
        match smtp_url {
            Some(url) => {
                let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)?.build();
                let host = url
                    .split('@')
                    .next_back()
                    .unwrap_or(url)
                    .trim_start_matches("smtp://")
                    .trim_start_matches("smtps://")
                    .to_owned();
                Ok(MailBackend::Smtp { transport, host })
            }
            None => {
                std::fs::create_dir_all(&outbox)?;
                Ok(MailBackend::Outbox(outbox))
            }
        }
    }

    pub fn describe(&self) -> MailStatus {
        match self {
            MailBackend::Outbox(dir) => MailStatus {
                backend: "outbox",
                ok: dir.is_dir(),
                outbox: Some(dir.clone()),
                host: None,
            },
            MailBackend::Smtp { host, .. } => MailStatus {
                backend: "smtp",
                ok: true,
                outbox: None,
                host: Some(host.clone()),
            },
        }
    }

    /// Delivers one email. A failure is a [`JobError`]: a relay that cannot be reached
    /// or answers "try later" (4xx) is retried after the email back-off; a relay that
    /// refuses the message for good (5xx), or an address that does not parse, is not.
    pub async fn deliver(&self, id: &str, email: &Email) -> Result<(), BoxDynError> {
        let domain = email
            .from
            .rsplit('@')
            .next()
            .unwrap_or("plinth.localhost")
            .trim_end_matches('>');
        let invalid = |e: &dyn std::fmt::Display| JobError::permanent("invalid_email", e);
        let message = Message::builder()
            .message_id(Some(format!("<{id}@{domain}>")))
            .from(email.from.parse().map_err(|e| invalid(&e))?)
            .to(email.to.parse().map_err(|e| invalid(&e))?)
            .subject(email.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(body(&email.text))
            .map_err(|e| invalid(&e))?;
        match self {
            MailBackend::Outbox(dir) => {
                // Write then rename: a reader never sees half a message, and a second run
                // of the same job replaces the file rather than adding another.
                let tmp = dir.join(format!(".{id}.tmp"));
                let outbox = |e: std::io::Error| {
                    JobError::retry("outbox", format!("writing the outbox: {e}"))
                };
                tokio::fs::write(&tmp, message.formatted())
                    .await
                    .map_err(outbox)?;
                tokio::fs::rename(&tmp, dir.join(format!("{id}.eml")))
                    .await
                    .map_err(outbox)?;
            }
            MailBackend::Smtp { transport, host } => {
                transport
                    .send(message)
                    .await
                    .map_err(|e| smtp_error(host, &e))?;
            }
        }
        tracing::debug!(id, to = %email.to, "email delivered");
        Ok(())
    }
}

/// What an SMTP failure means for the job, naming the relay.
fn smtp_error(host: &str, e: &lettre::transport::smtp::Error) -> JobError {
    let text = match std::error::Error::source(e) {
        Some(source) => format!("SMTP relay {host}: {e}: {source}"),
        None => format!("SMTP relay {host}: {e}"),
    };
    if e.is_permanent() {
        JobError::permanent("smtp_rejected", text)
    } else {
        JobError::retry("smtp", text)
    }
}

/// Plain ASCII with lines of at most 998 bytes (RFC 5322) goes as 7bit, so links stay
/// intact for any reader: lettre would pick quoted-printable for lines over 76
/// characters, turning `?code=` into `?code=3D`. Anything else is left to lettre.
fn body(text: &str) -> Body {
    let ascii = text.is_ascii() && !text.contains('\0');
    if ascii && text.lines().all(|l| l.len() <= 998) {
        let crlf = text.replace("\r\n", "\n").replace('\n', "\r\n");
        return Body::dangerous_pre_encoded(crlf.into_bytes(), ContentTransferEncoding::SevenBit);
    }
    Body::new(text.to_owned())
}

/// Whether `s` parses as a sender/recipient (`Name <addr@host>` or `addr@host`).
pub fn valid_mailbox(s: &str) -> bool {
    s.parse::<lettre::message::Mailbox>().is_ok()
}

/// The lower-case domain of a mailbox (`Name <user@domain>`), if it parses.
pub fn mailbox_domain(s: &str) -> Option<String> {
    let mailbox = s.parse::<lettre::message::Mailbox>().ok()?;
    Some(mailbox.email.domain().to_ascii_lowercase())
}
