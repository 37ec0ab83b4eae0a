//! The pages plinth's own emails link to (issue 34, "first run"): `/verify?code=`,
//! `/reset-password?code=` and `/sign-in?code=` (`mail::code_link`). One small static
//! page (`assets/account.html`) that spends the code with `POST /api/users/verify` when
//! the person confirms (never on load: a mail scanner that opens the link spends
//! nothing), optionally with a password (required for a reset), and shows what happened
//! and the account's key. With `PLINTH_APP_URL` the emails link to the application
//! instead; these pages stay for anyone who opens the server's own links.

use std::sync::LazyLock;

use axum::http::{header, HeaderValue};
use axum::response::IntoResponse;

const PAGE: &str = include_str!("../../assets/account.html");

/// One page per kind, with its policy: the inline script named by its sha256
/// (`pages::policy_for`, review N-L3: `'unsafe-inline'` before), requests to this origin
/// only, never framed.
struct KindPage {
    html: String,
    csp: HeaderValue,
}

impl KindPage {
    fn new(kind: &str) -> KindPage {
        let html = PAGE.replace("{{kind}}", kind);
        let csp = crate::http::pages::policy_for(&html);
        KindPage { html, csp }
    }
}

static VERIFY: LazyLock<KindPage> = LazyLock::new(|| KindPage::new("verify"));
static RESET: LazyLock<KindPage> = LazyLock::new(|| KindPage::new("reset"));
static SIGN_IN: LazyLock<KindPage> = LazyLock::new(|| KindPage::new("signin"));

fn page(p: &'static KindPage) -> impl IntoResponse {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            // The URL holds a one-time code: not kept, not passed on.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (header::CONTENT_SECURITY_POLICY, p.csp.clone()),
            (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        axum::response::Html(p.html.as_str()),
    )
}

/// `GET /verify?code=`: confirm an email (and optionally choose a password).
pub async fn verify() -> impl IntoResponse {
    page(&VERIFY)
}

/// `GET /reset-password?code=`: choose a new password.
pub async fn reset_password() -> impl IntoResponse {
    page(&RESET)
}

/// `GET /sign-in?code=`: a one-time sign-in link.
pub async fn sign_in() -> impl IntoResponse {
    page(&SIGN_IN)
}

/// `GET /`: an index for a person who opens the server's address (`assets/index.html`):
/// where the document, status, console and dashboard are, a first call with this
/// server's own URL in it, and where the documentation is. No script.
pub async fn index(
    axum::extract::State(app): axum::extract::State<crate::state::AppState>,
) -> axum::response::Response {
    static INDEX: std::sync::OnceLock<crate::http::pages::Page> = std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| {
            // The public URL is fixed for the life of the process: built once, kept.
            let html = INDEX_HTML.replace("HOST", &crate::http::pages::escape(&app.public_url));
            crate::http::pages::Page::new(Box::leak(html.into_boxed_str()))
        })
        .response()
}

const INDEX_HTML: &str = include_str!("../../assets/index.html");

#[cfg(test)]
mod tests {
    #[test]
    fn the_index_has_no_script_and_links_only_here() {
        let page = super::INDEX_HTML;
        assert!(!page.contains("<script") && !page.contains("src="));
        for link in page.split("href=\"").skip(1) {
            assert!(link.starts_with('/') || link.starts_with("data:"), "{link}");
        }
    }

    #[test]
    fn the_page_is_self_contained() {
        let page = super::PAGE;
        for needle in ["http://", "https://", "src=", "innerHTML", "localStorage"] {
            assert!(!page.contains(needle), "account.html contains {needle:?}");
        }
        assert!(page.contains("/api/users/verify") && page.contains("{{kind}}"));
    }

    #[test]
    fn each_kind_names_its_script_by_hash() {
        for kind in ["verify", "reset", "signin"] {
            let p = super::KindPage::new(kind);
            let csp = p.csp.to_str().unwrap_or_default();
            let script_src = csp
                .split(';')
                .map(str::trim)
                .find(|d| d.starts_with("script-src"))
                .unwrap_or_default();
            assert!(script_src.starts_with("script-src 'sha256-"), "{csp}");
            assert!(!script_src.contains("unsafe-inline"), "{csp}");
        }
    }
}
