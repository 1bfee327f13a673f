//! The circuit breaker's rule (`breaker.rs`), case by case.

use super::*;

const POLICY: Policy = Policy {
    failures: 5,
    open_ms: 30_000,
    max_open_ms: 600_000,
};

fn t(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(1_800_000_000_000 + ms).unwrap()
}

#[test]
fn timeouts_connection_errors_5xx_and_429_count_other_answers_do_not() {
    assert!(counts(Some(503), None));
    assert!(counts(Some(500), None));
    assert!(counts(Some(429), None));
    assert!(counts(None, Some("timeout")));
    assert!(counts(None, Some("connect")));
    assert!(counts(None, Some("tls")));
    assert!(!counts(Some(400), None));
    assert!(!counts(Some(404), None));
    assert!(!counts(Some(410), None));
    assert!(!counts(Some(200), None));
    assert!(!counts(None, Some("blocked_address")));
    assert!(!counts(None, Some("https_required")));
    assert!(!says_anything(None, Some("sealed_secret")));
    assert!(says_anything(Some(404), None));
}

#[test]
fn five_consecutive_failures_open_the_circuit() {
    let closed = Circuit::default();
    let (four, change) = closed
        .after_attempts(&[true; 4], POLICY, t(0), 1.0)
        .unwrap();
    assert_eq!(change, Change::Counted);
    assert_eq!(four.failures, 4);
    let (open, change) = four.after_attempts(&[true], POLICY, t(10), 1.0).unwrap();
    assert_eq!(change, Change::Opened);
    assert_eq!(open.state, State::Open);
    assert_eq!(open.opened_at, Some(t(10)));
    assert_eq!(open.next_probe_at, Some(t(30_010)));
    assert_eq!(open.open_ms, 30_000);
}

#[test]
fn an_answer_between_failures_starts_the_count_again() {
    let (circuit, _) = Circuit::default()
        .after_attempts(&[true, true, true, false, true], POLICY, t(0), 1.0)
        .unwrap();
    assert_eq!(circuit.failures, 1);
    assert_eq!(circuit.state, State::Closed);
    assert!(Circuit::default()
        .after_attempts(&[false, false], POLICY, t(0), 1.0)
        .is_none());
}

#[test]
fn failures_after_it_opened_change_nothing_and_an_answer_closes_it() {
    let (open, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 1.0)
        .unwrap();
    assert!(open
        .after_attempts(&[true, true], POLICY, t(5), 1.0)
        .is_none());
    let (closed, change) = open.after_attempts(&[false], POLICY, t(6), 1.0).unwrap();
    assert_eq!(change, Change::Closed);
    assert_eq!(closed.state, State::Closed);
    assert_eq!(closed.release_passes, RELEASE_PASSES);
    assert!(closed.release_due(t(6)));
}

#[test]
fn a_failed_probe_doubles_the_period_up_to_the_cap_and_keeps_when_it_opened() {
    let (mut circuit, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 1.0)
        .unwrap();
    let mut periods = Vec::new();
    for step in 1..8 {
        let now = t(step * 1000);
        assert!(circuit.probe_due(t(10_000_000)));
        circuit = circuit.probing(now + Duration::seconds(60));
        assert!(!circuit.probe_due(now));
        let (next, change) = circuit.after_attempts(&[true], POLICY, now, 1.0).unwrap();
        assert_eq!(change, Change::Opened);
        assert_eq!(next.opened_at, Some(t(0)));
        periods.push(next.open_ms);
        circuit = next;
    }
    assert_eq!(
        periods,
        [60_000, 120_000, 240_000, 480_000, 600_000, 600_000, 600_000]
    );
}

#[test]
fn the_open_period_is_jittered_within_twenty_percent() {
    let (low, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 0.0)
        .unwrap();
    let (high, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 9.0)
        .unwrap();
    assert_eq!(low.next_probe_at, Some(t(24_000)));
    assert_eq!(high.next_probe_at, Some(t(36_000)));
    for _ in 0..100 {
        let factor = draw_factor();
        assert!((0.8..=1.2).contains(&factor));
    }
}

#[test]
fn a_lapsed_probe_claim_lets_another_process_probe() {
    let (open, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 1.0)
        .unwrap();
    assert!(!open.probe_due(t(29_999)));
    assert!(open.probe_due(t(30_000)));
    let probing = open.probing(t(90_000));
    assert!(!probing.probe_due(t(89_999)));
    assert!(probing.probe_due(t(90_000)));
}

#[test]
fn turning_the_breaker_off_closes_an_open_circuit_and_releases_what_it_held() {
    assert!(Circuit::default().turned_off(t(0)).is_none());
    let (open, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 1.0)
        .unwrap();
    let (closed, change) = open.turned_off(t(5)).unwrap();
    assert_eq!(change, Change::Closed);
    assert!(closed.release_due(t(5)));
}

#[test]
fn a_notification_is_held_until_its_deadline_then_fails() {
    let max = Duration::milliseconds(1000);
    assert_eq!(hold(t(0), t(10), max), Hold::Park(t(1000)));
    assert_eq!(hold(t(0), t(1000), max), Hold::Fail);
}

#[test]
fn the_release_is_done_at_once_after_a_stale_view_and_after_a_lease_then_the_circuit_is_clean() {
    let (open, _) = Circuit::default()
        .after_attempts(&[true; 5], POLICY, t(0), 1.0)
        .unwrap();
    let (closed, _) = open.after_attempts(&[false], POLICY, t(100), 1.0).unwrap();
    let once = closed.released(t(200), Duration::seconds(60));
    assert!(!once.release_due(t(2_100)));
    assert!(once.release_due(t(2_200)));
    let twice = once.released(t(2_200), Duration::seconds(60));
    assert!(!twice.release_due(t(62_100)));
    assert!(twice.release_due(t(62_200)));
    let thrice = twice.released(t(62_200), Duration::seconds(60));
    assert!(thrice.is_clean());
}

#[test]
fn settings_out_of_bounds_are_named() {
    let bad = |p: Policy| p.invalid().map(|(field, _)| field);
    assert_eq!(bad(POLICY), None);
    assert_eq!(
        bad(Policy {
            failures: 0,
            ..POLICY
        }),
        Some("failures")
    );
    assert_eq!(
        bad(Policy {
            open_ms: 0,
            ..POLICY
        }),
        Some("open_ms")
    );
    assert_eq!(
        bad(Policy {
            max_open_ms: 10,
            ..POLICY
        }),
        Some("max_open_ms")
    );
    let off = Override {
        off: true,
        ..Override::default()
    };
    assert_eq!(off.resolve(POLICY), None);
    let own = Override {
        open_ms: Some(900_000),
        ..Override::default()
    };
    assert_eq!(own.resolve(POLICY).unwrap().max_open_ms, 900_000);
}

#[test]
fn a_circuit_read_clean_is_inserted_whatever_it_becomes() {
    let clean = Circuit::default();
    let (open, _) = clean.after_attempts(&[true; 5], POLICY, t(0), 1.0).unwrap();
    assert_eq!(write(&clean, &open), Write::Insert);
    assert_eq!(write(&clean, &clean), Write::Insert);
}

#[test]
fn a_stored_circuit_that_becomes_clean_is_deleted_and_any_other_change_updated() {
    let counted = Circuit {
        failures: 2,
        ..Circuit::default()
    };
    let more = Circuit {
        failures: 3,
        ..Circuit::default()
    };
    assert_eq!(write(&counted, &Circuit::default()), Write::Delete);
    assert_eq!(write(&counted, &more), Write::Update);
}
