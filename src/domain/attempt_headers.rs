//! An attempt's headers as its row keeps them, as text: what the request
//! carried that its notification does not say, and the response's headers.
//!
//! - **Sent:** the `webhook-signature` value (one signature per secret
//!   that signed) and the names of the custom headers sent, never their
//!   values (credentials, often). The rest of the request's headers
//!   (`webhook-id`, `webhook-timestamp`, `content-type`, `hookd-attempt`,
//!   ...) follow from the notification and the attempt by the rule the
//!   sender sends them by (`sender::own_headers`), so they are not stored:
//!   about 200 bytes an attempt spared.
//! - **Response:** `name: value` lines, whole lines only, at most
//!   `RESPONSE_HEADER_BYTES`, as the response body is kept to its first
//!   4 KiB.
//!
//! An attempt kept in its notification's row (a delivery at its first
//! attempt, `status::keeping`) keeps neither: that is the write most
//! deliveries make, and its 140 bytes more cost the drain 10 to 20 %.
//!
//! Neither text holds a NUL (PostgreSQL's text cannot) or a line break
//! inside an entry: a signature and a header name never do, and a value's
//! control characters are replaced.

/// The response's headers kept of an attempt, in bytes of `name: value\n`.
pub const RESPONSE_HEADER_BYTES: usize = 4096;

/// The request's headers an attempt's row keeps: the signature, then each
/// custom header's name, one per line.
pub fn encode_sent<'a>(signature: &str, custom: impl IntoIterator<Item = &'a str>) -> String {
    let mut text = String::with_capacity(signature.len() + 1);
    text.push_str(signature);
    for name in custom {
        text.push('\n');
        text.push_str(name);
    }
    text
}

/// What `encode_sent` kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent<'a> {
    /// The `webhook-signature` header's value.
    pub signature: &'a str,
    /// The custom headers' names, as sent.
    pub custom: Vec<&'a str>,
}

pub fn decode_sent(text: &str) -> Sent<'_> {
    let mut lines = text.split('\n');
    Sent {
        signature: lines.next().unwrap_or_default(),
        custom: lines.filter(|name| !name.is_empty()).collect(),
    }
}

/// The response's headers as kept: `name: value` lines while they fit in
/// `RESPONSE_HEADER_BYTES`; a value that is not UTF-8 is read lossily.
/// `None` for a response without headers.
pub fn encode_response<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Option<String> {
    let mut text = String::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value);
        let line = name.len() + 2 + value.len() + 1;
        if text.len() + line > RESPONSE_HEADER_BYTES {
            break;
        }
        text.push_str(name);
        text.push_str(": ");
        // A parsed response's values hold no control character but tab
        // (the HTTP parser refuses them): most are pushed as they are.
        let odd = |c: char| c.is_control() && c != '\t';
        if value.contains(odd) {
            text.extend(value.chars().map(|c| if odd(c) { '\u{FFFD}' } else { c }));
        } else {
            text.push_str(&value);
        }
        text.push('\n');
    }
    (!text.is_empty()).then_some(text)
}

/// The `(name, value)` pairs `encode_response` kept, in order.
pub fn decode_response(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter_map(|line| line.split_once(": "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sent_text_gives_back_the_signature_and_the_custom_names() {
        let text = encode_sent("v1,abc v1,def", ["x-api-key", "x-tenant"]);
        assert_eq!(text, "v1,abc v1,def\nx-api-key\nx-tenant");
        assert_eq!(
            decode_sent(&text),
            Sent {
                signature: "v1,abc v1,def",
                custom: vec!["x-api-key", "x-tenant"],
            }
        );
        assert_eq!(decode_sent("v1,abc").custom, Vec::<&str>::new());
    }

    #[test]
    fn response_headers_keep_whole_lines_within_four_kib() {
        let long = "a".repeat(1000);
        let headers: Vec<(String, String)> =
            (0..10).map(|i| (format!("x-h{i}"), long.clone())).collect();
        let text =
            encode_response(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes()))).unwrap();
        assert!(text.len() <= RESPONSE_HEADER_BYTES, "{}", text.len());
        let kept = decode_response(&text);
        assert_eq!(kept.len(), 4, "four lines of 1,007 bytes fit in 4 KiB");
        assert!(kept.iter().all(|(_, v)| v.len() == 1000));
    }

    #[test]
    fn a_response_header_cannot_break_its_line_or_hold_a_nul() {
        let text = encode_response([
            ("x-odd", "a\0b\rc\td".as_bytes()),
            ("x-latin", &[0xe9, b'!'][..]),
        ])
        .unwrap();
        assert_eq!(
            decode_response(&text),
            [
                ("x-odd", "a\u{FFFD}b\u{FFFD}c\td"),
                ("x-latin", "\u{FFFD}!")
            ]
        );
        assert_eq!(encode_response([]), None);
    }

    #[test]
    fn a_value_may_contain_a_colon_and_a_space() {
        let text = encode_response([("date", "Tue, 01 Dec 2026 02:29:23 GMT".as_bytes())]).unwrap();
        assert_eq!(
            decode_response(&text),
            [("date", "Tue, 01 Dec 2026 02:29:23 GMT")]
        );
    }
}
