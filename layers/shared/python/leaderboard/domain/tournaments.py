"""Tournaments: a board open for a fixed window, with optional sign-up, a cap on participants
and a cap on attempts per player; or a recurring tournament, a window at each fire of a cron.

A tournament board keeps one period kind, `custom`: a one-shot tournament's one period is its
window (its id is the start); it closes at the end, and the rollover archives it then (reason
`tournament`). A recurring tournament's periods are its windows (`periods.Windows`), each
archived the same way, and each with its own sign-ups, cap and attempts. The submit script
checks the window, the sign-up, the cap and the attempts atomically with the write (one round
trip); the join script checks the cap atomically with the sign-up. For a recurring tournament
the caller places the window from the rules it cached (`window_rules`) and the scripts prove
those rules current.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from leaderboard.domain.clock import iso
from leaderboard.domain.errors import BadRequest, DomainError, Unprocessable
from leaderboard.domain.periods import Calendar, Period, Windows
from leaderboard.domain.schedules import Schedule
from leaderboard.domain.validation import known_fields

MAX_PARTICIPANTS = 10_000_000
MAX_ATTEMPTS = 1_000_000
MAX_LENGTH = timedelta(days=366)
MIN_WINDOW_SECONDS = 60
# A recurring tournament's series bounds: the calendar looks years ahead and behind them, which
# must stay inside what a datetime can hold.
SERIES_FROM = datetime(1970, 1, 1, tzinfo=UTC)
SERIES_UNTIL = datetime(9000, 1, 1, tzinfo=UTC)
MAX_WINDOW_SECONDS = int(MAX_LENGTH.total_seconds())
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


def _ms(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


@dataclass(frozen=True, slots=True)
class Recurrence:
    """A window at each fire of `schedule` (a cron in a zone, read as a board's schedule is),
    each `duration_seconds` long, or until the next fire if that comes first."""

    schedule: Schedule
    duration_seconds: int

    @property
    def length(self) -> timedelta:
        return timedelta(seconds=self.duration_seconds)

    @classmethod
    def parse(cls, value: object) -> Recurrence:
        """Shapes first (400), then what no schema states (422), as `Schedule.parse`; errors
        name `tournament.recurrence.<field>`."""
        name = "tournament.recurrence"
        if not isinstance(value, dict):
            raise BadRequest(
                f'{name} must be null or an object like {{"cron": "0 18 * * *", "timezone": '
                '"Europe/Berlin", "duration_seconds": 3600}',
                field=name,
            )
        known_fields(value, {"cron", "timezone", "duration_seconds"}, name)
        for required in ("cron", "duration_seconds"):
            if value.get(required) is None:
                raise BadRequest(f"{name}.{required} is required", field=f"{name}.{required}")
        duration = value["duration_seconds"]
        if isinstance(duration, float) and duration.is_integer():
            duration = int(duration)
        if (
            isinstance(duration, bool)
            or not isinstance(duration, int)
            or not MIN_WINDOW_SECONDS <= duration <= MAX_WINDOW_SECONDS
        ):
            raise BadRequest(
                f"{name}.duration_seconds must be an integer from {MIN_WINDOW_SECONDS} to "
                f"{MAX_WINDOW_SECONDS:,} (366 days)",
                field=f"{name}.duration_seconds",
            )
        try:
            schedule = Schedule.parse({k: value[k] for k in ("cron", "timezone") if k in value})
        except DomainError as error:  # the schedule's own rules, named where they were broken
            renamed = {
                k: v.replace("schedule.", f"{name}.") if isinstance(v, str) else v
                for k, v in error.details.items()
            }
            raise type(error)(error.message.replace("schedule.", f"{name}."), **renamed) from None
        return cls(schedule, duration)

    def to_json(self) -> dict[str, Any]:
        assert self.schedule.cron_text is not None
        return {
            "cron": self.schedule.cron_text,
            "timezone": self.schedule.timezone,
            "duration_seconds": self.duration_seconds,
        }


@dataclass(frozen=True, slots=True)
class Tournament:
    """One window, [starts_at, ends_at); or, with a recurrence, a series of windows none of
    which starts before `starts_at` (None: the board's creation) nor at or after `ends_at`
    (None: forever)."""

    starts_at: datetime | None
    ends_at: datetime | None
    join_required: bool = False
    max_participants: int | None = None  # players who joined (or, without join, who played)
    max_attempts: int | None = None  # accepted submissions per player
    recurrence: Recurrence | None = None  # None: one window, starts_at..ends_at

    @classmethod
    def parse(cls, value: object) -> Tournament:
        """Its shape first (BadRequest, 400: what the API document's schema refuses), then what
        the schema cannot state (Unprocessable, 422): an instant that does not exist, `ends_at`
        not after `starts_at`, a one-shot window over 366 days."""
        if not isinstance(value, dict):
            raise BadRequest(
                'tournament must be an object like {"starts_at": "2026-12-05T18:00:00Z", '
                '"ends_at": "2026-12-07T18:00:00Z"}',
                field="tournament",
            )
        known = {
            "starts_at",
            "ends_at",
            "join_required",
            "max_participants",
            "max_attempts",
            "recurrence",
        }
        known_fields(value, known, "tournament")
        recurring = value.get("recurrence") is not None
        texts: dict[str, str | None] = {}
        for name in ("starts_at", "ends_at"):
            if value.get(name) is None and not recurring:
                raise BadRequest(f"tournament.{name} is required", field=f"tournament.{name}")
            given = value.get(name)
            texts[name] = None if given is None else _timestamp(given, name)
        join = value.get("join_required", False)
        if not isinstance(join, bool):
            raise BadRequest(
                "tournament.join_required must be true or false", field="tournament.join_required"
            )
        participants = _cap(value.get("max_participants"), "max_participants", MAX_PARTICIPANTS)
        attempts = _cap(value.get("max_attempts"), "max_attempts", MAX_ATTEMPTS)
        recurrence = Recurrence.parse(value["recurrence"]) if recurring else None
        starts, ends = (
            None if text is None else _instant(text, name) for name, text in texts.items()
        )
        if recurrence is not None:
            for name, moment in (("starts_at", starts), ("ends_at", ends)):
                if moment is not None and not SERIES_FROM <= moment < SERIES_UNTIL:
                    raise Unprocessable(
                        f"a recurring tournament's tournament.{name} must fall in the years "
                        f"{SERIES_FROM.year} to {SERIES_UNTIL.year - 1}",
                        field=f"tournament.{name}",
                    )
        if starts is not None and ends is not None and ends <= starts:
            raise Unprocessable(
                "tournament.ends_at must be after starts_at", field="tournament.ends_at"
            )
        if (
            recurrence is None
            and starts is not None
            and ends is not None
            and ends - starts > MAX_LENGTH
        ):
            raise Unprocessable("a tournament lasts at most 366 days", field="tournament.ends_at")
        return cls(starts, ends, join, participants, attempts, recurrence)

    def to_json(self) -> dict[str, Any]:
        return {
            "starts_at": None if self.starts_at is None else _iso(self.starts_at),
            "ends_at": None if self.ends_at is None else _iso(self.ends_at),
            "join_required": self.join_required,
            "max_participants": self.max_participants,
            "max_attempts": self.max_attempts,
            "recurrence": None if self.recurrence is None else self.recurrence.to_json(),
        }

    def script_rules(self) -> str:
        """What the submit and join scripts check: "start_ms end_ms join max_participants
        max_attempts" ('' for no cap). A recurring tournament's rules keep only
        "join max_participants max_attempts": `window_rules` adds each window's bounds."""
        caps = " ".join(
            (
                "1" if self.join_required else "0",
                "" if self.max_participants is None else str(self.max_participants),
                "" if self.max_attempts is None else str(self.max_attempts),
            )
        )
        if self.recurrence is not None:
            return caps
        assert self.starts_at is not None and self.ends_at is not None
        return f"{_ms(self.starts_at)} {_ms(self.ends_at)} {caps}"


def window_rules(series_rules: str, window: Period) -> str:
    """A recurring tournament's rules for one window, as the scripts read them: "start_ms
    end_ms join max_participants max_attempts window_id". The window id names the window's own
    sign-ups and attempts (`joined:<id>`, `attempts:<id>`)."""
    assert window.starts_at is not None and window.ends_at is not None
    return f"{_ms(window.starts_at)} {_ms(window.ends_at)} {series_rules} {window.id}"


def tournament_calendar(tournament: Tournament, created_at: str = "") -> Calendar:
    """A one-shot tournament's one period: its window, current from creation and for good
    after. A recurring tournament's windows, from `starts_at` (else the board's creation)."""
    if tournament.recurrence is not None:
        since = tournament.starts_at or _created(created_at)
        return Windows(
            tournament.recurrence.schedule,
            since,
            length=tournament.recurrence.length,
            until=tournament.ends_at,
        )
    assert tournament.starts_at is not None and tournament.ends_at is not None
    return Calendar(Schedule(None, "UTC"), tournament.starts_at, (tournament.ends_at,), final=True)


def tournament_script_config(tournament: Tournament, created_at: str) -> dict[str, Any]:
    """A tournament's periods as a calendar the write path reads like a schedule's, and the
    rules the submit script checks: a one-shot window as one period ended for good, a
    recurring tournament's windows as its schedule, series bounds and window length."""
    if tournament.recurrence is None:
        window = tournament.to_json()
        return {
            "sched": {"timezone": "UTC"},
            "since": window["starts_at"],
            "ends": [window["ends_at"]],
            "final": True,
            "tour": tournament.script_rules(),
        }
    calendar = tournament_calendar(tournament, created_at)
    assert isinstance(calendar, Windows)
    cfg: dict[str, Any] = {
        "sched": tournament.recurrence.schedule.to_json(),
        "since": iso(calendar.since),
        "every": tournament.recurrence.duration_seconds,
        "tour": tournament.script_rules(),
    }
    if calendar.until is not None:
        cfg["until"] = iso(calendar.until)
    return cfg


def tournament_listing(tournament: Tournament, created_at: str, now: datetime) -> dict[str, Any]:
    """A tournament as GET /tournaments lists it (without its board's id and title): the window
    a submission would be for now (a recurring tournament's open one, else its next, else its
    last), whether that is open, upcoming or ended, and the series' bounds."""
    calendar = tournament_calendar(tournament, created_at)
    window = calendar.target_at(now)
    assert window.starts_at is not None and window.ends_at is not None
    status = UPCOMING if now < window.starts_at else OPEN if now < window.ends_at else ENDED
    rules = tournament.to_json()
    series_end = tournament.ends_at if isinstance(calendar, Windows) else window.ends_at
    return {
        "status": status,
        "period": window.id,
        "starts_at": _iso(window.starts_at),
        "ends_at": _iso(window.ends_at),
        "join_required": rules["join_required"],
        "max_participants": rules["max_participants"],
        "max_attempts": rules["max_attempts"],
        "recurrence": rules["recurrence"],
        "series_starts_at": _iso(calendar.since),
        "series_ends_at": None if series_end is None else _iso(series_end),
    }


def _created(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
