//! The pages plinth's own emails link to (issue 34, "first run"): `/verify?code=`,
//! `/reset-password?code=` and `/sign-in?code=` (`mail::code_link`). One small static
//! page (`assets/account.html`) that spends the code with `POST /api/users/verify` when
//! the person confirms (never on load: a mail scanner that opens the link spends
//! nothing), optionally with a password (required for a reset), and shows what happened
//! and the account's key. With `PLINTH_APP_URL` the emails link to the application
//! instead; these pages stay for anyone who opens the server's own links.

use axum::http::header;
use axum::response::IntoResponse;

const PAGE: &str = include_str!("../../assets/account.html");

/// Scripts and styles inline only, requests to this origin only, no form posts, never
/// framed.
pub const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
     connect-src 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'none'";

fn page(kind: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // The URL holds a one-time code: not kept, not passed on.
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        axum::response::Html(PAGE.replace("{{kind}}", kind)),
    )
}

/// `GET /verify?code=`: confirm an email (and optionally choose a password).
pub async fn verify() -> impl IntoResponse {
    page("verify")
}

/// `GET /reset-password?code=`: choose a new password.
pub async fn reset_password() -> impl IntoResponse {
    page("reset")
}

/// `GET /sign-in?code=`: a one-time sign-in link.
pub async fn sign_in() -> impl IntoResponse {
    page("signin")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_is_self_contained() {
        let page = super::PAGE;
        for needle in ["http://", "https://", "src=", "innerHTML", "localStorage"] {
            assert!(!page.contains(needle), "account.html contains {needle:?}");
        }
        assert!(page.contains("/api/users/verify") && page.contains("{{kind}}"));
    }
}
