//! The operator console (`GET /console`, docs/operations.md "The console"): one static
//! page for platform administrators (level 100). It signs in with an API key kept in the
//! tab's session storage and draws from the Admin100 job, worker and error endpoints
//! (`/api/admin/jobs/stats`, `/api/admin/jobs`, `/api/admin/jobs/{id}`,
//! `/api/admin/jobs/retry`, `/api/admin/jobs/bulk`, `/api/admin/queues/pause|resume`,
//! `/api/admin/workers`, `/api/admin/errors`); the page itself is public and holds no
//! data.

/// The page (`assets/console.html`): inline CSS and script, no external request; its
/// policy allows that script alone (by hash), requests only to this origin (the key must
/// never leave for another one), and no framing.
static PAGE: std::sync::LazyLock<crate::http::pages::Page> =
    std::sync::LazyLock::new(|| crate::http::pages::Page::new(HTML));
const HTML: &str = include_str!("../../assets/console.html");

/// `GET /console`: outside the JSON API. Not framed, not cached, no referrer.
pub async fn page() -> axum::response::Response {
    PAGE.response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_makes_no_request_to_another_origin() {
        let page = super::HTML;
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
