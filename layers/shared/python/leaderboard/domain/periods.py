"""Period ids and boundaries, all in UTC.

A board keeps one sorted set per period it tracks: `all-time`, a day (`2026-11-22`), an ISO week
(`2026-W47`, Monday 00:00 to the next Monday), a month (`2026-11`), or a period of the board's
own schedule (`custom`: its id is its start, `2026-11-22T170000Z`; see `Calendar`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from leaderboard.domain.errors import BadRequest, NotFound, Unprocessable
from leaderboard.domain.schedules import Schedule

ALL_TIME = "all-time"
DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
PERIOD_KINDS: tuple[str, ...] = (ALL_TIME, DAILY, WEEKLY, MONTHLY)
# A board's own schedule (a cron in a time zone, and ends by hand): boards.py `schedule`.
CUSTOM = "custom"
BOARD_PERIOD_KINDS: tuple[str, ...] = (*PERIOD_KINDS, CUSTOM)
# The newest ends by hand a board keeps in its rules: enough to place every period not yet
# archived (older ones are read with the bounds their archive recorded).
KEPT_ENDS = 16

_DAY_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_WEEK_RE = re.compile(r"([0-9]{4})-W([0-9]{2})")
_MONTH_RE = re.compile(r"([0-9]{4})-([0-9]{2})")
_CUSTOM_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})Z")
CUSTOM_ID_LENGTH = 18


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
        assert self.starts_at is not None
        # a custom period without an end yet: its board's periods end only by hand
        return self.starts_at <= now and (self.ends_at is None or now < self.ends_at)


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
    """An explicit period id. Not of an id's shape (the API document's pattern): BadRequest
    (400); of that shape but no period (2026-13, 2026-02-30, 2026-W54, year 9999's last
    period): Unprocessable (422). A custom period's id gives its start only (ends_at None): its
    board's `Calendar` places it; one of that shape that is no instant starts no period (404)."""
    try:
        if m := _CUSTOM_RE.fullmatch(value):
            y, mo, d, h, mi, sec = (int(g) for g in m.groups())
            try:
                start = datetime(y, mo, d, h, mi, sec, tzinfo=UTC)
            except ValueError:
                # the shape of a start, but no instant: no period starts there
                raise NotFound(f"no data for period {value}", period=value) from None
            return Period(CUSTOM, value, start, None)
        if m := _DAY_RE.fullmatch(value):
            return _day(date(int(m[1]), int(m[2]), int(m[3])))
        if m := _WEEK_RE.fullmatch(value):
            return _week(int(m[1]), int(m[2]))
        if m := _MONTH_RE.fullmatch(value):
            return _month(int(m[1]), int(m[2]))
    except (ValueError, OverflowError):  # impossible dates, and year 9999's last period
        raise Unprocessable(
            f"period {value} has the shape of a period id but names no period", field="period"
        ) from None
    raise BadRequest(
        "period must be all-time, daily, weekly, monthly, custom, or an id like 2026-11-22, "
        "2026-W47, 2026-11 or 2026-11-22T170000Z",
        field="period",
    )


def is_period_id_shape(value: str) -> bool:
    """Whether `value` has the shape of a day's, week's, month's or custom period's id
    (whether or not such a period exists): the API document's pattern for `before`."""
    return any(r.fullmatch(value) for r in (_DAY_RE, _WEEK_RE, _MONTH_RE, _CUSTOM_RE))


def resolve_period(value: str | None, now: datetime) -> Period:
    """Turn the `period` query value into a concrete period; the default is all-time."""
    if value is None or value == ALL_TIME:
        return ALL_TIME_PERIOD
    if value in PERIOD_KINDS:
        return current_period(value, now)
    if value == CUSTOM:
        return Period(CUSTOM, CUSTOM, None, None)  # placed by the board's Calendar
    if len(value) > CUSTOM_ID_LENGTH:
        raise BadRequest("period is malformed", field="period")
    return parse_period_id(value)


def previous_period(period: Period) -> Period:
    """The period of the same kind just before `period` (not defined for all-time)."""
    if period.starts_at is None:
        raise ValueError("all-time has no previous period")
    return current_period(period.kind, period.starts_at - timedelta(microseconds=1))


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def period_status(period: Period, now: datetime) -> str:
    """`upcoming` (a tournament's window before its start), `open` or `closed` (ended; the
    archive's `archived` is the rollover's to say)."""
    if period.starts_at is not None and now < period.starts_at:
        return "upcoming"
    return "open" if period.is_open_at(now) else "closed"


def period_json(period: Period, now: datetime) -> dict[str, str | None]:
    """A period as the API shows it."""
    return {
        "period": period.id,
        "kind": period.kind,
        "starts_at": _iso(period.starts_at),
        "ends_at": _iso(period.ends_at),
        "status": period_status(period, now),
    }


def is_custom_period_id(value: str) -> bool:
    """The shape of a custom period's id (whether or not a period starts there)."""
    return _CUSTOM_RE.fullmatch(value) is not None


def custom_period_id(start: datetime) -> str:
    return start.astimezone(UTC).strftime("%Y-%m-%dT%H%M%SZ")


@dataclass(frozen=True, slots=True)
class Calendar:
    """A board's custom periods. A period starts where the last one ended and ends at the next
    fire of the board's schedule or when an admin ends it, whichever comes first; the first
    starts at the schedule's last fire before the board was made, or when it was made (a
    schedule without a cron: seasons ended by hand only). Its id is its start, to the second,
    so the same instant always names the same period, on every function."""

    schedule: Schedule
    since: datetime  # when the board was made
    ends: tuple[datetime, ...] = ()  # ends by hand, oldest first (the newest KEPT_ENDS)
    # A tournament's: nothing follows its last end (the window), which stays the current one
    final: bool = False

    def start_at(self, at: datetime) -> datetime:
        """The start of the period that holds the instant `at`."""
        if self.final and self.ends and at >= self.ends[-1]:
            at = self.ends[-1] - timedelta(microseconds=1)  # the last period, for good
        bounds = [end for end in self.ends if end <= at]
        fire = self.schedule.last_fire(at)
        if fire is not None:
            bounds.append(fire)
        elif self.since <= at:
            bounds.append(self.since)  # no cron: the first season starts with the board
        return max(bounds) if bounds else self.since

    def end_after(self, start: datetime) -> datetime | None:
        """Where the period that starts at `start` ends (None: only by hand, not yet)."""
        candidates = [end for end in self.ends if end > start]
        fire = self.schedule.next_fire(start)
        if fire is not None:
            candidates.append(fire)
        return min(candidates) if candidates else None

    def period_at(self, at: datetime) -> Period:
        """The period the reads of `custom` show at `at`."""
        start = self.start_at(at)
        return Period(CUSTOM, custom_period_id(start), start, self.end_after(start))

    def previous(self, period: Period) -> Period | None:
        """The period before `period` on this board (None: it is the first)."""
        assert period.starts_at is not None
        if period.starts_at <= self.start_at(self.since):
            return None
        return self.period_at(period.starts_at - timedelta(microseconds=1))

    def target_at(self, at: datetime) -> Period:
        """The period a submission or a sign-up at `at` is for (the one the reads show, but
        on a recurring tournament's: `Windows`)."""
        return self.period_at(at)

    def due_after(self, now: datetime) -> datetime | None:
        """When the rollover next has work on these periods: the end of the current one."""
        return self.period_at(now).ends_at

    def place(self, period: Period) -> Period:
        """A custom period id's period on this board; NotFound when no period starts there."""
        assert period.starts_at is not None
        start = period.starts_at
        if self.start_at(start) != start:
            raise NotFound(f"no data for period {period.id}", period=period.id)
        return Period(CUSTOM, period.id, start, self.end_after(start))

    def resolve(self, period: Period, now: datetime) -> Period:
        """`custom` (the current period) or a custom id, placed on this board."""
        if period.id == CUSTOM:
            return self.period_at(now)
        return self.place(period)


_TICK = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Windows(Calendar):
    """A recurring tournament's periods, its windows: each fire F of the schedule at or after
    `since` and before `until` (None: forever) opens one, [F, min(F + length, next fire)).
    Between windows nothing is open. The reads of `custom` show the window open at an instant,
    else the last one that started (its final standings), else the first (upcoming); a
    submission or a sign-up is for the window open then, else the next one, else the last.
    A window lasts `length` of absolute time (a daylight-saving change inside it changes no
    length); when it starts follows the schedule's rules (domain/schedules.py)."""

    length: timedelta = timedelta(hours=1)
    until: datetime | None = None

    def first_start(self) -> datetime | None:
        """The first window's start (None: the bounds hold no fire)."""
        return self._next_start(self.since - _TICK)

    def _next_start(self, after: datetime) -> datetime | None:
        """The start of the first window that starts strictly after `after`."""
        try:
            fire = self.schedule.next_fire(max(after, self.since - _TICK))
        except ValueError:  # no fire within the schedules' reach
            return None
        if fire is None or (self.until is not None and fire >= self.until):
            return None
        return fire

    def _last_start(self, at: datetime) -> datetime | None:
        """The start of the last window that started at or before `at`."""
        if self.until is not None and at >= self.until:
            at = self.until - _TICK
        try:
            fire = self.schedule.last_fire(at)
        except ValueError:
            return None
        return fire if fire is not None and fire >= self.since else None

    def start_at(self, at: datetime) -> datetime:
        last = self._last_start(at)
        if last is not None:
            return last
        return self.first_start() or self.since  # no window at all: refused when made

    def end_after(self, start: datetime) -> datetime:
        fire = self.schedule.next_fire(start)
        end = start + self.length
        return end if fire is None else min(end, fire)

    def target_at(self, at: datetime) -> Period:
        return _target(self, at)

    def due_after(self, now: datetime) -> datetime | None:
        """The end of the window open now or of the next one; None once the series is over."""
        end = self.target_at(now).ends_at
        return end if end is not None and end > now else None


@lru_cache(maxsize=1024)
def _target(windows: Windows, at: datetime) -> Period:
    """The window open at `at`, else the next, else the last (cached: a batch asks once)."""
    last = windows._last_start(at)
    if last is None or at >= windows.end_after(last):
        nxt = windows._next_start(at)
        if nxt is not None:
            return Period(CUSTOM, custom_period_id(nxt), nxt, windows.end_after(nxt))
    return windows.period_at(at)
