//! The console's files: served without a token (they hold no data),
//! with their content types, the console's policy and validators.

use reqwest::StatusCode;

use crate::backends::Backend;

async fn the_console_is_served_without_a_token_under_its_policy(backend: Backend) {
    let app = backend.spawn().await;
    let client = crate::helpers::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    let bare = client
        .get(format!("{}/console", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(bare.headers()["location"], "/console/");

    let page = client
        .get(format!("{}/console/", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(page.text().await.unwrap().contains("assets/app.js"));

    for (path, kind) in [
        ("assets/app.js", "text/javascript; charset=utf-8"),
        ("assets/vendor/uplot.mjs", "text/javascript; charset=utf-8"),
        ("assets/console.css", "text/css; charset=utf-8"),
        ("assets/favicon.svg", "image/svg+xml"),
    ] {
        let url = format!("{}/console/{path}", app.base);
        let first = client.get(&url).send().await.unwrap();
        assert_eq!(first.status(), StatusCode::OK, "{path}");
        assert_eq!(first.headers()["content-type"], kind, "{path}");
        assert_eq!(first.headers()["x-content-type-options"], "nosniff");
        let etag = first.headers()["etag"].clone();
        let again = client
            .get(&url)
            .header("if-none-match", etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.bytes().await.unwrap().is_empty());
    }

    for missing in [
        "assets/nothing.js",
        "assets/index.html",
        "assets/../Cargo.toml",
    ] {
        let response = client
            .get(format!("{}/console/{missing}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{missing}");
    }
}

both!(the_console_is_served_without_a_token_under_its_policy);
