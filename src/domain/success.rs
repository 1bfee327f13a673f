//! The success rule: when does a receiver's response acknowledge a delivery?

use super::payload_filter::PayloadFilter;

/// Success is a 2xx status and, when the endpoint sets `success_body`, a body
/// that equals it once surrounding whitespace is trimmed (Alipay-style
/// receivers answer `success`). Whitespace is ASCII's (space, tab, CR, LF,
/// form feed), on both sides: the body is compared as bytes, whatever its
/// charset, and the endpoint stores `success_body` trimmed the same way.
/// A byte-order mark is not whitespace: a receiver page saved with one
/// answers `\u{FEFF}success`, which fails the rule, and the receiver's
/// attempts list shows the three bytes before it.
///
/// Receivers that acknowledge in JSON (WeChat-style `{"code": "SUCCESS"}`,
/// `{"ret_code": "0000"}`) set `success_filter` instead: the body, whatever
/// its content type, must be JSON that satisfies it, in the language of
/// payload filters (`domain::payload_filter`). A body that is not JSON
/// satisfies no filter. An endpoint sets one of the two at most.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SuccessRule {
    pub body: Option<String>,
    pub filter: Option<PayloadFilter>,
}

impl SuccessRule {
    pub fn accepts(&self, status: u16, body: &[u8]) -> bool {
        if !(200..300).contains(&status) {
            return false;
        }
        if let Some(expected) = &self.body {
            if body.trim_ascii() != expected.as_bytes().trim_ascii() {
                return false;
            }
        }
        match &self.filter {
            None => true,
            Some(filter) => filter.matches(serde_json::from_slice(body).ok().as_ref()),
        }
    }

    /// Whether the rule reads the body: a truncated one then cannot pass.
    pub fn reads_body(&self) -> bool {
        self.body.is_some() || self.filter.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_2xx_succeeds_without_a_success_body() {
        let rule = SuccessRule::default();
        assert!(rule.accepts(200, b""));
        assert!(rule.accepts(204, b"whatever"));
        assert!(!rule.accepts(302, b""));
        assert!(!rule.accepts(500, b""));
    }

    #[test]
    fn success_body_must_match_after_trimming() {
        let rule = SuccessRule {
            body: Some("success".into()),
            filter: None,
        };
        assert!(rule.accepts(200, b"success"));
        assert!(rule.accepts(200, b"  success\r\n"));
        assert!(!rule.accepts(200, b"ok"));
        assert!(!rule.accepts(200, b"Success"));
        assert!(!rule.accepts(200, b"success!"));
        assert!(!rule.accepts(500, b"success"));
        assert!(rule.accepts(200, b"\tsuccess\x0c"));
        assert!(!rule.accepts(200, "\u{feff}success".as_bytes()));
        assert!(!rule.accepts(200, "\u{a0}success".as_bytes()));
        assert!(!rule.accepts(200, b""));
    }

    fn json_rule(filter: serde_json::Value) -> SuccessRule {
        SuccessRule {
            body: None,
            filter: Some(PayloadFilter::parse(filter).unwrap()),
        }
    }

    #[test]
    fn a_success_filter_passes_a_json_body_that_satisfies_it_and_nothing_else() {
        let rule = json_rule(serde_json::json!({"code": "SUCCESS"}));
        assert!(rule.reads_body());
        assert!(rule.accepts(200, br#"{"code":"SUCCESS","message":"OK"}"#));
        assert!(rule.accepts(200, b" \r\n{\"code\": \"SUCCESS\"}\n"));
        assert!(!rule.accepts(200, br#"{"code":"FAIL","message":"bad sign"}"#));
        assert!(!rule.accepts(500, br#"{"code":"SUCCESS"}"#));
        assert!(!rule.accepts(200, b"SUCCESS"));
        assert!(!rule.accepts(200, b""));
        assert!(!rule.accepts(200, br#"{"code":"SUCCESS""#));
        assert!(!rule.accepts(200, br#"[{"code":"SUCCESS"}]"#));

        let rule =
            json_rule(serde_json::json!({"ret_code": "0000", "data.status": {"$in": [1, 2]}}));
        assert!(rule.accepts(200, br#"{"ret_code":"0000","data":{"status":2.0}}"#));
        assert!(!rule.accepts(200, br#"{"ret_code":"0000","data":{"status":3}}"#));
        assert!(!rule.accepts(200, br#"{"ret_code":"0000"}"#));
    }
}
