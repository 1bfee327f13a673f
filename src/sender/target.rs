//! What a request to a receiver names from the endpoint's URL: the request
//! target in HTTP/1.1's origin form or HTTP/2's absolute form, the `Host`
//! header, and the URL's credentials as `Basic` authorization
//! (`client::Client` builds each request with them).

use hyper::header::HeaderValue;
use hyper::Uri;
use url::Url;

use super::client::Failure;

/// `/path?query`, what an HTTP/1.1 request line names.
pub(super) fn origin_form(url: &Url) -> Result<Uri, Failure> {
    let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
    Uri::try_from(path).map_err(|e| Failure::Request(format!("the URL's path: {e}")))
}

/// `scheme://host[:port]/path?query`, what HTTP/2's pseudo-headers are
/// made of: without the URL's credentials, which go in `authorization`.
pub(super) fn absolute_form(url: &Url) -> Result<Uri, Failure> {
    let whole = format!(
        "{}://{}{}",
        url.scheme(),
        &url[url::Position::BeforeHost..url::Position::AfterPort],
        &url[url::Position::BeforePath..url::Position::AfterQuery]
    );
    Uri::try_from(whole).map_err(|e| Failure::Request(format!("the URL: {e}")))
}

/// `host[:port]`, the port only when it is not the scheme's own.
pub(super) fn host_header(url: &Url) -> Result<HeaderValue, Failure> {
    let host = &url[url::Position::BeforeHost..url::Position::AfterPort];
    HeaderValue::from_str(host).map_err(|e| Failure::Request(format!("the URL's host: {e}")))
}

/// `Basic` credentials from a URL's `user:password@`, percent-decoded.
pub(super) fn basic_auth(url: &Url) -> HeaderValue {
    use base64::Engine as _;
    let decode = |part: &str| percent_encoding::percent_decode_str(part).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or_default()));
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let mut value =
        HeaderValue::try_from(format!("Basic {encoded}")).expect("base64 is a valid header value");
    value.set_sensitive(true);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_stored_url_become_basic_authorization_percent_decoded() {
        let url = Url::parse("https://us%40er:p%3Ass@x.example/").unwrap();
        let value = basic_auth(&url);
        assert!(value.is_sensitive());
        // "us@er:p:ss"
        assert_eq!(value, "Basic dXNAZXI6cDpzcw==");
    }
}
