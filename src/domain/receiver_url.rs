//! Rules about receiver URLs that protect what an endpoint carries: whether
//! a per-notification URL lies under the endpoint's own URL (only then do
//! the endpoint's custom headers, its credentials often, go with it), and
//! how a URL is shown to a caller who may not read secrets (query-string
//! values and path segments that look like credentials masked: chat
//! webhooks carry their token in the path). Pure.

use url::Url;

/// Whether `url` lies under `base`: the same scheme, host and port, and a
/// path equal to `base`'s or continuing it after a `/` (`/hooks/a/x` is
/// under `/hooks/a`; `/hooks/a-evil` and `/hooks/b` are not). A trailing
/// `/` on `base`'s path is not significant. Dot segments (`..`, `%2e%2e`)
/// were resolved when the URLs were parsed; what follows `base`'s path may
/// not hold an encoded `/`, `\`, `.` or `%` (double encoding), a `;` (path
/// parameters: some servers read `..;/` as `..`) or a `..`, which a
/// receiver might decode into a path outside `base`'s, so such a URL is not
/// under it. When `base` has a query (hosted inboxes route tenants by
/// one), `url` must have the same query.
pub fn lies_under(url: &Url, base: &Url) -> bool {
    if url.scheme() != base.scheme()
        || url.host() != base.host()
        || url.port_or_known_default() != base.port_or_known_default()
    {
        return false;
    }
    if base.query().is_some() && url.query() != base.query() {
        return false;
    }
    // Both parsed as http(s): their paths start with `/`.
    let prefix = base.path().trim_end_matches('/');
    let Some(rest) = url.path().strip_prefix(prefix) else {
        return false;
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return false;
    }
    let rest = rest.to_ascii_lowercase();
    !["%2f", "%5c", "%2e", "%25", ";", ".."]
        .iter()
        .any(|unsafe_part| rest.contains(unsafe_part))
}

/// Whether an attempt to `url` (a notification's own URL, or `None`: the
/// endpoint's) tells of the endpoint's receiver, so that it counts for the
/// endpoint's circuit breaker and health (#47): the endpoint's own URL, or
/// one under it. A per-notification URL elsewhere is another receiver,
/// which any `write` token may name: its failures must not open the
/// endpoint's circuit, serve as its probe or start its `failing_since`.
pub fn tells_of_endpoint(url: Option<&str>, own: Option<&Url>) -> bool {
    match (url, own) {
        (None, _) => true,
        (Some(url), Some(own)) => Url::parse(url).is_ok_and(|url| lies_under(&url, own)),
        (Some(_), None) => false,
    }
}

/// How receiver URLs are shown to callers without the `secrets` scope
/// (and in logs): `UrlMask::show`. Holds the operator's extra patterns
/// (`api.secret_path_patterns`); the default has none.
#[derive(Debug, Clone, Default)]
pub struct UrlMask {
    patterns: Vec<regex::Regex>,
}

/// Shortest path segment taken for a credential by its look alone.
pub const CREDENTIAL_SEGMENT_LEN: usize = 16;

impl UrlMask {
    /// With `patterns`: a path segment any of them matches is masked too.
    pub fn new(patterns: &[String]) -> Result<Self, regex::Error> {
        let patterns = patterns
            .iter()
            .map(|p| regex::Regex::new(p))
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// `text` as a caller without the `secrets` scope sees it: its origin
    /// and path, with every path segment after the first that looks like a
    /// credential (`looks_like_credential`, or a configured pattern)
    /// replaced by `***`, or, with `whole_path` (an endpoint's
    /// `url_secret`), the whole path; every query-string value masked
    /// (`?token=***`: names stay, so the caller sees which parameters are
    /// set); the fragment, which a receiver never sees, dropped. A text
    /// that is not a URL is masked whole.
    pub fn show(&self, text: &str, whole_path: bool) -> String {
        let Ok(mut url) = Url::parse(text) else {
            return "***".to_string();
        };
        url.set_fragment(None);
        if whole_path {
            if !matches!(url.path(), "" | "/") {
                url.set_path("/***");
            }
        } else if let Some(segments) = url.path_segments() {
            let segments: Vec<&str> = segments.collect();
            let masked: Vec<&str> = segments
                .iter()
                .enumerate()
                .map(|(n, segment)| {
                    let secret = n > 0
                        && (looks_like_credential(segment)
                            || self.patterns.iter().any(|p| p.is_match(segment)));
                    if secret {
                        "***"
                    } else {
                        segment
                    }
                })
                .collect();
            if masked != segments {
                url.set_path(&format!("/{}", masked.join("/")));
            }
        }
        mask_query_of(url)
    }
}

/// Whether a path segment reads as a token rather than a name: at least
/// `CREDENTIAL_SEGMENT_LEN` characters of letters, digits, `-` and `_`,
/// with a digit among them (`B0123ABCD`-style ids and random tokens have
/// one; `order-notifications` has none), or 24 and more without a `-` or
/// `_` (an unbroken random string). Errs on the side of masking: a caller
/// with the `secrets` scope sees the URL whole.
pub fn looks_like_credential(segment: &str) -> bool {
    let token_chars = segment
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !token_chars || segment.len() < CREDENTIAL_SEGMENT_LEN {
        return false;
    }
    segment.bytes().any(|b| b.is_ascii_digit())
        || (segment.len() >= 24 && !segment.contains(['-', '_']))
}

/// `text` with query values and credential-like path segments masked, by
/// the default rule (`UrlMask::show`): for `Debug` and logs, which know no
/// configuration.
pub fn mask_url(text: &str) -> String {
    UrlMask::default().show(text, false)
}

fn mask_query_of(mut url: Url) -> String {
    let Some(query) = url.query() else {
        return url.into();
    };
    let masked: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) => format!("{name}=***"),
            // A bare `?token` is a value too.
            None if !pair.is_empty() => "***".to_string(),
            None => String::new(),
        })
        .collect();
    url.set_query(Some(&masked.join("&")));
    url.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under(url: &str, base: &str) -> bool {
        lies_under(&Url::parse(url).unwrap(), &Url::parse(base).unwrap())
    }

    #[test]
    fn a_url_under_the_endpoints_path_is_under_it() {
        for url in [
            "https://api.example/hooks/a",
            "https://api.example/hooks/a/",
            "https://api.example/hooks/a/x",
            "https://api.example/hooks/a/x/y?order=1",
            "https://api.example:443/hooks/a/x",
            "HTTPS://API.EXAMPLE/hooks/a/x",
            "https://api.example/hooks/a/./x",
            "https://api.example/hooks/a/b/../x",
        ] {
            assert!(under(url, "https://api.example/hooks/a"), "{url}");
        }
    }

    #[test]
    fn a_trailing_slash_on_the_endpoints_url_is_not_significant() {
        assert!(under(
            "https://api.example/hooks/a",
            "https://api.example/hooks/a/"
        ));
        assert!(under(
            "https://api.example/hooks/a/x",
            "https://api.example/hooks/a/"
        ));
        assert!(!under(
            "https://api.example/hooks/ab",
            "https://api.example/hooks/a/"
        ));
    }

    #[test]
    fn an_endpoint_at_the_root_covers_its_whole_origin() {
        assert!(under(
            "https://api.example/any/path",
            "https://api.example/"
        ));
        assert!(under("https://api.example/any/path", "https://api.example"));
        assert!(!under(
            "https://other.example/any/path",
            "https://api.example/"
        ));
    }

    #[test]
    fn other_paths_of_the_same_origin_are_not_under_it() {
        for url in [
            "https://api.example/hooks/a-evil",
            "https://api.example/hooks/ab",
            "https://api.example/hooks/b",
            "https://api.example/hooks",
            "https://api.example/",
            "https://api.example/any/path",
            "https://api.example/hooks/a/../b",
            "https://api.example/hooks/a/%2e%2e/b",
            "https://api.example/hooks/a/%2E%2E/b",
            "https://api.example/hooks/a/..%2fb",
            "https://api.example/hooks/a/..%2Fb",
            "https://api.example/hooks/a/..%5cb",
            "https://api.example/hooks/a%2fx",
            "https://api.example/hooks/a/%2e%2e%2fb",
            "https://api.example/HOOKS/a/x",
            "https://api.example/hooks/a/..;/b",
            "https://api.example/hooks/a;x=1/../b",
            "https://api.example/hooks/a/%252e%252e%252fb",
            "https://api.example/hooks/a/x..",
        ] {
            assert!(!under(url, "https://api.example/hooks/a"), "{url}");
        }
    }

    #[test]
    fn an_endpoint_url_with_a_query_covers_only_urls_with_that_query() {
        let base = "https://inbox.example/h?tenant=a";
        assert!(under("https://inbox.example/h/x?tenant=a", base));
        for url in [
            "https://inbox.example/h/x?tenant=b",
            "https://inbox.example/h/x",
            "https://inbox.example/h?tenant=a&tenant=b",
        ] {
            assert!(!under(url, base), "{url}");
        }
    }

    #[test]
    fn another_scheme_host_or_port_is_not_under_it() {
        for url in [
            "http://api.example/hooks/a/x",
            "https://api.example:8443/hooks/a/x",
            "https://evil.example/hooks/a/x",
            "https://api.example.evil.example/hooks/a/x",
            "https://sub.api.example/hooks/a/x",
        ] {
            assert!(!under(url, "https://api.example/hooks/a"), "{url}");
        }
    }

    #[test]
    fn the_parser_resolves_dot_segments_before_the_rule_sees_them() {
        let url = Url::parse("https://api.example/hooks/a/%2e%2e/b").unwrap();
        assert_eq!(url.path(), "/hooks/b");
        let url = Url::parse("https://api.example/hooks/a/../../b").unwrap();
        assert_eq!(url.path(), "/b");
    }

    #[test]
    fn query_values_are_masked_and_names_kept() {
        assert_eq!(
            mask_url("https://x.example/hook?token=abc&mode=1"),
            "https://x.example/hook?token=***&mode=***"
        );
        assert_eq!(
            mask_url("https://x.example/hook?abc#frag"),
            "https://x.example/hook?***"
        );
        assert_eq!(mask_url("https://x.example/hook"), "https://x.example/hook");
        assert_eq!(mask_url("not a url ?token=abc"), "***");
    }

    #[test]
    fn path_segments_that_look_like_credentials_are_masked_after_the_first() {
        // Slack, Discord and Teams put the token in the path.
        assert_eq!(
            mask_url(
                "https://hooks.slack.example/services/T0AAAAAAA/B0BBBBBBB/abcdEFGH1234ijklMNOP5678"
            ),
            "https://hooks.slack.example/services/T0AAAAAAA/B0BBBBBBB/***"
        );
        assert_eq!(
            mask_url("https://chat.example/api/webhooks/112233445566778899/Ab-cD_ef12GhIjKl34mN"),
            "https://chat.example/api/webhooks/***/***"
        );
        // An unbroken 24-character random string without a digit is one too.
        assert_eq!(
            mask_url("https://x.example/hook/AbCdEfGhIjKlMnOpQrStUvWx"),
            "https://x.example/hook/***"
        );
        // Names stay, however long; the first segment always stays.
        for kept in [
            "https://x.example/order-notifications/callback",
            "https://x.example/1234567890abcdef1234/callback",
            "https://x.example/hooks/alipay_notify_receiver",
        ] {
            assert_eq!(mask_url(kept), kept);
        }
    }

    #[test]
    fn a_configured_pattern_masks_the_segments_it_matches() {
        let mask = UrlMask::new(&["^sk_[a-z]+$".to_string()]).unwrap();
        assert_eq!(
            mask.show("https://x.example/hook/sk_live/orders", false),
            "https://x.example/hook/***/orders"
        );
        assert!(UrlMask::new(&["(".to_string()]).is_err());
    }

    #[test]
    fn a_url_secret_endpoint_shows_its_origin_only() {
        let mask = UrlMask::default();
        assert_eq!(
            mask.show("https://x.example/a/b/c?token=1#f", true),
            "https://x.example/***?token=***"
        );
        assert_eq!(mask.show("https://x.example/", true), "https://x.example/");
    }

    #[test]
    fn only_attempts_to_the_endpoints_url_or_under_it_tell_of_the_endpoint() {
        let own = Url::parse("https://api.example/hooks/a").unwrap();
        assert!(tells_of_endpoint(None, Some(&own)));
        assert!(tells_of_endpoint(
            Some("https://api.example/hooks/a/order-1"),
            Some(&own)
        ));
        assert!(!tells_of_endpoint(
            Some("https://api.example/hooks/b"),
            Some(&own)
        ));
        assert!(!tells_of_endpoint(
            Some("https://evil.example/hooks/a"),
            Some(&own)
        ));
        assert!(!tells_of_endpoint(Some("not a url"), Some(&own)));
        assert!(!tells_of_endpoint(
            Some("https://api.example/hooks/a"),
            None
        ));
    }
}
