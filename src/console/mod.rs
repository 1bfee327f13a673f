//! The web console (docs/design.md §11): a single page at `/console/` whose
//! files are compiled into the binary, so hookd serves it with no Node,
//! no CDN and no network at run time. The files hold no data and need no
//! token; everything the page shows it reads from the public REST API
//! with the token its user signs in with, so it can never do more than
//! that token allows.
//!
//! `include_bytes!` over a list rather than a crate such as rust-embed:
//! a dozen files, known at compile time, need no directory walk, no
//! derive macro and no new dependency.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use crate::api::error::ApiError;
use crate::api::AppState;

/// Every file of the console, by its path under `/console/`.
const FILES: &[(&str, &[u8])] = &[
    ("index.html", include_bytes!("assets/index.html")),
    ("assets/console.css", include_bytes!("assets/console.css")),
    ("assets/app.js", include_bytes!("assets/app.js")),
    ("assets/api.js", include_bytes!("assets/api.js")),
    ("assets/ui.js", include_bytes!("assets/ui.js")),
    ("assets/overview.js", include_bytes!("assets/overview.js")),
    (
        "assets/notifications.js",
        include_bytes!("assets/notifications.js"),
    ),
    (
        "assets/notification.js",
        include_bytes!("assets/notification.js"),
    ),
    ("assets/endpoints.js", include_bytes!("assets/endpoints.js")),
    ("assets/endpoint.js", include_bytes!("assets/endpoint.js")),
    ("assets/manage.js", include_bytes!("assets/manage.js")),
    ("assets/links.js", include_bytes!("assets/links.js")),
    ("assets/events.js", include_bytes!("assets/events.js")),
    ("assets/names.js", include_bytes!("assets/names.js")),
    (
        "assets/operations.js",
        include_bytes!("assets/operations.js"),
    ),
    ("assets/favicon.svg", include_bytes!("assets/favicon.svg")),
    (
        "assets/vendor/preact.mjs",
        include_bytes!("assets/vendor/preact.mjs"),
    ),
    (
        "assets/vendor/hooks.mjs",
        include_bytes!("assets/vendor/hooks.mjs"),
    ),
    (
        "assets/vendor/htm.mjs",
        include_bytes!("assets/vendor/htm.mjs"),
    ),
    (
        "assets/vendor/uplot.mjs",
        include_bytes!("assets/vendor/uplot.mjs"),
    ),
    (
        "assets/vendor/uplot.css",
        include_bytes!("assets/vendor/uplot.css"),
    ),
];

/// A file with its validator, computed once.
struct Asset {
    path: &'static str,
    bytes: &'static [u8],
    etag: HeaderValue,
}

fn assets() -> &'static [Asset] {
    static ASSETS: OnceLock<Vec<Asset>> = OnceLock::new();
    ASSETS.get_or_init(|| {
        FILES
            .iter()
            .map(|&(path, bytes)| {
                let digest = Sha256::digest(bytes);
                let tag = format!("\"{}\"", hex(&digest[..12]));
                Asset {
                    path,
                    bytes,
                    etag: HeaderValue::from_str(&tag).expect("hex is a valid header value"),
                }
            })
            .collect()
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// `/console` (to `/console/`, so the page's relative asset paths
/// resolve), the page, and its assets. Outside the API's auth.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(to_console))
        .route("/console/", get(page))
        .route("/console/{*path}", get(asset))
}

async fn to_console() -> Response {
    (
        StatusCode::PERMANENT_REDIRECT,
        [(LOCATION, HeaderValue::from_static("/console/"))],
    )
        .into_response()
}

async fn page(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    // `index.html` is the page: served at `/console/` only.
    if path == "index.html" {
        return ApiError::NotFound("console file").into_response();
    }
    serve(&path, &headers)
}

/// A file, or 304 when the browser's copy is current. The console's CSP,
/// nosniff and no framing are set on every `/console` response by the
/// API's security headers (`api::headers`). `no-cache` makes
/// the browser ask each time (the names carry no version, so a new hookd
/// must be seen at once); the ETag makes asking cheap.
fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = assets().iter().find(|a| a.path == path) else {
        return ApiError::NotFound("console file").into_response();
    };
    let common = [
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (ETAG, asset.etag.clone()),
    ];
    let fresh = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim().trim_start_matches("W/") == asset.etag)
        });
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(
            CONTENT_TYPE,
            HeaderValue::from_static(content_type(asset.path)),
        )],
        asset.bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_has_a_known_content_type() {
        for (path, _) in FILES {
            assert_ne!(content_type(path), "application/octet-stream", "{path}");
        }
    }

    #[test]
    fn the_page_loads_only_its_own_files_with_no_inline_script_or_style() {
        let page = std::str::from_utf8(FILES[0].1).unwrap();
        assert!(!page.contains("<script>"), "an inline script");
        assert!(!page.contains("<style"), "an inline style");
        assert!(!page.contains("style="), "a style attribute");
        assert!(!page.contains("//"), "a link off the machine");
    }
}
