//! W3C Trace Context (`traceparent`, `tracestate`): read from a producer's
//! request, kept with the notification as two of its headers, and sent on
//! each delivery with the attempt's span as the parent.
//!
//! A header that does not parse is ignored, as the recommendation says (a
//! proxy that mangled it must not cost the producer its notification); the
//! trace then starts at hookd, when hookd exports spans.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The header names, lower case as HTTP/2 sends them and as hookd keeps
/// them among a notification's headers.
pub use crate::domain::fields::{TRACEPARENT, TRACESTATE};

/// Longest `tracestate` kept: the recommendation's 512 bytes. A longer one
/// is dropped whole (cutting list members would need parsing each).
pub const MAX_TRACESTATE_BYTES: usize = 512;

/// A span's place in a trace: the trace, the span that is the parent of
/// what comes next, and whether the trace is sampled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// Bit 0: sampled. Other bits are kept as given.
    pub flags: u8,
    pub state: Option<String>,
}

impl TraceContext {
    /// A new trace, sampled, with a new span at its root.
    pub fn root() -> Self {
        Self {
            trace_id: new_trace_id(),
            span_id: new_span_id(),
            flags: 1,
            state: None,
        }
    }

    /// The same trace with `span_id` as the parent of what comes next.
    pub fn child(&self, span_id: [u8; 8]) -> Self {
        Self {
            span_id,
            ..self.clone()
        }
    }

    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// Reads `traceparent` and, with it, `tracestate`; `None` when the
    /// first is absent or does not parse.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent)?;
        let state = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && valid_tracestate(s))
            .map(str::to_string);
        Some(Self {
            trace_id,
            span_id,
            flags,
            state,
        })
    }

    /// From an HTTP request's headers.
    pub fn from_headers(headers: &axum::http::HeaderMap) -> Option<Self> {
        let traceparent = headers.get(TRACEPARENT)?.to_str().ok()?;
        // Several `tracestate` lines are one list; past the bound it is
        // dropped without joining what a client may have sent at length.
        let states: Vec<&str> = headers
            .get_all(TRACESTATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let length = states.iter().map(|s| s.len() + 1).sum::<usize>();
        let state =
            (!states.is_empty() && length <= MAX_TRACESTATE_BYTES + 1).then(|| states.join(","));
        Self::parse(traceparent, state.as_deref())
    }

    /// From a notification's kept headers (names in any case, as a
    /// producer may have set them itself).
    pub fn from_kept(headers: &BTreeMap<String, String>) -> Option<Self> {
        let mut traceparent = None;
        let mut tracestate = None;
        for (name, value) in headers {
            if name.eq_ignore_ascii_case(TRACEPARENT) {
                traceparent = Some(value.as_str());
            } else if name.eq_ignore_ascii_case(TRACESTATE) {
                tracestate = Some(value.as_str());
            }
        }
        Self::parse(traceparent?, tracestate)
    }

    /// Gives a notification's headers their trace context: a `traceparent`
    /// the producer set there itself wins when it is valid; one that is not
    /// is dropped with its `tracestate`, as a malformed request header is
    /// ignored (the recommendation: an invalid one is not propagated; a
    /// review saw `traceparent: garbage` sent on to the receiver, in place
    /// of the request's valid context), and `request` is kept in its place.
    pub fn keep(request: Option<&Self>, headers: &mut BTreeMap<String, String>) {
        let malformed = headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case(TRACEPARENT) && parse_traceparent(value).is_none()
        });
        if malformed {
            headers.retain(|name, _| {
                !name.eq_ignore_ascii_case(TRACEPARENT) && !name.eq_ignore_ascii_case(TRACESTATE)
            });
        }
        if let Some(request) = request {
            request.keep_in(headers);
        }
    }

    /// Adds this context to a notification's headers, unless the producer
    /// set a `traceparent` of its own there, which wins.
    fn keep_in(&self, headers: &mut BTreeMap<String, String>) {
        if headers
            .keys()
            .any(|name| name.eq_ignore_ascii_case(TRACEPARENT))
        {
            return;
        }
        headers.retain(|name, _| !name.eq_ignore_ascii_case(TRACESTATE));
        headers.insert(TRACEPARENT.to_string(), self.traceparent());
        if let Some(state) = &self.state {
            headers.insert(TRACESTATE.to_string(), state.clone());
        }
    }

    /// `00-<trace id>-<span id>-<flags>`, lower-case hex.
    pub fn traceparent(&self) -> String {
        let mut text = String::with_capacity(55);
        text.push_str("00-");
        push_hex(&mut text, &self.trace_id);
        text.push('-');
        push_hex(&mut text, &self.span_id);
        let _ = write!(text, "-{:02x}", self.flags);
        text
    }
}

fn parse_traceparent(text: &str) -> Option<([u8; 16], [u8; 8], u8)> {
    let text = text.trim();
    let bytes = text.as_bytes();
    // version-traceid-parentid-flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
    if bytes.len() < 55 {
        return None;
    }
    let version = hex_byte(&bytes[0..2])?;
    // Version 00 is exactly 55 characters; a later one may append fields
    // after a dash, which are ignored. ff is invalid.
    if version == 0xff
        || (version == 0 && bytes.len() != 55)
        || (bytes.len() > 55 && bytes[55] != b'-')
    {
        return None;
    }
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    let trace_id: [u8; 16] = hex_array(&bytes[3..35])?;
    let span_id: [u8; 8] = hex_array(&bytes[36..52])?;
    let flags = hex_byte(&bytes[53..55])?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some((trace_id, span_id, flags))
}

/// Lower-case hex only, as the recommendation requires.
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(pair: &[u8]) -> Option<u8> {
    Some(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?)
}

fn hex_array<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = hex_byte(pair)?;
    }
    Some(out)
}

fn push_hex(text: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(text, "{b:02x}");
    }
}

/// A `tracestate` hookd keeps: at most 512 bytes of printable ASCII, as a
/// header value must be; its list members are the vendors' business.
fn valid_tracestate(text: &str) -> bool {
    text.len() <= MAX_TRACESTATE_BYTES && text.bytes().all(|b| (0x20..0x7f).contains(&b))
}

fn new_trace_id() -> [u8; 16] {
    loop {
        let id: [u8; 16] = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

pub fn new_span_id() -> [u8; 8] {
    loop {
        let id: [u8; 8] = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIVEN: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_and_writes_back_the_same() {
        let context = TraceContext::parse(GIVEN, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(context.traceparent(), GIVEN);
        assert!(context.sampled());
        assert_eq!(context.state.as_deref(), Some("congo=t61rcWkgMzE"));
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn a_later_version_may_append_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next";
        let context = TraceContext::parse(later, None).unwrap();
        assert_eq!(context.traceparent(), GIVEN, "written back as version 00");
    }

    #[test]
    fn an_oversized_or_unprintable_tracestate_is_dropped_and_the_parent_kept() {
        let long = "a=".to_string() + &"b".repeat(MAX_TRACESTATE_BYTES);
        for state in [long.as_str(), "a=b\u{7f}", "a=é"] {
            let context = TraceContext::parse(GIVEN, Some(state)).unwrap();
            assert_eq!(context.state, None, "{state:?}");
        }
    }

    #[test]
    fn a_producers_own_traceparent_header_wins_over_the_requests() {
        let request = TraceContext::parse(GIVEN, Some("from=request")).unwrap();
        let own = "00-11111111111111111111111111111111-2222222222222222-00";
        let mut headers = BTreeMap::from([
            ("TraceParent".to_string(), own.to_string()),
            ("x-other".to_string(), "1".to_string()),
        ]);
        TraceContext::keep(Some(&request), &mut headers);
        assert_eq!(headers.len(), 2);
        let kept = TraceContext::from_kept(&headers).unwrap();
        assert_eq!(kept.traceparent(), own);
        assert!(!kept.sampled());

        let mut headers = BTreeMap::from([("TraceState".to_string(), "stale=1".to_string())]);
        TraceContext::keep(Some(&request), &mut headers);
        assert_eq!(
            headers,
            BTreeMap::from([
                (TRACEPARENT.to_string(), GIVEN.to_string()),
                (TRACESTATE.to_string(), "from=request".to_string()),
            ])
        );
    }

    #[test]
    fn a_producers_malformed_traceparent_header_is_dropped_for_the_requests_or_for_none() {
        let request = TraceContext::parse(GIVEN, Some("from=request")).unwrap();
        for own in [
            "garbage",
            "ff-11111111111111111111111111111111-2222222222222222-01",
            "00-00000000000000000000000000000000-2222222222222222-01",
        ] {
            let mut headers = BTreeMap::from([
                ("Traceparent".to_string(), own.to_string()),
                ("tracestate".to_string(), "own=1".to_string()),
                ("x-other".to_string(), "1".to_string()),
            ]);
            TraceContext::keep(Some(&request), &mut headers);
            assert_eq!(
                headers,
                BTreeMap::from([
                    (TRACEPARENT.to_string(), GIVEN.to_string()),
                    (TRACESTATE.to_string(), "from=request".to_string()),
                    ("x-other".to_string(), "1".to_string()),
                ]),
                "{own}"
            );
            let mut headers = BTreeMap::from([("Traceparent".to_string(), own.to_string())]);
            TraceContext::keep(None, &mut headers);
            assert!(headers.is_empty(), "{own}: {headers:?}");
        }
    }

    #[test]
    fn request_headers_join_several_tracestate_lines() {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(TRACEPARENT, GIVEN.parse().unwrap());
        headers.append(TRACESTATE, "a=1".parse().unwrap());
        headers.append(TRACESTATE, "b=2".parse().unwrap());
        let context = TraceContext::from_headers(&headers).unwrap();
        assert_eq!(context.state.as_deref(), Some("a=1,b=2"));
    }
}
