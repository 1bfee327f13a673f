//! Validators shared by more than one resource (endpoints, notifications,
//! events): URLs, custom headers and schedules, each refusing with a
//! `Problem` that names the field.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fields::{header_problem, MASK, MAX_HEADERS, MAX_HEADERS_BYTES};
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
    if holds_mask(&url) {
        return Err(invalid(&format!(
            "the url holds `{MASK}` where a caller without the `secrets` scope is shown a secret (a query value or a path segment): send the url with the secret itself, or it would replace the secret"
        )));
    }
    Ok(url)
}

/// Whether a path segment or a query value of `url` is the mask a caller
/// who may not see secrets is shown in their place
/// (`receiver_url::UrlMask::show`): a URL read that way and sent back as
/// it was shown would store the mask over the secret.
fn holds_mask(url: &url::Url) -> bool {
    let in_path = url
        .path_segments()
        .is_some_and(|mut segments| segments.any(|segment| segment == MASK));
    let in_query = url.query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair.split_once('=').map_or(pair, |(_, value)| value) == MASK)
    });
    in_path || in_query
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
    let mut names = std::collections::HashSet::new();
    for (name, value) in headers {
        let problem = header_problem(name, value).or_else(|| {
            // HTTP header names are one name whatever their case: only one
            // of two that differ by case would be sent.
            (!names.insert(name.to_ascii_lowercase()))
                .then(|| "another custom header has this name in another case".to_string())
        });
        if let Some(problem) = problem {
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

    #[test]
    fn a_url_holding_the_mask_where_a_secret_is_shown_is_refused() {
        for masked in [
            "https://example.com/hooks/***",
            "https://example.com/***/notify",
            "https://example.com/notify?token=***",
            "https://example.com/notify?a=1&***",
        ] {
            assert!(check_url(masked, "url", false).is_err(), "{masked}");
        }
        for kept in [
            "https://example.com/notify?token=a***",
            "https://example.com/***x",
            "https://example.com/notify?***=1",
        ] {
            assert!(check_url(kept, "url", false).is_ok(), "{kept}");
        }
    }

    #[test]
    fn two_custom_headers_whose_names_differ_only_by_case_are_refused() {
        let headers = BTreeMap::from([
            ("X-A".to_string(), "1".to_string()),
            ("x-a".into(), "2".into()),
        ]);
        let problem = check_headers(&headers, "headers").unwrap_err();
        assert_eq!(problem.field.as_deref(), Some("headers.x-a"));
        let apart = BTreeMap::from([
            ("X-A".to_string(), "1".to_string()),
            ("X-B".into(), "2".into()),
        ]);
        assert!(check_headers(&apart, "headers").is_ok());
    }
}
