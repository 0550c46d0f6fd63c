"""Custom reset schedules: a five-field cron expression read in an IANA time zone.

A schedule fires at every local wall time its expression matches, at the first instant the
local clock reaches or passes that time:

- a wall time that happens twice (clocks going back) fires once, the first time;
- a wall time that never happens (clocks going forward) fires when the clock jumps past it,
  so several such times in one gap fire once, at the jump.

So a daylight-saving change makes a period 23 or 25 hours long (or whatever the zone's
change is), and never loses or doubles one. Fields: minute, hour, day of month, month, day of
week (0-7, 0 and 7 are Sunday); `*`, lists, ranges, steps (`*/15`, `1-5/2`) and English
names (`JAN`, `SUN`). As in the usual cron, when both day fields are restricted a day
matching either one matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.validation import known_fields

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (name, low, high, names whose index + offset is the value)
_FIELDS = (
    ("minute", 0, 59, (), 0),
    ("hour", 0, 23, (), 0),
    ("day of month", 1, 31, (), 0),
    ("month", 1, 12, _MONTHS, 1),
    ("day of week", 0, 7, _DAYS, 0),
)
_ITEM = re.compile(r"(\*|[0-9A-Z]+(?:-[0-9A-Z]+)?)(?:/([0-9]+))?")
# How far a search for the next or last fire may go: a schedule that fires less often than
# this (an impossible date such as 30 February, which never fires) is refused when made.
SEARCH_DAYS = 366 * 8 + 1
MAX_CRON_LENGTH = 120
# The shapes the API document gives (docs/openapi.json, Schedule): a text of that shape whose
# values make no schedule is 422, not 400.
CRON_SHAPE = re.compile(r"[0-9A-Za-z*,/-]{1,20}( [0-9A-Za-z*,/-]{1,20}){4}")
ZONE_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,29}(/[A-Za-z0-9_+-]{1,30}){0,2}")
MAX_ZONE_LENGTH = 64


def _value(text: str, names: tuple[str, ...], offset: int, field: str) -> int:
    if text.isdigit():
        return int(text)
    if text in names:
        return names.index(text) + offset
    raise Unprocessable(f"schedule.cron: {text!r} is not a valid {field}", field="schedule.cron")


def _parse_field(
    text: str, field: str, low: int, high: int, names: tuple[str, ...], offset: int
) -> frozenset[int]:
    values: set[int] = set()
    for item in text.upper().split(","):
        match = _ITEM.fullmatch(item)
        if not match:
            raise Unprocessable(
                f"schedule.cron: {item!r} is not a valid {field}", field="schedule.cron"
            )
        span, step_text = match.group(1), match.group(2)
        if span == "*":
            first, last = low, high
        elif "-" in span:
            a, b = span.split("-")
            first = _value(a, names, offset, field)
            last = _value(b, names, offset, field)
        else:
            first = last = _value(span, names, offset, field)
            if step_text is not None:
                last = high  # "5/15": from 5, every 15
        step = int(step_text) if step_text is not None else 1
        if not (low <= first <= high and low <= last <= high) or first > last or step < 1:
            raise Unprocessable(
                f"schedule.cron: {item!r} is out of range for the {field} ({low}-{high})",
                field="schedule.cron",
            )
        values.update(range(first, last + 1, step))
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class Cron:
    """A parsed cron expression (local wall times, no zone)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday ... 6 = Saturday
    any_day: bool  # day of month is `*`
    any_weekday: bool  # day of week is `*`

    @classmethod
    def parse(cls, text: str) -> Cron:
        _cron_shape(text)
        parts = text.split(" ")
        fields = [_parse_field(part, *spec) for part, spec in zip(parts, _FIELDS, strict=True)]
        weekdays = frozenset(d % 7 for d in fields[4])
        return cls(
            fields[0], fields[1], fields[2], fields[3], weekdays, parts[2] == "*", parts[4] == "*"
        )

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week  # both restricted: either

    @property
    def times(self) -> tuple[tuple[int, int], ...]:
        """The wall times of a matching day, in order."""
        return tuple((h, m) for h in sorted(self.hours) for m in sorted(self.minutes))


def _cron_shape(text: object) -> None:
    if not isinstance(text, str) or not CRON_SHAPE.fullmatch(text):
        raise BadRequest(
            "schedule.cron must have five fields: minute hour day-of-month month day-of-week",
            field="schedule.cron",
        )


def _zone_shape(name: object) -> None:
    if not isinstance(name, str) or len(name) > MAX_ZONE_LENGTH or not ZONE_SHAPE.fullmatch(name):
        raise BadRequest(
            "schedule.timezone must be an IANA time zone name like Europe/Berlin",
            field="schedule.timezone",
        )


def _zone(name: str) -> ZoneInfo:
    _zone_shape(name)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        raise Unprocessable(
            f"schedule.timezone: unknown time zone {name!r} (an IANA name such as Europe/Berlin)",
            field="schedule.timezone",
        ) from error


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    """The local wall time of a UTC instant, without zone (comparable with other walls)."""
    return instant.astimezone(zone).replace(tzinfo=None)


def _reached(wall: datetime, zone: ZoneInfo) -> datetime:
    """The first instant (UTC) at which the local clock reads `wall` or later."""
    early = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    late = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    first, second = min(early, late), max(early, late)
    if _wall(first, zone) == wall:
        return first  # it happens (the first time, if twice)
    if _wall(second, zone) == wall:
        return second
    # It never happens: the clock jumps over it somewhere in [first, second]. Find the jump to
    # the second; transitions fall on whole seconds.
    lo, hi = first, second
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        if _wall(mid, zone) >= wall:
            hi = mid
        else:
            lo = mid
    return hi if _wall(lo, zone) < wall else lo


@dataclass(frozen=True, slots=True)
class Schedule:
    """A board's custom period schedule: when periods end, in which zone; `cron` None: they
    end only when an admin ends them."""

    cron_text: str | None
    timezone: str

    @classmethod
    def parse(cls, value: object) -> Schedule:
        """Both fields' shapes first (BadRequest, 400: what the API document's schema refuses),
        then what it cannot state (Unprocessable, 422): a zone that does not exist, cron values
        out of their field's range, an expression that never fires."""
        if not isinstance(value, dict):
            raise BadRequest(
                'schedule must be an object like {"cron": "0 18 * * SUN", "timezone": '
                '"Europe/Berlin"}',
                field="schedule",
            )
        known_fields(value, {"cron", "timezone"}, "schedule")
        cron = value.get("cron")
        zone = value.get("timezone", "UTC")
        _zone_shape(zone)
        if cron is not None:
            _cron_shape(cron)
        _zone(zone)
        if cron is not None:
            parsed = _cron(cron)
            if not any(
                parsed.day_matches(date(2024, 1, 1) + timedelta(days=n)) for n in range(366 * 4 + 1)
            ):
                raise Unprocessable(
                    f"schedule.cron {cron!r} never fires (no day matches)", field="schedule.cron"
                )
        return cls(cron, zone)

    def to_json(self) -> dict[str, str]:
        body = {"timezone": self.timezone}
        if self.cron_text is not None:
            body["cron"] = self.cron_text
        return body

    def next_fire(self, after: datetime) -> datetime | None:
        """The first fire strictly after `after` (UTC); None without a cron."""
        if self.cron_text is None:
            return None
        return _next_fire(self.cron_text, self.timezone, after.astimezone(UTC))

    def last_fire(self, at: datetime) -> datetime | None:
        """The last fire at or before `at` (UTC); None without a cron (or none in reach)."""
        if self.cron_text is None:
            return None
        return _last_fire(self.cron_text, self.timezone, at.astimezone(UTC))


@lru_cache(maxsize=256)
def _cron(text: str) -> Cron:
    return Cron.parse(text)


def _fires_on(cron: Cron, zone: ZoneInfo, day: date) -> list[datetime]:
    """The fires of one local day, in order, a gap's several times once."""
    if not cron.day_matches(day):
        return []
    fires: list[datetime] = []
    for hour, minute in cron.times:
        instant = _reached(datetime(day.year, day.month, day.day, hour, minute), zone)
        if not fires or instant > fires[-1]:
            fires.append(instant)
    return fires


@lru_cache(maxsize=4096)
def _next_fire(cron_text: str, zone_name: str, after: datetime) -> datetime:
    cron, zone = _cron(cron_text), ZoneInfo(zone_name)
    # A gap's fire can be reported on the day before its wall time's date: start a day early.
    day = _wall(after, zone).date() - timedelta(days=1)
    for _ in range(SEARCH_DAYS):
        for instant in _fires_on(cron, zone, day):
            if instant > after:
                return instant
        day += timedelta(days=1)
    raise ValueError(f"{cron_text!r} does not fire within {SEARCH_DAYS} days")


@lru_cache(maxsize=4096)
def _last_fire(cron_text: str, zone_name: str, at: datetime) -> datetime:
    cron, zone = _cron(cron_text), ZoneInfo(zone_name)
    day = _wall(at, zone).date() + timedelta(days=1)
    for _ in range(SEARCH_DAYS):
        for instant in reversed(_fires_on(cron, zone, day)):
            if instant <= at:
                return instant
        day -= timedelta(days=1)
    raise ValueError(f"{cron_text!r} did not fire within {SEARCH_DAYS} days")
