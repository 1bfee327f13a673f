use std::collections::BTreeMap;

use chrono::Utc;
use uuid::Uuid;

use super::values::{seal_headers, PlainEndpoint};
use super::Sealing;
use crate::domain::pull::Delivery;
use crate::domain::sealed::{context, Keyring, SealError};
use crate::store::endpoints::{Endpoint, PreviousSecret};
use crate::store::seams::EndpointSecrets;

const OLD: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const NEW: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";

fn keys(ring: &[(&str, &str)]) -> Keyring {
    Keyring::new(ring.iter().copied()).unwrap()
}

fn endpoint(id: Uuid) -> Endpoint {
    let now = Utc::now();
    Endpoint {
        id,
        uid: None,
        owner: None,
        url: None,
        delivery: Delivery::Push,
        description: String::new(),
        secret: "s3cret".into(),
        previous_secrets: vec![PreviousSecret {
            secret: "old-s3cret".into(),
            expires_at: now,
        }],
        event_types: None,
        filter: None,
        schedule_ms: Vec::new(),
        schedule_name: None,
        schedule_jitter: 0.0,
        url_secret: false,
        portal_generation: 0,
        rate_limit_per_second: None,
        rate_limit_burst: None,
        fresh_share: None,
        breaker: Default::default(),
        success_body: None,
        success_filter: None,
        permanent_statuses: Vec::new(),
        headers: BTreeMap::from([("X-Token".into(), "t0ken".into())]),
        timeout_ms: None,
        max_in_flight: None,
        ordering: Default::default(),
        ordering_on_failure: Default::default(),
        disabled: false,
        disabled_reason: None,
        failing_since: None,
        created_at: now,
        updated_at: now,
        unreadable: None,
    }
}

#[test]
fn an_endpoint_sealed_for_its_row_opens_there_and_nowhere_else() {
    let sealing = Sealing::new((), keys(&[("new", NEW)]));
    let id = Uuid::now_v7();
    let mut stored = endpoint(id);
    let plain = PlainEndpoint::seal(sealing.keys(), &mut stored).unwrap();
    assert!(stored.secret.starts_with("enc:v1:new:"));
    assert!(stored.previous_secrets[0].secret.starts_with("enc:v1:new:"));
    assert!(stored.headers["X-Token"].starts_with("enc:v1:new:"));

    let mut opened = stored.clone();
    sealing.open_endpoint(&mut opened);
    assert!(opened.unreadable.is_none());
    assert_eq!(opened.secret, "s3cret");
    assert_eq!(opened.previous_secrets[0].secret, "old-s3cret");
    assert_eq!(opened.headers["X-Token"], "t0ken");

    // Moved to another row, the values do not open: all read as empty.
    let mut moved = stored.clone();
    moved.id = Uuid::now_v7();
    sealing.open_endpoint(&mut moved);
    assert!(matches!(moved.unreadable, Some(SealError::Corrupt(_))));
    assert_eq!(moved.secret, "");
    assert_eq!(moved.previous_secrets[0].secret, "");
    assert_eq!(moved.headers["X-Token"], "");

    plain.restore(&mut stored);
    assert_eq!(stored.secret, "s3cret");
    assert_eq!(stored.headers["X-Token"], "t0ken");
}

#[test]
fn plaintext_reads_as_itself_until_refused_then_blanks_its_row() {
    let sealing = Sealing::new((), keys(&[("new", NEW)]));
    let mut row = endpoint(Uuid::now_v7());
    sealing.open_endpoint(&mut row);
    assert!(row.unreadable.is_none());
    assert_eq!(row.secret, "s3cret");

    sealing.keys().refuse_plaintext();
    let mut row = endpoint(Uuid::now_v7());
    sealing.open_endpoint(&mut row);
    assert!(matches!(row.unreadable, Some(SealError::Plaintext)));
    assert_eq!(row.secret, "");
    assert_eq!(row.headers["X-Token"], "");
}

#[test]
fn without_keys_or_without_headers_nothing_is_sealed() {
    let headers = BTreeMap::from([("X-Token".to_string(), "t0ken".to_string())]);
    let context = |name: &str| context::notification_header(Uuid::nil(), name);
    assert!(seal_headers(&Keyring::default(), &headers, context).is_none());
    let enabled = keys(&[("new", NEW)]);
    assert!(seal_headers(&enabled, &BTreeMap::new(), context).is_none());
    assert!(PlainEndpoint::seal(&Keyring::default(), &mut endpoint(Uuid::nil())).is_none());
}

#[test]
fn a_reseal_brings_values_under_the_first_key_and_leaves_what_does_not_open() {
    let id = Uuid::now_v7();
    let old = Sealing::new((), keys(&[("old", OLD)]));
    let mut sealed = endpoint(id);
    PlainEndpoint::seal(old.keys(), &mut sealed);
    let row = |e: &Endpoint| EndpointSecrets {
        id: e.id,
        secret: e.secret.clone(),
        previous_secrets: e.previous_secrets.clone(),
        headers: e.headers.clone(),
        url: None,
    };

    let rotated = Sealing::new((), keys(&[("new", NEW), ("old", OLD)]));
    let mut unreadable = 0;
    let mut secrets = row(&sealed);
    assert!(rotated.reseal_endpoint(&mut secrets, &mut unreadable));
    assert!(secrets.secret.starts_with("enc:v1:new:"));
    assert!(secrets.previous_secrets[0]
        .secret
        .starts_with("enc:v1:new:"));
    assert!(secrets.headers["X-Token"].starts_with("enc:v1:new:"));
    let opened = rotated
        .keys()
        .open(&secrets.secret, &context::endpoint_secret(id))
        .unwrap();
    assert_eq!(opened, "s3cret");
    // Done already: nothing to write.
    assert!(!rotated.reseal_endpoint(&mut secrets, &mut unreadable));
    assert_eq!(unreadable, 0);

    // Without the old key, the row is counted and left as it is.
    let retired = Sealing::new((), keys(&[("new", NEW)]));
    let mut secrets = row(&sealed);
    assert!(!retired.reseal_endpoint(&mut secrets, &mut unreadable));
    assert_eq!(unreadable, 1);
    assert_eq!(secrets.secret, sealed.secret);

    // Plaintext is sealed.
    let mut plain = row(&endpoint(id));
    let mut headers = plain.headers.clone();
    assert!(rotated.reseal_endpoint(&mut plain, &mut unreadable));
    assert!(plain.secret.starts_with("enc:v1:new:"));
    assert!(rotated.reseal_notification(id, &mut headers, &mut unreadable));
    assert!(headers["X-Token"].starts_with("enc:v1:new:"));
}
