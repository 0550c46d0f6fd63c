"""Typed exceptions: one class per status of docs/API.md "Errors", some with a subclass per
`code` (a hook's rejection is an Unprocessable, a hook's closed failure an Unavailable)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "BadRequest",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "HeaderTooLarge",
    "HookUnavailable",
    "LeaderboardError",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RejectedByHook",
    "ServerError",
    "SubscriptionError",
    "TournamentRules",
    "Unauthorized",
    "Unavailable",
    "Unprocessable",
    "error_for",
]


class LeaderboardError(Exception):
    """An answer the API refused a request with (or, for the subclasses below without a
    status, a failure to get an answer at all).

    `status` is the HTTP status (None when there was no answer), `code` the machine-readable
    code of the body (None for the gateway's own answers, which carry only `message`), `body`
    the parsed JSON body (an empty dict when it was not JSON), `retry_after` the seconds of a
    `Retry-After` header or of a body's `retry_after`, if any."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        body: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.body: dict[str, Any] = dict(body or {})
        self.retry_after = retry_after

    @property
    def field(self) -> str | None:
        """The offending field, query parameter or header, when the body names one."""
        value = self.body.get("field")
        return value if isinstance(value, str) else None

    @property
    def fields(self) -> list[str]:
        """Unknown or immutable fields the body lists (400, 409), else []."""
        value = self.body.get("fields")
        return [str(v) for v in value] if isinstance(value, list) else []

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class BadRequest(LeaderboardError):
    """400: malformed input (an identifier, a parameter, a body, an unknown field)."""


class Unauthorized(LeaderboardError):
    """401: no token where one is needed, or a token that is not valid."""


class Forbidden(LeaderboardError):
    """403: a valid token without the scope, or a player acting for another player."""


class NotFound(LeaderboardError):
    """404: unknown board, player, region or period, or an unknown route."""


class Conflict(LeaderboardError):
    """409: an immutable rule changed, an idempotency key reused with another body, a rebuild
    already running, a custom period ended too soon."""


class TournamentRules(Conflict):
    """409 `tournament_rules`: a tournament refused the submission or sign-up; `reason` says
    why (`not_started`, `ended`, `not_joined`, `full`, `attempts_exhausted`)."""

    @property
    def reason(self) -> str | None:
        value = self.body.get("reason")
        return value if isinstance(value, str) else None


class PayloadTooLarge(LeaderboardError):
    """413: a body over 16 KiB (1 MiB for a batch)."""


class Unprocessable(LeaderboardError):
    """422: a well-formed request the board's rules refuse."""


class RejectedByHook(Unprocessable):
    """422 `rejected_by_hook`: the board's validation hook rejected it; `message` is why."""


class HeaderTooLarge(LeaderboardError):
    """431: the request line and headers are over 10 KiB (a huge token, say)."""


class RateLimited(LeaderboardError):
    """429: the player's rate limit on the board; `retry_after` seconds until a token is free.
    Raised once the client's retries are used up (or Retry-After is longer than it waits)."""


class Unavailable(LeaderboardError):
    """503: a store is unreachable, or the board is being rebuilt; safe to retry (with the same
    idempotency key, for a submission). Raised once the client's retries are used up."""


class HookUnavailable(Unavailable):
    """503 `hook_unavailable`: the board's validation hook failed and the board fails closed."""


class ServerError(LeaderboardError):
    """Any other 5xx: a bug on the service's side (bad input never causes one)."""


class ConnectionFailed(LeaderboardError):
    """No answer: the connection failed, or timed out (`status` is None)."""


class SubscriptionError(LeaderboardError):
    """The event API refused a live connection or subscription (`code` is its `errorType`,
    e.g. `UnauthorizedException`, `BadRequestException`); retrying the same cannot help."""


_BY_STATUS: dict[int, type[LeaderboardError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: RateLimited,
    431: HeaderTooLarge,
    503: Unavailable,
}
_BY_CODE: dict[str, type[LeaderboardError]] = {
    "tournament_rules": TournamentRules,
    "rejected_by_hook": RejectedByHook,
    "hook_unavailable": HookUnavailable,
}


def error_for(
    status: int, body: Mapping[str, Any] | None, retry_after: float | None = None
) -> LeaderboardError:
    """The exception for an error answer: by `code` where a subclass exists, else by status."""
    body = body or {}
    code = body.get("code") if isinstance(body.get("code"), str) else None
    message = body.get("message")
    if not isinstance(message, str):
        message = f"HTTP {status}"
    if retry_after is None and isinstance(body.get("retry_after"), int | float):
        retry_after = float(body["retry_after"])
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else LeaderboardError
    return cls(message, status=status, code=code, body=body, retry_after=retry_after)
