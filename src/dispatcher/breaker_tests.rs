//! The breaker's view, as a waiting notification asks it.

use uuid::Uuid;

use super::View;
use crate::domain::breaker::{Circuit, Policy, State};

const POLICY: Policy = Policy {
    failures: 3,
    open_ms: 1000,
    max_open_ms: 1000,
};

fn view_of(endpoint: Uuid, unrecorded: i32) -> View {
    let mut view = View::default();
    view.policies.insert(endpoint, POLICY);
    if unrecorded > 0 {
        view.unrecorded.insert(endpoint, unrecorded);
    }
    view
}

#[test]
fn a_waiting_notification_is_stopped_once_the_failures_not_yet_counted_would_open_its_circuit() {
    let (endpoint, waiting) = (Uuid::now_v7(), Uuid::now_v7());
    assert!(
        !view_of(endpoint, 2).stops(endpoint, waiting),
        "two of three"
    );
    assert!(
        view_of(endpoint, 3).stops(endpoint, waiting),
        "three of three"
    );

    // Counted and foreseen add up.
    let mut view = view_of(endpoint, 1);
    view.circuits.insert(
        endpoint,
        Circuit {
            failures: 2,
            ..Circuit::default()
        },
    );
    assert!(view.stops(endpoint, waiting));
    assert!(!view.stops(Uuid::now_v7(), waiting), "another endpoint's");
}

#[test]
fn a_waiting_notification_is_stopped_by_an_open_circuit_unless_it_is_the_probe() {
    let (endpoint, waiting, probe) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let mut view = view_of(endpoint, 0);
    assert!(!view.stops(endpoint, waiting), "closed, nothing foreseen");
    view.circuits.insert(
        endpoint,
        Circuit {
            state: State::Open,
            ..Circuit::default()
        },
    );
    view.probes.insert(probe);
    assert!(view.stops(endpoint, waiting));
    assert!(!view.stops(endpoint, probe));
}
