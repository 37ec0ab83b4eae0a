//! Self-contained HTML pages served outside the JSON API (the operator console, the
//! analytics dashboard). Each is sent with one set of headers and a Content-Security-
//! Policy whose `script-src` names every inline script by its sha256, so no other script
//! can run on this origin, where the pages keep an API key in session storage, even if
//! text were ever injected into them (security round 2, L8: `'unsafe-inline'` before).

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use sha2::{Digest, Sha256};

/// Text for a page's markup: `&`, `<`, `>`, `"` and `'` as entities.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A page and its policy, built once.
pub struct Page {
    html: &'static str,
    csp: HeaderValue,
}

impl Page {
    pub fn new(html: &'static str) -> Page {
        Page {
            html,
            csp: policy_for(html),
        }
    }

    /// Not framed, not cached, no referrer, not sniffed.
    pub fn response(&self) -> Response {
        send(
            axum::http::StatusCode::OK,
            self.html.to_owned(),
            self.csp.clone(),
        )
    }
}

/// The policy of a page whose only scripts are the inline ones of `html` (named by
/// their sha256). Built from a page's fixed template, never from text it shows.
pub fn policy_for(html: &str) -> HeaderValue {
    let scripts: Vec<String> = inline_scripts(html)
        .map(|s| {
            let digest = Sha256::digest(s.as_bytes());
            format!(
                "'sha256-{}'",
                base64::engine::general_purpose::STANDARD.encode(digest)
            )
        })
        .collect();
    let csp = format!(
        "default-src 'none'; script-src {}; style-src 'unsafe-inline'; \
         connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
         base-uri 'none'; form-action 'self'",
        if scripts.is_empty() {
            "'none'".to_owned()
        } else {
            scripts.join(" ")
        }
    );
    HeaderValue::from_str(&csp).expect("a policy of ASCII text")
}

/// A page with `status` and the headers every page has: its policy, not framed, not
/// cached, no referrer, not sniffed.
pub fn send(
    status: axum::http::StatusCode,
    html: impl Into<axum::body::Body>,
    csp: HeaderValue,
) -> Response {
    let mut res = (
        status,
        axum::response::Html::<axum::body::Body>(html.into()),
    )
        .into_response();
    // An error page stays a page (not the API's JSON error object).
    res.extensions_mut().insert(crate::http::reply::AsSent);
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONTENT_SECURITY_POLICY, csp);
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// The text of each `<script>` element without a `src` (what a browser hashes).
fn inline_scripts(html: &str) -> impl Iterator<Item = &str> {
    html.match_indices("<script").filter_map(move |(at, _)| {
        let open_end = at + html[at..].find('>')? + 1;
        if html[at..open_end].contains("src=") {
            return None;
        }
        let close = open_end + html[open_end..].find("</script>")?;
        Some(&html[open_end..close])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Page {
        fn csp(&self) -> &str {
            self.csp.to_str().unwrap_or_default()
        }
    }

    #[test]
    fn each_inline_script_is_named_by_its_hash() {
        let page = Page::new("<p>x</p><script>let a = 1;</script><script src=\"/x.js\"></script>");
        // echo -n 'let a = 1;' | openssl dgst -sha256 -binary | base64
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(b"let a = 1;"));
        assert!(
            page.csp().contains(&format!("script-src 'sha256-{hash}';")),
            "{}",
            page.csp()
        );
        assert!(!page.csp().contains("script-src 'unsafe-inline'"));
        assert!(Page::new("<p>no script</p>")
            .csp()
            .contains("script-src 'none'"));
    }
}
