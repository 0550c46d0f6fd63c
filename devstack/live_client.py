"""A small synchronous client of the live updates' WebSocket protocol (AppSync Events), for
tests and tools. It speaks exactly what a client of the deployed service speaks, so it works
against AWS (wss://...appsync-realtime-api...) and the local stack alike.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

from websockets.sync.client import ClientConnection, connect

PROTOCOL = "aws-appsync-event-ws"


def auth_subprotocol(http_host: str, api_key: str) -> str:
    """The `header-...` subprotocol that carries the connection's authorization."""
    header = json.dumps({"host": http_host, "x-api-key": api_key}, separators=(",", ":"))
    return "header-" + base64.urlsafe_b64encode(header.encode()).decode().rstrip("=")


class LiveClient:
    def __init__(self, realtime_url: str, http_host: str, api_key: str, timeout: float = 5.0):
        self.auth = {"host": http_host, "x-api-key": api_key}
        self._connection = connect(
            realtime_url,
            subprotocols=[PROTOCOL, auth_subprotocol(http_host, api_key)],  # type: ignore[list-item]
            open_timeout=timeout,
        )
        self.socket: ClientConnection = self._connection.__enter__()
        self.send({"type": "connection_init"})
        ack = self.receive(timeout)
        if ack.get("type") != "connection_ack":
            raise ConnectionError(f"no connection_ack: {ack}")
        self.connection_timeout_ms = int(ack.get("connectionTimeoutMs", 300_000))

    def send(self, message: dict[str, Any]) -> None:
        self.socket.send(json.dumps(message))

    def receive(self, timeout: float) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.socket.recv(timeout=timeout))
        return value

    def subscribe(self, channel: str, timeout: float = 5.0, *, bearer: str | None = None) -> str:
        """Subscribe with the API key, or on a player channel with a bearer token."""
        sub_id = str(uuid.uuid4())
        auth = (
            self.auth
            if bearer is None
            else {"host": self.auth["host"], "Authorization": f"Bearer {bearer}"}
        )
        self.send({"type": "subscribe", "id": sub_id, "channel": channel, "authorization": auth})
        deadline = time.monotonic() + timeout
        while True:
            reply = self.receive(max(0.01, deadline - time.monotonic()))
            if reply.get("id") == sub_id and reply.get("type") == "subscribe_success":
                return sub_id
            if reply.get("id") == sub_id:
                raise ConnectionError(f"subscribe refused: {reply}")

    def next_event(self, timeout: float) -> dict[str, Any]:
        """The next published message (keep-alives skipped), decoded."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(max(0.01, deadline - time.monotonic()))
            if message.get("type") == "data":
                event: dict[str, Any] = json.loads(message["event"])
                return event

    def events_until(self, predicate: Any, timeout: float) -> list[dict[str, Any]]:
        """Messages received until one satisfies `predicate` (TimeoutError if none does)."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            event = self.next_event(max(0.01, deadline - time.monotonic()))
            seen.append(event)
            if predicate(event):
                return seen

    def close(self) -> None:
        self._connection.__exit__(None, None, None)

    def __enter__(self) -> LiveClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
