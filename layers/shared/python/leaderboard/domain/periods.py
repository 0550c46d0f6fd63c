"""Period ids and boundaries, all in UTC.

A board keeps one sorted set per period it tracks: `all-time`, a day (`2026-11-22`), an ISO week
(`2026-W47`, Monday 00:00 to the next Monday) or a month (`2026-11`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from leaderboard.domain.errors import BadRequest

ALL_TIME = "all-time"
DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
PERIOD_KINDS: tuple[str, ...] = (ALL_TIME, DAILY, WEEKLY, MONTHLY)

_DAY_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_WEEK_RE = re.compile(r"([0-9]{4})-W([0-9]{2})")
_MONTH_RE = re.compile(r"([0-9]{4})-([0-9]{2})")


@dataclass(frozen=True, slots=True)
class Period:
    """One concrete period: its kind, its id, and [starts_at, ends_at) in UTC."""

    kind: str
    id: str
    starts_at: datetime | None
    ends_at: datetime | None

    def is_open_at(self, now: datetime) -> bool:
        if self.kind == ALL_TIME:
            return True
        assert self.starts_at is not None and self.ends_at is not None
        return self.starts_at <= now < self.ends_at


ALL_TIME_PERIOD = Period(ALL_TIME, ALL_TIME, None, None)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _day(day: date) -> Period:
    start = _midnight(day)
    return Period(DAILY, day.isoformat(), start, start + timedelta(days=1))


def _week(year: int, week: int) -> Period:
    monday = date.fromisocalendar(year, week, 1)
    start = _midnight(monday)
    return Period(WEEKLY, f"{year:04d}-W{week:02d}", start, start + timedelta(days=7))


def _month(year: int, month: int) -> Period:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return Period(MONTHLY, f"{year:04d}-{month:02d}", start, end)


def current_period(kind: str, now: datetime) -> Period:
    """The period of `kind` that contains the instant `now` (timezone-aware)."""
    utc = now.astimezone(UTC)
    if kind == ALL_TIME:
        return ALL_TIME_PERIOD
    if kind == DAILY:
        return _day(utc.date())
    if kind == WEEKLY:
        iso = utc.date().isocalendar()
        return _week(iso.year, iso.week)
    if kind == MONTHLY:
        return _month(utc.year, utc.month)
    raise ValueError(f"unknown period kind {kind!r}")


def current_periods(now: datetime) -> dict[str, Period]:
    return {kind: current_period(kind, now) for kind in PERIOD_KINDS}


def parse_period_id(value: str) -> Period:
    """An explicit period id; malformed or impossible dates (2026-W54, 2026-02-30) are refused."""
    try:
        if m := _DAY_RE.fullmatch(value):
            return _day(date(int(m[1]), int(m[2]), int(m[3])))
        if m := _WEEK_RE.fullmatch(value):
            return _week(int(m[1]), int(m[2]))
        if m := _MONTH_RE.fullmatch(value):
            return _month(int(m[1]), int(m[2]))
    except (ValueError, OverflowError):  # impossible dates, and year 9999's last period
        pass
    raise BadRequest(
        "period must be all-time, daily, weekly, monthly, or an id like 2026-11-22, "
        "2026-W47 or 2026-11",
        field="period",
    )


def resolve_period(value: str | None, now: datetime) -> Period:
    """Turn the `period` query value into a concrete period; the default is all-time."""
    if value is None or value == ALL_TIME:
        return ALL_TIME_PERIOD
    if value in PERIOD_KINDS:
        return current_period(value, now)
    if len(value) > 10:
        raise BadRequest("period is malformed", field="period")
    return parse_period_id(value)


def previous_period(period: Period) -> Period:
    """The period of the same kind just before `period` (not defined for all-time)."""
    if period.starts_at is None:
        raise ValueError("all-time has no previous period")
    return current_period(period.kind, period.starts_at - timedelta(microseconds=1))
