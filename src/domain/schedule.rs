//! Retry schedules. `delays[0]` is the wait between a notification becoming
//! due and its first attempt; `delays[n]` (n ≥ 1) is the wait after attempt n
//! finished before attempt n+1. After attempt `delays.len()` fails, the
//! notification is exhausted.
//!
//! Producers write a schedule as a preset name (`"alipay"`) or as an array of
//! duration strings (`["0s", "500ms", "2m", "1h"]`).

use std::time::Duration;

use serde_json::Value;

use super::bounded::BoundedJson;
use super::problem::shown;

/// Longest single wait in a schedule.
pub const MAX_DELAY: Duration = Duration::from_secs(30 * 24 * 3600);
/// Most attempts one schedule may ask for.
pub const MAX_ATTEMPTS: usize = 50;

/// A schedule as a request holds it, before it is validated. Its items are
/// counted as they are read: well over `MAX_ATTEMPTS`, so that a schedule a
/// little too long gets the schedule's own error, yet a 15 MiB array is
/// refused without being built.
pub type ScheduleJson = BoundedJson<1000>;

const S: u64 = 1000;
const M: u64 = 60 * S;
const H: u64 = 60 * M;

/// Named schedules. `alipay` is the default.
pub const PRESETS: &[(&str, &[u64])] = &[
    (
        "alipay",
        &[0, 2 * M, 10 * M, 10 * M, H, 2 * H, 6 * H, 15 * H],
    ),
    (
        "wechat",
        &[
            0,
            15 * S,
            15 * S,
            30 * S,
            3 * M,
            10 * M,
            20 * M,
            30 * M,
            30 * M,
            30 * M,
            60 * M,
            3 * H,
            3 * H,
            3 * H,
            6 * H,
            6 * H,
        ],
    ),
    // Exponential back-off over about three days, in the manner of Stripe.
    (
        "exponential",
        &[
            0,
            M,
            5 * M,
            30 * M,
            2 * H,
            5 * H,
            10 * H,
            14 * H,
            20 * H,
            24 * H,
        ],
    ),
];

pub const DEFAULT_PRESET: &str = "alipay";

/// Why a schedule is refused; the client's text in it is cut as `shown`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("unknown schedule preset `{0}` (known: alipay, wechat, exponential)")]
    UnknownPreset(String),
    #[error("a schedule is a preset name or an array of 1 to {MAX_ATTEMPTS} duration strings")]
    WrongShape,
    #[error("`{0}` is not a duration such as \"0s\", \"500ms\", \"2m\" or \"1h\"")]
    BadDuration(String),
    #[error("`{0}` is longer than the 30 days a single wait may last")]
    TooLong(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    name: Option<String>,
    delays_ms: Vec<u64>,
}

impl Default for Schedule {
    fn default() -> Self {
        Self::preset(DEFAULT_PRESET).expect("the default preset exists")
    }
}

impl Schedule {
    pub fn preset(name: &str) -> Option<Self> {
        PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, delays)| Self {
                name: Some((*n).to_string()),
                delays_ms: delays.to_vec(),
            })
    }

    /// Parses the producer's JSON form: a preset name or an array of durations.
    pub fn from_json(value: &Value) -> Result<Self, ScheduleError> {
        match value {
            Value::String(name) => Self::preset(name)
                .ok_or_else(|| ScheduleError::UnknownPreset(shown(name).into_owned())),
            Value::Array(items) if !items.is_empty() && items.len() <= MAX_ATTEMPTS => {
                let delays_ms = items
                    .iter()
                    .map(|item| match item {
                        Value::String(text) => parse_duration(text),
                        other => Err(ScheduleError::BadDuration(
                            shown(&other.to_string()).into_owned(),
                        )),
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Self {
                    name: None,
                    delays_ms,
                })
            }
            _ => Err(ScheduleError::WrongShape),
        }
    }

    /// Rebuilds a schedule read back from storage.
    pub fn from_stored(name: Option<String>, delays_ms: &[i64]) -> Self {
        Self {
            name,
            delays_ms: delays_ms.iter().map(|&d| d.max(0) as u64).collect(),
        }
    }

    /// The JSON form shown by the API: the preset name, or the array.
    pub fn to_json(&self) -> Value {
        match &self.name {
            Some(name) => Value::String(name.clone()),
            None => Value::Array(
                self.delays_ms
                    .iter()
                    .map(|&ms| Value::String(format_duration(ms)))
                    .collect(),
            ),
        }
    }

    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub fn delays_ms(&self) -> Vec<i64> {
        self.delays_ms.iter().map(|&d| d as i64).collect()
    }

    /// How many attempts the schedule allows.
    pub fn max_attempts(&self) -> u32 {
        self.delays_ms.len() as u32
    }

    /// Wait between becoming due and the first attempt.
    pub fn first_delay(&self) -> Duration {
        Duration::from_millis(self.delays_ms[0])
    }

    /// Wait after failed attempt `attempt` (1-based, within the series) before
    /// the next one; `None` when the schedule is exhausted.
    pub fn delay_after(&self, attempt: u32) -> Option<Duration> {
        self.delays_ms
            .get(attempt as usize)
            .map(|&ms| Duration::from_millis(ms))
    }
}

/// The strings `parse_duration` may accept, for the OpenAPI document: `0`,
/// or numbers each followed by one of humantime's units. It is no narrower
/// than the parser (it does not check MAX_DELAY), so what it refuses, the
/// parser refuses too.
pub const DURATION_PATTERN: &str = concat!(
    r"^\s*(0|([0-9][0-9\s]*(\.[0-9\s]+)?",
    r"(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s",
    r"|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d",
    r"|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)\s*)+)$"
);

/// Parses `"0s"`, `"500ms"`, `"2m"`, `"1h"` and combinations (`"1h30m"`).
pub fn parse_duration(text: &str) -> Result<u64, ScheduleError> {
    let trimmed = text.trim();
    let duration = if trimmed == "0" {
        Duration::ZERO
    } else {
        humantime::parse_duration(trimmed)
            .map_err(|_| ScheduleError::BadDuration(shown(text).into_owned()))?
    };
    if duration > MAX_DELAY {
        return Err(ScheduleError::TooLong(shown(text).into_owned()));
    }
    Ok(duration.as_millis() as u64)
}

/// The shortest exact form of a duration in milliseconds: `2m`, `1500ms`.
pub fn format_duration(ms: u64) -> String {
    match ms {
        0 => "0s".to_string(),
        ms if ms % H == 0 => format!("{}h", ms / H),
        ms if ms % M == 0 => format!("{}m", ms / M),
        ms if ms % S == 0 => format!("{}s", ms / S),
        ms => format!("{ms}ms"),
    }
}

/// How a schedule is written: a preset name (`alipay`, `wechat`, `exponential`) or an
/// array of durations (`["0s", "2m", "1h"]`).
// The API takes it as JSON and validates it (`Schedule::from_json`); this
// type only describes it to the OpenAPI document.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
#[schema(example = json!(["0s", "500ms", "2m", "1h"]))]
pub enum ScheduleSpec {
    /// `alipay` (the default), `wechat` or `exponential`.
    #[schema(example = "alipay")]
    Preset(String),
    /// Durations such as `"0s"`, `"500ms"`, `"2m"`, `"1h"`: the wait before
    /// the first attempt, then the wait after each attempt before the next.
    Delays(Vec<String>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_schedule_is_alipay_over_about_a_day() {
        let schedule = Schedule::default();
        assert_eq!(schedule.name(), Some("alipay"));
        assert_eq!(schedule.max_attempts(), 8);
        let total: u64 = schedule.delays_ms.iter().sum();
        assert_eq!(total, 24 * H + 22 * M);
    }

    #[test]
    fn wechat_preset_has_sixteen_attempts() {
        assert_eq!(Schedule::preset("wechat").unwrap().max_attempts(), 16);
    }

    #[test]
    fn arrays_accept_sub_second_entries() {
        let schedule = Schedule::from_json(&json!(["0s", "500ms", "2m", "1h"])).unwrap();
        assert_eq!(schedule.delays_ms, vec![0, 500, 2 * M, H]);
        assert_eq!(schedule.to_json(), json!(["0s", "500ms", "2m", "1h"]));
    }

    #[test]
    fn delay_after_counts_from_the_attempt_that_just_ended() {
        let schedule = Schedule::from_json(&json!(["0s", "1s", "2s"])).unwrap();
        assert_eq!(schedule.first_delay(), Duration::ZERO);
        assert_eq!(schedule.delay_after(1), Some(Duration::from_secs(1)));
        assert_eq!(schedule.delay_after(2), Some(Duration::from_secs(2)));
        assert_eq!(schedule.delay_after(3), None);
    }

    #[test]
    fn malformed_schedules_are_rejected_with_a_reason() {
        assert_eq!(
            Schedule::from_json(&json!("fast")),
            Err(ScheduleError::UnknownPreset("fast".into()))
        );
        assert_eq!(
            Schedule::from_json(&json!([])),
            Err(ScheduleError::WrongShape)
        );
        assert_eq!(
            Schedule::from_json(&json!(5)),
            Err(ScheduleError::WrongShape)
        );
        assert_eq!(
            Schedule::from_json(&json!(["1s", "soon"])),
            Err(ScheduleError::BadDuration("soon".into()))
        );
        assert_eq!(
            Schedule::from_json(&json!([1])),
            Err(ScheduleError::BadDuration("1".into()))
        );
        assert_eq!(
            Schedule::from_json(&json!(["-1s"])),
            Err(ScheduleError::BadDuration("-1s".into()))
        );
        assert_eq!(
            Schedule::from_json(&json!(["90d"])),
            Err(ScheduleError::TooLong("90d".into()))
        );
        let too_many: Vec<_> = (0..=MAX_ATTEMPTS).map(|_| "1s").collect();
        assert_eq!(
            Schedule::from_json(&json!(too_many)),
            Err(ScheduleError::WrongShape)
        );
    }

    #[test]
    fn durations_format_in_their_largest_exact_unit() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(1500), "1500ms");
        assert_eq!(format_duration(90 * S), "90s");
        assert_eq!(format_duration(15 * H), "15h");
    }
}
