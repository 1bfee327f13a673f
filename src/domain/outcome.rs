//! What an attempt's result means for the notification: delivered, retry at
//! a time, or failed for good. A pure function of the response, the
//! endpoint's policy and the schedule.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::jitter::scaled;
use super::schedule::Schedule;
use super::success::SuccessRule;

/// Longest a `Retry-After` may push the next attempt.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Retry { at: DateTime<Utc> },
    Failed(FailReason),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailReason {
    /// The schedule ran out.
    Exhausted,
    /// A status in the endpoint's `permanent_statuses` (410 by default).
    PermanentStatus,
    /// The receiver answered `webhook-delivery: abort`.
    Aborted,
    /// A pull notification no consumer took within `pull.max_wait`.
    NotPulled,
}

impl Outcome {
    /// What the attempt row records of it.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Succeeded => OutcomeKind::Succeeded,
            Outcome::Retry { .. } => OutcomeKind::Retry,
            Outcome::Failed(_) => OutcomeKind::Failed,
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// An attempt's outcome as its row stores it (the `outcome` column, text):
/// the retry time and the reason for a failure are not kept there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutcomeKind {
    Succeeded,
    Retry,
    Failed,
}

impl OutcomeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Succeeded => "succeeded",
            OutcomeKind::Retry => "retry",
            OutcomeKind::Failed => "failed",
        }
    }
}

impl std::fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the receiver answered, as far as the decision needs it.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: u16,
    /// The body, possibly truncated; `body_complete` says whether it was.
    pub body: Vec<u8>,
    pub body_complete: bool,
    pub abort: bool,
    pub retry_after: Option<Duration>,
}

/// The endpoint's delivery policy.
#[derive(Debug, Clone)]
pub struct Policy<'a> {
    pub success: &'a SuccessRule,
    pub permanent_statuses: &'a [i32],
    pub schedule: &'a Schedule,
    /// What the schedule's wait is multiplied by: the endpoint's jitter
    /// drawn for this attempt (`Jitter::draw`), 1 for none.
    pub wait_factor: f64,
}

/// Decides what follows attempt `attempt_in_series` (1-based within the
/// current series) that finished at `finished_at`. `answer` is `None` when
/// no response came (timeout, refused connection, blocked address...).
pub fn decide(
    answer: Option<&Answer>,
    policy: &Policy<'_>,
    attempt_in_series: u32,
    finished_at: DateTime<Utc>,
) -> Outcome {
    if let Some(answer) = answer {
        // A truncated body cannot pass a rule that reads it.
        let body_ok = !policy.success.reads_body() || answer.body_complete;
        if body_ok && policy.success.accepts(answer.status, &answer.body) {
            return Outcome::Succeeded;
        }
        if answer.abort {
            return Outcome::Failed(FailReason::Aborted);
        }
        if policy
            .permanent_statuses
            .contains(&i32::from(answer.status))
        {
            return Outcome::Failed(FailReason::PermanentStatus);
        }
    }
    let Some(wait) = policy.schedule.delay_after(attempt_in_series) else {
        return Outcome::Failed(FailReason::Exhausted);
    };
    let mut wait = scaled(wait, policy.wait_factor);
    if let Some(answer) = answer {
        if matches!(answer.status, 429 | 503) {
            if let Some(asked) = answer.retry_after {
                // Later than the schedule, never earlier; and within a day.
                // What the receiver asked for is honoured as given, unjittered.
                wait = wait.max(asked.min(MAX_RETRY_AFTER));
            }
        }
    }
    Outcome::Retry {
        at: finished_at + chrono::Duration::from_std(wait).unwrap_or_default(),
    }
}

/// Parses `Retry-After`: delay-seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schedule() -> Schedule {
        Schedule::from_json(&json!(["0s", "10s", "20s"])).unwrap()
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
            body_complete: true,
            ..Default::default()
        }
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn a_failure_retries_after_the_schedules_next_wait_until_it_runs_out() {
        let rule = SuccessRule::default();
        let schedule = schedule();
        let policy = Policy {
            success: &rule,
            permanent_statuses: &[410],
            schedule: &schedule,
            wait_factor: 1.0,
        };
        assert_eq!(
            decide(Some(&answer(500, "")), &policy, 1, at(0)),
            Outcome::Retry { at: at(10) }
        );
        assert_eq!(
            decide(None, &policy, 2, at(0)),
            Outcome::Retry { at: at(20) }
        );
        assert_eq!(
            decide(None, &policy, 3, at(0)),
            Outcome::Failed(FailReason::Exhausted)
        );
    }

    #[test]
    fn success_body_decides_between_ok_and_success() {
        let rule = SuccessRule {
            body: Some("success".into()),
            filter: None,
        };
        let schedule = schedule();
        let policy = Policy {
            success: &rule,
            permanent_statuses: &[410],
            schedule: &schedule,
            wait_factor: 1.0,
        };
        assert_eq!(
            decide(Some(&answer(200, "success\n")), &policy, 1, at(0)),
            Outcome::Succeeded
        );
        assert!(matches!(
            decide(Some(&answer(200, "ok")), &policy, 1, at(0)),
            Outcome::Retry { .. }
        ));
        let mut truncated = answer(200, "success");
        truncated.body_complete = false;
        assert!(matches!(
            decide(Some(&truncated), &policy, 1, at(0)),
            Outcome::Retry { .. }
        ));
    }

    #[test]
    fn gone_and_abort_end_the_schedule_at_once() {
        let rule = SuccessRule::default();
        let schedule = schedule();
        let policy = Policy {
            success: &rule,
            permanent_statuses: &[410, 404],
            schedule: &schedule,
            wait_factor: 1.0,
        };
        assert_eq!(
            decide(Some(&answer(410, "")), &policy, 1, at(0)),
            Outcome::Failed(FailReason::PermanentStatus)
        );
        assert_eq!(
            decide(Some(&answer(404, "")), &policy, 1, at(0)),
            Outcome::Failed(FailReason::PermanentStatus)
        );
        let mut abort = answer(500, "");
        abort.abort = true;
        assert_eq!(
            decide(Some(&abort), &policy, 1, at(0)),
            Outcome::Failed(FailReason::Aborted)
        );
    }

    #[test]
    fn retry_after_only_pushes_later_and_at_most_a_day() {
        let rule = SuccessRule::default();
        let schedule = schedule();
        let policy = Policy {
            success: &rule,
            permanent_statuses: &[410],
            schedule: &schedule,
            wait_factor: 1.0,
        };
        let mut busy = answer(429, "");
        busy.retry_after = Some(Duration::from_secs(60));
        assert_eq!(
            decide(Some(&busy), &policy, 1, at(0)),
            Outcome::Retry { at: at(60) }
        );
        busy.retry_after = Some(Duration::from_secs(1));
        assert_eq!(
            decide(Some(&busy), &policy, 1, at(0)),
            Outcome::Retry { at: at(10) }
        );
        busy.retry_after = Some(Duration::from_secs(7 * 24 * 3600));
        assert_eq!(
            decide(Some(&busy), &policy, 1, at(0)),
            Outcome::Retry { at: at(24 * 3600) }
        );
        // Only 429 and 503 are heeded.
        let mut error = answer(500, "");
        error.retry_after = Some(Duration::from_secs(60));
        assert_eq!(
            decide(Some(&error), &policy, 1, at(0)),
            Outcome::Retry { at: at(10) }
        );
    }

    #[test]
    fn jitter_scales_the_schedules_wait_but_not_what_retry_after_asks() {
        let rule = SuccessRule::default();
        let schedule = schedule();
        let mut policy = Policy {
            success: &rule,
            permanent_statuses: &[410],
            schedule: &schedule,
            wait_factor: 1.5,
        };
        // The schedule's 10 s after attempt 1, scaled.
        assert_eq!(
            decide(None, &policy, 1, at(0)),
            Outcome::Retry { at: at(15) }
        );
        let mut busy = answer(503, "");
        busy.retry_after = Some(Duration::from_secs(60));
        assert_eq!(
            decide(Some(&busy), &policy, 1, at(0)),
            Outcome::Retry { at: at(60) }
        );
        // A shorter Retry-After than the jittered wait: the jittered wait.
        policy.wait_factor = 0.5;
        busy.retry_after = Some(Duration::from_secs(7));
        assert_eq!(
            decide(Some(&busy), &policy, 1, at(0)),
            Outcome::Retry { at: at(7) }
        );
        busy.retry_after = Some(Duration::from_secs(1));
        assert_eq!(
            decide(Some(&busy), &policy, 1, at(0)),
            Outcome::Retry { at: at(5) }
        );
    }

    #[test]
    fn an_outcome_is_stored_as_its_kind_without_time_or_reason() {
        assert_eq!(Outcome::Succeeded.kind(), OutcomeKind::Succeeded);
        assert_eq!(Outcome::Retry { at: at(5) }.kind(), OutcomeKind::Retry);
        for reason in [
            FailReason::Exhausted,
            FailReason::PermanentStatus,
            FailReason::Aborted,
        ] {
            assert_eq!(Outcome::Failed(reason).kind(), OutcomeKind::Failed);
        }
        assert_eq!(Outcome::Retry { at: at(5) }.as_str(), "retry");
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = DateTime::parse_from_rfc2822("Sun, 06 Nov 1994 08:49:37 GMT")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
