//! The success rule: when does a receiver's response acknowledge a delivery?

/// Success is a 2xx status and, when the endpoint sets `success_body`, a body
/// that equals it once surrounding whitespace is trimmed (Alipay-style
/// receivers answer `success`). Whitespace is ASCII's (space, tab, CR, LF,
/// form feed), on both sides: the body is compared as bytes, whatever its
/// charset, and the endpoint stores `success_body` trimmed the same way.
/// A byte-order mark is not whitespace: a receiver page saved with one
/// answers `\u{FEFF}success`, which fails the rule, and the receiver's
/// attempts list shows the three bytes before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SuccessRule {
    pub body: Option<String>,
}

impl SuccessRule {
    pub fn accepts(&self, status: u16, body: &[u8]) -> bool {
        if !(200..300).contains(&status) {
            return false;
        }
        match &self.body {
            None => true,
            Some(expected) => body.trim_ascii() == expected.as_bytes().trim_ascii(),
        }
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
}
