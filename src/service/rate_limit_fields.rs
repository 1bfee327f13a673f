//! An endpoint's rate limit as the API takes it (`"rate_limit"`): the
//! shape checked here, the bounds by `domain::rate`, each named by field.

use crate::domain::problem::{ErrorCode, Problem};
use crate::domain::rate::{RateLimit, RateLimitError};

/// `{"per_second": 10, "burst": 20}`, each part checked and named.
pub(super) fn parse_rate_limit(value: &serde_json::Value) -> Result<RateLimit, Problem> {
    let shape = || {
        Problem::invalid(
            ErrorCode::InvalidValue,
            "rate_limit",
            "rate_limit is {\"per_second\": number, \"burst\": whole number}, or null for none of its own",
        )
    };
    let fields = value.as_object().ok_or_else(shape)?;
    if fields.keys().any(|k| k != "per_second" && k != "burst") {
        return Err(shape());
    }
    let invalid = |error: RateLimitError| {
        Problem::invalid(ErrorCode::InvalidValue, error.field(), error.to_string())
    };
    let per_second = fields
        .get("per_second")
        .and_then(serde_json::Value::as_f64)
        .ok_or(RateLimitError::PerSecond)
        .map_err(invalid)?;
    let burst = fields
        .get("burst")
        .and_then(serde_json::Value::as_u64)
        .ok_or(RateLimitError::Burst)
        .map_err(invalid)?;
    let burst = u32::try_from(burst).unwrap_or(u32::MAX);
    RateLimit::new(per_second, burst).map_err(invalid)
}
