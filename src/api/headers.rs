//! Security headers on every response (docs/design.md §14, issue #36): no
//! sniffing, no framing, no referrer; API data never cached; the console's
//! pages under a Content-Security-Policy that allows only its own scripts,
//! styles and API, so a payload shown there cannot run as code.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue};

/// The console's policy: its own files only, no inline code, no eval, no
/// framing, forms and API calls to this origin.
pub const CONSOLE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; \
base-uri 'none'; form-action 'self'";

/// The console's policy for this deployment: `CONSOLE_CSP`, its images
/// also from `portal.logo_url`'s origin when one is set (an origin is
/// scheme, host and port: nothing a policy could misread).
pub fn console_csp(logo_origin: Option<&str>) -> HeaderValue {
    let policy = match logo_origin {
        Some(origin) => CONSOLE_CSP.replace(
            "img-src 'self' data:",
            &format!("img-src 'self' data: {origin}"),
        ),
        None => CONSOLE_CSP.to_string(),
    };
    HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static(CONSOLE_CSP))
}

/// Which headers a response gets, by its request's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `/v1/...`: data, never stored by a cache.
    Api,
    /// `/console...`: the console's pages and assets.
    Console,
    /// Everything else (`/healthz`, `/openapi.json`, unknown paths).
    Other,
}

impl Kind {
    pub(super) fn of(path: &str) -> Self {
        let under = |prefix: &str| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if under("/v1") {
            Kind::Api
        } else if under("/console") {
            Kind::Console
        } else {
            Kind::Other
        }
    }

    /// Sets the headers, over any a handler set: these are not a handler's
    /// to loosen.
    pub(super) fn apply(self, headers: &mut HeaderMap, console_csp: &HeaderValue) {
        headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        match self {
            Kind::Api => {
                headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            }
            Kind::Console => {
                headers.insert(CONTENT_SECURITY_POLICY, console_csp.clone());
            }
            Kind::Other => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_decides_the_headers() {
        for (path, kind) in [
            ("/v1", Kind::Api),
            ("/v1/notifications", Kind::Api),
            ("/v1x", Kind::Other),
            ("/console", Kind::Console),
            ("/console/", Kind::Console),
            ("/console/assets/app.js", Kind::Console),
            ("/consoles", Kind::Other),
            ("/healthz", Kind::Other),
            ("/", Kind::Other),
        ] {
            assert_eq!(Kind::of(path), kind, "{path}");
        }
        let csp = console_csp(None);
        let mut headers = HeaderMap::new();
        Kind::Console.apply(&mut headers, &csp);
        assert_eq!(headers[CONTENT_SECURITY_POLICY], CONSOLE_CSP);
        assert!(headers.get(CACHE_CONTROL).is_none());
        let mut headers = HeaderMap::new();
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("max-age=60"));
        Kind::Api.apply(&mut headers, &csp);
        assert_eq!(headers[CACHE_CONTROL], "no-store");
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY");
        assert!(headers.get(CONTENT_SECURITY_POLICY).is_none());
    }

    #[test]
    fn a_logo_origin_is_admitted_for_images_alone() {
        let csp = console_csp(Some("https://cdn.acme.example"));
        let policy = csp.to_str().unwrap();
        assert!(
            policy.contains("img-src 'self' data: https://cdn.acme.example;"),
            "{policy}"
        );
        assert_eq!(policy.matches("cdn.acme.example").count(), 1, "{policy}");
        assert_eq!(console_csp(None), CONSOLE_CSP);
    }
}
