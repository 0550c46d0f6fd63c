"""Tournaments: a board open for a fixed window, with optional sign-up, a cap on participants
and a cap on attempts per player.

A tournament board keeps one period, `custom`, which is its window: its id is the start, it
closes at the end, and the rollover archives it then (reason `tournament`). The submit script
checks the window, the sign-up, the cap and the attempts atomically with the write (one round
trip); the join script checks the cap atomically with the sign-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.validation import known_fields

MAX_PARTICIPANTS = 10_000_000
MAX_ATTEMPTS = 1_000_000
MAX_LENGTH = timedelta(days=366)
# The reasons the scripts give for refusing a submission or a join (409, `reason`).
NOT_STARTED, ENDED, NOT_JOINED, FULL, NO_ATTEMPTS = (
    "not_started",
    "ended",
    "not_joined",
    "full",
    "attempts_exhausted",
)
UPCOMING, OPEN = "upcoming", "open"


# The shape the API document gives (docs/openapi.json, Tournament): one of that shape that is
# no instant (2026-02-30) is 422, not 400.
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def _timestamp(value: Any, name: str) -> str:
    if not isinstance(value, str) or not _TIMESTAMP.fullmatch(value):
        raise BadRequest(
            f"tournament.{name} must be an ISO 8601 timestamp with a zone, like "
            "2026-12-05T18:00:00Z",
            field=f"tournament.{name}",
        )
    return value


def _instant(value: str, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment.astimezone(UTC).replace(microsecond=0)
    except (ValueError, OverflowError):
        raise Unprocessable(
            f"tournament.{name} is no instant: {value!r}", field=f"tournament.{name}"
        ) from None


def _cap(value: Any, name: str, most: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():  # 5.0 is 5, as JSON Schema counts
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise BadRequest(
            f"tournament.{name} must be null or an integer from 1 to {most:,}",
            field=f"tournament.{name}",
        )
    return value


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Tournament:
    starts_at: datetime
    ends_at: datetime
    join_required: bool = False
    max_participants: int | None = None  # players who joined (or, without join, who played)
    max_attempts: int | None = None  # accepted submissions per player

    @classmethod
    def parse(cls, value: object) -> Tournament:
        """Its shape first (BadRequest, 400: what the API document's schema refuses), then what
        the schema cannot state (Unprocessable, 422): an instant that does not exist, `ends_at`
        not after `starts_at`, a window over 366 days."""
        if not isinstance(value, dict):
            raise BadRequest(
                'tournament must be an object like {"starts_at": "2026-12-05T18:00:00Z", '
                '"ends_at": "2026-12-07T18:00:00Z"}',
                field="tournament",
            )
        known = {"starts_at", "ends_at", "join_required", "max_participants", "max_attempts"}
        known_fields(value, known, "tournament")
        for name in ("starts_at", "ends_at"):
            if name not in value:
                raise BadRequest(f"tournament.{name} is required", field=f"tournament.{name}")
        starts_text = _timestamp(value["starts_at"], "starts_at")
        ends_text = _timestamp(value["ends_at"], "ends_at")
        join = value.get("join_required", False)
        if not isinstance(join, bool):
            raise BadRequest(
                "tournament.join_required must be true or false", field="tournament.join_required"
            )
        participants = _cap(value.get("max_participants"), "max_participants", MAX_PARTICIPANTS)
        attempts = _cap(value.get("max_attempts"), "max_attempts", MAX_ATTEMPTS)
        starts = _instant(starts_text, "starts_at")
        ends = _instant(ends_text, "ends_at")
        if ends <= starts:
            raise Unprocessable(
                "tournament.ends_at must be after starts_at", field="tournament.ends_at"
            )
        if ends - starts > MAX_LENGTH:
            raise Unprocessable("a tournament lasts at most 366 days", field="tournament.ends_at")
        return cls(starts, ends, join, participants, attempts)

    def to_json(self) -> dict[str, Any]:
        return {
            "starts_at": _iso(self.starts_at),
            "ends_at": _iso(self.ends_at),
            "join_required": self.join_required,
            "max_participants": self.max_participants,
            "max_attempts": self.max_attempts,
        }

    def script_rules(self) -> str:
        """What the submit and join scripts check: "start_ms end_ms join max_participants
        max_attempts" ('' for no cap)."""
        return " ".join(
            (
                str(int(self.starts_at.timestamp() * 1000)),
                str(int(self.ends_at.timestamp() * 1000)),
                "1" if self.join_required else "0",
                "" if self.max_participants is None else str(self.max_participants),
                "" if self.max_attempts is None else str(self.max_attempts),
            )
        )

    def status(self, now: datetime) -> str:
        if now < self.starts_at:
            return UPCOMING
        return OPEN if now < self.ends_at else ENDED
