"""A local stand-in for the EventBridge bus of template.yaml (`PeriodEventBus`).

It answers the one call the service makes, PutEvents (AWS JSON 1.1, `X-Amz-Target:
AWSEvents.PutEvents`, as botocore sends it with `endpoint_url` pointed here), keeps every event
it accepted (`events`, or `GET /events` as JSON), and does what the template's rule does: each
`period.ended` event from source `leaderboard` goes to the webhook queue on the local SQS, as
the EventBridge-shaped message the delivery function reads in AWS.

It runs in a thread of the stack's process (it is small and rarely called): no process to
start, so `make run` starts no slower.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("devstack.events")
JSON_11 = "application/x-amz-json-1.1"
ACCOUNT = "000000000000"
REGION = "us-east-1"
# The template's PeriodEndedWebhookRule.
RULE_SOURCE, RULE_DETAIL_TYPE = "leaderboard", "period.ended"


def eventbridge_message(entry: dict[str, Any], event_id: str, now: datetime) -> dict[str, Any]:
    """An event as EventBridge hands it to an SQS target: the entry's Detail parsed into
    `detail`, with the envelope fields EventBridge adds."""
    return {
        "version": "0",
        "id": event_id,
        "detail-type": entry["DetailType"],
        "source": entry["Source"],
        "account": ACCOUNT,
        "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": list(entry.get("Resources") or []),
        "detail": json.loads(entry["Detail"]),
    }


class LocalEventBus:
    """PutEvents on one named bus, in memory; `forward` receives each matching event's message
    body (the stack sends it to the webhook queue)."""

    def __init__(
        self,
        name: str = "leaderboard-local-events",
        forward: Callable[[str], None] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.name = name
        self.arn = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}"
        self.forward = forward
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        bus = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                target = self.headers.get("x-amz-target", "")
                if target != "AWSEvents.PutEvents":
                    self._send(400, _error("UnknownOperationException", f"not served: {target}"))
                    return
                try:
                    request = json.loads(body)
                    entries = request["Entries"]
                    if not isinstance(entries, list) or not 1 <= len(entries) <= 10:
                        raise ValueError("Entries must hold 1 to 10 entries")
                except (ValueError, KeyError, TypeError) as exc:
                    self._send(400, _error("ValidationException", str(exc)))
                    return
                self._send(200, bus.put_events(entries))

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/events":
                    self._send(404, _error("NotFound", self.path))
                    return
                with bus._lock:
                    listed = list(bus.events)
                self._send(200, listed, "application/json")

            def _send(self, status: int, payload: Any, kind: str = JSON_11) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="event-bus", daemon=True
        )

    @property
    def endpoint_url(self) -> str:
        """What EVENTS_ENDPOINT_URL names (boto3's `endpoint_url` for the events client)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def put_events(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """PutEvents' answer: each entry accepted (an EventId) or refused (an ErrorCode)."""
        results: list[dict[str, Any]] = []
        for entry in entries:
            problem = self._problem(entry)
            if problem is not None:
                results.append({"ErrorCode": problem[0], "ErrorMessage": problem[1]})
                continue
            event_id = str(uuid.uuid4())
            message = eventbridge_message(entry, event_id, datetime.now(UTC))
            with self._lock:
                self.events.append(message)
            results.append({"EventId": event_id})
            if (
                self.forward is not None
                and entry["Source"] == RULE_SOURCE
                and entry["DetailType"] == RULE_DETAIL_TYPE
            ):
                try:
                    self.forward(json.dumps(message))
                except Exception:  # EventBridge retries a target; here the log says so
                    log.exception("event bus: could not forward %s to the webhook queue", event_id)
        failed = sum("ErrorCode" in r for r in results)
        return {"FailedEntryCount": failed, "Entries": results}

    def _problem(self, entry: Any) -> tuple[str, str] | None:
        if not isinstance(entry, dict):
            return "MalformedEntry", "an entry must be an object"
        if entry.get("EventBusName") not in (self.name, self.arn):
            return "NotFoundException", f"Event bus {entry.get('EventBusName')} does not exist."
        for field in ("Source", "DetailType", "Detail"):
            if not isinstance(entry.get(field), str) or not entry[field]:
                return "MalformedDetail" if field == "Detail" else "InvalidArgument", (
                    f"{field} is required"
                )
        try:
            detail = json.loads(entry["Detail"])
        except ValueError:
            return "MalformedDetail", "Detail is malformed."
        if not isinstance(detail, dict):
            return "MalformedDetail", "Detail must be a JSON object."
        if len(entry["Detail"].encode()) > 256 * 1024:
            return "EntryTooLarge", "the entry is larger than 256 KiB"
        return None

    def start(self) -> LocalEventBus:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LocalEventBus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(kind: str, message: str) -> dict[str, str]:
    return {"__type": kind, "message": message}
