//! Validators shared by more than one resource (endpoints, notifications,
//! events): URLs, custom headers and schedules, each refusing with a
//! `Problem` that names the field.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fields::{header_problem, MAX_HEADERS, MAX_HEADERS_BYTES};
use super::problem::{shown, ErrorCode, Problem};
use super::schedule::Schedule;

/// Longest URL hookd stores.
pub const MAX_URL_BYTES: usize = 2048;

/// A receiver URL: http(s), with a host, without credentials. Returns it
/// normalised.
pub fn check_url(text: &str, field: &str, https_only: bool) -> Result<url::Url, Problem> {
    let invalid = |message: &str| Problem::invalid(ErrorCode::InvalidUrl, field, message);
    if text.len() > MAX_URL_BYTES {
        return Err(invalid("a url is at most 2048 bytes"));
    }
    let url =
        url::Url::parse(text.trim()).map_err(|e| invalid(&format!("not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("the url must use http or https"));
    }
    if https_only && url.scheme() != "https" {
        return Err(invalid("the url must use https (sender.https_only)"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("the url must name a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "the url must not carry credentials (user:password@); send them in `headers`, whose values are kept secret",
        ));
    }
    Ok(url)
}

pub fn parse_schedule(value: &Value, field: &str) -> Result<Schedule, Problem> {
    Schedule::from_json(value)
        .map_err(|e| Problem::invalid(ErrorCode::InvalidSchedule, field, e.to_string()))
}

/// Custom headers: at most `MAX_HEADERS`, `MAX_HEADERS_BYTES` in all, each
/// a valid header that hookd does not own.
pub fn check_headers(headers: &BTreeMap<String, String>, field: &str) -> Result<(), Problem> {
    if headers.len() > MAX_HEADERS {
        return Err(Problem::invalid(
            ErrorCode::InvalidValue,
            field,
            format!("at most {MAX_HEADERS} custom headers"),
        ));
    }
    let total: usize = headers.iter().map(|(n, v)| n.len() + v.len()).sum();
    if total > MAX_HEADERS_BYTES {
        return Err(Problem::too_large(
            field,
            format!("the custom headers hold {total} bytes; at most {MAX_HEADERS_BYTES} in all"),
        ));
    }
    for (name, value) in headers {
        if let Some(problem) = header_problem(name, value) {
            return Err(Problem::invalid(
                ErrorCode::InvalidHeader,
                format!("{field}.{}", shown(name)),
                problem,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_with_credentials_or_another_scheme_is_refused() {
        assert!(check_url("https://a:b@example.com/", "url", false).is_err());
        assert!(check_url("ftp://example.com/", "url", false).is_err());
        assert!(check_url("http://example.com/", "url", true).is_err());
        let ok = check_url(" https://example.com/notify ", "url", true).unwrap();
        assert_eq!(ok.as_str(), "https://example.com/notify");
    }
}
