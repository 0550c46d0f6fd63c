"""Domain errors carry their HTTP meaning so one place can map them to responses."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base error: `status` is the HTTP status the API answers with."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        return {"message": self.message, "code": self.code, **self.details}


class BadRequest(DomainError):
    """Malformed input: wrong type, bad identifier, unknown field, bad query parameter."""


class Unprocessable(DomainError):
    """Well-formed input that the board's rules reject (bounds, increments, unknown region)."""

    status = 422
    code = "unprocessable"


class RejectedByHook(Unprocessable):
    """The board's validation hook rejected the submission; the message is the hook's reason."""

    code = "rejected_by_hook"


class Unauthorized(DomainError):
    status = 401
    code = "unauthorized"


class InvalidToken(Unauthorized):
    """A bearer token that is malformed, forged, expired or not for this API. Answered as API
    Gateway's JWT authorizer answers one, without the reason (kept in `reason` for the log)."""

    def __init__(self, reason: str) -> None:
        super().__init__("Unauthorized")
        self.reason = reason

    def body(self) -> dict[str, Any]:
        return {"message": "Unauthorized"}


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class BoardMissing(NotFound):
    """The serving index has no such board: unknown, or its data was lost (the record knows)."""


class ArchivedPeriod(NotFound):
    """The period was closed, archived, and its serving keys removed: read the archive.
    `tiering`: the board's score tiers as the index found them (a score_tiers.Tiering, or None:
    typed loosely, as that module raises these errors), for the read of the archive to name its
    standings' tiers without asking again (never in the body)."""

    def __init__(self, message: str, *, tiering: Any = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.tiering = tiering


class Conflict(DomainError):
    status = 409
    code = "conflict"


class PayloadTooLarge(DomainError):
    status = 413
    code = "payload_too_large"


class RateLimited(DomainError):
    status = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after: int, **details: Any) -> None:
        super().__init__(message, **details)
        self.retry_after = max(1, retry_after)


class Unavailable(DomainError):
    """A store cannot be reached; the client should retry after `retry_after` seconds."""

    status = 503
    code = "unavailable"

    def __init__(self, message: str, retry_after: int = 1, **details: Any) -> None:
        super().__init__(message, **details)
        self.retry_after = max(1, retry_after)


class HookUnavailable(Unavailable):
    """The board's validation hook failed or timed out and the board fails closed."""

    code = "hook_unavailable"


class ConfigurationError(RuntimeError):
    """Raised at cold start when the function's environment is incomplete or invalid."""


class TournamentRefused(Conflict):
    """A tournament's rules refuse a submission or a sign-up: `reason` says which
    (domain/tournaments.py: not_started, ended, not_joined, full, attempts_exhausted)."""

    code = "tournament_rules"
    MESSAGES = {
        "not_started": "the tournament has not started yet",
        "ended": "the tournament has ended",
        "not_joined": "this tournament needs a sign-up first (POST /boards/{board_id}/join)",
        "full": "the tournament is full",
        "attempts_exhausted": "this player has used every attempt the tournament allows",
    }

    def __init__(self, reason: str) -> None:
        super().__init__(
            self.MESSAGES.get(reason, "the tournament's rules refuse this"), reason=reason
        )
