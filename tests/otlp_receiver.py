"""A minimal OTLP/HTTP trace receiver for tests/it/traces.rs.

Decodes each POST /v1/traces body with the OpenTelemetry project's own
protobuf bindings (opentelemetry-proto from PyPI), so hookd's hand-written
encoder is checked by an independent decoder. Prints its port, then one
JSON line per export request: the request's headers and its spans. A body
that does not decode is answered 400 and printed as an error line.

    python otlp_receiver.py
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(value):
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def span_json(span, resource):
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "trace_state": span.trace_state,
        "name": span.name,
        "kind": span.kind,
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "attributes": {kv.key: any_value(kv.value) for kv in span.attributes},
        "status": {"code": span.status.code, "message": span.status.message},
        "resource": resource,
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.answer(404, b"")
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as error:
            print(json.dumps({"error": str(error)}), flush=True)
            self.answer(400, b"")
            return
        spans = []
        for resource_spans in request.resource_spans:
            resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(span_json(span, resource))
        headers = {name.lower(): value for name, value in self.headers.items()}
        print(json.dumps({"headers": headers, "spans": spans}), flush=True)
        self.answer(200, ExportTraceServiceResponse().SerializeToString())

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
