//! Rules about receiver URLs that protect what an endpoint carries: whether
//! a per-notification URL lies under the endpoint's own URL (only then do
//! the endpoint's custom headers, its credentials often, go with it), and
//! how a URL is shown to a caller who may not read secrets (query-string
//! values masked: they often hold tokens). Pure.

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

/// `url` with every query-string value replaced by `***`
/// (`https://x.example/hook?token=***`), for callers without the `secrets`
/// scope: query strings often carry the receiver's credentials. Names stay,
/// so the caller still sees which parameters are set; the fragment, which
/// a receiver never sees, goes. A text that is not a URL is masked whole.
pub fn mask_query(text: &str) -> String {
    let Ok(mut url) = Url::parse(text) else {
        return "***".to_string();
    };
    url.set_fragment(None);
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
            mask_query("https://x.example/hook?token=abc&mode=1"),
            "https://x.example/hook?token=***&mode=***"
        );
        assert_eq!(
            mask_query("https://x.example/hook?abc#frag"),
            "https://x.example/hook?***"
        );
        assert_eq!(
            mask_query("https://x.example/hook"),
            "https://x.example/hook"
        );
        assert_eq!(mask_query("not a url ?token=abc"), "***");
    }
}
