"""Publishing to an AWS AppSync Events API over HTTP, signed with the function's IAM role.

The local stack serves the same `POST /event` endpoint (devstack/live_server.py), so the same
code publishes in both places. One publish carries one channel's message; the connection pool
keeps the TLS sessions warm between messages, for the publisher's concurrent publishes.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlsplit

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.session import Session


class PublishError(Exception):
    """The event API refused or did not answer a publish."""

    def __init__(self, channel: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"publish to {channel} failed: {detail}")
        self.channel = channel
        self.status = status


class EventApiPublisher:
    def __init__(self, url: str, *, region: str | None = None, timeout: float = 2.0) -> None:
        self.url = url
        self.region = (
            region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
        )
        self.host = urlsplit(url).netloc
        self._session = Session()
        self._pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=16,
            retries=False,
            timeout=urllib3.Timeout(connect=timeout, read=timeout),
        )

    def publish(self, channel: str, events: list[str]) -> None:
        """Publish up to five events (JSON texts) on one channel."""
        body = json.dumps({"channel": channel, "events": events}, separators=(",", ":"))
        headers = self._signed_headers(channel, body)
        try:
            response = self._pool.request("POST", self.url, body=body.encode(), headers=headers)
        except urllib3.exceptions.HTTPError as exc:
            raise PublishError(channel, f"{type(exc).__name__}: {exc}") from exc
        if response.status != 200:
            raise PublishError(channel, _detail(response.data), response.status)
        failed = _json(response.data).get("failed") or []
        if failed:
            raise PublishError(channel, json.dumps(failed)[:300], response.status)

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
