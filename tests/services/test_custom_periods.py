"""Custom periods (issue 24): a board's own schedule, a cron in a time zone, and seasons ended by
hand. Submissions land in the period their instant falls in; the rollover archives a closed one
exactly as it stood (also when cut off and resumed); reads of it answer the same before and
after archiving and after its keys are freed; history and the periods route list it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from leaderboard.domain.errors import BadRequest, Conflict, NotFound, Unprocessable
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.aws.event_bus import ListSink as EventListSink
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from tests.services.test_rollover import (
    ADMIN,
    SERVER,
    _archive_rows,
    _play,
    _reads_of,
    _strip_metadata,
)
from tests.support.boards import ListSink, MovableClock

BERLIN_SUNDAYS = {"cron": "0 18 * * SUN", "timezone": "Europe/Berlin"}


def _custom_board(index, db, board_id, clock, schedule, **rules) -> BoardAdminService:
    admin = BoardAdminService(db, index, clock)
    admin.put_board(
        board_id,
        {
            "regions": ["EU", "NA"],
            "periods": ["all-time", "custom"],
            "schedule": schedule,
            "mode": "best",
            **rules,
        },
        ADMIN,
    )
    return admin


def _ids(reads, board_id) -> dict[str, tuple]:
    return {
        p["period"]: (p["kind"], p["starts_at"], p["ends_at"], p["status"], p["entries"])
        for p in reads.periods(board_id)["periods"]
    }


@pytest.mark.parametrize("stop_after", [1, 4])
def test_a_sunday_evening_schedule_in_berlin_archives_its_week(
    index, database_url, board_id, stop_after
):
    # Sunday 2026-11-22, 17:30 in Berlin: the period that began the Sunday before
    clock = MovableClock(datetime(2026, 11, 22, 16, 30, tzinfo=UTC))
    db = Database(database_url)
    _custom_board(index, db, board_id, clock, BERLIN_SUNDAYS)
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    _play(scores, board_id, seed=stop_after, count=50)

    current = reads.entries(board_id, {"period": "custom", "limit": "100"})
    week = "2026-11-15T170000Z"
    assert current["period"] == week
    assert _ids(reads, board_id)[week] == (
        "custom",
        "2026-11-15T17:00:00Z",
        "2026-11-22T17:00:00Z",
        "open",
        current["total"],
    )
    before = _strip_metadata(_reads_of(reads, board_id, week))
    leader = current["entries"][0]
    standings = ReadService(index, clock).standings(board_id, leader["player_id"], {})
    assert {(s["kind"], s["period"], s["region"], s["rank"]) for s in standings["standings"]} >= {
        ("custom", week, None, 1),
        ("all-time", "all-time", None, 1),
    }
    assert before[("entries", None)] == _strip_metadata(current)

    clock.now = datetime(2026, 11, 22, 17, 0, 1, tzinfo=UTC)  # 18:00:01 in Berlin
    scores.submit(board_id, {"player_id": "late", "score": 99}, SERVER, None)
    assert reads.entries(board_id, {"period": "custom"})["period"] == "2026-11-22T170000Z"
    assert [
        e["player_id"] for e in reads.entries(board_id, {"period": week, "limit": "100"})["entries"]
    ] == [e["player_id"] for e in current["entries"]]  # the late score went to the new period only

    StandingsStore(db).write(sink.events)
    calls = {"n": 0}

    def cut_off() -> bool:
        calls["n"] += 1
        return calls["n"] <= stop_after

    rollover = Rollover(db, index, clock, chunk_size=3)
    assert rollover.run(keep_going=cut_off, board_ids={board_id}).complete is False
    report = rollover.run(board_ids={board_id})
    assert report.complete and report.archived == [f"{board_id}/{week}"]
    assert rollover.run(board_ids={board_id}).archived == []  # once
    rows = _archive_rows(database_url, board_id, week)
    assert [(r[2], r[3]) for r in rows if r[0] == ""] == [
        (e["rank"], e["player_id"]) for e in current["entries"]
    ]
    assert _strip_metadata(_reads_of(reads, board_id, week)) == before
    assert _ids(reads, board_id)[week][3] == "archived"

    clock.now += timedelta(days=8)  # past the retention: from the archive alone
    rollover.run(board_ids={board_id})
    assert not list(index.client.scan_iter(f"lb:{{{board_id}}}:z:{week}*"))
    assert _strip_metadata(_reads_of(reads, board_id, week)) == before
    player = current["entries"][0]["player_id"]
    history = reads.history(board_id, player, {"kind": "custom"})
    assert [r["period"] for r in history["results"]][-1] == week


def test_a_daily_period_across_a_clock_change_lasts_23_hours(index, database_url, board_id):
    clock = MovableClock(datetime(2026, 3, 29, 10, 0, tzinfo=UTC))
    db = Database(database_url)
    _custom_board(index, db, board_id, clock, {"cron": "0 0 * * *", "timezone": "Europe/Berlin"})
    scores = ScoreService(index, ListSink(), clock)
    scores.submit(board_id, {"player_id": "a", "score": 1}, SERVER, None)
    reads = ReadService(index, clock)
    listed = _ids(reads, board_id)["2026-03-28T230000Z"]  # midnight in Berlin, still CET
    assert listed[1:3] == ("2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z")  # 23 hours


def test_a_season_ended_by_hand(index, database_url, board_id):
    clock = MovableClock(datetime(2026, 11, 22, 12, 0, 0, 250_000, tzinfo=UTC))
    db = Database(database_url)
    admin = _custom_board(index, db, board_id, clock, {"timezone": "UTC"})
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    first = reads.entries(board_id, {"period": "custom"})
    # without a cron the first season starts with the board, and has no end yet
    assert first["period"] == "2026-11-22T120000Z"
    assert _ids(reads, board_id)[first["period"]][2:4] == (None, "open")

    clock.advance(hours=3)
    _play(scores, board_id, seed=2, count=30)
    season = _strip_metadata(_reads_of(reads, board_id, first["period"]))
    clock.advance(microseconds=300_000)
    ended = admin.end_period(board_id, ADMIN)
    assert ended["ended"] == {
        "period": "2026-11-22T120000Z",
        "kind": "custom",
        "starts_at": "2026-11-22T12:00:00Z",
        "ends_at": "2026-11-22T15:00:01Z",  # the next whole second
        "status": "closed",
    }
    assert ended["current"]["period"] == "2026-11-22T150001Z"
    assert ended["current"]["ends_at"] is None
    with pytest.raises(Conflict):  # the new season has not started yet
        admin.end_period(board_id, ADMIN)

    clock.advance(seconds=1)
    scores.submit(board_id, {"player_id": "new", "score": 5}, SERVER, None)
    fresh = ReadService(index, clock)  # a read function that did not cache the old season
    assert [e["player_id"] for e in fresh.entries(board_id, {"period": "custom"})["entries"]] == [
        "new"
    ]
    StandingsStore(db).write(sink.events)
    rollover = Rollover(db, index, clock, chunk_size=4)
    assert rollover.run(board_ids={board_id}).archived == [f"{board_id}/2026-11-22T120000Z"]
    assert _strip_metadata(_reads_of(reads, board_id, "2026-11-22T120000Z")) == season
    board = reads.get_board(board_id)
    assert board["ended_by_hand"] == ["2026-11-22T15:00:01Z"]
    assert board["schedule"] == {"timezone": "UTC"}


def test_a_new_season_is_read_by_id_at_once(index, database_url, board_id):
    """Reads by id are exact at any time (issue 36, 4): a read function that looked the
    board's seasons up just before an end by hand finds the new season by its id at once,
    while an id that no season starts at stays 404 without a lookup of its own."""
    clock = MovableClock(datetime(2026, 11, 22, 12, 0, 0, 250_000, tzinfo=UTC))
    db = Database(database_url)
    admin = _custom_board(index, db, board_id, clock, {"timezone": "UTC"})
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    assert reads.entries(board_id, {"period": "custom"})["period"] == "2026-11-22T120000Z"
    clock.advance(minutes=5)
    new = admin.end_period(board_id, ADMIN)["current"]["period"]
    # before it starts (the next whole second), the id the end named reads as the empty season
    early = reads.entries(board_id, {"period": new})
    assert (early["period"], early["entries"], early["total"]) == (new, [], 0)
    clock.advance(seconds=1)
    scores.submit(board_id, {"player_id": "ada", "score": 5}, SERVER, None)
    page = reads.entries(board_id, {"period": new})  # the calendar this reader held is stale
    assert (page["period"], [e["player_id"] for e in page["entries"]]) == (new, ["ada"])
    lookups = []
    real = reads.get_board
    reads.get_board = lambda b: lookups.append(b) or real(b)  # type: ignore[method-assign]
    with pytest.raises(NotFound):  # before the current season: the calendar knows
        reads.entries(board_id, {"period": "2026-11-22T120001Z"})
    assert lookups == []


def test_the_rules_of_custom_periods(index, database_url, board_id, clock):
    db = Database(database_url)
    admin = BoardAdminService(db, index, clock)
    # a rule between two fields, which no schema states: 422 (docs/API.md, "Errors")
    with pytest.raises(Unprocessable, match="schedule"):  # custom without a schedule
        admin.put_board(board_id, {"periods": ["custom"]}, ADMIN)
    with pytest.raises(Unprocessable, match="schedule"):  # a schedule without custom
        admin.put_board(board_id, {"schedule": BERLIN_SUNDAYS}, ADMIN)
    with pytest.raises(Unprocessable, match="time zone"):
        admin.put_board(
            board_id, {"periods": ["custom"], "schedule": {"timezone": "Nowhere/City"}}, ADMIN
        )
    admin.put_board(board_id, {"periods": ["all-time", "weekly"]}, ADMIN)
    with pytest.raises(Conflict):  # nothing to end
        admin.end_period(board_id, ADMIN)
    reads = ReadService(index, clock)
    with pytest.raises(NotFound):
        reads.entries(board_id, {"period": "custom"})
    admin.put_board(board_id, {"periods": ["custom"], "schedule": BERLIN_SUNDAYS}, ADMIN)
    scores = ScoreService(index, ListSink(), clock)
    scores.submit(board_id, {"player_id": "a", "score": 1}, SERVER, None)
    with pytest.raises(Conflict):  # entries: the periods they are in must keep their bounds
        admin.put_board(board_id, {"schedule": {"cron": "0 0 * * *", "timezone": "UTC"}}, ADMIN)
    with pytest.raises(NotFound):  # no period of this board starts there
        reads.entries(board_id, {"period": "2026-11-16T170000Z"})
    with pytest.raises(NotFound):  # the shape of a start, but no instant
        reads.entries(board_id, {"period": "2026-11-16T250000Z"})
    with pytest.raises(BadRequest):
        reads.entries(board_id, {"period": "2026-11-16T2500Z"})
    with pytest.raises(NotFound):
        admin.end_period("no-such-board", ADMIN)


def test_a_run_every_minute_visits_only_the_boards_that_are_due(index, database_url):
    clock = MovableClock(datetime(2026, 11, 22, 12, 30, tzinfo=UTC))
    db = Database(database_url)
    hourly, seasons, weekly = (f"due-{n}-{uuid.uuid4().hex[:12]}" for n in range(3))
    _custom_board(index, db, hourly, clock, {"cron": "0 * * * *", "timezone": "UTC"})
    _custom_board(index, db, seasons, clock, {"timezone": "UTC"})
    BoardAdminService(db, index, clock).put_board(weekly, {"periods": ["weekly"]}, ADMIN)
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    for board in (hourly, seasons, weekly):
        scores.submit(board, {"player_id": "a", "score": 3}, SERVER, None)
    ours = {hourly, seasons, weekly}
    rollover = Rollover(db, index, clock)

    # new boards are looked at once; then each is due when its period ends (a fixed kind's
    # five minutes later, as its schedule always ran)
    assert rollover.run(board_ids=ours, due=True).boards == 3
    due = index.client.zmscore("lb:rollover-due", [hourly, seasons, weekly])
    assert due[0] == datetime(2026, 11, 22, 13, tzinfo=UTC).timestamp() * 1000
    assert due[1] is None  # a season without a cron: due when ended by hand
    assert due[2] == datetime(2026, 11, 23, 0, 5, tzinfo=UTC).timestamp() * 1000  # Monday
    clock.advance(minutes=1)
    assert rollover.run(board_ids=ours, due=True).boards == 0
    clock.now = datetime(2026, 11, 22, 13, 0, 30, tzinfo=UTC)
    StandingsStore(db).write(sink.events)
    report = rollover.run(board_ids=ours, due=True)
    assert (report.boards, report.archived) == (1, [f"{hourly}/2026-11-22T120000Z"])

    # the week closes: the weekly board is due at 00:05 on Monday, like the old schedule
    clock.now = datetime(2026, 11, 23, 0, 5, 30, tzinfo=UTC)
    report = rollover.run(board_ids=ours, due=True)
    assert (report.boards, report.archived) == (2, [f"{weekly}/2026-W47"])

    # a season ended by hand is due at its end
    ended = BoardAdminService(db, index, clock).end_period(seasons, ADMIN)
    clock.advance(seconds=2)
    report = rollover.run(board_ids=ours, due=True)
    assert report.archived == [f"{seasons}/{ended['ended']['period']}"]
    # and each archived period again when its retention ends, to free its keys
    clock.advance(days=7, minutes=1)
    report = rollover.run(board_ids=ours, due=True)
    assert sorted(report.purged) == sorted(
        [
            f"{hourly}/2026-11-22T120000Z",
            f"{seasons}/{ended['ended']['period']}",
            f"{weekly}/2026-W47",
        ]
    )


class _DiesAfterEmitting(EventListSink):
    """A rollover process that dies right after its event left, before the period counted
    as archived: the next run must send the very same event again, not another one."""

    def emit(self, event) -> None:
        super().emit(event)
        raise SystemExit("killed")


def test_each_closed_period_emits_one_period_ended_with_one_id(index, database_url, board_id):
    clock = MovableClock(datetime(2026, 11, 22, 16, 30, tzinfo=UTC))
    db = Database(database_url)
    rewards = {
        "top": 3,
        "tiers": [{"name": "winner", "ranks": [1, 1]}, {"name": "top", "top_percent": 50}],
    }
    admin = _custom_board(index, db, board_id, clock, BERLIN_SUNDAYS, rewards=rewards)
    assert admin.put_board(board_id, {}, ADMIN)[0]["rewards"] == rewards
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    _play(scores, board_id, seed=9, count=40)
    final = ReadService(index, clock).entries(board_id, {"period": "custom", "limit": "100"})
    clock.now = datetime(2026, 11, 22, 17, 5, tzinfo=UTC)
    StandingsStore(db).write(sink.events)

    dying = _DiesAfterEmitting()
    with pytest.raises(SystemExit):
        Rollover(db, index, clock, chunk_size=4, sink=dying).run(board_ids={board_id})
    events = EventListSink()
    rollover = Rollover(db, index, clock, chunk_size=4, sink=events)
    assert rollover.run(board_ids={board_id}).archived == [f"{board_id}/2026-11-15T170000Z"]
    assert rollover.run(board_ids={board_id}).archived == []  # and no second event
    (first,), (event,) = dying.events, events.events
    assert event.to_json() == first.to_json()  # the same id and the same bytes
    body = event.envelope()
    assert body["type"] == "period.ended" and body["id"] == event.event_id
    data = body["data"]
    assert (data["board_id"], data["reason"]) == (board_id, "schedule")
    assert data["period"] == {
        "id": "2026-11-15T170000Z",
        "kind": "custom",
        "starts_at": "2026-11-15T17:00:00Z",
        "ends_at": "2026-11-22T17:00:00Z",
    }
    ranked = [(e["rank"], e["player_id"], e["score"]) for e in final["entries"]]
    assert [(e["rank"], e["player_id"], e["score"]) for e in data["top"]] == [
        r for r in ranked if r[0] <= 3
    ]
    winner, top = data["tiers"]
    assert [p["player_id"] for p in winner["players"]] == [r[1] for r in ranked if r[0] == 1]
    half = -(-final["total"] * 50 // 100)
    assert [p["player_id"] for p in top["players"]] == [r[1] for r in ranked if r[0] <= half]

    # a season ended by hand says so (a period no one played in has nothing to archive or say)
    scores.submit(board_id, {"player_id": "early", "score": 1}, SERVER, None)
    admin.end_period(board_id, ADMIN)
    clock.advance(seconds=2)
    scores.submit(board_id, {"player_id": "late", "score": 1}, SERVER, None)
    StandingsStore(db).write(sink.events)
    rollover.run(board_ids={board_id})
    assert [e.envelope()["data"]["reason"] for e in events.events] == ["schedule", "manual"]
