//! The embedded hookd whose file the copy tests copy: its data written
//! through the store's seams (the conformance fixtures), sealed with a key,
//! then the store closed, as a stopped hookd leaves its file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use hookd::domain::bulk::BulkFilter;
use hookd::domain::sealed::Keyring;
use hookd::store::endpoints::{Endpoint, PreviousSecret};
use hookd::store::operations::{Operation, OperationStore};
use hookd::store::sealing::Sealing;
use hookd::store::seams::{HousekeepingStore, OperatorTarget, PullStore, WriteStore};
use hookd::store::sqlite::{SqliteOptions, SqliteStore};
use sha2::Digest;
use tempfile::TempDir;
use uuid::Uuid;

use crate::conformance::fixtures::{self, attempt, retry_in, FAILED};
use crate::conformance::leases;

pub const KEY: &str = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// Batches of 100 notifications beside the handful of special ones: more
/// than a page of the copy.
const BATCHES: usize = 7;

/// An embedded hookd's file, stopped, and what a test needs to know of it.
pub struct Embedded {
    _dir: TempDir,
    pub path: PathBuf,
    pub push: Endpoint,
    pub pull: Endpoint,
    /// The pull endpoint's consumer token.
    pub token: String,
    /// Pending push notifications to `push`, each to be delivered once.
    pub to_push: Vec<Uuid>,
    /// One of them, after a failed first attempt.
    pub retried: Uuid,
    /// The event's delivery to the other push endpoint.
    pub to_event: Uuid,
    /// A pending pull row nobody holds, and one under a consumer's lease.
    pub to_pull: Uuid,
    pub leased: Uuid,
    /// A bulk cancel that matches none of them, running under the lease of
    /// the embedded process that stopped.
    pub operation: Uuid,
}

pub fn keyring() -> Keyring {
    Keyring::new([("k", KEY)]).unwrap()
}

/// Writes an embedded hookd's data through the seams, sealed under `KEY`:
/// endpoints of both kinds (with custom headers, a rotated-out secret, an
/// owner), the operator endpoint, pending notifications (one retried, one
/// with headers), finished ones (succeeded at once; failed, with its
/// operator event), an event fanned out to a push and a pull endpoint, a
/// pull lease and a consumer token. Receivers are under `base`.
pub async fn embedded(base: &str) -> Embedded {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hookd.db");
    let sqlite = SqliteStore::open(&path, &SqliteOptions::migrating())
        .await
        .unwrap();
    let store = Sealing::new(sqlite.clone(), keyring());
    let operator = format!("{base}/operator");
    HousekeepingStore::sync_operator_endpoint(
        &store,
        Some(OperatorTarget::plain(&operator, SECRET)),
    )
    .await
    .unwrap();
    let push = fixtures::create(
        &store,
        Endpoint {
            url: Some(format!("{base}/a")),
            headers: BTreeMap::from([("X-Tenant".into(), "acme".into())]),
            previous_secrets: vec![PreviousSecret {
                secret: "whsec_b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xk".into(),
                expires_at: Utc::now() + Duration::days(1),
            }],
            ..fixtures::endpoint()
        },
    )
    .await;
    let other = fixtures::create(
        &store,
        Endpoint {
            url: Some(format!("{base}/c")),
            owner: Some("acme".into()),
            event_types: Some(vec!["order.*".into()]),
            schedule_jitter: 0.25,
            rate_limit_per_second: Some(12.5),
            rate_limit_burst: Some(7),
            fresh_share: Some(0.3),
            ..fixtures::endpoint()
        },
    )
    .await;
    // acme's too: an event reaches only its owner's endpoints.
    let pull = Endpoint {
        owner: Some("acme".into()),
        ..fixtures::pull_endpoint()
    };
    let pull = fixtures::create(&store, pull).await;
    // acme's portal links revoked: the server refuses them too.
    WriteStore::revoke_owner_portal_links(&store, "acme")
        .await
        .unwrap()
        .expect("acme has an endpoint");

    let mut with_headers = fixtures::notification(&push);
    with_headers.key = Some("order-1".into());
    with_headers.headers = BTreeMap::from([("X-Trace".into(), "t1".into())]);
    let mut to_push = vec![fixtures::commit_new(&store, with_headers).await];
    let retried = fixtures::pending(&store, &push).await;
    fixtures::record(&store, &[attempt(retried, push.id, 1, retry_in(0))]).await;
    to_push.push(retried);
    for _ in 0..BATCHES {
        let batch = (0..100).map(|_| fixtures::notification(&push)).collect();
        for inserted in fixtures::commit(&store, batch).await {
            match inserted {
                hookd::store::notifications::Inserted::Created(n) => to_push.push(n.id),
                other => panic!("not created: {other:?}"),
            }
        }
    }
    let succeeded = fixtures::pending(&store, &push).await;
    let failed = fixtures::pending(&store, &push).await;
    fixtures::record(
        &store,
        &[
            attempt(
                succeeded,
                push.id,
                1,
                hookd::domain::outcome::Outcome::Succeeded,
            ),
            attempt(failed, push.id, 1, FAILED),
        ],
    )
    .await;

    let leased = fixtures::pending(&store, &pull).await;
    let taken = leases::take(&store, pull.id, 10, StdDuration::from_secs(3600)).await;
    assert_eq!(taken.len(), 1);
    let (_, deliveries) =
        fixtures::event(&store, Some("acme"), "order.paid", &[&other, &pull]).await;
    let token = hookd::domain::pull::new_consumer_token();
    let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
    PullStore::set_consumer_token(&store, pull.id, &digest)
        .await
        .unwrap();

    let nothing = BulkFilter {
        key_prefix: Some("nothing-".into()),
        ..BulkFilter::default()
    };
    let operation = Operation::cancel(push.id, nothing, Utc::now());
    OperationStore::start_operation(&store, &operation)
        .await
        .unwrap();
    let (holder, now) = (Uuid::now_v7(), Utc::now());
    OperationStore::lease_operation(&store, holder, now, now + Duration::hours(1))
        .await
        .unwrap()
        .expect("the operation is free to take");

    drop(store);
    sqlite.close().await;
    Embedded {
        _dir: dir,
        path,
        push,
        pull,
        token,
        to_push,
        retried,
        to_event: deliveries[0],
        to_pull: deliveries[1],
        leased,
        operation: operation.id,
    }
}
