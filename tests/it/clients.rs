//! The generated clients (`clients/`, `scripts/clients`), each run by its
//! own language against a running hookd, on each backend (the Rust one
//! here, as a dependency of these tests): the client's
//! test creates an endpoint, sends a notification, verifies the delivery's
//! signature with that language's Standard Webhooks library, reads the
//! attempts and meets a refusal in the API's error shape. scripts/test
//! installs the toolchains and builds the TypeScript client first.

use std::time::Duration;

use serde_json::json;

use crate::backends::Backend;
use crate::helpers::eventually;
use crate::receiver::Receiver;

/// Runs `program args` with `HOOKD_URL` and `HOOKD_TOKEN` naming a fresh
/// hookd; fails with its output unless it succeeds.
async fn run_against(backend: Backend, program: &str, args: &[&str]) {
    let app = backend.spawn().await;
    let child = tokio::process::Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOOKD_URL", &app.base)
        .env("HOOKD_TOKEN", crate::helpers::TOKEN)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .unwrap_or_else(|_| panic!("{program} {args:?} finished within a minute"))
        .unwrap_or_else(|e| panic!("{program} runs (scripts/test installs it): {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn the_typescript_client_creates_sends_and_reads_and_its_delivery_verifies(backend: Backend) {
    run_against(
        backend,
        "node",
        &["clients/typescript/dist/test/client.test.js"],
    )
    .await;
}
both!(the_typescript_client_creates_sends_and_reads_and_its_delivery_verifies);

async fn the_python_client_creates_sends_and_reads_and_its_delivery_verifies(backend: Backend) {
    let python = std::env::var("HOOKD_TEST_CLIENTS_PYTHON").expect(
        "HOOKD_TEST_CLIENTS_PYTHON names the clients' venv: run scripts/test, which makes it",
    );
    run_against(backend, &python, &["clients/python/tests/test_client.py"]).await;
}
both!(the_python_client_creates_sends_and_reads_and_its_delivery_verifies);

async fn the_rust_client_creates_sends_and_reads_and_its_delivery_verifies(backend: Backend) {
    use hookd_client::types;
    let app = backend.spawn().await;
    let receiver = Receiver::start().await;
    let client = hookd_client::with_token(&app.base, crate::helpers::TOKEN).unwrap();

    // An endpoint, a notification, its delivery and its attempts.
    let endpoint = client
        .create_endpoint()
        .body_map(|body| {
            body.uid(Some("rust-client".parse().unwrap()))
                .url(Some(receiver.url("/orders").parse().unwrap()))
        })
        .send()
        .await
        .unwrap()
        .into_inner();
    let secret = endpoint.secret.expect("the admin token sees the secret");
    let created = client
        .create_notification()
        .body_map(|body| {
            body.endpoint(
                "rust-client"
                    .parse::<types::CreateNotificationEndpoint>()
                    .unwrap(),
            )
            .key(Some("order-123:paid".parse().unwrap()))
            .payload(Some(json!({"order": 123, "status": "paid"})))
        })
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), reqwest::StatusCode::CREATED);
    let id = created.into_inner().id;

    let delivered = receiver
        .wait_for("/orders", 1, Duration::from_secs(20))
        .await;
    let verified = standardwebhooks::Webhook::new(&secret)
        .unwrap()
        .verify(&delivered[0].body, &delivered[0].headers);
    assert!(verified.is_ok(), "{verified:?}");
    assert_eq!(
        delivered[0].header("webhook-id"),
        Some(id.to_string().as_str())
    );

    let attempts = eventually(Duration::from_secs(20), "the recorded attempt", || async {
        let page = client
            .list_notification_attempts()
            .id(id)
            .send()
            .await
            .unwrap()
            .into_inner();
        (!page.data.is_empty()).then_some(page.data)
    })
    .await;
    assert_eq!(attempts[0].status_code, Some(200));
    let read = client.get_notification().id(id).send().await.unwrap();
    assert_eq!(read.status, types::Status::Succeeded);

    // A refusal comes back as the API's error shape, typed.
    let refused = client
        .create_notification()
        .body_map(|body| {
            body.endpoint(
                "no-such-endpoint"
                    .parse::<types::CreateNotificationEndpoint>()
                    .unwrap(),
            )
            .payload(Some(json!({})))
        })
        .send()
        .await
        .unwrap_err();
    let hookd_client::Error::ErrorResponse(refusal) = refused else {
        panic!("an error in the API's shape: {refused:?}");
    };
    assert_eq!(refusal.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refusal.error.code, "unknown_endpoint");

    // A call whose body is optional, given none (the builder once refused
    // to send without `.body(None)`); a body-less POST refused, typed.
    let rotated = client
        .rotate_endpoint_secret()
        .endpoint("rust-client")
        .send()
        .await
        .unwrap()
        .into_inner();
    assert!(rotated.secret.is_some_and(|s| s.starts_with("whsec_")));
    let again = client.retry_notification().id(id).send().await.unwrap_err();
    let hookd_client::Error::ErrorResponse(refusal) = again else {
        panic!("an error in the API's shape: {again:?}");
    };
    assert_eq!(refusal.status(), reqwest::StatusCode::CONFLICT);
    assert_eq!(refusal.error.code, "not_retryable");

    // An operation that answers a dry run and a start in two shapes reads
    // each as its own (the start once read as a dry run, its id lost), and
    // its refusals read as refusals (they once failed to parse).
    let since = chrono::Utc::now() - chrono::Duration::hours(1);
    let recover = |dry_run: bool| {
        client
            .recover_endpoint()
            .endpoint("rust-client")
            .body_map(move |body| body.since(since).dry_run(Some(dry_run)))
    };
    let dry = recover(true).send().await.unwrap().into_inner();
    assert!(
        matches!(
            dry,
            types::RecoverEndpointResponse::Matched(types::Matched { matched: 0 })
        ),
        "{dry:?}"
    );
    let started = recover(false).send().await.unwrap();
    assert_eq!(started.status(), reqwest::StatusCode::ACCEPTED);
    let types::RecoverEndpointResponse::OperationView(operation) = started.into_inner() else {
        panic!("a started recover reads as the operation");
    };
    let read = client
        .read_operation()
        .id(operation.id)
        .send()
        .await
        .unwrap();
    assert_eq!(read.id, operation.id);
    let missing = client
        .recover_endpoint()
        .endpoint("no-such-endpoint")
        .body_map(move |body| body.since(since))
        .send()
        .await
        .unwrap_err();
    let hookd_client::Error::ErrorResponse(refusal) = missing else {
        panic!("an error in the API's shape: {missing:?}");
    };
    assert_eq!(refusal.status(), reqwest::StatusCode::NOT_FOUND);
    let types::RecoverEndpointRefusal::ErrorBody(body) = refusal.into_inner() else {
        panic!("a 404 reads as the error shape");
    };
    assert_eq!(body.error.code, "not_found");

    // A setting given, then set back to its default with `null`, which the
    // generated builder cannot send (it leaves out what is `None`).
    let limited = client
        .update_endpoint()
        .endpoint("rust-client")
        .body_map(|body| {
            body.rate_limit(Some(types::RateLimit {
                burst: 5.try_into().unwrap(),
                per_second: 2.0,
            }))
        })
        .send()
        .await
        .unwrap()
        .into_inner();
    assert_eq!(limited.rate_limit.map(|r| r.per_second), Some(2.0));
    let cleared =
        hookd_client::update_endpoint_json(&client, "rust-client", &json!({"rate_limit": null}))
            .await
            .unwrap();
    assert!(cleared.rate_limit.is_none(), "{cleared:?}");
    let refused =
        hookd_client::update_endpoint_json(&client, "rust-client", &json!({"rate_limit": 7}))
            .await
            .unwrap_err();
    let hookd_client::Error::ErrorResponse(refusal) = refused else {
        panic!("an error in the API's shape: {refused:?}");
    };
    assert_eq!(refusal.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
}
both!(the_rust_client_creates_sends_and_reads_and_its_delivery_verifies);
