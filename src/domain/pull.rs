//! Pull consumption (docs/design.md §10): how an endpoint is delivered to, the
//! bounds of a pull, the receipts that name one lease, and what a nack or
//! a lease that ran out makes of the notification. No I/O.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::jitter::scaled;
use super::outcome::{FailReason, Outcome, MAX_RETRY_AFTER};
use super::problem::{shown, ErrorCode, Problem};
use super::schedule::{parse_duration, Schedule};

/// How an endpoint's notifications reach it: POSTed by hookd (`push`), or
/// taken by its consumers (`pull`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    #[default]
    Push,
    Pull,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Push => "push",
            Delivery::Pull => "pull",
        }
    }
}

pub const DEFAULT_MAX: u32 = 10;
pub const MAX_MAX: u32 = 1000;
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
pub const MIN_LEASE: Duration = Duration::from_secs(1);
pub const MAX_LEASE: Duration = Duration::from_secs(12 * 3600);
pub const MAX_WAIT: Duration = Duration::from_secs(20);
/// How far back housekeeping looks for rows written against a stale view
/// of an endpoint: pending rows whose push/pull mode is not their
/// endpoint's (a switch a process had not seen yet: `adopt_strays`) and
/// rows of an endpoint deleted meanwhile (`cancel_orphans`).
/// Endpoint caches live a second; a day is far past any of them.
pub const STRAY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The oldest endpoint change or delete that `STRAY_WINDOW` looks at, as
/// of `now`.
pub fn strays_since(now: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    super::lease::window_start(now, STRAY_WINDOW)
}

/// A pull, within its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Take {
    pub max: u32,
    pub lease: Duration,
    pub wait: Duration,
}

/// Parses the bounds of a pull: `max` 1..1000 (10), `lease` 1s..12h
/// (30s), `wait` 0s..20s (0s).
pub fn take(max: Option<i64>, lease: Option<&str>, wait: Option<&str>) -> Result<Take, Problem> {
    let max = max.unwrap_or(i64::from(DEFAULT_MAX));
    let Some(max) = u32::try_from(max)
        .ok()
        .filter(|max| (1..=MAX_MAX).contains(max))
    else {
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            "max",
            format!("max is 1 to {MAX_MAX}"),
        ));
    };
    let lease = match lease {
        Some(text) => lease_duration(text, "lease")?,
        None => DEFAULT_LEASE,
    };
    let wait = match wait {
        Some(text) => {
            let wait = duration(text, "wait", WAIT_RANGE)?;
            if wait > MAX_WAIT {
                return Err(out_of_range("wait", text, WAIT_RANGE));
            }
            wait
        }
        None => Duration::ZERO,
    };
    Ok(Take { max, lease, wait })
}

/// A lease length, 1s..12h (`lease` of a pull, of an extend).
pub fn lease_duration(text: &str, field: &str) -> Result<Duration, Problem> {
    let lease = duration(text, field, "1s to 12h")?;
    if !(MIN_LEASE..=MAX_LEASE).contains(&lease) {
        return Err(out_of_range(field, text, "1s to 12h"));
    }
    Ok(lease)
}

fn duration(text: &str, field: &str, range: &str) -> Result<Duration, Problem> {
    parse_duration(text)
        .map(Duration::from_millis)
        .map_err(|_| out_of_range(field, text, range))
}

/// A duration outside `range` ("1s to 12h"), with examples inside it.
fn out_of_range(field: &str, text: &str, range: &str) -> Problem {
    let examples = if range == WAIT_RANGE {
        "\"1s\", \"20s\""
    } else {
        "\"30s\", \"5m\""
    };
    Problem::invalid(
        ErrorCode::InvalidValue,
        field,
        format!(
            "`{}` is not a duration from {range} ({examples})",
            shown(text)
        ),
    )
}

/// A pull's `wait`, as its messages name it.
const WAIT_RANGE: &str = "0s to 20s";

/// Names one lease of one notification: what ack, nack and extend present.
/// Opaque to consumers (`hkr_` and 43 characters); the lease id in it is
/// random, so a receipt cannot be guessed from the notification's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    pub notification: Uuid,
    pub lease: Uuid,
}

const RECEIPT_PREFIX: &str = "hkr_";
/// A receipt's shape for the OpenAPI document: the prefix, then 32 bytes
/// in base64url without padding.
pub const RECEIPT_PATTERN: &str = r"^hkr_[A-Za-z0-9_-]{43}$";

impl Receipt {
    pub fn encode(&self) -> String {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(self.notification.as_bytes());
        bytes[16..].copy_from_slice(self.lease.as_bytes());
        format!("{RECEIPT_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The receipt in `text`, or a problem naming `field`.
    pub fn parse(text: &str, field: &str) -> Result<Self, Problem> {
        let invalid = || {
            Problem::invalid(
                ErrorCode::InvalidReceipt,
                field,
                "not a receipt: use the `receipt` a pull returned, as it was",
            )
        };
        let encoded = text.strip_prefix(RECEIPT_PREFIX).ok_or_else(invalid)?;
        // 32 bytes are 43 characters: nothing longer is decoded.
        if encoded.len() != 43 {
            return Err(invalid());
        }
        let bytes = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| invalid())?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| invalid())?;
        let notification = Uuid::from_slice(&bytes[..16]).map_err(|_| invalid())?;
        let lease = Uuid::from_slice(&bytes[16..]).map_err(|_| invalid())?;
        Ok(Self {
            notification,
            lease,
        })
    }
}

/// What every consumer token starts with: the API tells them from API
/// tokens by it.
pub const CONSUMER_TOKEN_PREFIX: &str = "hkc_";

/// A new consumer token: `hkc_` and 32 random bytes, base64url.
pub fn new_consumer_token() -> String {
    let mut bytes = [0u8; 32];
    rand::fill(&mut bytes);
    format!("{CONSUMER_TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// Whether an endpoint's consumer token works: while the endpoint exists
/// and is pull. Switching it to push, or deleting it, revokes the token;
/// a token never outlives its endpoint's pull mode.
pub fn consumer_token_works(endpoint_deleted: bool, delivery: Delivery) -> bool {
    !endpoint_deleted && delivery == Delivery::Pull
}

/// Whether a change of an endpoint's mode from `before` to `after` revokes
/// its consumer token for good: a switch to push, deleted in the switch's
/// own commit, so that no failure after it leaves the token to work again
/// once the endpoint is switched back to pull.
pub fn switch_revokes_token(before: Delivery, after: Delivery) -> bool {
    before == Delivery::Pull && after == Delivery::Push
}

/// Why a leased attempt did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The consumer said so (`nack`): `retry_after` may push the next
    /// attempt later than the schedule (never earlier), and `permanent`
    /// ends the notification `failed` at once.
    Nack {
        retry_after: Option<Duration>,
        permanent: bool,
    },
    /// Nobody acked or nacked before the lease ran out.
    LeaseExpired,
    /// The endpoint switched to push while a consumer held the lease: the
    /// consumer may have processed it, and the push attempt follows at
    /// once (not after the schedule's wait: hookd ended the lease, not the
    /// receiver). Recorded so that the history shows the hand-over, and the
    /// push attempt is numbered after it.
    SwitchedToPush,
    /// hookd could not hand it over: a sealed custom header does not open
    /// (its key is missing from `secrets.keys`). As for push, the attempt
    /// fails and the schedule goes on, so putting the key back heals it.
    Unopened,
    /// No consumer took it within `pull.max_wait` of its due time
    /// (`not_pulled`): it ends `failed`.
    NotPulled {
        /// When it became due: the attempt starts there.
        due_at: DateTime<Utc>,
        /// When `pull.max_wait` ran out: the attempt ends there, however
        /// late the check notices.
        gave_up_at: DateTime<Utc>,
    },
}

/// What follows a failed leased attempt, `attempt_in_series` (1-based
/// within the current series), that ended at `ended_at`: the schedule goes
/// on as for push, its wait scaled by `wait_factor` (the endpoint's jitter,
/// `Jitter::draw`), a consumer's `retry_after` as given.
pub fn after_failure(
    failure: &Failure,
    schedule: &Schedule,
    wait_factor: f64,
    attempt_in_series: u32,
    ended_at: DateTime<Utc>,
) -> Outcome {
    let retry_after = match failure {
        Failure::Nack {
            permanent: true, ..
        } => return Outcome::Failed(FailReason::Aborted),
        Failure::NotPulled { .. } => return Outcome::Failed(FailReason::NotPulled),
        Failure::SwitchedToPush => return Outcome::Retry { at: ended_at },
        Failure::Nack { retry_after, .. } => *retry_after,
        Failure::LeaseExpired | Failure::Unopened => None,
    };
    let Some(wait) = schedule.delay_after(attempt_in_series) else {
        return Outcome::Failed(FailReason::Exhausted);
    };
    let wait = scaled(wait, wait_factor);
    let wait = retry_after.map_or(wait, |asked| wait.max(asked.min(MAX_RETRY_AFTER)));
    Outcome::Retry {
        at: ended_at + chrono::Duration::from_std(wait).unwrap_or_default(),
    }
}

/// The error an attempt row records for a failure: `(code, message)`.
pub fn failure_error(failure: &Failure, message: Option<&str>) -> (&'static str, String) {
    match failure {
        Failure::Nack { permanent, .. } => (
            if *permanent { "nack_permanent" } else { "nack" },
            message.unwrap_or("the consumer nacked it").to_string(),
        ),
        Failure::LeaseExpired => (
            "lease_expired",
            "the lease ran out before an ack or nack".to_string(),
        ),
        Failure::SwitchedToPush => (
            "switched_to_push",
            "the endpoint switched to push while a consumer held the lease".to_string(),
        ),
        Failure::Unopened => (
            "sealed_secret",
            message
                .unwrap_or("cannot decrypt the notification's custom headers")
                .to_string(),
        ),
        Failure::NotPulled { .. } => (
            "not_pulled",
            message
                .unwrap_or("no consumer took it within pull.max_wait")
                .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_switch_from_pull_to_push_revokes_the_token() {
        assert!(switch_revokes_token(Delivery::Pull, Delivery::Push));
        assert!(!switch_revokes_token(Delivery::Push, Delivery::Pull));
        assert!(!switch_revokes_token(Delivery::Pull, Delivery::Pull));
        assert!(!switch_revokes_token(Delivery::Push, Delivery::Push));
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn a_consumer_token_works_only_while_its_endpoint_exists_and_is_pull() {
        assert!(consumer_token_works(false, Delivery::Pull));
        assert!(!consumer_token_works(false, Delivery::Push));
        assert!(!consumer_token_works(true, Delivery::Pull));
    }

    #[test]
    fn a_receipt_reads_back_as_the_lease_it_names() {
        let receipt = Receipt {
            notification: Uuid::now_v7(),
            lease: Uuid::new_v4(),
        };
        let text = receipt.encode();
        assert!(text.starts_with("hkr_"));
        assert_eq!(Receipt::parse(&text, "receipt"), Ok(receipt));
        for bad in ["", "hkr_", "hkr_abc", &text[4..], &format!("{text}A")] {
            let problem = Receipt::parse(bad, "receipt").unwrap_err();
            assert_eq!(problem.code, ErrorCode::InvalidReceipt, "{bad}");
        }
    }

    #[test]
    fn pull_bounds_are_enforced_with_the_field_named() {
        assert_eq!(
            take(None, None, None).unwrap(),
            Take {
                max: 10,
                lease: Duration::from_secs(30),
                wait: Duration::ZERO
            }
        );
        assert!(take(Some(1000), Some("12h"), Some("20s")).is_ok());
        for (max, lease, wait, field) in [
            (Some(0), None, None, "max"),
            (Some(1001), None, None, "max"),
            (Some(-1), None, None, "max"),
            (Some(i64::from(u32::MAX) + 1), None, None, "max"),
            (None, Some("0s"), None, "lease"),
            (None, Some("13h"), None, "lease"),
            (None, Some("soon"), None, "lease"),
            (None, None, Some("21s"), "wait"),
        ] {
            let problem = take(max, lease, wait).unwrap_err();
            assert_eq!(problem.field.as_deref(), Some(field));
        }
    }

    #[test]
    fn a_nack_follows_the_schedule_and_retry_after_only_pushes_it_later() {
        let schedule = Schedule::from_stored(None, &[0, 120_000, 600_000]);
        let nack = |retry_after| Failure::Nack {
            retry_after,
            permanent: false,
        };
        assert_eq!(
            after_failure_exact(&nack(None), &schedule, 1, at(0)),
            Outcome::Retry { at: at(120) }
        );
        assert_eq!(
            after_failure_exact(&nack(Some(Duration::from_secs(5))), &schedule, 1, at(0)),
            Outcome::Retry { at: at(120) }
        );
        assert_eq!(
            after_failure_exact(&nack(Some(Duration::from_secs(300))), &schedule, 1, at(0)),
            Outcome::Retry { at: at(300) }
        );
        assert_eq!(
            after_failure_exact(&Failure::LeaseExpired, &schedule, 3, at(0)),
            Outcome::Failed(FailReason::Exhausted)
        );
        assert_eq!(
            after_failure(
                &Failure::Nack {
                    retry_after: None,
                    permanent: true
                },
                &schedule,
                1.0,
                1,
                at(0)
            ),
            Outcome::Failed(FailReason::Aborted)
        );
    }

    /// Without jitter.
    fn after_failure_exact(
        failure: &Failure,
        schedule: &Schedule,
        attempt_in_series: u32,
        ended_at: DateTime<Utc>,
    ) -> Outcome {
        after_failure(failure, schedule, 1.0, attempt_in_series, ended_at)
    }

    #[test]
    fn jitter_scales_a_nacks_wait_but_not_the_consumers_retry_after() {
        let schedule = Schedule::from_stored(None, &[0, 120_000]);
        let nack = |retry_after| Failure::Nack {
            retry_after,
            permanent: false,
        };
        assert_eq!(
            after_failure(&nack(None), &schedule, 1.5, 1, at(0)),
            Outcome::Retry { at: at(180) }
        );
        assert_eq!(
            after_failure(
                &nack(Some(Duration::from_secs(100))),
                &schedule,
                0.5,
                1,
                at(0)
            ),
            Outcome::Retry { at: at(100) }
        );
    }

    #[test]
    fn a_notification_that_cannot_be_opened_fails_its_attempt_and_the_schedule_goes_on() {
        let schedule = Schedule::from_stored(None, &[0, 120_000]);
        assert_eq!(
            after_failure_exact(&Failure::Unopened, &schedule, 1, at(0)),
            Outcome::Retry { at: at(120) }
        );
        assert_eq!(
            after_failure_exact(&Failure::Unopened, &schedule, 2, at(0)),
            Outcome::Failed(FailReason::Exhausted)
        );
        assert_eq!(
            failure_error(&Failure::Unopened, Some("cannot decrypt: key `gone`")).0,
            "sealed_secret"
        );
    }

    #[test]
    fn a_lease_ended_by_a_switch_to_push_is_due_at_once_even_after_the_last_attempt() {
        let schedule = Schedule::from_stored(None, &[0, 120_000]);
        for in_series in [1, 2] {
            assert_eq!(
                after_failure_exact(&Failure::SwitchedToPush, &schedule, in_series, at(7)),
                Outcome::Retry { at: at(7) }
            );
        }
        assert_eq!(
            failure_error(&Failure::SwitchedToPush, None).0,
            "switched_to_push"
        );
    }
}
