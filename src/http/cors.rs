//! Cross-origin requests from browser apps (`PLINTH_CORS_ORIGINS`, docs/operations.md
//! "Browser apps"): a hand-written layer, kept for its cost (tower-http's took ~2 % of a
//! small request's CPU), outermost so a preflight never reaches the usage layer.

use axum::http::HeaderValue;

/// Which other origins' pages may call the API from a browser (`PLINTH_CORS_ORIGINS`):
/// exact origins may call everything (with credentials); `*` lets any origin read (GET
/// and HEAD, never with credentials). Unset: only the analytics track route answers other
/// origins (it always does: the script posts hits from the tracked site).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CorsPolicy {
    /// Exact origins (`https://app.example.com`), lower-case, without a trailing slash.
    pub origins: Vec<String>,
    /// `*` was given: any origin may read.
    pub any_read: bool,
}

impl CorsPolicy {
    pub fn from_origins(list: &[String]) -> CorsPolicy {
        let mut p = CorsPolicy::default();
        for o in list.iter().map(|o| o.trim()).filter(|o| !o.is_empty()) {
            if o == "*" {
                p.any_read = true;
            } else {
                p.origins.push(o.trim_end_matches('/').to_ascii_lowercase());
            }
        }
        p
    }

    /// Refuses an entry that is neither `*` nor a bare origin (`scheme://host[:port]`):
    /// the message names it.
    pub fn check(list: &[String]) -> Result<(), String> {
        for o in list
            .iter()
            .map(|o| o.trim())
            .filter(|o| !o.is_empty() && *o != "*")
        {
            let bare = o.trim_end_matches('/');
            let ok = ["http://", "https://"].iter().any(|s| {
                bare.strip_prefix(s).is_some_and(|host| {
                    !host.is_empty() && !host.contains(['/', '?', '#', '@', ' ', '*'])
                })
            });
            if !ok {
                return Err(format!(
                    "PLINTH_CORS_ORIGINS: `{o}` is not an origin (scheme://host[:port], e.g. \
                     https://app.example.com) or `*`"
                ));
            }
        }
        Ok(())
    }

    fn configured(&self) -> bool {
        self.any_read || !self.origins.is_empty()
    }
}

/// The analytics track route (public, posted to from any tracked site).
const TRACK_PATH: &str = "/api/analytics/track";
/// How long a browser may reuse a preflight's answer (Chromium caps it at 2 h).
const PREFLIGHT_MAX_AGE: &str = "86400";
/// What a page may send, and read, from another origin.
const ALLOW_HEADERS: &str =
    "content-type, x-api-key, idempotency-key, x-request-id, authorization, last-event-id";
const EXPOSE_HEADERS: &str = "x-request-id, x-ratelimit-limit, x-ratelimit-remaining, \
    x-ratelimit-interval-ms, x-tokens-cost, x-tokens-remaining, retry-after, location, \
    idempotent-replayed";

/// The CORS layer (outermost: a preflight never reaches the usage layer). Requests
/// without an `Origin`, and every request while no origin is configured (but the track
/// route's), pass untouched: no `Vary` header on answers that do not need one (it cost
/// ~2 % of a small request's CPU).
#[derive(Clone)]
pub(crate) struct Cors(std::sync::Arc<CorsPolicy>);

impl Cors {
    pub(crate) fn new(policy: CorsPolicy) -> Cors {
        Cors(std::sync::Arc::new(policy))
    }
}

impl<S> tower::Layer<S> for Cors {
    type Service = CorsService<S>;
    fn layer(&self, inner: S) -> CorsService<S> {
        CorsService {
            inner,
            policy: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct CorsService<S> {
    inner: S,
    policy: std::sync::Arc<CorsPolicy>,
}

/// What a request from another origin is allowed.
enum Grant {
    /// Not a cross-origin request this layer answers for.
    None,
    /// Everything, for this exact origin (credentials allowed).
    Full(HeaderValue),
    /// Reads, for any origin (no credentials).
    Read,
    /// The track route: POST from the request's origin, no credentials.
    Track(HeaderValue),
}

impl<S> CorsService<S> {
    fn grant(&self, req: &axum::extract::Request, method: &axum::http::Method) -> Grant {
        use axum::http::Method;
        let Some(origin) = req.headers().get(axum::http::header::ORIGIN) else {
            return Grant::None;
        };
        let path = req.uri().path();
        if path == TRACK_PATH {
            return Grant::Track(origin.clone());
        }
        if !self.policy.configured() || !path.starts_with("/api/") {
            return Grant::None;
        }
        let exact = origin.to_str().ok().is_some_and(|o| {
            let o = o.trim_end_matches('/').to_ascii_lowercase();
            self.policy.origins.contains(&o)
        });
        if exact {
            Grant::Full(origin.clone())
        } else if self.policy.any_read && (method == Method::GET || method == Method::HEAD) {
            Grant::Read
        } else {
            Grant::None
        }
    }
}

fn cors_headers(h: &mut axum::http::HeaderMap, grant: &Grant, preflight: bool) {
    use axum::http::header;
    let (origin, credentials, methods) = match grant {
        Grant::None => return,
        Grant::Full(o) => (o.clone(), true, "GET, POST, HEAD, OPTIONS"),
        Grant::Read => (HeaderValue::from_static("*"), false, "GET, HEAD, OPTIONS"),
        Grant::Track(o) => (o.clone(), false, "POST, OPTIONS"),
    };
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    if credentials {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    if !matches!(grant, Grant::Read) {
        h.append(header::VARY, HeaderValue::from_static("origin"));
    }
    if preflight {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(methods),
        );
        let allow = if matches!(grant, Grant::Track(_)) {
            "content-type"
        } else {
            ALLOW_HEADERS
        };
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(allow),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(PREFLIGHT_MAX_AGE),
        );
    } else if !matches!(grant, Grant::Track(_)) {
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
}

type CorsFuture<F, E> = futures::future::Either<
    futures::future::Either<
        futures::future::Ready<Result<axum::response::Response, E>>,
        futures::future::BoxFuture<'static, Result<axum::response::Response, E>>,
    >,
    F,
>;

impl<S> tower::Service<axum::extract::Request> for CorsService<S>
where
    S: tower::Service<axum::extract::Request, Response = axum::response::Response>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = axum::response::Response;
    type Error = S::Error;
    // Requests that need no CORS header (nearly all) go through without an allocation.
    type Future = CorsFuture<S::Future, S::Error>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: axum::extract::Request) -> Self::Future {
        use axum::http::{header, Method, StatusCode};
        use futures::future::Either;
        use futures::FutureExt;
        let asked = req
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_METHOD)
            .and_then(|m| Method::from_bytes(m.as_bytes()).ok());
        // A preflight: answered here, for the method it asks about.
        if let (true, Some(asked)) = (req.method() == Method::OPTIONS, asked) {
            let grant = self.grant(&req, &asked);
            let ours = self.policy.configured()
                && req.uri().path().starts_with("/api/")
                && req.headers().contains_key(header::ORIGIN);
            if !matches!(grant, Grant::None) || ours {
                let mut resp = axum::response::Response::new(axum::body::Body::empty());
                *resp.status_mut() = StatusCode::NO_CONTENT;
                cors_headers(resp.headers_mut(), &grant, true);
                if matches!(grant, Grant::None) && self.policy.configured() {
                    resp.headers_mut()
                        .append(header::VARY, HeaderValue::from_static("origin"));
                }
                return Either::Left(Either::Left(futures::future::ready(Ok(resp))));
            }
        }
        let method = req.method().clone();
        let grant = self.grant(&req, &method);
        let fut = self.inner.call(req);
        if matches!(grant, Grant::None) {
            return Either::Right(fut);
        }
        Either::Left(Either::Right(
            async move {
                let mut resp = fut.await?;
                cors_headers(resp.headers_mut(), &grant, false);
                Ok(resp)
            }
            .boxed(),
        ))
    }
}

#[cfg(test)]
mod cors_tests {
    use super::CorsPolicy;

    #[test]
    fn origins_are_exact_or_a_star_for_reads() {
        let p =
            CorsPolicy::from_origins(&["https://App.example.com/".into(), " * ".into(), "".into()]);
        assert_eq!(p.origins, ["https://app.example.com"]);
        assert!(p.any_read);
        assert!(CorsPolicy::check(&["https://app.example.com:8443".into(), "*".into()]).is_ok());
        for bad in [
            "app.example.com",
            "https://a.example/path",
            "https://*.example.com",
            "ftp://x",
        ] {
            assert!(CorsPolicy::check(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
