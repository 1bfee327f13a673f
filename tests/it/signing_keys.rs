//! Public-key signatures (docs/design.md §19), on each backend: an
//! `ed25519` endpoint signs `v1a,` and its receiver verifies with the
//! public key alone, checked by an independent implementation (OpenSSL's
//! command line, not hookd's ring); a rotation and a switch of kind sign
//! with both keys for the overlap; the public key needs no `secrets` scope.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::backends::Backend;
use crate::helpers::TestApp;
use crate::receiver::{Received, Receiver};

const READER: &str = "reader-token-0123456789abcdef";

fn settings() -> String {
    format!(
        "[api]\ntokens = [\"{}\", {{ name = \"reader\", token = \"{READER}\", scopes = [\"read\"] }}]\n",
        crate::helpers::TOKEN
    )
}

/// The public key as a reader (no `secrets` scope) gets it.
async fn public_keys(app: &TestApp, endpoint: &str) -> Value {
    let response = app
        .client
        .get(format!("{}/v1/endpoints/{endpoint}/public-key", app.base))
        .bearer_auth(READER)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

/// Whether OpenSSL verifies `signature` (base64) of the delivery's signed
/// content with `public_key` (`whpk_…`).
fn openssl_verifies(dir: &Path, public_key: &str, request: &Received, signature: &str) -> bool {
    let raw = STANDARD
        .decode(public_key.strip_prefix("whpk_").expect("a whpk_ key"))
        .unwrap();
    assert_eq!(raw.len(), 32);
    // SubjectPublicKeyInfo of an Ed25519 key: this fixed prefix, the key.
    let mut der = hex_bytes("302a300506032b6570032100");
    der.extend_from_slice(&raw);
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        STANDARD.encode(&der)
    );
    let mut message = format!(
        "{}.{}.",
        request.header("webhook-id").unwrap(),
        request.header("webhook-timestamp").unwrap()
    )
    .into_bytes();
    message.extend_from_slice(&request.body);
    std::fs::write(dir.join("key.pem"), pem).unwrap();
    std::fs::write(dir.join("message"), message).unwrap();
    std::fs::write(dir.join("signature"), STANDARD.decode(signature).unwrap()).unwrap();
    let status = Command::new("openssl")
        .args(["pkeyutl", "-verify", "-pubin", "-rawin"])
        .arg("-inkey")
        .arg(dir.join("key.pem"))
        .arg("-in")
        .arg(dir.join("message"))
        .arg("-sigfile")
        .arg(dir.join("signature"))
        .output()
        .expect("openssl runs");
    status.status.success()
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// The signatures of one scheme in a `webhook-signature` header.
fn signatures<'a>(request: &'a Received, scheme: &str) -> Vec<&'a str> {
    request
        .header("webhook-signature")
        .unwrap()
        .split(' ')
        .filter_map(|part| part.strip_prefix(scheme)?.strip_prefix(','))
        .collect()
}

async fn delivered(app: &TestApp, receiver: &Receiver, endpoint: &str, path: &str) -> Received {
    let before = receiver.received(path).len();
    app.notify(json!({"endpoint": endpoint, "payload": {"order": 123, "status": "paid"}}))
        .await;
    let got = receiver
        .wait_for(path, before + 1, Duration::from_secs(20))
        .await;
    got[before].clone()
}

async fn an_ed25519_endpoints_deliveries_verify_with_its_public_key_alone(backend: Backend) {
    let app = backend.spawn_with(&settings()).await;
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let created = app
        .endpoint(json!({"uid": "ed", "url": receiver.url("/ed"), "signing": "ed25519"}))
        .await;
    assert_eq!(created["signing"], "ed25519");
    assert!(created["secret"].as_str().unwrap().starts_with("whsk_"));
    let keys = public_keys(&app, "ed").await;
    let public_key = keys["public_key"].as_str().unwrap();
    assert!(public_key.starts_with("whpk_"), "{keys}");
    assert_eq!(keys["previous_public_keys"], json!([]));

    let request = delivered(&app, &receiver, "ed", "/ed").await;
    assert!(
        signatures(&request, "v1").is_empty(),
        "no shared-secret signature"
    );
    let [signature] = signatures(&request, "v1a")[..] else {
        panic!(
            "one v1a signature: {:?}",
            request.header("webhook-signature")
        );
    };
    assert!(openssl_verifies(
        dir.path(),
        public_key,
        &request,
        signature
    ));
    // The same signature over another body does not verify.
    let mut tampered = request.clone();
    tampered.body = bytes::Bytes::from_static(br#"{"order":123,"status":"refunded"}"#);
    assert!(!openssl_verifies(
        dir.path(),
        public_key,
        &tampered,
        signature
    ));
}
both!(an_ed25519_endpoints_deliveries_verify_with_its_public_key_alone);

async fn a_switch_of_kind_and_a_rotation_sign_with_both_keys_for_the_overlap(backend: Backend) {
    let app = backend.spawn_with(&settings()).await;
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let created = app
        .endpoint(json!({"uid": "moving", "url": receiver.url("/moving")}))
        .await;
    assert_eq!(created["signing"], "hmac");
    let shared = created["secret"].as_str().unwrap().to_string();
    let (status, refused) = app.get("/v1/endpoints/moving/public-key").await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("hmac"));

    // hmac to ed25519: the shared secret signs beside the new key.
    let (status, switched) = app
        .call(
            Method::PATCH,
            "/v1/endpoints/moving",
            Some(json!({"signing": "ed25519"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{switched}");
    assert_eq!(switched["signing"], "ed25519");
    let first = public_keys(&app, "moving").await;
    let first_key = first["public_key"].as_str().unwrap().to_string();
    assert_eq!(
        first["previous_public_keys"],
        json!([]),
        "the old one is no key pair"
    );
    let request = delivered(&app, &receiver, "moving", "/moving").await;
    let [signature] = signatures(&request, "v1a")[..] else {
        panic!("{:?}", request.header("webhook-signature"));
    };
    assert!(openssl_verifies(
        dir.path(),
        &first_key,
        &request,
        signature
    ));
    standardwebhooks::Webhook::new(&shared)
        .unwrap()
        .verify(&request.body, &request.headers)
        .expect("the shared secret still signs for the overlap");

    // A rotation keeps the kind: two v1a signatures, each verifying with
    // its own public key.
    let (status, rotated) = app
        .post("/v1/endpoints/moving/secret/rotate", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert!(rotated["secret"].as_str().unwrap().starts_with("whsk_"));
    let keys = public_keys(&app, "moving").await;
    let new_key = keys["public_key"].as_str().unwrap().to_string();
    assert_ne!(new_key, first_key);
    assert_eq!(keys["previous_public_keys"][0]["public_key"], first_key);
    let request = delivered(&app, &receiver, "moving", "/moving").await;
    let v1a = signatures(&request, "v1a");
    assert_eq!(v1a.len(), 2, "{:?}", request.header("webhook-signature"));
    assert!(openssl_verifies(dir.path(), &new_key, &request, v1a[0]));
    assert!(openssl_verifies(dir.path(), &first_key, &request, v1a[1]));
    assert!(!openssl_verifies(dir.path(), &first_key, &request, v1a[0]));

    // Ending the overlap leaves the new key alone.
    let (status, _) = app
        .call(Method::DELETE, "/v1/endpoints/moving/secret/previous", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let request = delivered(&app, &receiver, "moving", "/moving").await;
    assert_eq!(
        request
            .header("webhook-signature")
            .unwrap()
            .split(' ')
            .count(),
        1
    );
}
both!(a_switch_of_kind_and_a_rotation_sign_with_both_keys_for_the_overlap);

async fn keys_of_the_wrong_kind_are_refused_naming_the_field(backend: Backend) {
    let app = backend.spawn().await;
    let (status, refused) = app
        .post(
            "/v1/endpoints",
            json!({"url": "http://127.0.0.1:9/", "signing": "rsa"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let shared = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let (status, refused) = app
        .post(
            "/v1/endpoints",
            json!({"url": "http://127.0.0.1:9/", "signing": "ed25519", "secret": shared}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "secret");
    // A given whsk_ key makes an ed25519 endpoint; its seed alone is enough.
    let seed = STANDARD.encode([7u8; 32]);
    let made = app
        .endpoint(json!({"uid": "given", "secret": format!("whsk_{seed}")}))
        .await;
    assert_eq!(made["signing"], "ed25519");
    let (status, refused) = app
        .post(
            "/v1/endpoints/given/secret/rotate",
            json!({"secret": shared}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_secret");
    let (status, refused) = app
        .post(
            "/v1/endpoints",
            json!({"url": "http://127.0.0.1:9/", "secret": "whsk_AAAA"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_secret");
    let (_, stored) = app.get("/v1/endpoints/given").await;
    assert_eq!(stored["signing"], "ed25519", "nothing changed");
}
both!(keys_of_the_wrong_kind_are_refused_naming_the_field);

/// A new 2,048-bit RSA private key in PEM, as an operator makes one for
/// an rsa2 endpoint (OpenSSL, written under `dir`).
pub(crate) fn rsa_private_key(dir: &Path) -> String {
    let made = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(dir.join("key.pem"))
        .output()
        .expect("openssl runs");
    assert!(made.status.success(), "{made:?}");
    std::fs::read_to_string(dir.join("key.pem")).unwrap()
}

/// Whether OpenSSL verifies SHA256withRSA `signature` (base64) of
/// `content` with a PEM public key.
fn openssl_verifies_rsa(dir: &Path, public_pem: &str, content: &str, signature: &str) -> bool {
    std::fs::write(dir.join("rsa.pub.pem"), public_pem).unwrap();
    std::fs::write(dir.join("content"), content).unwrap();
    std::fs::write(dir.join("rsa.sig"), STANDARD.decode(signature).unwrap()).unwrap();
    Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(dir.join("rsa.pub.pem"))
        .arg("-signature")
        .arg(dir.join("rsa.sig"))
        .arg(dir.join("content"))
        .output()
        .expect("openssl runs")
        .status
        .success()
}

/// What Alipay's notify verification signs: every parameter but `sign` and
/// `sign_type`, non-empty, decoded, sorted by name, joined `k=v&…`.
fn alipay_content(params: &[(String, String)]) -> String {
    let mut kept: Vec<&(String, String)> = params
        .iter()
        .filter(|(k, v)| k != "sign" && k != "sign_type" && !v.is_empty())
        .collect();
    kept.sort();
    kept.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

async fn an_rsa2_endpoint_signs_form_bodies_as_alipay_does_and_refuses_json(backend: Backend) {
    let app = backend.spawn_with(&settings()).await;
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let private = rsa_private_key(dir.path());

    // hookd makes no RSA key: it asks for the operator's.
    let (status, refused) = app
        .post(
            "/v1/endpoints",
            json!({"url": receiver.url("/notify"), "signing": "rsa2"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "secret");
    let created = app
        .endpoint(
            json!({"uid": "alipay", "url": receiver.url("/notify"), "signing": "rsa2",
            "secret": private, "success_body": "success"}),
        )
        .await;
    assert_eq!(created["signing"], "rsa2");
    let public_pem = public_keys(&app, "alipay").await["public_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        public_pem.starts_with("-----BEGIN PUBLIC KEY-----\n"),
        "{public_pem}"
    );

    let (status, refused) = app
        .post(
            "/v1/notifications",
            json!({"endpoint": "alipay", "payload": {"out_trade_no": "1"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["field"], "content_type");

    // A form with a parameter that needs decoding, an empty one, and a
    // `sign` of the producer's own, which hookd's replaces.
    let body = "notify_id=n-1&out_trade_no=20261201-0001&subject=%E6%B5%8B%E8%AF%95+order\
                &total_amount=88.88&trade_status=TRADE_SUCCESS&buyer_memo=&sign=forged";
    app.notify(json!({"endpoint": "alipay", "body": body,
        "content_type": "application/x-www-form-urlencoded"}))
        .await;
    let got = receiver
        .wait_for("/notify", 1, Duration::from_secs(20))
        .await;
    let request = &got[0];
    assert!(request.header("webhook-signature").is_none());
    let params: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let value = |name: &str| -> Vec<&str> {
        params
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(value("sign_type"), ["RSA2"]);
    assert_eq!(value("subject"), ["测试 order"]);
    let [sign] = value("sign")[..] else {
        panic!("one sign: {params:?}");
    };
    let content = alipay_content(&params);
    assert_eq!(
        content,
        "notify_id=n-1&out_trade_no=20261201-0001&subject=测试 order&total_amount=88.88&trade_status=TRADE_SUCCESS"
    );
    assert!(openssl_verifies_rsa(
        dir.path(),
        &public_pem,
        &content,
        sign
    ));
    let tampered = content.replace("88.88", "8888.00");
    assert!(!openssl_verifies_rsa(
        dir.path(),
        &public_pem,
        &tampered,
        sign
    ));
}
both!(an_rsa2_endpoint_signs_form_bodies_as_alipay_does_and_refuses_json);
