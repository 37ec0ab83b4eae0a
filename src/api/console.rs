//! The operator console (`GET /console`, docs/operations.md "The console"): one static
//! page for platform administrators (level 100). It signs in with an API key kept in the
//! tab's session storage and draws from the Admin100 job and error endpoints
//! (`/api/admin/jobs/stats`, `/api/admin/jobs`, `/api/admin/jobs/retry`,
//! `/api/admin/errors`); the page itself is public and holds no data.

/// The page (`assets/console.html`): inline CSS and script, no external request.
const PAGE: &str = include_str!("../../assets/console.html");

/// The page's Content-Security-Policy: scripts and styles only inline, requests only to
/// this origin (the key must never leave for another one), never framed.
pub const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
     connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// `GET /console`: outside the JSON API. Not framed, not cached, no referrer.
pub async fn page() -> impl axum::response::IntoResponse {
    use axum::http::header;
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        axum::response::Html(PAGE),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_makes_no_request_to_another_origin() {
        let page = super::PAGE;
        for needle in [
            "http://",
            "https://",
            "//cdn",
            "<link rel=\"stylesheet\"",
            "src=",
        ] {
            assert!(!page.contains(needle), "console.html contains {needle:?}");
        }
        assert!(
            !page.contains("innerHTML"),
            "strings from the API are text only"
        );
        assert!(page.contains("sessionStorage") && !page.contains("localStorage"));
    }
}
