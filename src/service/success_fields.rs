//! An endpoint's success rule as the API takes it: `success_body` (a 2xx
//! with that body) or `success_filter` (a 2xx whose JSON body satisfies a
//! filter, `domain::success`), one of the two at most.

use serde_json::value::RawValue;

use super::filter_fields::filter_of;
use crate::domain::problem::{ErrorCode, Problem};
use crate::store::endpoints::Endpoint;

/// Applies the fields a request gave (absent: unchanged; `Some(None)`:
/// cleared) and refuses an endpoint left with both rules, naming the
/// field this request set.
pub(super) fn apply_success_rule(
    endpoint: &mut Endpoint,
    body: Option<Option<String>>,
    filter: Option<Option<Box<RawValue>>>,
) -> Result<(), Problem> {
    if let Some(body) = body {
        if body
            .as_ref()
            .is_some_and(|b| b.trim_ascii().is_empty() || b.len() > 1024 || b.contains('\0'))
        {
            return Err(Problem::invalid(
                ErrorCode::InvalidValue,
                "success_body",
                "success_body is 1 to 1024 bytes of non-blank text, or null",
            ));
        }
        endpoint.success_body = body.map(|b| b.trim_ascii().to_string());
    }
    let sets_filter = filter.is_some();
    if let Some(filter) = filter {
        endpoint.success_filter = filter
            .as_deref()
            .map(|text| filter_of(text, "success_filter"))
            .transpose()?;
    }
    if endpoint.success_body.is_some() && endpoint.success_filter.is_some() {
        let (field, other) = if sets_filter {
            ("success_filter", "success_body")
        } else {
            ("success_body", "success_filter")
        };
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            field,
            format!(
                "an endpoint acknowledges by success_body or by success_filter, not both: set {other} to null with it"
            ),
        ));
    }
    Ok(())
}
