//! PostgreSQL with a streaming read replica, as `startup` composes it when
//! `database.read_url` is set: the API's reads (`ReadStore`, `StatsStore`)
//! go through `store::replica::ReplicaReads` to the replica (sealed alike,
//! falling back to the primary on a miss), every other seam to the sealed
//! primary.
//!
//! The replica is the one `scripts/test` starts beside the test PostgreSQL
//! (`pg_replica_start` in scripts/lib/services.sh: `pg_basebackup -R` and a
//! second `postgres`, `HOOKD_TEST_REPLICA_URL`); each test's database
//! reaches it by replication. The wrapper reads the replica as it is and
//! has no wait of its own, and the cases read what they just wrote: a row
//! changed a moment ago reads as it was (the fallback catches only a row
//! the replica lacks), and lists, counts and backlogs lag. So the store's
//! writes here commit with `synchronous_commit = remote_apply` (the
//! replica is the primary's synchronous standby for sessions that ask):
//! a commit returns once the replica shows it, which is what an operator
//! who wants read-your-writes from a replica configures.
//!
//! Behind an asynchronous replica that lags, a case that reads back
//! through `ReadStore` or `StatsStore` what it changed a moment ago fails
//! by design: the wrapper's documented trade (docs/design.md §13), which
//! `tests/it/read_replica.rs` pins (a fresh create found through the
//! fallback, lists lagging). Run once with the replica applying two
//! seconds late (`recovery_min_apply_delay`) and commits not waiting for
//! it, 52 of the 69 cases held and these 17 failed, each reading a row changed,
//! a list, a count or the per-minute counts a moment after the write:
//! `an_attempt_moves_its_notification_once_and_a_second_record_changes_nothing`,
//! `an_attempt_that_lost_to_a_cancel_is_counted_and_changes_no_status`,
//! `a_first_success_keeps_its_attempt_and_a_late_duplicate_adds_none`,
//! `attempts_list_in_number_order_by_pages`,
//! `an_ack_with_the_current_receipt_ends_the_lease_and_a_stale_one_changes_nothing`,
//! `a_lease_that_ran_out_is_recorded_at_the_next_take_and_its_receipt_goes_stale`,
//! `the_same_key_and_payload_gives_the_existing_row_and_another_payload_a_conflict`,
//! `an_event_key_is_idempotent_per_owner`,
//! `notifications_list_newest_or_oldest_first_filtered_without_payloads`,
//! `events_read_with_their_body_and_list_newest_first_filtered`,
//! `a_failure_commits_with_its_operator_event_once`,
//! `a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed`,
//! `an_ended_lease_writes_its_operator_event_once_and_a_refused_answer_kept_is_listed`,
//! `retention_deletes_final_rows_completed_before_the_bound_with_their_attempts`,
//! `the_store_counts_what_moved_once_samples_the_backlog_once_and_forgets_old_minutes`,
//! `the_endpoints_failing_most_come_most_first_up_to_the_limit_and_in_scope`,
//! `rows_the_breaker_ended_count_failed_without_an_attempt_with_their_events_once`
//! (and `a_circuit_change_commits_its_operator_event_only_with_the_change`,
//! added since, reads the operator events' list too).

use chrono::{DateTime, Utc};
use hookd::domain::health::Health;
use hookd::domain::index_owner::{Beat, IndexSeen};
use hookd::domain::operator_event::OperatorEvent;
use hookd::domain::problem::Problem;
use hookd::domain::pull::{Delivery, Receipt};
use hookd::domain::status::Status;
use hookd::store::attempts::Attempt;
use hookd::store::backlog::Backlog;
use hookd::store::breaker::PendingOf;
use hookd::store::cancel::Cancel;
use hookd::store::consumer_tokens::ConsumerTokenRows;
use hookd::store::delivery::{Claimed, DueNotification, Head, Retry};
use hookd::store::endpoints::{Endpoint, EndpointRef};
use hookd::store::events::{Event, EventFilter, Subscriber};
use hookd::store::health::FailingEndpoint;
use hookd::store::housekeeping::{DueBacklog, KeyCursor, PendingCursor};
use hookd::store::notifications::{MostAttempted, Notification, NotificationFilter};
use hookd::store::operations::{EndpointRow, FailedRow, Operation, OperationPage, Started};
use hookd::store::partitions::PartitionUpkeep;
use hookd::store::postgres::PgStore;
use hookd::store::pull::{LeaseDecision, Leased, Leases, LeasesEnded, Taken};
use hookd::store::pull_due::PickDecision;
use hookd::store::recording::{AttemptRecord, Recorded};
use hookd::store::replica::ReplicaReads;
use hookd::store::sealing::Sealing;
use hookd::store::seams::{
    BreakerStore, DeliveryStore, EndpointChange, HousekeepingStore, OperationStore, OperatorTarget,
    PendingRows, PullStore, ReadStore, ResealRows, WriteStore,
};
use hookd::store::stats::{FailingCount, MinuteRow, StatsScope, StatsStore};
use hookd::store::writes::{Committed, Writes};
use hookd::store::{StoreError, StoreKind};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::Backend;

type Sealed = Sealing<PgStore>;

/// The sealed primary for every seam, the replica for the API's reads.
pub struct Replicated {
    primary: Sealed,
    reads: ReplicaReads<Sealed, Sealed>,
}

/// The store over `pool`'s database (`#[sqlx::test]`'s, on the primary)
/// and the same database on the replica, once the replica has it.
pub async fn replicated(pool: PgPool) -> (PgPool, Replicated) {
    let url = std::env::var("HOOKD_TEST_REPLICA_URL").expect(
        "HOOKD_TEST_REPLICA_URL: run the tests with scripts/test, which starts the replica",
    );
    let on_primary = (*pool.connect_options()).clone();
    let database = on_primary
        .get_database()
        .expect("a test database")
        .to_string();
    let writes = PgPoolOptions::new()
        .max_connections(5)
        // A replica that dies mid-run must fail the case, not hang it: the
        // commit's wait for the replica is cancelled after 30 s (it
        // commits on the primary with a warning, and the read then misses).
        .connect_with(on_primary.options([
            ("synchronous_commit", "remote_apply"),
            ("statement_timeout", "30s"),
        ]))
        .await
        .expect("the primary answers");
    // The database and its schema were made without waiting for the
    // replica: a message written in a transaction of this pool commits
    // once the replica has applied everything before it.
    sqlx::query("SELECT pg_logical_emit_message(true, 'hookd-conformance', '')")
        .execute(&writes)
        .await
        .expect("the replica applies what the primary wrote");
    let replica: PgConnectOptions = url.parse().expect("HOOKD_TEST_REPLICA_URL parses");
    let reads = PgPoolOptions::new()
        .max_connections(3)
        .connect_with(replica.database(&database))
        .await
        .expect("the replica has the test database");
    let keys = || super::keys();
    // One movable clock for both sides, as one process has one clock.
    let clock = hookd::clock::Clock::movable();
    let primary = Sealing::new(PgStore::new(writes).with_clock(clock.clone()), keys());
    let reads = Sealing::new(PgStore::new(reads).with_clock(clock), keys());
    let store = Replicated {
        reads: ReplicaReads::new(reads, primary.clone()),
        primary,
    };
    (pool, store)
}

impl hookd::store::seams::Clocked for Replicated {
    fn clock(&self) -> &hookd::clock::Clock {
        self.primary.clock()
    }
}

impl Backend for Replicated {
    fn reseal_rows(&self) -> &dyn ResealRows {
        self.primary.inner()
    }
}

/// Implements `$seam` for `Replicated`, each listed method handing its
/// arguments to the same method of `self.$to`; `$rest` is written out.
macro_rules! through {
    ($seam:ident => $to:ident {
        $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*
    } $($rest:tt)*) => {
        #[async_trait::async_trait]
        impl $seam for Replicated {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    $seam::$name(&self.$to $(, $arg)*).await
                }
            )*
            $($rest)*
        }
    };
}

through!(WriteStore => primary {
    fn commit(&self, writes: Writes) -> Result<Committed, StoreError>;
    fn find_endpoints(&self, ids: &[Uuid], uids: &[String]) -> Result<Vec<Endpoint>, StoreError>;
    fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError>;
    fn subscribers(&self, owners: &[Option<String>]) -> Result<Vec<Subscriber>, StoreError>;
    fn mark_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    fn cancel_notification(&self, id: Uuid, spare: Option<Uuid>) -> Result<Cancel, StoreError>;
    fn cancel_by_key(&self, key: &str, endpoint_id: Option<Uuid>, spare: Option<Uuid>) -> Result<Vec<Uuid>, StoreError>;
    fn cancel_event(&self, id: Uuid) -> Result<Option<Vec<Uuid>>, StoreError>;
    fn retry_notification(&self, id: Uuid, now: DateTime<Utc>, delivering: bool) -> Result<Retry, StoreError>;
    fn create_endpoint(&self, endpoint: &Endpoint) -> Result<Endpoint, StoreError>;
    fn delete_endpoint(&self, by: &EndpointRef) -> Result<Option<Vec<Uuid>>, StoreError>;
    fn revoke_portal_links(&self, by: &EndpointRef) -> Result<Option<(Uuid, i32)>, StoreError>;
    fn revoke_owner_portal_links(&self, owner: &str) -> Result<Option<i32>, StoreError>;
    fn owner_portal_generation(&self, owner: &str) -> Result<Option<i32>, StoreError>;
}
    async fn modify_endpoint<'a>(
        &self,
        by: &EndpointRef,
        change: EndpointChange<'a>,
    ) -> Result<Option<Result<Endpoint, Problem>>, StoreError> {
        WriteStore::modify_endpoint(&self.primary, by, change).await
    }
);

through!(ReadStore => reads {
    fn ping(&self) -> Result<(), StoreError>;
    fn get_notification(&self, id: Uuid) -> Result<Option<Notification>, StoreError>;
    fn list_notifications(&self, filter: &NotificationFilter) -> Result<Vec<Notification>, StoreError>;
    fn notifications_frontier(&self, filter: &NotificationFilter) -> Result<Option<Uuid>, StoreError>;
    fn most_attempted(&self, filter: &MostAttempted) -> Result<Vec<Notification>, StoreError>;
    fn most_attempted_frontier(&self, filter: &MostAttempted) -> Result<Option<(i32, Uuid)>, StoreError>;
    fn key_prefix_ids(&self, prefix: &str, filter: &NotificationFilter, cap: i64) -> Result<Vec<Uuid>, StoreError>;
    fn recent_event_types(&self, endpoint_id: Uuid, owner: Option<&str>, since: Uuid, per_source: i64) -> Result<Vec<String>, StoreError>;
    fn list_attempts(&self, notification_id: Uuid, after: i32, limit: i64) -> Result<Vec<Attempt>, StoreError>;
    fn find_endpoint(&self, by: &EndpointRef) -> Result<Option<Endpoint>, StoreError>;
    fn list_endpoints(&self, before: Option<Uuid>, limit: i64, owner: Option<&str>) -> Result<Vec<Endpoint>, StoreError>;
    fn get_event(&self, id: Uuid) -> Result<Option<Event>, StoreError>;
    fn event_counts(&self, id: Uuid) -> Result<Vec<(Status, i64)>, StoreError>;
    fn list_events(&self, filter: &EventFilter) -> Result<Vec<Event>, StoreError>;
    fn events_frontier(&self, filter: &EventFilter) -> Result<Option<Uuid>, StoreError>;
    fn endpoint_backlog(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<Backlog, StoreError>;
}
    fn kind(&self) -> StoreKind {
        ReadStore::kind(&self.reads)
    }
    async fn close(&self) {
        ReadStore::close(&self.reads).await
    }
);

through!(StatsStore => reads {
    fn minute_counts(&self, scope: &StatsScope, since: DateTime<Utc>) -> Result<Vec<MinuteRow>, StoreError>;
    fn pending_samples(&self, since: DateTime<Utc>) -> Result<Vec<(DateTime<Utc>, i64)>, StoreError>;
    fn most_failing(&self, scope: &StatsScope, since: DateTime<Utc>, limit: i64) -> Result<Vec<FailingCount>, StoreError>;
    fn sample_pending(&self, minute: DateTime<Utc>) -> Result<(), StoreError>;
    fn purge_minutes(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError>;
});

through!(PendingRows => primary {
    fn pending_page(&self, after: Option<PendingCursor>, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
});

through!(DeliveryStore => primary {
    fn load_claimed(&self, ids: &[Uuid], current: &(dyn Fn(Uuid, i64) -> bool + Sync)) -> Result<Claimed, StoreError>;
    fn load_heads(&self, ids: &[Uuid]) -> Result<Vec<Head>, StoreError>;
    fn with_endpoints(&self, notifications: Vec<DueNotification>, current: &(dyn Fn(Uuid, i64) -> bool + Sync)) -> Result<Claimed, StoreError>;
    fn record_attempts(&self, records: &[AttemptRecord], health: &[(Uuid, Health)]) -> Result<Recorded, StoreError>;
    fn cancel_notifications(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    fn hand_to_pull(&self, ids: &[Uuid]) -> Result<(), StoreError>;
});

through!(HousekeepingStore => primary {
    fn needing_index(&self, limit: i64) -> Result<Vec<(Uuid, Option<DateTime<Utc>>)>, StoreError>;
    fn clear_needs_index(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    fn release_stranded(&self, after: Option<Uuid>, limit: i64) -> Result<(u64, Option<Uuid>), StoreError>;
    fn pending_due_before(&self, after: Option<PendingCursor>, due_before: DateTime<Utc>, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    fn still_pending(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    fn pending_created_after(&self, after: Uuid, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    fn purge_completed(&self, before: DateTime<Utc>, after: Option<Uuid>, limit: i64) -> Result<(u64, Option<Uuid>), StoreError>;
    fn purge_events(&self, before: DateTime<Utc>, after: Option<Uuid>, limit: i64) -> Result<(u64, Option<Uuid>), StoreError>;
    fn purge_order_keys(&self, after: Option<KeyCursor>, limit: i64, before: DateTime<Utc>) -> Result<(u64, Option<KeyCursor>), StoreError>;
    fn maintain_partitions(&self, today: chrono::NaiveDate, before: Option<DateTime<Utc>>) -> Result<PartitionUpkeep, StoreError>;
    fn sync_operator_endpoint(&self, target: Option<OperatorTarget<'_>>) -> Result<(), StoreError>;
    fn failing_endpoints(&self, failing_before: DateTime<Utc>) -> Result<Vec<FailingEndpoint>, StoreError>;
    fn disable_endpoints(&self, endpoints: &[FailingEndpoint], reason: &str, events: &[OperatorEvent]) -> Result<Vec<Uuid>, StoreError>;
    fn clock_skew(&self) -> Result<Option<chrono::Duration>, StoreError>;
    fn due_backlog(&self, now: DateTime<Utc>, limit: usize) -> Result<DueBacklog, StoreError>;
    fn beat_index(&self, beat: &Beat) -> Result<Vec<IndexSeen>, StoreError>;
    fn end_index_beats(&self, process: Uuid, now: DateTime<Utc>) -> Result<(), StoreError>;
});

through!(PullStore => primary {
    fn take(&self, endpoint_id: Uuid, max: i64, lease: std::time::Duration, decide: PickDecision<'_>) -> Result<Vec<Taken>, StoreError>;
    fn end_unpulled(&self, max_wait: std::time::Duration, limit: i64, decide: LeaseDecision<'_>) -> Result<Vec<Uuid>, StoreError>;
    fn next_pull_due(&self, endpoint_id: Uuid) -> Result<Option<DateTime<Utc>>, StoreError>;
    fn end_leases(&self, which: Leases<'_>, decide: LeaseDecision<'_>) -> Result<LeasesEnded, StoreError>;
    fn extend_lease(&self, receipt: &Receipt, until: DateTime<Utc>, to: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, StoreError>;
    fn lease_of(&self, id: Uuid) -> Result<Option<Leased>, StoreError>;
    fn follow_delivery(&self, endpoint_id: Uuid, delivery: Delivery) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    fn adopt_strays(&self, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    fn cancel_orphans(&self, limit: i64) -> Result<Vec<Uuid>, StoreError>;
    fn set_consumer_token(&self, endpoint_id: Uuid, digest: &[u8; 32]) -> Result<bool, StoreError>;
    fn consumer_tokens(&self, since: Option<DateTime<Utc>>) -> Result<ConsumerTokenRows, StoreError>;
    fn revoke_consumer_token(&self, endpoint_id: Uuid) -> Result<(), StoreError>;
    fn signal_pull(&self, endpoints: &[Uuid]) -> Result<(), StoreError>;
}
    async fn listen_pull(
        &self,
        woken: &(dyn Fn(Option<Uuid>) + Send + Sync),
        shutdown: &CancellationToken,
    ) {
        PullStore::listen_pull(&self.primary, woken, shutdown).await
    }
);

through!(BreakerStore => primary {
    fn circuits(&self) -> Result<Vec<(Uuid, hookd::domain::breaker::Circuit)>, StoreError>;
    fn circuits_of(&self, endpoints: &[Uuid]) -> Result<Vec<(Uuid, hookd::domain::breaker::Circuit)>, StoreError>;
    fn set_circuit(&self, endpoint: Uuid, seen: &hookd::domain::breaker::Circuit, new: &hookd::domain::breaker::Circuit, event: Option<&OperatorEvent>) -> Result<bool, StoreError>;
    fn pending_of(&self, endpoint: Uuid, which: PendingOf, after: Option<(DateTime<Utc>, Uuid)>, until: DateTime<Utc>, limit: i64) -> Result<Vec<(Uuid, DateTime<Utc>)>, StoreError>;
    fn mark_released(&self, ids: &[Uuid]) -> Result<(), StoreError>;
    fn due_count(&self, endpoint: Uuid, now: DateTime<Utc>) -> Result<i64, StoreError>;
    fn fail_held(&self, held: &[(Uuid, i32, i32)], last_error: &str, events: &[OperatorEvent]) -> Result<Vec<Uuid>, StoreError>;
});

through!(OperationStore => primary {
    fn start_operation(&self, operation: &Operation) -> Result<Started, StoreError>;
    fn get_operation(&self, id: Uuid) -> Result<Option<Operation>, StoreError>;
    fn lease_operation(&self, holder: Uuid, now: DateTime<Utc>, until: DateTime<Utc>) -> Result<Option<Operation>, StoreError>;
    fn operation_page(&self, id: Uuid, holder: Uuid, limit: i64, now: DateTime<Utc>, until: DateTime<Utc>) -> Result<Option<OperationPage>, StoreError>;
    fn failed_page(&self, endpoint: Uuid, after: (DateTime<Utc>, Uuid), until: DateTime<Utc>, limit: i64) -> Result<Vec<FailedRow>, StoreError>;
    fn endpoint_page(&self, endpoint: Uuid, before: Uuid, limit: i64) -> Result<Vec<EndpointRow>, StoreError>;
    fn fail_operation(&self, id: Uuid, holder: Uuid, error: &str, now: DateTime<Utc>) -> Result<(), StoreError>;
    fn release_operation(&self, id: Uuid, holder: Uuid) -> Result<(), StoreError>;
    fn purge_operations(&self, before: DateTime<Utc>, limit: i64) -> Result<u64, StoreError>;
});
