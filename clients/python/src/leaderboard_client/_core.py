"""What the sync and the asyncio clients share: a request described once (`Call`), the retry
policy, and how an answer becomes a result or a typed exception. No I/O here."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote, urlencode, urlsplit

from .errors import LeaderboardError, error_for

__version__ = "0.1.0"
USER_AGENT = f"leaderboard-client-python/{__version__}"

T = TypeVar("T")


class _NoBody:
    def __repr__(self) -> str:
        return "NO_BODY"


NO_BODY: Any = _NoBody()


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request of the API. `resend` says whether it may be sent again after a connection
    failure (when it is unknown whether the service applied it): reads, PUTs and DELETEs, and
    submissions, which carry idempotency keys, may; ending a period or a rebuild may not.
    `empty` marks routes that answer 204 (the result is None)."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: Any = NO_BODY
    idempotency_key: str | None = None
    resend: bool = True
    empty: bool = False
    answers: frozenset[int] = frozenset({200, 201})

    def target(self) -> str:
        return self.path + (f"?{urlencode(self.query)}" if self.query else "")

    def payload(self) -> bytes | None:
        if self.body is NO_BODY:
            return None
        return json.dumps(self.body, separators=(",", ":"), allow_nan=False).encode()

    def headers(self, token: str | None, user_agent: str) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": user_agent}
        if self.body is not NO_BODY:
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self.idempotency_key is not None:
            headers["Idempotency-Key"] = self.idempotency_key
        return headers


def segment(value: str) -> str:
    """A path segment, percent-encoded (`a@b` -> `a%40b`; the API decodes the path)."""
    return quote(value, safe="")


def query(**params: object) -> tuple[tuple[str, str], ...]:
    """Query parameters without the ones left out (None)."""
    return tuple((name, str(value)) for name, value in params.items() if value is not None)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of 429 and 503 answers (and of connection failures, for requests that may be
    sent again), with jittered exponential backoff.

    At most `max_attempts` attempts in all. Without `Retry-After`, attempt n waits a random
    time up to `base_delay * 2**(n-1)` seconds ("full jitter"), at most `max_delay`. With
    `Retry-After` it waits that long plus up to `base_delay` of jitter, unless that is longer
    than `max_delay`: then the error is raised at once, for the caller to decide."""

    max_attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 20.0
    statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 503}))

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay(self, attempts: int, retry_after: float | None) -> float | None:
        """Seconds to wait before the next attempt, after `attempts` failed ones; None: stop."""
        if attempts >= self.max_attempts:
            return None
        if retry_after is not None:
            if retry_after > self.max_delay:
                return None
            return retry_after + random.uniform(0, self.base_delay)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempts - 1)))

    def should_retry(self, call: Call[Any], error: LeaderboardError) -> bool:
        if error.status is None:
            return call.resend
        return error.status in self.statuses


NO_RETRIES = RetryPolicy(max_attempts=1)

RetryHook = Callable[[int, LeaderboardError, float], None]
"""Called before each retry with the number of attempts made, the error and the delay."""


def retry_after(headers: Mapping[str, str]) -> float | None:
    """A `Retry-After` header in seconds (delta-seconds, or an HTTP date), else None."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def outcome(call: Call[T], answer: Answer) -> T:
    """The result of a call from its answer, or the typed exception raised."""
    if answer.status in call.answers or (call.empty and answer.status == 204):
        if call.empty or not answer.body:
            return cast(T, None)
        result = json.loads(answer.body)
        if call.idempotency_key is not None and isinstance(result, dict):
            # A single submission (only it sends the header): whether the service replayed an
            # earlier answer, and the key to retry it with, as the JS client tells them.
            replayed = answer.headers.get("idempotent-replayed", "").strip().lower() == "true"
            result["replayed"] = replayed
            result["idempotency_key"] = call.idempotency_key
        return cast(T, result)
    try:
        body = json.loads(answer.body) if answer.body else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    raise error_for(answer.status, body, retry_after(answer.headers))


def split_url(base_url: str) -> tuple[str, str, int, str]:
    """scheme, host, port and path prefix of the API's base URL."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {base_url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")
