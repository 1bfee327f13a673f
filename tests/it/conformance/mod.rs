//! One conformance suite for the store seams (`store::seams`): each case is
//! a generic function over any backend, calling only the seam traits
//! (never SQL, never a backend's own methods), so it says what every
//! backend must do. `conformance!` stamps out one test per case for a
//! backend; a backend is added with one line below, naming how a test gets
//! a fresh, empty store of it (and what must outlive it).

mod breaker;
mod cancel_retry;
mod clock;
mod delivery;
mod due_age;
mod endpoints;
mod events;
pub(crate) mod fixtures;
mod housekeeping;
pub(crate) mod leases;
mod notifications;
mod operations;
mod ordering;
mod pull;
mod pull_mode;
mod replica;
mod reseal;
mod stats;

use hookd::clock::Clock;
use hookd::store::postgres::PgStore;
use hookd::store::sealing::Sealing;
use hookd::store::seams::{
    BreakerStore, DeliveryStore, HousekeepingStore, OperationStore, PullStore, ReadStore,
    ResealRows, WriteStore,
};
use hookd::store::sqlite::SqliteStore;

/// Everything a backend implements (`StatsStore` comes with `ReadStore`,
/// `PendingRows` with `HousekeepingStore`): the cases take any of these.
/// Each is `Clocked` too: every case's store runs on a movable clock of
/// its own (`postgres_store`, `sqlite_store`), which the clock cases move.
pub trait Backend:
    WriteStore
    + ReadStore
    + DeliveryStore
    + HousekeepingStore
    + PullStore
    + BreakerStore
    + OperationStore
{
    /// The rows a reseal walk pages over, as stored: the backend's own
    /// (a wrapper implements no `ResealRows`: the walk runs over what it
    /// wraps, `sealing::reseal`).
    fn reseal_rows(&self) -> &dyn ResealRows;
}

impl Backend for PgStore {
    fn reseal_rows(&self) -> &dyn ResealRows {
        self
    }
}

impl Backend for SqliteStore {
    fn reseal_rows(&self) -> &dyn ResealRows {
        self
    }
}

impl<S: Backend> Backend for Sealing<S>
where
    Sealing<S>: WriteStore
        + ReadStore
        + DeliveryStore
        + HousekeepingStore
        + PullStore
        + BreakerStore
        + OperationStore,
{
    fn reseal_rows(&self) -> &dyn ResealRows {
        self.inner().reseal_rows()
    }
}

/// Stamps out, in a module named `$backend`, one test per case, each
/// marked `#[$test]`, taking `$params` and building its store with
/// `$store`. The list of cases is written here once, for every backend.
macro_rules! conformance {
    ($backend:ident, #[$test:meta], $params:tt, $store:expr) => {
        conformance!(@stamp $backend, #[$test], $params, $store;
            endpoints {
                a_created_endpoint_is_found_by_id_and_by_uid_as_it_was_given,
                a_duplicate_uid_is_a_conflict_and_stores_nothing,
                endpoints_list_newest_first_by_keyset_and_by_owner,
                a_change_under_lock_is_written_and_a_refused_one_changes_nothing,
                deleting_an_endpoint_cancels_its_pending_notifications_and_frees_its_uid,
                subscribers_are_the_live_enabled_endpoints_of_the_owners_asked,
            }
            notifications {
                a_committed_notification_reads_back_as_given,
                the_same_key_and_payload_gives_the_existing_row_and_another_payload_a_conflict,
                a_full_batch_commits_every_row_and_a_key_met_in_it_is_found_not_created,
                a_key_is_unique_per_endpoint_only,
                notifications_list_newest_or_oldest_first_filtered_without_payloads,
                the_most_attempted_come_first_and_those_attempted_once_not_at_all,
                marks_for_indexing_are_kept_for_pending_rows_until_cleared,
            }
            events {
                an_event_key_is_idempotent_per_owner,
                events_read_with_their_body_and_list_newest_first_filtered,
                a_commit_asked_for_endpoint_versions_gives_those_a_claim_reads,
                one_key_twice_in_one_commit_creates_the_first_and_finds_it_for_the_second,
                an_event_is_never_written_for_another_owners_endpoint,
            }
            cancel_retry {
                a_cancel_by_id_takes_only_a_pending_notification_not_spared,
                a_cancel_by_key_takes_the_pending_ones_of_that_key_but_the_spared_endpoint,
                cancelling_an_event_cancels_its_pending_deliveries,
                a_failed_notification_is_retried_as_a_new_series_from_now,
                a_retry_refuses_final_in_flight_and_unknown_notifications,
                a_pending_notification_not_in_flight_is_retried_at_once,
            }
            delivery {
                a_claim_loads_its_notifications_and_each_stale_endpoint_once,
                an_endpoint_change_gives_it_a_new_version,
                a_claimed_delivery_of_an_event_carries_the_event_body_and_type,
                a_claim_of_a_deleted_endpoint_says_so_and_its_rows_can_be_cancelled,
                notifications_at_hand_come_with_their_stale_endpoints,
                an_attempt_moves_its_notification_once_and_a_second_record_changes_nothing,
                an_attempt_that_lost_to_a_cancel_is_counted_and_changes_no_status,
                a_batch_moves_the_rows_still_as_expected_and_names_only_those,
                an_attempt_of_a_series_a_retry_replaced_changes_nothing,
                a_first_success_keeps_its_attempt_and_a_late_duplicate_adds_none,
                a_failure_commits_with_its_operator_event_once,
                endpoint_health_is_set_by_a_first_failure_and_cleared_by_a_success,
                attempts_list_in_number_order_by_pages,
                an_attempts_headers_and_retry_mark_are_kept_in_its_row_and_inline,
                claimed_rows_of_an_endpoint_now_pull_are_handed_to_its_consumers,
            }
            housekeeping {
                pending_rows_page_in_due_order_by_keyset,
                pending_due_before_stops_at_its_bound,
                still_pending_keeps_only_pending_push_rows,
                pending_created_after_pages_in_id_order,
                retention_deletes_final_rows_completed_before_the_bound_with_their_attempts,
                retention_walks_the_rows_in_pages_by_cursor,
                retention_deletes_events_only_once_their_deliveries_are_gone,
                retention_forgets_a_key_once_none_of_its_notifications_is_left_and_no_stored_one_holds_it,
                a_failing_endpoint_is_disabled_once_with_its_event_unless_it_changed,
                re_enabling_a_disabled_endpoint_forgets_its_failures,
                an_index_beat_keeps_its_first_sighting_and_returns_the_live_ones,
            }
            ordering {
                a_notification_waiting_for_a_holder_retention_removed_is_its_keys_head_again,
                the_walk_for_orphans_goes_a_page_at_a_time_and_comes_round,
                the_walks_that_fill_the_index_leave_out_one_waiting_behind_its_key,
                recording_the_end_of_a_keys_head_names_the_next_one_it_released,
                a_recorded_success_lets_a_pull_successor_wait_for_a_consumer_from_then,
                a_recorded_success_of_a_keys_tail_leaves_the_next_create_its_head,
                of_two_records_of_a_keys_head_in_one_batch_the_one_that_moved_it_decides_what_it_releases,
            }
            due_age {
                the_due_backlog_names_the_endpoints_due_longest_by_whether_attempted_and_counts_them,
            }
            pull {
                a_take_leases_due_pull_rows_earliest_first_up_to_its_max,
                a_lease_is_extended_only_by_its_current_receipt_at_the_end_it_was_read_at,
                an_ack_with_the_current_receipt_ends_the_lease_and_a_stale_one_changes_nothing,
                a_lease_that_ran_out_is_recorded_at_the_next_take_and_its_receipt_goes_stale,
                an_expired_lease_is_recorded_only_if_not_extended_since_it_was_read,
                expired_leases_are_read_only_once_run_out,
                pull_rows_nobody_took_in_time_end,
                an_ended_lease_writes_its_operator_event_once_and_a_refused_answer_kept_is_listed,
            }
            breaker {
                a_circuit_is_written_only_over_the_state_it_was_read_in,
                pending_rows_of_an_endpoint_come_in_due_order_and_without_a_url_when_asked,
                a_held_row_ends_failed_only_in_the_attempt_count_and_series_it_was_held_at,
                a_release_marks_only_pending_rows_never_attempted_and_they_load_on_the_backlog_lane,
                a_circuit_change_commits_its_operator_event_only_with_the_change,
            }
            clock {
                a_lease_runs_until_the_clock_passes_its_end_and_is_then_taken_back,
                a_ran_out_lease_is_swept_only_once_the_clock_passes_its_end,
                a_pull_nobody_takes_ends_once_the_clock_passes_its_wait,
                strays_and_orphans_are_looked_for_within_the_window_the_clock_says,
                an_operation_lease_is_taken_over_only_once_the_clock_passes_its_end,
                a_database_with_a_clock_of_its_own_reports_how_far_the_process_clock_moved_from_it,
            }
            pull_mode {
                next_pull_due_is_the_earliest_due_or_lease_end,
                following_a_switch_to_pull_and_back_moves_only_what_differs,
                strays_and_orphans_push_or_pull_follow_their_endpoint,
                consumer_tokens_are_read_all_then_by_change,
                a_switch_to_push_revokes_the_consumer_token_in_its_own_commit,
                a_pull_signal_wakes_listeners_of_its_endpoint,
            }
            operations {
                one_operation_of_a_kind_runs_per_endpoint_and_reads_back_as_stored,
                a_lease_goes_to_one_holder_until_it_runs_out_or_is_given_back,
                a_recover_pages_through_the_failed_rows_of_its_window_only_for_its_holder,
                a_recover_whose_endpoint_was_deleted_ends_failed_and_restarts_nothing,
                a_bulk_retry_restarts_only_the_failed_rows_its_filter_holds,
                a_bulk_cancel_cancels_only_the_pending_rows_its_filter_holds_created_before_it,
                purging_operations_takes_only_finished_ones_before_the_bound_up_to_the_limit,
            }
            stats {
                the_store_counts_what_moved_once_samples_the_backlog_once_and_forgets_old_minutes,
                the_endpoints_failing_most_come_most_first_up_to_the_limit_and_in_scope,
                rows_the_breaker_ended_count_failed_without_an_attempt_with_their_events_once,
            }
            reseal {
                a_reseal_page_passes_endpoints_not_under_the_prefix_in_id_order_and_writes_back_what_changed,
                a_reseal_page_of_notifications_passes_only_those_with_a_header_value_not_under_the_prefix,
            }
        );
    };
    (@stamp $backend:ident, #[$test:meta], $params:tt, $store:expr;
        $($module:ident { $($case:ident),* $(,)? })*
    ) => {
        mod $backend {
            $($(
                #[$test]
                async fn $case $params {
                    // What must outlive the store (a temporary directory),
                    // and the store.
                    let (_kept, store) = $store;
                    crate::conformance::$module::$case(store).await;
                }
            )*)*
        }
    };
}

// PostgreSQL: a fresh database per test (`#[sqlx::test]`), the store over
// it; each store on a clock of its own, which the clock cases move.
conformance!(
    postgres,
    #[sqlx::test],
    (_: sqlx::postgres::PgPoolOptions, connect: sqlx::postgres::PgConnectOptions),
    {
        let (pool, closes) = crate::helpers::test_pool(connect).await;
        (closes, crate::conformance::postgres_store(pool))
    }
);

// SQLite: a fresh file per test in a temporary directory, migrated.
conformance!(
    sqlite,
    #[tokio::test],
    (),
    crate::conformance::sqlite_store().await
);

pub(crate) fn postgres_store(pool: sqlx::PgPool) -> PgStore {
    PgStore::new(pool).with_clock(Clock::movable())
}

async fn sqlite_store() -> (tempfile::TempDir, SqliteStore) {
    let (kept, store) = crate::sqlite_writes::store().await;
    (kept, store.with_clock(Clock::movable()))
}

/// The key the sealed backends seal under.
fn keys() -> hookd::domain::sealed::Keyring {
    hookd::domain::sealed::Keyring::new([(
        "conformance",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    )])
    .unwrap()
}

// Both again behind the sealing wrapper (`store::sealing`), as every
// process runs them with `secrets.keys` set: what crosses it is sealed at
// rest, and every case must hold through it.
conformance!(
    sealed_postgres,
    #[sqlx::test],
    (_: sqlx::postgres::PgPoolOptions, connect: sqlx::postgres::PgConnectOptions),
    {
        let (pool, closes) = crate::helpers::test_pool(connect).await;
        (
            closes,
            hookd::store::sealing::Sealing::new(
                crate::conformance::postgres_store(pool),
                crate::conformance::keys(),
            ),
        )
    }
);

conformance!(sealed_sqlite, #[tokio::test], (), {
    let (kept, store) = crate::conformance::sqlite_store().await;
    (
        kept,
        hookd::store::sealing::Sealing::new(store, crate::conformance::keys()),
    )
});

// PostgreSQL with a streaming read replica behind the sealing wrapper, as
// `database.read_url` composes it: the API's reads through
// `store::replica::ReplicaReads` (`conformance::replica` says how the
// replica keeps up with what a case just wrote).
conformance!(
    replica_postgres,
    #[sqlx::test],
    (_: sqlx::postgres::PgPoolOptions, connect: sqlx::postgres::PgConnectOptions),
    {
        let (pool, closes) = crate::helpers::test_pool(connect).await;
        let (kept, store) = crate::conformance::replica::replicated(pool).await;
        ((closes, kept), store)
    }
);
