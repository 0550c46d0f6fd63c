"""The local stand-in for AppSync Events (devstack.live_server) in a process of its own."""

from __future__ import annotations

import json
import secrets
import urllib.request
from typing import Any

from devstack.servers.process import LOOPBACK, _PythonServer, free_port


class LocalEventApi(_PythonServer):
    """The AppSync Events stand-in (``python -m devstack.live_server``) in a child process.

    Two ports, as AWS has two domains: HTTP for ``POST /event`` (and our ``/stats``), and
    WebSocket for ``/event/realtime``. Channels and subscriptions live in that process only.
    Publishes must be SigV4-signed with ``publisher_credentials`` (new random ones unless
    given): what the local stack gives its functions as their AWS credentials.
    """

    _kind = "event-api"
    _log_prefix = "event-api-"
    _log_name = "event-api.log"

    def __init__(
        self,
        http_port: int | None = None,
        ws_port: int | None = None,
        *,
        api_key: str | None = None,
        ka_interval: float | None = None,
        publisher_credentials: tuple[str, str] | None = None,
        token_env: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        # JWT_SECRET, JWT_ISSUER, JWT_AUDIENCE: who may subscribe to player channels
        self.token_env = dict(token_env or {})
        self.publisher_credentials = publisher_credentials or (
            f"LOCAL{secrets.token_hex(8).upper()}",
            secrets.token_urlsafe(30),
        )
        self._given_http = http_port
        self._given_ws = ws_port
        self._port_fixed = http_port is not None and ws_port is not None
        self._port = http_port if http_port is not None else free_port()
        self._ws_port = ws_port if ws_port is not None else free_port()
        self._api_key = api_key or f"da2-{secrets.token_hex(13)}"
        self.ka_interval = ka_interval

    @property
    def http_port(self) -> int:
        return self._port

    @property
    def ws_port(self) -> int:
        return self._ws_port

    @property
    def api_key(self) -> str:
        """The API key WebSocket clients must present (in ``header-`` and on subscribe)."""
        return self._api_key

    @property
    def http_url(self) -> str:
        """Base URL of the HTTP endpoint (``/event``, ``/stats``, ``/health``)."""
        return self._url("http", self._port)

    @property
    def publish_url(self) -> str:
        """Where to ``POST`` events: what ``LIVE_EVENTS_URL`` names."""
        return f"{self.http_url}/event"

    @property
    def realtime_url(self) -> str:
        """The WebSocket URL clients connect to."""
        return self._url("ws", self._ws_port, "/event/realtime")

    def _argv(self, attempt: int) -> list[str]:
        if attempt and not self._port_fixed:  # a port was taken: pick the free ones anew
            self._port = self._given_http if self._given_http is not None else free_port()
            self._ws_port = self._given_ws if self._given_ws is not None else free_port()
        argv = ["devstack.live_server", "--http-port", str(self._port)]
        argv += ["--ws-port", str(self._ws_port), "--api-key", self._api_key, "--host", LOOPBACK]
        argv += ["--publisher-key-id", self.publisher_credentials[0]]
        if self.ka_interval is not None:
            argv += ["--ka-interval", str(self.ka_interval)]
        return argv

    def _ports(self) -> tuple[int, ...]:
        return (self._port, self._ws_port)

    def _secret_env(self) -> dict[str, str]:
        # not on a command line
        return {"LIVE_PUBLISHER_SECRET": self.publisher_credentials[1], **self.token_env}

    def stats(self) -> dict[str, Any]:
        """``GET /stats``: connections, subscriptions, events published per channel, frames
        delivered."""
        url = f"{self.http_url}/stats"
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our http://
            stats: dict[str, Any] = json.load(response)
        return stats

    def signed_headers(
        self, body: bytes, credentials: tuple[str, str] | None = None
    ) -> dict[str, str]:
        """The headers of a ``POST /event`` of ``body`` signed as the publisher signs it
        (botocore's SigV4, service ``appsync``), with ``credentials`` or the publisher's."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        host = self.publish_url.split("/")[2]
        request = AWSRequest(
            "POST", self.publish_url, {"content-type": "application/json", "host": host}, body
        )
        key_id, secret = credentials or self.publisher_credentials
        SigV4Auth(Credentials(key_id, secret), "appsync", "us-east-1").add_auth(request)
        return dict(request.headers.items())

    def publish(self, channel: str, events: list[str]) -> dict[str, Any]:
        """Publish JSON texts to ``channel`` as the signed publisher would; returns the answer
        (raises ``urllib.error.HTTPError`` on a refusal)."""
        body = json.dumps({"channel": channel, "events": events}).encode()
        headers = self.signed_headers(body)
        request = urllib.request.Request(self.publish_url, body, headers)  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            answer: dict[str, Any] = json.load(response)
        return answer
