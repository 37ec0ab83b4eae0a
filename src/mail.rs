//! Emails the API sends. Handlers build the message and push it onto the email queue;
//! delivery (outbox file or SMTP) happens in the workers, never inline.

use plinth_workers::Email;

use crate::state::AppState;

/// The verification email for a new account, verify-resend and expired codes.
pub fn verification(app: &AppState, to: &str, code: &str) -> Email {
    let link = format!("{}/verify?code={code}", app.public_url);
    Email {
        to: to.to_owned(),
        from: app.opts.mail_from.clone(),
        subject: "Verify your email".to_owned(),
        text: format!(
            "Welcome. Confirm your email address by opening this link:\n\n{link}\n\n\
             The link is valid for 24 hours.\n"
        ),
    }
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
