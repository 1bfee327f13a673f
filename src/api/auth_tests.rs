use super::*;

#[test]
fn each_route_needs_the_scope_of_what_it_does() {
    let cases = [
        (Method::GET, "/v1/endpoints", Scope::Read),
        (Method::GET, "/v1/endpoints/{endpoint}", Scope::Read),
        (Method::POST, "/v1/endpoints", Scope::Admin),
        (Method::PATCH, "/v1/endpoints/{endpoint}", Scope::Admin),
        (Method::DELETE, "/v1/endpoints/{endpoint}", Scope::Admin),
        (
            Method::GET,
            "/v1/endpoints/{endpoint}/secret",
            Scope::Secrets,
        ),
        (
            Method::POST,
            "/v1/endpoints/{endpoint}/secret/rotate",
            Scope::Secrets,
        ),
        (
            Method::DELETE,
            "/v1/endpoints/{endpoint}/secret/previous",
            Scope::Secrets,
        ),
        (Method::POST, "/v1/notifications", Scope::Write),
        (Method::POST, "/v1/notifications/batch", Scope::Write),
        (Method::POST, "/v1/notifications/cancel", Scope::Write),
        (Method::POST, "/v1/notifications/{id}/cancel", Scope::Write),
        (Method::POST, "/v1/notifications/{id}/retry", Scope::Write),
        (
            Method::POST,
            "/v1/endpoints/{endpoint}/recover",
            Scope::Write,
        ),
        (Method::GET, "/v1/operations/{id}", Scope::Read),
        (Method::GET, "/v1/stats", Scope::Read),
        (Method::GET, "/v1/notifications", Scope::Read),
        (Method::GET, "/v1/notifications/{id}", Scope::Read),
        (Method::GET, "/v1/notifications/{id}/attempts", Scope::Read),
        (Method::POST, "/v1/endpoints/{endpoint}/pull", Scope::Pull),
        (Method::POST, "/v1/endpoints/{endpoint}/ack", Scope::Pull),
        (Method::POST, "/v1/notifications/{id}/nack", Scope::Pull),
        (Method::POST, "/v1/notifications/{id}/extend", Scope::Pull),
        (Method::POST, "/v1/endpoints/{endpoint}/nack", Scope::Pull),
        (Method::POST, "/v1/notifications/{id}/ack", Scope::Pull),
        (
            Method::POST,
            "/v1/endpoints/{endpoint}/consumer-token",
            Scope::Admin,
        ),
        // A route nobody classified is admin-only.
        (Method::POST, "/v1/something/new", Scope::Admin),
    ];
    for (method, route, scope) in cases {
        assert_eq!(required_scope(&method, route), scope, "{method} {route}");
    }
}

#[test]
fn loopback_authorities_are_recognised_and_lookalikes_are_not() {
    for local in [
        "localhost",
        "localhost:8080",
        "LOCALHOST.",
        "app.localhost:3000",
        "127.0.0.1:8080",
        "127.1.2.3",
        "[::1]:8080",
        "[::1]",
    ] {
        assert!(is_loopback_authority(local), "{local}");
    }
    for foreign in [
        "rebind.evil.example",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "10.0.0.1:8080",
        "[::2]:80",
        "[::1",
        "",
        "localhost:18181@evil.com",
        "evil.com#.localhost",
        "evil.com/.localhost",
        "localhost:80:80",
        "localhost:http",
        "[::1]x",
        "[::1]:80@evil.com",
        "local host",
    ] {
        assert!(!is_loopback_authority(foreign), "{foreign}");
    }
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, value.parse().unwrap());
    }
    map
}

#[test]
fn the_open_mode_refuses_what_a_web_page_could_send() {
    let json = ("content-type", "application/json");
    assert!(local_only(
        &Method::POST,
        &headers(&[("host", "127.0.0.1:8080"), json]),
        None
    )
    .is_ok());
    assert!(local_only(&Method::GET, &headers(&[("host", "localhost:8080")]), None).is_ok());
    // The console, served by hookd itself: same origin.
    for origin in ["http://localhost:8080", "https://LOCALHOST:8080"] {
        let same = headers(&[
            ("host", "localhost:8080"),
            ("origin", origin),
            ("sec-fetch-site", "same-origin"),
            json,
        ]);
        assert!(local_only(&Method::POST, &same, None).is_ok(), "{origin}");
    }
    for (method, pairs) in [
        (Method::GET, vec![("host", "rebind.evil.example")]),
        (Method::GET, vec![]),
        (
            Method::POST,
            vec![("host", "127.0.0.1"), ("content-type", "text/plain")],
        ),
        (Method::POST, vec![("host", "127.0.0.1")]),
        (
            Method::POST,
            vec![
                ("host", "127.0.0.1"),
                json,
                ("origin", "https://evil.example"),
            ],
        ),
        (Method::GET, vec![("host", "127.0.0.1"), ("origin", "null")]),
        // Another port of this machine is another origin.
        (
            Method::GET,
            vec![
                ("host", "localhost:8080"),
                ("origin", "http://localhost:3000"),
            ],
        ),
        (
            Method::GET,
            vec![
                ("host", "127.0.0.1:8080"),
                ("origin", "http://localhost:8080"),
            ],
        ),
        (
            Method::GET,
            vec![("host", "127.0.0.1:8080"), ("sec-fetch-site", "same-site")],
        ),
        (
            Method::GET,
            vec![("host", "127.0.0.1"), ("sec-fetch-site", "cross-site")],
        ),
    ] {
        assert!(
            local_only(&method, &headers(&pairs), None).is_err(),
            "{method} {pairs:?}"
        );
    }
}

#[test]
fn an_http2_request_is_judged_by_its_authority() {
    assert!(local_only(&Method::GET, &HeaderMap::new(), Some("127.0.0.1:8080")).is_ok());
    assert!(local_only(&Method::GET, &HeaderMap::new(), Some("rebind.evil.example")).is_err());
}

#[test]
fn a_token_is_found_by_its_digest_only() {
    let settings = crate::config::Settings::from_toml_overrides(
        "[api]\ntokens = [{ name = \"dash\", token = \"dash-0123456789abcdefghij\", scopes = [\"read\"] }]\n",
    )
    .unwrap();
    let auth = Auth::new(&settings.api);
    let caller = auth.identify("dash-0123456789abcdefghij").unwrap();
    assert_eq!(&*caller.name, "dash");
    assert!(auth.identify("dash-0123456789abcdefghi").is_none());
    assert!(auth.identify("").is_none());
}
