"""Settings the sync and asyncio clients share."""

from __future__ import annotations

import copy
from typing import Any, Self

from ._core import USER_AGENT, Call, RetryHook, RetryPolicy, split_url
from ._live import LiveConfig
from .errors import LeaderboardError


class ClientBase:
    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        live: LiveConfig | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        on_retry: RetryHook | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.scheme, self.host, self.port, self.prefix = split_url(base_url)
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.live = live
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.on_retry = on_retry
        self.user_agent = user_agent

    def with_token(self, token: str | None) -> Self:
        """A client like this one that sends `token` (another player's, an admin's)."""
        other = copy.copy(self)
        other.token = token
        return other

    def with_retry(self, retry: RetryPolicy) -> Self:
        """A client like this one with another retry policy (`NO_RETRIES`, say)."""
        other = copy.copy(self)
        other.retry = retry
        return other

    def _url(self, call: Call[Any]) -> str:
        return self.base_url + call.target()

    def _retry_delay(self, call: Call[Any], error: LeaderboardError, attempts: int) -> float | None:
        """Seconds to wait before sending `call` again, or None to raise `error`."""
        if not self.retry.should_retry(call, error):
            return None
        delay = self.retry.delay(attempts, error.retry_after)
        if delay is not None and self.on_retry is not None:
            self.on_retry(attempts, error, delay)
        return delay

    def _live_config(self) -> LiveConfig:
        if self.live is None:
            raise ValueError("live subscriptions need the client's `live` (a LiveConfig)")
        return self.live

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"
