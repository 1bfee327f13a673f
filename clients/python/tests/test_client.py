"""The README's example as a test, against a running hookd: HOOKD_URL and
HOOKD_TOKEN name it (tests/it/clients.rs starts one in each mode). A receiver
of its own takes the delivery and verifies its signature with the Standard
Webhooks library (`standardwebhooks` on PyPI), not hookd's code.

    HOOKD_URL=http://127.0.0.1:8080 python tests/test_client.py
"""

import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from standardwebhooks.webhooks import Webhook, WebhookVerificationError  # noqa: E402

from hookd_client import AuthenticatedClient, Client  # noqa: E402
from hookd_client.api.endpoints import create_endpoint, rotate_endpoint_secret  # noqa: E402
from hookd_client.api.notifications import (  # noqa: E402
    create_notification,
    get_notification,
    list_notification_attempts,
    retry_notification,
)
from hookd_client.models import CreateNotification, EndpointFields, ErrorBody  # noqa: E402

received = []


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"] or 0))
        received.append(({name.lower(): value for name, value in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def eventually(what, check):
    """Polls `check` every 20 ms until it gives a value, for at most 20 s."""
    deadline = time.monotonic() + 20
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    base_url, token = os.environ["HOOKD_URL"], os.environ.get("HOOKD_TOKEN")
    client = (
        AuthenticatedClient(base_url=base_url, token=token)
        if token
        # Open mode answers 415 to a POST without it, and a retry has no body.
        else Client(base_url=base_url, headers={"Content-Type": "application/json"})
    )

    # An endpoint, a notification, its delivery and its attempts.
    endpoint = create_endpoint.sync(
        client=client,
        body=EndpointFields(uid=f"py-{os.getpid()}-{time.time_ns()}", url=f"http://127.0.0.1:{port}/orders"),
    )
    assert not isinstance(endpoint, ErrorBody), endpoint
    assert endpoint.secret.startswith("whsec_"), "the admin token sees the secret"

    notification = create_notification.sync(
        client=client,
        body=CreateNotification(endpoint=endpoint.uid, key="order-123:paid", payload={"order": 123, "status": "paid"}),
    )
    assert not isinstance(notification, ErrorBody), notification

    headers, body = eventually("the delivery", lambda: received[0] if received else None)
    webhook = Webhook(endpoint.secret)
    assert webhook.verify(body, headers) == {"order": 123, "status": "paid"}
    assert headers["webhook-id"] == str(notification.id)
    try:
        webhook.verify(body.replace(b"paid", b"refunded"), headers)
        raise AssertionError("a changed body verified")
    except WebhookVerificationError:
        pass

    def attempts():
        page = list_notification_attempts.sync(notification.id, client=client)
        return page.data if page is not None and not isinstance(page, ErrorBody) and page.data else None

    first = eventually("the recorded attempt", attempts)[0]
    assert first.status_code == 200, first
    read = get_notification.sync(notification.id, client=client)
    assert read.status == "succeeded", read

    # A refusal comes back as the API's error shape, typed.
    refused = create_notification.sync_detailed(
        client=client, body=CreateNotification(endpoint="no-such-endpoint", payload={})
    )
    assert refused.status_code == 422, refused
    assert isinstance(refused.parsed, ErrorBody)
    assert refused.parsed.error.code == "unknown_endpoint"

    # A call whose body is optional, given none (it once sent the client's
    # own "unset" marker and raised TypeError); a body-less POST refused,
    # typed as any refusal.
    rotated = rotate_endpoint_secret.sync(endpoint.uid, client=client)
    assert not isinstance(rotated, ErrorBody) and rotated.secret.startswith("whsec_"), rotated
    again = retry_notification.sync_detailed(notification.id, client=client)
    assert again.status_code == 409 and isinstance(again.parsed, ErrorBody), again
    assert again.parsed.error.code == "not_retryable", again.parsed

    server.shutdown()
    print(f"python client: endpoint {endpoint.uid}, notification {notification.id} delivered and verified")


if __name__ == "__main__":
    main()
