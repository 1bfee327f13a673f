//! The headers every response carries (issue #36 "Security"): no sniffing,
//! no framing, no referrer; no-store on API data; the console's
//! Content-Security-Policy under `/console`. And the open mode's one
//! browser exception: hookd's own origin (the console), no other.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::backends::Backend;
use crate::helpers::{http_client, TOKEN};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

async fn every_response_carries_the_security_headers(backend: Backend) {
    let app = backend.spawn().await;
    let client = http_client();
    // (path, token, expected status or none, API data, console page)
    let cases = [
        (
            "/v1/endpoints",
            Some(TOKEN),
            Some(StatusCode::OK),
            true,
            false,
        ),
        (
            "/v1/endpoints",
            None,
            Some(StatusCode::UNAUTHORIZED),
            true,
            false,
        ),
        (
            "/v1/notifications/nope",
            Some(TOKEN),
            Some(StatusCode::NOT_FOUND),
            true,
            false,
        ),
        ("/v1/whoami", Some(TOKEN), Some(StatusCode::OK), true, false),
        ("/healthz", None, Some(StatusCode::OK), false, false),
        ("/openapi.json", None, Some(StatusCode::OK), false, false),
        (
            "/no/such/route",
            None,
            Some(StatusCode::NOT_FOUND),
            false,
            false,
        ),
        // Served by the console's routes once they are in; the headers are
        // set by path, whatever answers.
        ("/console/", None, None, false, true),
        ("/console/assets/app.js", None, None, false, true),
    ];
    for (path, token, status, api, console) in cases {
        let mut request = client.request(Method::GET, format!("{}{path}", app.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        if let Some(status) = status {
            assert_eq!(response.status(), status, "{path}");
        }
        let headers = response.headers();
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(
            headers
                .get("cache-control")
                .is_some_and(|v| v == "no-store"),
            api,
            "{path}"
        );
        match console {
            true => assert_eq!(headers["content-security-policy"], CSP, "{path}"),
            false => assert!(headers.get("content-security-policy").is_none(), "{path}"),
        }
    }
}
both!(every_response_carries_the_security_headers);

async fn the_open_mode_admits_its_own_origin_and_refuses_others(backend: Backend) {
    let app = backend.spawn_with("[api]\ntokens = []\n").await;
    let client = http_client();
    let port = app.base.rsplit_once(':').unwrap().1;
    let create = |origin: String, site: &'static str| {
        client
            .post(format!("{}/v1/endpoints", app.base))
            .header("origin", origin)
            .header("sec-fetch-site", site)
            .json(&json!({"url": "http://127.0.0.1:9/hook"}))
            .send()
    };
    // The console, served by this hookd: same origin.
    let response = create(app.base.clone(), "same-origin").await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    // A page of another port or name of this machine, or of elsewhere.
    for (origin, site) in [
        ("http://127.0.0.1:1".to_string(), "same-site"),
        (format!("http://localhost:{port}"), "same-site"),
        ("https://evil.example".to_string(), "cross-site"),
        ("null".to_string(), "cross-site"),
    ] {
        let response = create(origin.clone(), site).await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "forbidden");
    }
    let (_, page) = {
        let response = client
            .get(format!("{}/v1/endpoints", app.base))
            .send()
            .await
            .unwrap();
        (
            response.status(),
            response.json::<serde_json::Value>().await.unwrap(),
        )
    };
    assert_eq!(
        page["data"].as_array().unwrap().len(),
        1,
        "only the console's"
    );
}
both!(the_open_mode_admits_its_own_origin_and_refuses_others);
