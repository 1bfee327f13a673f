//! The success rule: when does a receiver's response acknowledge a delivery?

/// Success is a 2xx status and, when the endpoint sets `success_body`, a body
/// that equals it once surrounding whitespace is trimmed (Alipay-style
/// receivers answer `success`).
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
            Some(expected) => trim_ascii(body) == expected.trim().as_bytes(),
        }
    }
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end]
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
    }
}
