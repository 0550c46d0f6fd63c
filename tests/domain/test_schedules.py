"""Custom schedules against a reference computed another way (issue 24, acceptance 1).

The reference walks UTC minute by minute and asks what the local clock reads: a schedule fires
at the first instant the clock reaches or passes a matching wall time. It never asks the zone
how to map a wall time back (no fold, no gap arithmetic), and it matches wall times against the
sets the expression was written from, not against the parser. Start points are drawn around the
daylight-saving changes of three zones (one of them moving by half an hour) and around a new
year.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.domain.errors import BadRequest, DomainError, Unprocessable
from leaderboard.domain.schedules import Schedule
from tests.support.examples import examples

MINUTE = timedelta(minutes=1)
ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe")
# Instants near which these zones change their clocks (and a new year), 2026-2027
CHANGES = {
    "Europe/Berlin": ("2026-03-29T01:00", "2026-10-25T01:00", "2026-12-31T23:00"),
    "America/New_York": ("2026-03-08T07:00", "2026-11-01T06:00", "2027-01-01T05:00"),
    "Australia/Lord_Howe": ("2026-04-04T15:00", "2026-10-03T15:30", "2026-12-31T13:00"),
}


@dataclass(frozen=True)
class Expression:
    minutes: tuple[int, ...]
    hours: tuple[int, ...] | None  # None: *
    weekdays: tuple[int, ...] | None  # None: *; 0 = Sunday

    @property
    def text(self) -> str:
        def field(values: tuple[int, ...] | None) -> str:
            return "*" if values is None else ",".join(str(v) for v in values)

        return f"{field(self.minutes)} {field(self.hours)} * * {field(self.weekdays)}"

    def matches(self, wall: datetime) -> bool:
        return (
            wall.minute in self.minutes
            and (self.hours is None or wall.hour in self.hours)
            and (self.weekdays is None or wall.isoweekday() % 7 in self.weekdays)
        )


def sorted_set(values: st.SearchStrategy[int], most: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.sets(values, min_size=1, max_size=most).map(lambda s: tuple(sorted(s)))


expressions = st.builds(
    Expression,
    minutes=sorted_set(st.sampled_from([0, 15, 30, 45, 59]), 2),
    # the hours clocks change at, and either side of midnight
    hours=st.none() | sorted_set(st.sampled_from([0, 1, 2, 3, 4, 23]), 2),
    weekdays=st.none() | sorted_set(st.integers(0, 6), 2),
)


def reference_fires(
    expr: Expression, zone: ZoneInfo, after: datetime, count: int
) -> list[datetime]:
    """The next `count` fires after `after`, minute by minute."""

    def wall(instant: datetime) -> datetime:
        return instant.astimezone(zone).replace(tzinfo=None)

    u = after.replace(second=0, microsecond=0)
    high = max(wall(u - MINUTE * n) for n in range(0, 3 * 60))  # the clock's furthest reading
    fires: list[datetime] = []
    while len(fires) < count:
        u += MINUTE
        now = wall(u)
        if now > high:
            step = high + MINUTE
            while step <= now:  # every wall time the clock reached or passed just now
                if expr.matches(step) and u > after:
                    fires.append(u)
                    break
                step += MINUTE
            high = now
    return fires


@settings(max_examples=examples(30), deadline=None)
@given(
    expr=expressions,
    zone_name=st.sampled_from(ZONES),
    change=st.integers(0, 2),
    offset_minutes=st.integers(-3 * 24 * 60, 24 * 60),
)
def test_fires_match_the_reference_around_clock_changes(
    expr: Expression, zone_name: str, change: int, offset_minutes: int
) -> None:
    zone = ZoneInfo(zone_name)
    start = datetime.fromisoformat(CHANGES[zone_name][change]).replace(tzinfo=UTC)
    after = start + timedelta(minutes=offset_minutes, seconds=17)
    schedule = Schedule.parse({"cron": expr.text, "timezone": zone_name})
    expected = reference_fires(expr, zone, after, 3)
    got: list[datetime] = []
    at = after
    for _ in expected:
        fire = schedule.next_fire(at)
        assert fire is not None
        got.append(fire)
        at = fire
    assert got == expected
    # and backwards: the last fire at or before an instant
    assert schedule.last_fire(expected[1] - timedelta(seconds=1)) == expected[0]
    assert schedule.last_fire(expected[1]) == expected[1]


def periods(schedule: Schedule, start: datetime, count: int) -> list[tuple[datetime, datetime]]:
    begin = schedule.last_fire(start)
    assert begin is not None
    out = []
    for _ in range(count):
        end = schedule.next_fire(begin)
        assert end is not None
        out.append((begin, end))
        begin = end
    return out


@pytest.mark.parametrize(
    ("zone", "day", "hours"),
    [
        ("Europe/Berlin", "2026-03-29", 23),
        ("Europe/Berlin", "2026-10-25", 25),
        ("America/New_York", "2026-03-08", 23),
        ("America/New_York", "2026-11-01", 25),
    ],
)
def test_a_daily_period_lasts_23_or_25_hours_across_a_change(
    zone: str, day: str, hours: int
) -> None:
    schedule = Schedule.parse({"cron": "0 0 * * *", "timezone": zone})
    local_noon = datetime.fromisoformat(f"{day}T12:00").replace(tzinfo=ZoneInfo(zone))
    begin = schedule.last_fire(local_noon.astimezone(UTC))
    assert begin is not None
    end = schedule.next_fire(begin)
    assert end is not None
    assert end - begin == timedelta(hours=hours)


def test_lord_howe_moves_half_an_hour() -> None:
    schedule = Schedule.parse({"cron": "0 12 * * *", "timezone": "Australia/Lord_Howe"})
    (first, end), (_, _) = periods(schedule, datetime(2026, 10, 3, 12, tzinfo=UTC), 2)
    assert end - first == timedelta(hours=23, minutes=30)


def test_a_time_skipped_by_the_clock_fires_once_at_the_jump() -> None:
    # 02:00, 02:15, 02:30 and 02:45 never happen in Berlin on 2026-03-29: one fire, at 03:00
    schedule = Schedule.parse({"cron": "*/15 2 * * *", "timezone": "Europe/Berlin"})
    fires = []
    at = datetime(2026, 3, 28, 12, tzinfo=UTC)
    for _ in range(2):
        fire = schedule.next_fire(at)
        assert fire is not None
        fires.append(fire)
        at = fire
    assert fires[0] == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00 CEST
    assert fires[1] == datetime(2026, 3, 30, 0, 0, tzinfo=UTC)  # 02:00 CEST the next day


def test_a_time_the_clock_shows_twice_fires_once() -> None:
    schedule = Schedule.parse({"cron": "30 2 * * *", "timezone": "Europe/Berlin"})
    first = schedule.next_fire(datetime(2026, 10, 24, 12, tzinfo=UTC))
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST, not 02:30 CET
    assert schedule.next_fire(first) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_a_yearly_schedule_crosses_the_new_year_in_its_zone() -> None:
    schedule = Schedule.parse({"cron": "0 0 1 1 *", "timezone": "Pacific/Auckland"})
    at = datetime(2026, 12, 31, 10, 59, tzinfo=UTC)
    assert schedule.next_fire(at) == datetime(2026, 12, 31, 11, 0, tzinfo=UTC)
    assert schedule.last_fire(at) == datetime(2025, 12, 31, 11, 0, tzinfo=UTC)


def test_weekly_on_sunday_evening() -> None:
    schedule = Schedule.parse({"cron": "0 18 * * SUN", "timezone": "Europe/Berlin"})
    now = datetime(2026, 11, 26, tzinfo=UTC)
    assert schedule.last_fire(now) == datetime(2026, 11, 22, 17, tzinfo=UTC)
    assert schedule.next_fire(now) == datetime(2026, 11, 29, 17, tzinfo=UTC)
    # 7 and SUN are Sunday too; either day field restricted alone, or both (either matches)
    assert Schedule.parse({"cron": "0 18 * * 7", "timezone": "Europe/Berlin"}).next_fire(now) == (
        datetime(2026, 11, 29, 17, tzinfo=UTC)
    )
    both = Schedule.parse({"cron": "0 0 1 * MON", "timezone": "UTC"})
    assert both.next_fire(now) == datetime(2026, 11, 30, tzinfo=UTC)  # a Monday before the 1st


def test_without_a_cron_periods_end_only_by_hand() -> None:
    schedule = Schedule.parse({"timezone": "UTC"})
    assert schedule.next_fire(datetime(2026, 1, 1, tzinfo=UTC)) is None
    assert schedule.to_json() == {"timezone": "UTC"}


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        # not the documented shape: 400
        ({"cron": "0 18 * *", "timezone": "UTC"}, BadRequest, "five fields"),
        ({"cron": "0  18 * * *", "timezone": "UTC"}, BadRequest, "five fields"),
        ({"cron": "0 18 * * SUN", "timezone": "../etc/passwd"}, BadRequest, "IANA time zone"),
        ({"cron": "0 18 * * SUN", "zone": "UTC"}, BadRequest, "unknown field"),
        ("0 18 * * SUN", BadRequest, "must be an object"),
        ({"timezone": "Europe/" + "B" * 30 + "/" + "C" * 30}, BadRequest, "IANA time zone"),
        # a shape error wins over a rule: the unknown zone beside a malformed cron is 400
        ({"cron": "0 18 * *", "timezone": "Mars/Olympus"}, BadRequest, "five fields"),
        # the shape, but no schedule: 422
        ({"cron": "60 * * * *", "timezone": "UTC"}, Unprocessable, "out of range"),
        ({"cron": "0 0 30 2 *", "timezone": "UTC"}, Unprocessable, "never fires"),
        ({"cron": "0 0 * * FUNDAY", "timezone": "UTC"}, Unprocessable, "not a valid"),
        ({"cron": "5-1 * * * *", "timezone": "UTC"}, Unprocessable, "out of range"),
        ({"cron": "*/0 * * * *", "timezone": "UTC"}, Unprocessable, "out of range"),
        ({"cron": "0 18 * * SUN", "timezone": "Mars/Olympus"}, Unprocessable, "unknown time zone"),
    ],
)
def test_bad_schedules_are_refused_with_the_reason(
    value: object, error: type[DomainError], message: str
) -> None:
    with pytest.raises(error, match=message):
        Schedule.parse(value)
