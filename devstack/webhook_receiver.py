"""A webhook receiver for the local stack and the tests: it checks each delivery's signature
with the documented recipe (leaderboard.domain.period_events.verify) and keeps the last ones.

`make run` points WEBHOOK_URL at the gateway's `POST /local/webhook`, answered by a
`WebhookReceiver`; `GET /local/webhook-events` lists what arrived (newest last). Tests start a
`LocalWebhookReceiver`, the same receiver on an HTTP server of its own, and script its answers
(a status, a delay) to exercise the delivery function's retries.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from leaderboard.domain.period_events import (
    HEADER_EVENT_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    verify,
)

KEEP = 50
# Configuration that lets the webhook delivery function load where it is never called (the
# in-process API of the tests, cold-start probes): nothing listens at these addresses.
WEBHOOK_PLACEHOLDER_ENV = {
    "WEBHOOK_URL": "http://127.0.0.1:9/local/webhook",
    "WEBHOOK_SECRET": "placeholder-secret-never-used",
    "WEBHOOK_QUEUE_URL": "http://127.0.0.1:9/000000000000/unused-webhooks",
    "WEBHOOK_DLQ_URL": "http://127.0.0.1:9/000000000000/unused-webhooks-dlq",
}
PATH = "/local/webhook"
EVENTS_PATH = "/local/webhook-events"


@dataclass(frozen=True)
class Received:
    event_id: str
    attempt: str | None
    verified: bool
    duplicate: bool
    answered: int
    body: bytes
    headers: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        try:
            envelope: Any = json.loads(self.body)
        except ValueError:
            envelope = None
        attempt = self.attempt
        return {
            "event_id": self.event_id,
            "attempt": int(attempt) if attempt and attempt.isdigit() else attempt,
            "verified": self.verified,
            "duplicate": self.duplicate,
            "answered": self.answered,
            "event": envelope,
            # what a receiver of one's own sees, to check the signature with the recipe
            "headers": {
                name: value
                for name, value in self.headers.items()
                if name.startswith("leaderboard-") or name == "content-type"
            },
            "body": self.body.decode("utf-8", "replace"),
        }


class WebhookReceiver:
    """Verifies, remembers, and answers: 204 for a verified delivery (a duplicate too: a
    receiver acknowledges what it already has), 401 for a bad signature, or what a test
    scripted with `respond`."""

    def __init__(self, secret: bytes, keep: int = KEEP) -> None:
        self.secret = secret
        self.received: deque[Received] = deque(maxlen=keep)
        self._seen: set[str] = set()
        self._script: deque[tuple[int, float]] = deque()
        self._lock = threading.Lock()
        self.arrived = threading.Condition(self._lock)

    def respond(self, *answers: int | tuple[int, float]) -> None:
        """The next answers, in order: a status, or (status, seconds to wait first)."""
        with self._lock:
            for answer in answers:
                self._script.append(answer if isinstance(answer, tuple) else (answer, 0.0))

    def handle(self, headers: dict[str, str], body: bytes) -> tuple[int, float]:
        """(status, delay) for one delivery; headers with lowercase names."""
        verified = verify(
            self.secret,
            headers.get(HEADER_TIMESTAMP.lower()),
            headers.get(HEADER_SIGNATURE.lower()),
            body,
            now=time.time(),
        )
        event_id = headers.get(HEADER_EVENT_ID.lower(), "")
        with self._lock:
            status, delay = self._script.popleft() if self._script else (204, 0.0)
            if not verified and status < 300:
                status = 401
            duplicate = verified and event_id in self._seen
            if verified and status < 300:
                self._seen.add(event_id)
            self.received.append(
                Received(
                    event_id,
                    headers.get("leaderboard-delivery-attempt"),
                    verified,
                    duplicate,
                    status,
                    body,
                    headers,
                )
            )
            self.arrived.notify_all()
        return status, delay

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.to_json() for r in self.received]

    def wait_for(
        self, condition: Callable[[list[Received]], bool], timeout: float = 30
    ) -> list[Received]:
        """Block until `condition(received)` holds (or fail after `timeout`)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not condition(list(self.received)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"webhook receiver: condition not met, got {len(self.received)}"
                    )
                self.arrived.wait(left)
            return list(self.received)


class LocalWebhookReceiver:
    """A `WebhookReceiver` on an HTTP server of its own (127.0.0.1, a free port), in threads."""

    def __init__(self, secret: bytes) -> None:
        self.receiver = WebhookReceiver(secret)
        receiver = self.receiver

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status, delay = receiver.handle(
                    {k.lower(): v for k, v in self.headers.items()}, body
                )
                if delay:
                    time.sleep(delay)
                self._answer(status, b"")

            def do_GET(self) -> None:
                self._answer(200, json.dumps(receiver.events()).encode())

            def _answer(self, status: int, payload: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout under test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{PATH}"

    def __enter__(self) -> LocalWebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
