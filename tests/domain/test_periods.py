"""Period ids and boundaries in UTC (acceptance 4 of the time-windows work): ISO week 53 (2026
has one), the weeks that straddle a new year, month ends and leap days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.periods import (
    current_period,
    parse_period_id,
    previous_period,
    resolve_period,
)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "week"),
    [
        ("2026-12-27T23:59:59", "2026-W52"),  # Sunday before week 53
        ("2026-12-28T00:00:00", "2026-W53"),  # 2026 has 53 ISO weeks
        ("2026-12-31T12:00:00", "2026-W53"),
        ("2027-01-01T00:00:00", "2026-W53"),  # New Year's Day 2027 is still in 2026-W53
        ("2027-01-03T23:59:59", "2026-W53"),
        ("2027-01-04T00:00:00", "2027-W01"),
        ("2024-12-30T00:00:00", "2025-W01"),  # a week of 2025 that starts in 2024
        ("2021-01-03T10:00:00", "2020-W53"),
    ],
)
def test_iso_weeks_across_new_year(moment, week):
    assert current_period("weekly", at(moment)).id == week


def test_week_53_bounds_and_neighbours():
    week = parse_period_id("2026-W53")
    assert (week.starts_at, week.ends_at) == (at("2026-12-28T00:00:00"), at("2027-01-04T00:00:00"))
    assert previous_period(week).id == "2026-W52"
    assert current_period("weekly", week.ends_at).id == "2027-W01"
    # of a week's shape but no week (docs/API.md, "Errors": 422, not 400)
    with pytest.raises(Unprocessable):
        parse_period_id("2027-W53")  # 2027 has only 52 weeks
    with pytest.raises(Unprocessable):
        parse_period_id("2026-W54")


@pytest.mark.parametrize(
    ("moment", "month", "ends"),
    [
        ("2026-01-31T23:59:59", "2026-01", "2026-02-01"),
        ("2026-02-28T23:59:59", "2026-02", "2026-03-01"),
        ("2028-02-29T12:00:00", "2028-02", "2028-03-01"),  # leap year
        ("2026-12-31T23:59:59", "2026-12", "2027-01-01"),  # the year ends with the month
        ("2027-01-01T00:00:00", "2027-01", "2027-02-01"),
    ],
)
def test_month_ends(moment, month, ends):
    period = current_period("monthly", at(moment))
    assert period.id == month and period.ends_at == at(f"{ends}T00:00:00")
    assert period.is_open_at(at(moment))
    assert not period.is_open_at(period.ends_at)


def test_days_and_the_last_instant_of_a_period():
    day = current_period("daily", at("2026-12-31T23:59:59.999999"))
    assert day.id == "2026-12-31" and day.ends_at == at("2027-01-01T00:00:00")
    assert current_period("daily", day.ends_at).id == "2027-01-01"
    assert parse_period_id("2028-02-29").id == "2028-02-29"
    with pytest.raises(Unprocessable):
        parse_period_id("2026-02-29")  # a day's shape, no such day
    assert previous_period(parse_period_id("2027-01")).id == "2026-12"
    assert previous_period(parse_period_id("2027-01-01")).id == "2026-12-31"


def test_other_time_zones_are_converted_to_utc():
    from datetime import timezone

    tokyo = datetime(2027, 1, 4, 8, 0, tzinfo=timezone(timedelta(hours=9)))  # Sunday 23:00 UTC
    assert current_period("weekly", tokyo).id == "2026-W53"


def test_resolve_kinds_and_explicit_ids():
    now = at("2026-11-22T12:00:00")
    assert resolve_period(None, now).id == "all-time"
    assert resolve_period("weekly", now).id == "2026-W47"
    assert resolve_period("daily", now).id == "2026-11-22"
    assert resolve_period("monthly", now).id == "2026-11"
    assert resolve_period("2026-W46", now).kind == "weekly"
    for bad in ("2026-W7", "26-W47", "2026-11-1", "2026/11", "weekly ", "2026-W47x"):
        with pytest.raises(BadRequest):
            resolve_period(bad, now)
