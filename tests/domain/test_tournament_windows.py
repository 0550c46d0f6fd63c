"""Recurring tournaments' windows (domain/periods.py `Windows`, domain/tournaments.py): each fire
F of the cron opens [F, min(F + duration, next fire)); the duration is absolute time, also
across a daylight-saving change, and the fires follow the schedules' rules for a change (a
skipped wall time fires at the jump, a repeated one the first time); no window starts before
the series' start nor at or after its end. What the reads show, what a write is for, which ids
name a window, and the recurrence's validation (errors named where they were broken)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from leaderboard.domain.boards import parse_board_request
from leaderboard.domain.errors import BadRequest, DomainError, NotFound, Unprocessable
from leaderboard.domain.periods import Windows, parse_period_id
from leaderboard.domain.schedules import Schedule
from leaderboard.domain.tournaments import Tournament, tournament_listing

HOUR = timedelta(hours=1)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def windows(cron: str, zone: str, seconds: int, since: str, until: str | None = None) -> Windows:
    return Windows(
        Schedule(cron, zone),
        utc(since),
        length=timedelta(seconds=seconds),
        until=None if until is None else utc(until),
    )


def spans(calendar: Windows, after: str, count: int) -> list[tuple[datetime, datetime]]:
    """The first `count` windows that start after `after`, as (start, end) in UTC."""
    found: list[tuple[datetime, datetime]] = []
    at = utc(after)
    while len(found) < count:
        window = calendar.target_at(at)
        assert window.starts_at is not None and window.ends_at is not None
        if window.starts_at >= at:
            found.append((window.starts_at, window.ends_at))
        at = window.ends_at
    return found


def test_windows_across_a_change_keep_their_duration_and_follow_the_wall_clock():
    # 18:00 in Berlin: 17:00 UTC in winter, 16:00 UTC from 29 March 2026 (CEST)
    daily = windows("0 18 * * *", "Europe/Berlin", 3600, "2026-03-27T00:00:00")
    assert spans(daily, "2026-03-27T00:00:00", 3) == [
        (utc("2026-03-27T17:00:00"), utc("2026-03-27T18:00:00")),
        (utc("2026-03-28T17:00:00"), utc("2026-03-28T18:00:00")),
        (utc("2026-03-29T16:00:00"), utc("2026-03-29T17:00:00")),
    ]
    # a window the change falls inside: three hours of time, not of wall clock
    night = windows("30 1 * * *", "Europe/Berlin", 3 * 3600, "2026-03-28T00:00:00")
    ((start, end),) = spans(night, "2026-03-28T12:00:00", 1)
    assert (start, end - start) == (utc("2026-03-29T00:30:00"), 3 * HOUR)
    assert end.astimezone(ZoneInfo("Europe/Berlin")).hour == 5  # 05:30 CEST, not 04:30
    # a skipped wall time (02:30 on 29 March) opens its window at the jump (03:00 CEST)
    gap = windows("30 2 * * *", "Europe/Berlin", 3600, "2026-03-28T00:00:00")
    assert spans(gap, "2026-03-28T12:00:00", 1) == [
        (utc("2026-03-29T01:00:00"), utc("2026-03-29T02:00:00"))
    ]
    # a repeated one (02:30 twice on 25 October) opens one window, the first time
    fold = windows("30 2 * * *", "Europe/Berlin", 3600, "2026-10-24T00:00:00")
    assert spans(fold, "2026-10-24T12:00:00", 2) == [
        (utc("2026-10-25T00:30:00"), utc("2026-10-25T01:30:00")),
        (utc("2026-10-26T01:30:00"), utc("2026-10-26T02:30:00")),
    ]
    # New York's spring change: 23 hours between two 20:00 windows, each an hour long
    ny = windows("0 20 * * *", "America/New_York", 3600, "2026-03-07T12:00:00")
    (a, _), (b, b_end) = spans(ny, "2026-03-07T12:00:00", 2)
    assert (b - a, b_end - b) == (23 * HOUR, HOUR)


def test_a_window_longer_than_the_gap_ends_at_the_next_fire():
    hourly = windows("0 * * * *", "UTC", 2 * 3600, "2026-06-01T00:00:00")
    assert spans(hourly, "2026-06-01T00:00:00", 2) == [
        (utc("2026-06-01T00:00:00"), utc("2026-06-01T01:00:00")),
        (utc("2026-06-01T01:00:00"), utc("2026-06-01T02:00:00")),
    ]
    twice = windows("0 9,10 * * *", "UTC", 5400, "2026-06-01T00:00:00")
    assert spans(twice, "2026-06-01T00:00:00", 3) == [
        (utc("2026-06-01T09:00:00"), utc("2026-06-01T10:00:00")),  # cut at the 10:00 fire
        (utc("2026-06-01T10:00:00"), utc("2026-06-01T11:30:00")),
        (utc("2026-06-02T09:00:00"), utc("2026-06-02T10:00:00")),
    ]
    # across New York's autumn change the gap is 25 h: a 24 h 30 min window is not cut
    ny = windows("0 20 * * *", "America/New_York", 88200, "2026-10-31T12:00:00")
    (first, first_end), (second, _) = spans(ny, "2026-10-31T12:00:00", 2)
    assert (second - first, first_end - first) == (25 * HOUR, timedelta(seconds=88200))


def test_series_bounds_and_what_reads_and_writes_see():
    # windows at 18:00 UTC for an hour, from 2 June 18:00 (the 1 June one is before the
    # start), the last starting before the 4 June 18:00 end
    series = windows("0 18 * * *", "UTC", 3600, "2026-06-01T18:00:01", "2026-06-04T18:00:00")
    first, last = "2026-06-02T180000Z", "2026-06-03T180000Z"
    cases = [  # instant, what a read of `custom` shows, what a write or join is for
        ("2026-06-01T12:00:00", first, first),  # before the series: the first, upcoming
        ("2026-06-02T18:00:00", first, first),  # open
        ("2026-06-02T18:59:59", first, first),
        ("2026-06-02T19:00:00", first, last),  # between: the last started; the next
        ("2026-06-03T18:30:00", last, last),
        ("2026-06-03T19:00:00", last, last),  # the series is over: the last, for good
        ("2027-01-01T00:00:00", last, last),
    ]
    for at, read, write in cases:
        assert (series.period_at(utc(at)).id, series.target_at(utc(at)).id) == (read, write), at
    assert series.due_after(utc("2026-06-02T19:00:00")) == utc("2026-06-03T19:00:00")
    assert series.due_after(utc("2026-06-03T19:00:00")) is None  # nothing more ends
    # past windows' ids are placed; an id that starts no window is 404
    placed = series.place(parse_period_id(first))
    assert (placed.starts_at, placed.ends_at) == (
        utc("2026-06-02T18:00:00"),
        utc("2026-06-02T19:00:00"),
    )
    for other in ("2026-06-01T180000Z", "2026-06-04T180000Z", "2026-06-02T183000Z"):
        with pytest.raises(NotFound):
            series.place(parse_period_id(other))
    # a window that starts before the end runs its whole duration
    late = windows("30 17 * * *", "UTC", 3600, "2026-06-01T00:00:00", "2026-06-01T18:00:00")
    assert late.period_at(utc("2026-06-01T17:45:00")).ends_at == utc("2026-06-01T18:30:00")


def _board(tournament: dict, created: str = "2026-06-01T12:00:00Z", **rules: object):
    return parse_board_request(
        "weekly-cup",
        {"tournament": tournament, **rules},
        None,
        has_entries=False,
        now_iso=created,
    )


RECURRENCE = {"cron": "0 18 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}


def test_the_series_starts_with_the_board_unless_it_says_when():
    board = _board({"recurrence": RECURRENCE, "max_participants": 8})
    assert board.periods == ("custom",)
    assert board.tournament is not None and board.to_public()["tournament"] == {
        "starts_at": None,
        "ends_at": None,
        "join_required": False,
        "max_participants": 8,
        "max_attempts": None,
        "recurrence": RECURRENCE,
    }
    calendar = board.calendar()
    assert isinstance(calendar, Windows) and calendar.since == utc("2026-06-01T12:00:00")
    assert calendar.first_start() == utc("2026-06-01T16:00:00")  # 18:00 CEST
    cfg = board.to_script_config()
    assert (cfg["since"], cfg["every"], cfg["tour"], "until" in cfg) == (
        "2026-06-01T12:00:00Z",
        3600,
        "0 8 ",
        False,
    )
    listing = tournament_listing(board.tournament, board.created_at, utc("2026-06-01T16:30:00"))
    assert {k: listing[k] for k in ("status", "period", "series_starts_at", "series_ends_at")} == {
        "status": "open",
        "period": "2026-06-01T160000Z",
        "series_starts_at": "2026-06-01T12:00:00Z",
        "series_ends_at": None,
    }
    between = tournament_listing(board.tournament, board.created_at, utc("2026-06-01T20:00:00"))
    assert (between["status"], between["period"]) == ("upcoming", "2026-06-02T160000Z")


@pytest.mark.parametrize(
    ("recurrence", "error", "field"),
    [
        ("daily", BadRequest, "tournament.recurrence"),
        ({**RECURRENCE, "every": 2}, BadRequest, "tournament.recurrence.every"),
        ({"timezone": "UTC", "duration_seconds": 60}, BadRequest, "tournament.recurrence.cron"),
        ({**RECURRENCE, "cron": "0 18 * *"}, BadRequest, "tournament.recurrence.cron"),
        ({**RECURRENCE, "cron": "0 24 * * *"}, Unprocessable, "tournament.recurrence.cron"),
        ({**RECURRENCE, "cron": "0 0 30 2 *"}, Unprocessable, "tournament.recurrence.cron"),
        (
            {**RECURRENCE, "timezone": "Mars/Olympus"},
            Unprocessable,
            "tournament.recurrence.timezone",
        ),
        ({**RECURRENCE, "timezone": "no zone"}, BadRequest, "tournament.recurrence.timezone"),
        (
            {**RECURRENCE, "duration_seconds": 59},
            BadRequest,
            "tournament.recurrence.duration_seconds",
        ),
        (
            {**RECURRENCE, "duration_seconds": 366 * 86400 + 1},
            BadRequest,
            "tournament.recurrence.duration_seconds",
        ),
        (
            {**RECURRENCE, "duration_seconds": "3600"},
            BadRequest,
            "tournament.recurrence.duration_seconds",
        ),
        (
            {"cron": "0 18 * * *", "timezone": "UTC"},
            BadRequest,
            "tournament.recurrence.duration_seconds",
        ),
    ],
)
def test_a_recurrence_is_checked_as_a_schedule_is_and_errors_name_its_fields(
    recurrence, error, field
):
    with pytest.raises(DomainError) as caught:
        Tournament.parse({"recurrence": recurrence})
    assert type(caught.value) is error
    assert caught.value.details["field"] == field
    assert "schedule" not in caught.value.message


def test_the_rules_between_a_recurrence_and_its_bounds():
    # shapes of a whole number of seconds and of null bounds are accepted; the 366 days of a
    # one-shot window do not bound a series
    parsed = Tournament.parse(
        {
            "recurrence": {**RECURRENCE, "duration_seconds": 3600.0},
            "starts_at": "2026-06-01T00:00:00Z",
            "ends_at": "2030-06-01T00:00:00Z",
        }
    )
    assert parsed.recurrence is not None and parsed.recurrence.duration_seconds == 3600
    assert Tournament.parse({"recurrence": RECURRENCE, "starts_at": None}).starts_at is None
    with pytest.raises(BadRequest):  # a one-shot tournament still needs its window
        Tournament.parse({"recurrence": None, "starts_at": "2026-06-01T00:00:00Z"})
    with pytest.raises(Unprocessable) as caught:
        Tournament.parse(
            {
                "recurrence": RECURRENCE,
                "starts_at": "2026-06-02T00:00:00Z",
                "ends_at": "2026-06-01T00:00:00Z",
            }
        )
    assert caught.value.details["field"] == "tournament.ends_at"
    for name, far in (("starts_at", "0001-01-01T00:00:00Z"), ("ends_at", "9999-12-31T23:59:59Z")):
        with pytest.raises(Unprocessable) as caught:  # what the calendar can look around
            Tournament.parse({"recurrence": RECURRENCE, name: far})
        assert caught.value.details["field"] == f"tournament.{name}"
    # bounds no fire falls between: 422 (the board decides, as the start may be its creation)
    with pytest.raises(Unprocessable) as caught:
        _board({"recurrence": RECURRENCE, "ends_at": "2026-06-01T15:00:00Z"})
    assert caught.value.details["field"] == "tournament.ends_at"
    with pytest.raises(Unprocessable):  # still unsharded
        _board({"recurrence": RECURRENCE}, shards=2)
    assert _board({"recurrence": RECURRENCE, "ends_at": "2026-06-01T16:00:01Z"}).calendar()
