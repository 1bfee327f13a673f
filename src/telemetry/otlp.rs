//! The OTLP/HTTP body of an export: an `ExportTraceServiceRequest` in
//! protobuf's wire format, written by hand.
//!
//! hookd exports one message type with a dozen fields, so the encoder is a
//! page; the `opentelemetry-otlp` stack (its SDK, prost and their
//! dependencies) would add to a first build that #51 is trying to halve.
//! The tests decode what this writes with the OpenTelemetry project's own
//! Python bindings (`opentelemetry-proto`), an independent decoder.
//!
//! Field numbers are those of `opentelemetry/proto/trace/v1/trace.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`.

use super::spans::{AttributeValue, Span};

/// Protobuf's wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LENGTH_DELIMITED: u8 = 2;

/// An `ExportTraceServiceRequest` holding `spans` under one resource (the
/// process: `service.name` and `service.instance.id`) and one scope.
pub fn export_request(resource: &[(&str, String)], spans: &[Span]) -> Vec<u8> {
    let mut scope_spans = Vec::with_capacity(spans.len() * 160);
    message(&mut scope_spans, 1, |scope| {
        string(scope, 1, "hookd");
        string(scope, 2, env!("CARGO_PKG_VERSION"));
    });
    for span in spans {
        message(&mut scope_spans, 2, |out| encode_span(out, span));
    }
    let mut resource_spans = Vec::with_capacity(scope_spans.len() + 128);
    message(&mut resource_spans, 1, |out| {
        for (key, value) in resource {
            message(out, 1, |kv| {
                key_value(kv, key, &AttributeValue::Text(value.clone()))
            });
        }
    });
    bytes_field(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::with_capacity(resource_spans.len() + 8);
    bytes_field(&mut request, 1, &resource_spans);
    request
}

fn encode_span(out: &mut Vec<u8>, span: &Span) {
    bytes_field(out, 1, &span.trace_id);
    bytes_field(out, 2, &span.span_id);
    if let Some(state) = &span.trace_state {
        string(out, 3, state);
    }
    if let Some(parent) = &span.parent_id {
        bytes_field(out, 4, parent);
    }
    string(out, 5, span.name);
    varint_field(out, 6, span.kind as u64);
    fixed64(out, 7, span.start_unix_nanos);
    fixed64(out, 8, span.end_unix_nanos);
    for (key, value) in &span.attributes {
        message(out, 9, |kv| key_value(kv, key, value));
    }
    // STATUS_CODE_ERROR with its message; UNSET otherwise, as the
    // conventions ask of a span that succeeded.
    message(out, 15, |status| {
        if let Some(message) = &span.error {
            string(status, 2, message);
            varint_field(status, 3, 2);
        }
    });
}

fn key_value(out: &mut Vec<u8>, key: &str, value: &AttributeValue) {
    string(out, 1, key);
    message(out, 2, |any| match value {
        AttributeValue::Text(text) => string(any, 1, text),
        // int_value is an int64: negative numbers as ten-byte varints.
        AttributeValue::Int(n) => varint_field(any, 3, *n as u64),
    });
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from(field) << 3 | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u32, n: u64) {
    key(out, field, VARINT);
    varint(out, n);
}

fn fixed64(out: &mut Vec<u8>, field: u32, n: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&n.to_le_bytes());
}

fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, LENGTH_DELIMITED);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn string(out: &mut Vec<u8>, field: u32, text: &str) {
    bytes_field(out, field, text.as_bytes());
}

/// A nested message: written into a scratch buffer, then length-prefixed.
fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes_field(out, field, &inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_seven_bits_a_byte_low_first() {
        for (n, expected) in [
            (0u64, &[0x00][..]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut out = Vec::new();
            varint(&mut out, n);
            assert_eq!(out, expected, "{n}");
        }
    }

    #[test]
    fn a_span_starts_with_its_ids_as_length_delimited_fields() {
        let span = Span {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent_id: None,
            trace_state: None,
            name: "x",
            kind: super::super::spans::SpanKind::Client,
            start_unix_nanos: 5,
            end_unix_nanos: 6,
            attributes: vec![],
            error: None,
        };
        let mut out = Vec::new();
        encode_span(&mut out, &span);
        // Field 1, wire type 2, 16 bytes of ones; field 2, 8 bytes of twos.
        assert_eq!(&out[..2], &[0x0a, 16]);
        assert_eq!(&out[2..18], &[1; 16]);
        assert_eq!(&out[18..20], &[0x12, 8]);
        assert_eq!(&out[20..28], &[2; 8]);
        // name "x", kind 3 (client), then the two fixed64 times.
        assert_eq!(&out[28..31], &[0x2a, 1, b'x']);
        assert_eq!(&out[31..33], &[0x30, 3]);
        assert_eq!(out[33], 0x39);
        assert_eq!(&out[34..42], &5u64.to_le_bytes());
    }
}
