//! Whether two JSON texts hold the same value, exactly: objects whatever
//! their key order and spacing, strings whatever their escapes, and numbers
//! by their decimal value, not as `f64`. A producer that re-sends a keyed
//! notification may re-serialise its payload: `12.50` as `12.5`, `1.25e1`,
//! `"\u00e9"` as `"é"`. Those are the same payload. `0.1` and
//! `0.10000000000000001` are not (as `f64` they are one number), nor are two
//! integers past 2^53 that `f64` rounds together: amounts are compared as
//! the producer wrote them.
//!
//! Duplicate object keys keep the last value, as `serde_json::Value` does.

use std::collections::BTreeMap;

/// Deeper than this is not compared (`None`): serde_json's default depth,
/// past any payload hookd accepts (`MAX_PAYLOAD_DEPTH`).
const MAX_DEPTH: usize = 128;

/// The deepest a JSON payload nests (a notification's or an event's).
/// hookd's answers carry a payload inside up to three levels of their own
/// (a pull's answer holds it three down), and common JSON parsers
/// stop at 128 levels (serde_json, which hookd's Rust client reads with,
/// refuses the 128th): at 127, the limit events once had, `GET` of the
/// event failed in that client, and a pull of a notification 125 deep
/// failed the whole batch after hookd had leased it. 100 leaves room, and
/// no payload of a webhook nests anywhere near it. Payload filters read
/// every payload this allows.
pub const MAX_PAYLOAD_DEPTH: usize = 100;

/// What of a JSON text serde_json will not read, as it says it: a number
/// beyond a 64-bit float's range (`1e309`) or an escape of half a UTF-16
/// surrogate pair (`"\ud800"`), which pass JSON's grammar (hookd keeps a
/// payload's bytes as given) but fail serde_json, and so hookd's Rust
/// client (Go's `encoding/json` refuses the number too). `None` when it
/// reads the text whole, and for a text that is not JSON at all (the
/// caller knows whether it had to be).
pub fn unreadable_value(text: &[u8]) -> Option<String> {
    let error = serde_json::from_slice::<super::json_keys::Walk<false>>(text).err()?;
    // JSON's grammar passes it (a `RawValue` skips values unread).
    serde_json::from_slice::<&serde_json::value::RawValue>(text)
        .is_ok()
        .then(|| error.to_string())
}

/// Whether a content type is JSON's (`application/json`, or any `+json`),
/// parameters aside.
pub fn is_json_content_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// Whether a JSON text nests arrays and objects more than `limit` deep
/// (what strings hold aside): read byte by byte, nothing built, so a
/// payload of any depth is measured in one pass.
pub fn nests_deeper_than(text: &[u8], limit: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Whether two (content type, body) pairs carry the same payload, as a
/// keyed re-send is judged: the same bytes, or, for a JSON content type,
/// the same value (`same_value`: a producer retrying may re-serialise).
pub fn same_payload(stored: (&str, &[u8]), given: (&str, &[u8])) -> bool {
    if stored.0 != given.0 {
        return false;
    }
    stored.1 == given.1
        || (is_json_content_type(stored.0) && same_value(stored.1, given.1) == Some(true))
}

/// Whether a keyed event sent again is the one stored, each as (type,
/// content type, body): the same type and the same payload
/// (`same_payload`). Otherwise its key conflicts.
pub fn same_event(stored: (&str, &str, &[u8]), given: (&str, &str, &[u8])) -> bool {
    stored.0 == given.0 && same_payload((stored.1, stored.2), (given.1, given.2))
}

/// Whether `a` and `b` are JSON texts of the same value; `None` if either is
/// not JSON (or nests deeper than `MAX_DEPTH`, or has an exponent past ±10^17).
pub fn same_value(a: &[u8], b: &[u8]) -> Option<bool> {
    Some(parse(a)? == parse(b)?)
}

/// A JSON value with numbers in a canonical decimal form.
#[derive(Debug, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    Number(Decimal),
    String(String),
    Array(Vec<Value>),
    Object(BTreeMap<String, Value>),
}

/// A number as ± digits × 10^exponent, the digits without leading or
/// trailing zeros (zero is no digits, and has no sign).
#[derive(Debug, PartialEq)]
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

fn parse(text: &[u8]) -> Option<Value> {
    let mut parser = Parser { text, at: 0 };
    let value = parser.value(0)?;
    parser.space();
    (parser.at == text.len()).then_some(value)
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.space();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Option<Value> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        match self.peek()? {
            b'n' => self.literal(b"null", Value::Null),
            b't' => self.literal(b"true", Value::Bool(true)),
            b'f' => self.literal(b"false", Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']').is_some() {
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']').is_some() {
                        return Some(Value::Array(items));
                    }
                    self.eat(b',')?;
                }
            }
            b'{' => {
                self.at += 1;
                let mut fields = BTreeMap::new();
                if self.eat(b'}').is_some() {
                    return Some(Value::Object(fields));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    self.eat(b':')?;
                    fields.insert(key, self.value(depth + 1)?);
                    if self.eat(b'}').is_some() {
                        return Some(Value::Object(fields));
                    }
                    self.eat(b',')?;
                }
            }
            b'-' | b'0'..=b'9' => self.number().map(Value::Number),
            _ => None,
        }
    }

    /// A string, its escapes decoded by serde_json.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        if self.peek()? != b'"' {
            return None;
        }
        self.at += 1;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        serde_json::from_slice(self.text.get(start..self.at)?).ok()
    }

    /// A number in JSON's grammar, as a `Decimal`.
    fn number(&mut self) -> Option<Decimal> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let integer = self.digits();
        if integer.is_empty() || (integer.len() > 1 && integer[0] == b'0') {
            return None;
        }
        let fraction = if self.peek() == Some(b'.') {
            self.at += 1;
            let fraction = self.digits();
            if fraction.is_empty() {
                return None;
            }
            fraction
        } else {
            &[]
        };
        let mut exponent: i64 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let sign = match self.peek() {
                Some(b'-') => {
                    self.at += 1;
                    -1
                }
                Some(b'+') => {
                    self.at += 1;
                    1
                }
                _ => 1,
            };
            let written = self.digits();
            if written.is_empty() {
                return None;
            }
            let zeros = written.iter().take_while(|d| **d == b'0').count();
            let significant = &written[zeros..];
            if significant.len() > 17 {
                return None;
            }
            if !significant.is_empty() {
                exponent = sign * std::str::from_utf8(significant).ok()?.parse::<i64>().ok()?;
            }
        }
        let mut digits: Vec<u8> = integer.iter().chain(fraction).copied().collect();
        exponent -= fraction.len() as i64;
        let leading = digits.iter().take_while(|d| **d == b'0').count();
        digits.drain(..leading);
        while digits.last() == Some(&b'0') {
            digits.pop();
            exponent += 1;
        }
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits,
                exponent: 0,
            });
        }
        Some(Decimal {
            negative,
            digits,
            exponent,
        })
    }

    fn digits(&mut self) -> &'a [u8] {
        let text: &'a [u8] = self.text;
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        &text[start..self.at]
    }
}

#[cfg(test)]
mod tests {
    use super::{nests_deeper_than, same_event, same_value, unreadable_value, MAX_PAYLOAD_DEPTH};

    #[test]
    fn a_payload_nests_too_deep_past_the_limit_whatever_its_strings_hold() {
        for depth in [1, 99, 100, 101, 127, 128, 5_000] {
            // An object holding `depth - 1` lists, with brackets in a string
            // beside them that must not count.
            let text = format!(
                "{{\"s\":\"[[{{\\\"[\",\"a\":{}0{}}}",
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            );
            let deep = nests_deeper_than(text.as_bytes(), MAX_PAYLOAD_DEPTH);
            assert_eq!(deep, depth > MAX_PAYLOAD_DEPTH, "depth {depth}");
            if !deep {
                // Three levels of an answer around it still read.
                let answer = format!("{{\"data\":[{{\"payload\":{text}}}]}}");
                assert!(
                    serde_json::from_str::<serde_json::Value>(&answer).is_ok(),
                    "depth {depth}"
                );
            }
        }
    }

    #[test]
    fn a_value_serde_json_will_not_read_is_named_and_a_text_that_is_no_json_is_not() {
        for text in [
            r#"{"a": 1e309}"#,
            r#"[-1e400]"#,
            r#"{"s": "\ud800"}"#,
            r#"{"s": "x\udc00"}"#,
        ] {
            assert!(unreadable_value(text.as_bytes()).is_some(), "{text}");
        }
        for text in [
            r#"{"a": 1.7976931348623157e308, "b": 18446744073709551616}"#,
            r#"{"s": "\ud83d\ude00", "a": 1, "a": 2}"#,
            "not json [[[",
            "",
        ] {
            assert_eq!(unreadable_value(text.as_bytes()), None, "{text}");
        }
    }

    fn same(a: &str, b: &str) -> Option<bool> {
        same_value(a.as_bytes(), b.as_bytes())
    }

    #[test]
    fn a_keyed_event_sent_again_is_the_same_only_with_its_type_and_payload() {
        let json = "application/json";
        let cases = [
            (
                ("order.paid", json, &b"{\"a\":1.50}"[..]),
                ("order.paid", json, &b"{ \"a\": 1.5 }"[..]),
                true,
            ),
            (
                ("order.paid", json, &b"{}"[..]),
                ("order.refunded", json, &b"{}"[..]),
                false,
            ),
            (
                ("order.paid", json, &b"{}"[..]),
                ("order.paid", "text/plain", &b"{}"[..]),
                false,
            ),
            (
                ("order.paid", json, &b"{\"a\":1}"[..]),
                ("order.paid", json, &b"{\"a\":2}"[..]),
                false,
            ),
        ];
        for (stored, given, want) in cases {
            assert_eq!(same_event(stored, given), want, "{stored:?} {given:?}");
        }
    }

    #[test]
    fn a_value_reserialised_with_other_spacing_key_order_or_escapes_is_the_same() {
        assert_eq!(
            same(
                r#"{"order": 1, "paid": true, "note": "caf\u00e9"}"#,
                r#"{"note":"café","paid":true,"order":1}"#
            ),
            Some(true)
        );
        assert_eq!(same(r#"[1, [2, {}], null]"#, "[1,[2,{}],null]"), Some(true));
    }

    #[test]
    fn numbers_are_equal_by_their_decimal_value() {
        for (a, b) in [
            ("12.50", "12.5"),
            ("12.5", "1.25e1"),
            ("1250E-2", "12.5"),
            ("100", "100.0"),
            ("100", "1e2"),
            ("-0", "0"),
            ("0.0", "0e5"),
            ("-3.10", "-31e-1"),
            ("1e00000000000000000002", "100"),
            ("0e000000000000000000", "0"),
        ] {
            assert_eq!(same(a, b), Some(true), "{a} and {b}");
        }
    }

    #[test]
    fn numbers_that_f64_rounds_together_are_different_values() {
        for (a, b) in [
            ("0.1", "0.10000000000000001"),
            ("9007199254740993", "9007199254740992"),
            ("12345678901234567890123", "12345678901234567890124"),
            ("1", "-1"),
            ("12.5", "12.05"),
        ] {
            assert_eq!(same(a, b), Some(false), "{a} and {b}");
        }
    }

    #[test]
    fn different_values_are_different() {
        assert_eq!(same(r#"{"v": 1}"#, r#"{"v": 2}"#), Some(false));
        assert_eq!(same(r#"{"v": 1}"#, r#"{"v": 1, "w": 1}"#), Some(false));
        assert_eq!(same("[1, 2]", "[2, 1]"), Some(false));
        assert_eq!(same(r#""1""#, "1"), Some(false));
        assert_eq!(same("true", "false"), Some(false));
        assert_eq!(same("null", "false"), Some(false));
    }

    #[test]
    fn a_duplicate_key_keeps_its_last_value() {
        assert_eq!(same(r#"{"a": 1, "a": 2}"#, r#"{"a": 2}"#), Some(true));
    }

    #[test]
    fn what_is_not_json_is_not_compared() {
        for text in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            "\"open",
            "{} x",
            "1e999999999999999999",
        ] {
            assert_eq!(same(text, text), None, "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(same(&deep, &deep), None);
    }
}
