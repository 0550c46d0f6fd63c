"""Publishing to an AWS AppSync Events API over HTTP, signed with the function's IAM role.

The local stack serves the same `POST /event` endpoint (devstack/live_server.py), so the same
code publishes in both places. One publish carries one channel's message. The live publisher
publishes a read's messages from a few threads at once; each thread keeps its own connection
alive between messages (`http.client`: a publish costs about half the CPU it cost through
urllib3's pool, measured on the local stack), so the TLS session is set up once per thread.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.session import Session


class PublishError(Exception):
    """The event API refused or did not answer a publish."""

    def __init__(self, channel: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"publish to {channel} failed: {detail}")
        self.channel = channel
        self.status = status


# A kept-alive connection the server closed meanwhile fails on its next request with one of
# these before anything was sent for it: that request is sent again on a new connection.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class EventApiPublisher:
    def __init__(self, url: str, *, region: str | None = None, timeout: float = 2.0) -> None:
        self.url = url
        self.region = (
            region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
        )
        parts = urlsplit(url)
        self.host = parts.netloc
        self._https = parts.scheme == "https"
        self._address = (parts.hostname or "", parts.port)
        self._path = parts.path or "/"
        self._timeout = timeout
        self._session = Session()
        self._local = threading.local()

    def publish(self, channel: str, events: list[str]) -> None:
        """Publish up to five events (JSON texts) on one channel."""
        body = json.dumps({"channel": channel, "events": events}, separators=(",", ":"))
        headers = self._signed_headers(channel, body)
        payload = body.encode()
        for attempt in range(2):
            connection, reused = self._connection()
            try:
                connection.request("POST", self._path, body=payload, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except _STALE as exc:
                self._drop()
                if reused and attempt == 0:
                    continue  # the server closed the idle connection: once more, on a new one
                raise PublishError(channel, f"{type(exc).__name__}: {exc}") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise PublishError(channel, f"{type(exc).__name__}: {exc}") from exc
            if response.will_close:
                self._drop()
            break
        if response.status != 200:
            raise PublishError(channel, _detail(data), response.status)
        failed = _json(data).get("failed") or []
        if failed:
            raise PublishError(channel, json.dumps(failed)[:300], response.status)

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, and whether it served a request before."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        host, port = self._address
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(host, port, timeout=self._timeout)
        self._local.connection = connection
        return connection, False

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()

    def _signed_headers(self, channel: str, body: str) -> dict[str, str]:
        request = AWSRequest(
            method="POST",
            url=self.url,
            data=body.encode(),
            headers={"content-type": "application/json", "host": self.host},
        )
        credentials = self._session.get_credentials()
        if credentials is None:
            raise PublishError(channel, "no AWS credentials to sign the publish with")
        SigV4Auth(credentials.get_frozen_credentials(), "appsync", self.region).add_auth(request)
        return dict(request.headers.items())


def _json(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _detail(data: bytes) -> str:
    errors = _json(data).get("errors")
    if errors:
        return json.dumps(errors)[:300]
    return data[:300].decode(errors="replace")
