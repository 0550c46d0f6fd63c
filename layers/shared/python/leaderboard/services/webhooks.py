"""Webhook delivery of period.ended events: what one attempt sends, and what its answer means.

No AWS here: the handler (functions/webhook_delivery/app.py) takes a message from the webhook
queue, asks `WebhookDelivery.deliver` and turns its `Attempt` into SQS actions (delete, a new
visibility timeout, or the dead-letter queue). docs/API.md documents the contract for receivers.

- 2xx: delivered.
- 5xx, 408, 429, a timeout or a connection error: the receiver may recover; retried with
  exponential backoff from the message's receive count, and dead-lettered by the queue's redrive
  policy after its maxReceiveCount.
- Anything else (other 4xx, 3xx: redirects are not followed, a signed body must not be sent
  elsewhere) and a message that is not a period.ended event: retrying cannot help, so it goes
  to the dead-letter queue at once, where an operator sees it and redrives it once fixed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from leaderboard.domain.period_events import (
    EVENT_TYPE,
    HEADER_EVENT_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    canonical_json,
    sign,
)
from leaderboard.stores.aws.webhook_sender import TransportFailure

HEADER_ATTEMPT = "Leaderboard-Delivery-Attempt"
RETRY_STATUSES = frozenset({408, 429})
DEFAULT_RETRY_BASE_SECONDS = 10
MAX_BACKOFF_SECONDS = 900  # 15 minutes: SQS would allow 12 h, a receiver back up waits less


class Outcome(Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    PERMANENT = "permanent"


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one delivery attempt came to: the outcome, the receiver's status (None when no
    answer came), why, and for a retry the seconds to wait before the next attempt."""

    outcome: Outcome
    status: int | None
    detail: str
    retry_in_seconds: int | None = None


class WebhookTransport(Protocol):
    def post(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
        """POST and return the status; raise TransportFailure when no answer came."""
        ...


class NotAnEvent(ValueError):
    """A queue message that is not an EventBridge period.ended event (poison)."""


def classify(status: int | None) -> Outcome:
    """2xx delivered; no answer, 5xx, 408 and 429 retried; the rest permanent."""
    if status is None:
        return Outcome.RETRY
    if 200 <= status <= 299:
        return Outcome.DELIVERED
    if status >= 500 or status in RETRY_STATUSES:
        return Outcome.RETRY
    return Outcome.PERMANENT


def backoff_seconds(
    receive_count: int,
    base: int = DEFAULT_RETRY_BASE_SECONDS,
    cap: int = MAX_BACKOFF_SECONDS,
) -> int:
    """The wait after the n-th failed attempt: base * 2^(n-1), at most `cap` (10 s, 20 s, 40 s,
    ... 15 min with the defaults)."""
    n = max(1, receive_count)
    if base <= 0:
        return 0
    return int(min(cap, base * 2 ** min(n - 1, 32)))


def envelope_of(message_body: str) -> dict[str, Any]:
    """The period.ended envelope of a webhook-queue message: the EventBridge event's detail."""
    try:
        event = json.loads(message_body)
    except ValueError as exc:
        raise NotAnEvent("the message is not JSON") from exc
    if not isinstance(event, dict) or event.get("detail-type") != EVENT_TYPE:
        raise NotAnEvent(f"the message is not a {EVENT_TYPE} event")
    detail = event.get("detail")
    if isinstance(detail, str):  # a target input transformer may pass the detail as text
        try:
            detail = json.loads(detail)
        except ValueError as exc:
            raise NotAnEvent("the event's detail is not JSON") from exc
    if (
        not isinstance(detail, dict)
        or not isinstance(detail.get("id"), str)
        or detail.get("type") != EVENT_TYPE
    ):
        raise NotAnEvent("the event's detail is not a period.ended envelope")
    return detail


class WebhookDelivery:
    """Signs and posts one envelope, and says what the answer means."""

    def __init__(
        self,
        transport: WebhookTransport,
        url: str,
        secret: Callable[[], bytes],
        *,
        timeout_s: float = 5.0,
        retry_base_seconds: int = DEFAULT_RETRY_BASE_SECONDS,
        max_backoff_seconds: int = MAX_BACKOFF_SECONDS,
    ) -> None:
        self.transport = transport
        self.url = url
        self.secret = secret  # called per attempt: the handler fetches it once and caches it
        self.timeout_s = timeout_s
        self.retry_base_seconds = retry_base_seconds
        self.max_backoff_seconds = max_backoff_seconds

    def request(
        self, envelope: Mapping[str, Any], attempt: int, now: int
    ) -> tuple[bytes, dict[str, str]]:
        """The body (the envelope's canonical JSON, as the bus carried it) and the headers."""
        body = canonical_json(envelope).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "leaderboard-webhooks/1",
            HEADER_EVENT_ID: str(envelope["id"]),
            HEADER_TIMESTAMP: str(now),
            HEADER_SIGNATURE: sign(self.secret(), now, body),
            HEADER_ATTEMPT: str(attempt),
        }
        return body, headers

    def deliver(self, envelope: Mapping[str, Any], attempt: int, now: int) -> Attempt:
        """One attempt; `attempt` is the message's receive count (1 the first time)."""
        body, headers = self.request(envelope, attempt, now)
        try:
            status: int | None = self.transport.post(self.url, body, headers, self.timeout_s)
            detail = f"HTTP {status}"
        except TransportFailure as exc:
            status, detail = None, f"no answer: {exc}"
        outcome = classify(status)
        if outcome is Outcome.RETRY:
            wait = backoff_seconds(attempt, self.retry_base_seconds, self.max_backoff_seconds)
            return Attempt(outcome, status, detail, wait)
        return Attempt(outcome, status, detail)
