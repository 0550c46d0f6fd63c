"""Tournaments (issue 24, acceptance 3 and 2): the window, the sign-up, the cap on participants
and the cap on attempts, each at its boundary and under 12 clients at once (never more
participants or attempts than allowed, counted); the end archives the final standings exactly
and emits one `period.ended` with reason `tournament`; the listing shows open, upcoming and
ended tournaments."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import (
    BadRequest,
    Conflict,
    NotFound,
    TournamentRefused,
    Unprocessable,
)
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.aws.event_bus import ListSink as EventListSink
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from tests.services.test_rollover import _archive_rows
from tests.support.boards import ListSink, MovableClock

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
START = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)
END = datetime(2026, 12, 7, 18, 0, tzinfo=UTC)
CLIENTS = 12


def _tournament(index, db, board_id, clock, **rules) -> BoardAdminService:
    admin = BoardAdminService(db, index, clock)
    tournament = {"starts_at": "2026-12-05T18:00:00Z", "ends_at": "2026-12-07T18:00:00Z", **rules}
    admin.put_board(board_id, {"mode": "best", "tournament": tournament}, ADMIN)
    return admin


def _refused(reason: str, call, *args) -> None:
    with pytest.raises(TournamentRefused) as caught:
        call(*args)
    assert caught.value.details["reason"] == reason
    assert caught.value.status == 409


def _together(calls) -> list[object]:
    """Each call in its own thread, all released at once: what each returned or raised."""
    gate = threading.Barrier(len(calls))

    def run(call):
        gate.wait()
        try:
            return call()
        except TournamentRefused as refused:
            return refused.details["reason"]

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_the_window_opens_and_closes_to_the_millisecond(index, database_url, board_id):
    clock = MovableClock(START - timedelta(milliseconds=1))
    db = Database(database_url)
    _tournament(index, db, board_id, clock)
    scores = ScoreService(index, ListSink(), clock)

    def play(score: int = 1):
        return scores.submit(board_id, {"player_id": "ada", "score": score}, SERVER, None)

    _refused("not_started", play)
    reads = ReadService(index, clock)
    # before the start there is nothing to read, and the window is listed as upcoming
    with pytest.raises(NotFound):
        reads.entries(board_id, {"period": "custom"})
    (window,) = [p for p in reads.periods(board_id)["periods"] if p["kind"] == "custom"]
    assert (window["period"], window["status"]) == ("2026-12-05T180000Z", "upcoming")
    clock.now = START
    assert play(5).body["applied"]
    assert reads.periods(board_id)["periods"][-1]["status"] == "open"
    clock.now = END - timedelta(milliseconds=1)
    assert play(7).body["applied"]
    clock.now = END
    _refused("ended", play)
    reads = ReadService(index, clock)
    # after the end, the tournament's period stays the current one: its final standings
    final = reads.entries(board_id, {"period": "custom"})
    assert final["period"] == "2026-12-05T180000Z"
    assert [(e["player_id"], e["score"]) for e in final["entries"]] == [("ada", 7)]


def test_a_sign_up_is_needed_and_capped_under_twelve_clients(index, database_url, board_id):
    clock = MovableClock(START - timedelta(hours=1))  # signing up before the start is fine
    db = Database(database_url)
    _tournament(index, db, board_id, clock, join_required=True, max_participants=5)
    scores = ScoreService(index, ListSink(), clock)
    players = [f"p{n}" for n in range(CLIENTS)]
    got = _together([lambda p=p: scores.join(board_id, {"player_id": p}, SERVER) for p in players])
    joined = [r for r in got if isinstance(r, dict)]
    assert len(joined) == 5 and got.count("full") == CLIENTS - 5
    assert sorted(r["participants"] for r in joined) == [1, 2, 3, 4, 5]
    assert index.client.scard(f"lb:{{{board_id}}}:joined") == 5
    first = joined[0]["player_id"]
    again = scores.join(board_id, {"player_id": first}, SERVER)  # a repeat changes nothing
    assert (again["joined"], again["participants"]) == (False, 5)

    clock.now = START
    outsider = next(p for p in players if p not in {r["player_id"] for r in joined})
    _refused(
        "not_joined", scores.submit, board_id, {"player_id": outsider, "score": 1}, SERVER, None
    )
    assert scores.submit(board_id, {"player_id": first, "score": 3}, SERVER, None).body["applied"]
    player = Caller("ada", frozenset())  # a player token signs itself up; the cap holds
    _refused("full", scores.join, board_id, {}, player)
    clock.now = END
    _refused("ended", scores.join, board_id, {"player_id": first}, SERVER)


def test_playing_is_joining_without_a_sign_up_and_the_cap_holds(index, database_url, board_id):
    clock = MovableClock(START + timedelta(hours=1))
    db = Database(database_url)
    _tournament(index, db, board_id, clock, max_participants=5)
    scores = ScoreService(index, ListSink(), clock)
    got = _together(
        [
            lambda n=n: scores.submit(board_id, {"player_id": f"p{n}", "score": n}, SERVER, None)
            for n in range(CLIENTS)
        ]
    )
    assert sum(not isinstance(r, str) for r in got) == 5 and got.count("full") == CLIENTS - 5
    entries = ReadService(index, clock).entries(board_id, {"period": "custom"})
    assert entries["total"] == 5


def test_attempts_are_capped_under_twelve_clients(index, database_url, board_id):
    clock = MovableClock(START + timedelta(hours=1))
    db = Database(database_url)
    _tournament(index, db, board_id, clock, max_attempts=3)
    scores = ScoreService(index, ListSink(), clock)

    def attempt(score: int):
        return scores.submit(board_id, {"player_id": "ada", "score": score}, SERVER, None)

    got = _together([lambda n=n: attempt(n) for n in range(CLIENTS)])
    assert sum(not isinstance(r, str) for r in got) == 3
    assert got.count("attempts_exhausted") == CLIENTS - 3
    assert index.client.hget(f"lb:{{{board_id}}}:attempts", "ada") == "3"
    # one attempt each for another player, at the boundary: the third is the last
    for score in (1, 2, 3):
        assert scores.submit(board_id, {"player_id": "bo", "score": score}, SERVER, None)
    _refused(
        "attempts_exhausted", scores.submit, board_id, {"player_id": "bo", "score": 9}, SERVER, None
    )
    # a replay of an attempt (same Idempotency-Key) is not another attempt
    replay = scores.submit(board_id, {"player_id": "cy", "score": 4}, SERVER, "k-1")
    assert scores.submit(board_id, {"player_id": "cy", "score": 4}, SERVER, "k-1").replayed
    assert replay.body["applied"] and index.client.hget(f"lb:{{{board_id}}}:attempts", "cy") == "1"


def test_the_end_archives_the_final_standings_and_says_tournament(index, database_url, board_id):
    clock = MovableClock(START + timedelta(hours=2))
    db = Database(database_url)
    _tournament(
        index,
        db,
        board_id,
        clock,
        max_attempts=5,
    )
    admin = BoardAdminService(db, index, clock)
    admin.put_board(
        board_id, {"rewards": {"top": 2, "tiers": [{"name": "winner", "ranks": [1, 1]}]}}, ADMIN
    )
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    for n, score in enumerate([30, 80, 55, 80, 10]):
        scores.submit(board_id, {"player_id": f"p{n}", "score": score}, SERVER, None)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    final = reads.entries(board_id, {"period": "custom", "limit": "100"})
    with pytest.raises(Conflict):  # a tournament ends at its ends_at
        admin.end_period(board_id, ADMIN)

    StandingsStore(db).write(sink.events)
    events = EventListSink()
    rollover = Rollover(db, index, clock, sink=events)
    assert rollover.run(board_ids={board_id}, due=True).archived == []  # still open
    clock.now = END + timedelta(seconds=30)
    report = rollover.run(board_ids={board_id}, due=True)
    assert report.archived == [f"{board_id}/2026-12-05T180000Z"]
    rows = _archive_rows(database_url, board_id, "2026-12-05T180000Z")
    assert [(r[2], r[3]) for r in rows] == [(e["rank"], e["player_id"]) for e in final["entries"]]
    # one period, its window, archived: nothing follows a tournament's end
    listed = reads.periods(board_id)["periods"]
    assert [(p["period"], p["status"], p["ends_at"]) for p in listed] == [
        ("2026-12-05T180000Z", "archived", "2026-12-07T18:00:00Z")
    ]
    (event,) = events.events
    data = event.envelope()["data"]
    assert data["reason"] == "tournament"
    ranked = [(e["rank"], e["player_id"]) for e in final["entries"]]
    assert (
        [(e["rank"], e["player_id"]) for e in data["top"]]
        == ranked[:2]
        == [
            (1, "p3"),
            (1, "p1"),
        ]
    )  # equal scores share the rank
    assert [p["player_id"] for p in data["tiers"][0]["players"]] == ["p3", "p1"]
    clock.now += timedelta(days=30)  # read forever, from the archive once the keys are gone
    rollover.run(board_ids={board_id})
    later = reads.entries(board_id, {"period": "2026-12-05T180000Z", "limit": "100"})
    assert later["entries"] == final["entries"]


def test_the_listing_shows_open_upcoming_and_ended_tournaments(index, database_url):
    import uuid

    clock = MovableClock(datetime(2026, 12, 6, tzinfo=UTC))
    db = Database(database_url)
    admin = BoardAdminService(db, index, clock)
    tag = uuid.uuid4().hex[:8]
    windows = {
        f"t-open-{tag}": ("2026-12-05T18:00:00Z", "2026-12-07T18:00:00Z"),
        f"t-soon-{tag}": ("2026-12-10T18:00:00Z", "2026-12-11T18:00:00Z"),
        f"t-past-{tag}": ("2026-11-01T18:00:00Z", "2026-11-02T18:00:00Z"),
    }
    for board, (starts, ends) in windows.items():
        admin.put_board(board, {"tournament": {"starts_at": starts, "ends_at": ends}}, ADMIN)
    reads = ReadService(index, clock)
    listed = [t for t in reads.tournaments({})["tournaments"] if t["board_id"].endswith(tag)]
    assert [(t["board_id"], t["status"]) for t in listed] == [
        (f"t-open-{tag}", "open"),
        (f"t-soon-{tag}", "upcoming"),
        (f"t-past-{tag}", "ended"),
    ]
    assert listed[0]["period"] == "2026-12-05T180000Z" and listed[0]["join_required"] is False
    # nobody played yet; no cap on attempts, so none counted
    assert [(t["participants"], t["attempts"]) for t in listed] == [(0, None)] * 3
    upcoming = reads.tournaments({"status": "upcoming"})["tournaments"]
    assert f"t-soon-{tag}" in {t["board_id"] for t in upcoming}
    assert all(t["status"] == "upcoming" for t in upcoming)
    with pytest.raises(BadRequest):
        reads.tournaments({"status": "soon"})


def test_the_rules_of_tournaments(index, database_url, board_id, clock):
    db = Database(database_url)
    admin = BoardAdminService(db, index, clock)
    window = {"starts_at": "2026-12-05T18:00:00Z", "ends_at": "2026-12-07T18:00:00Z"}
    with pytest.raises(Unprocessable):
        admin.put_board(
            board_id, {"tournament": {**window, "ends_at": "2026-12-05T18:00:00Z"}}, ADMIN
        )
    with pytest.raises(BadRequest):
        admin.put_board(board_id, {"tournament": {**window, "max_attempts": 0}}, ADMIN)
    with pytest.raises(BadRequest):
        admin.put_board(
            board_id, {"tournament": {**window, "starts_at": "2026-12-05 18:00"}}, ADMIN
        )
    # rules between fields, which no schema states: 422 (docs/API.md, "Errors")
    with pytest.raises(Unprocessable):  # a tournament keeps one period, its window
        admin.put_board(board_id, {"tournament": window, "periods": ["all-time", "custom"]}, ADMIN)
    with pytest.raises(Unprocessable):
        admin.put_board(board_id, {"tournament": window, "shards": 2}, ADMIN)
    board, _ = admin.put_board(board_id, {"tournament": window}, ADMIN)
    assert board["periods"] == ["custom"] and board["tournament"] == {
        **window,
        "join_required": False,
        "max_participants": None,
        "max_attempts": None,
        "recurrence": None,  # a one-shot tournament (recurring tournaments: their own file)
    }
    scores = ScoreService(index, ListSink(), clock)
    other = f"{board_id}-x"
    admin.put_board(other, {}, ADMIN)
    with pytest.raises(Conflict):  # not a tournament
        scores.join(other, {"player_id": "a"}, SERVER)


def test_join_names_an_unknown_body_field_as_every_route_does(index, database_url, board_id):
    """An unknown field on /join is 400 with the name in `fields`, not a complaint about
    player_id (issue 36: an outside client found it)."""
    _tournament(index, Database(database_url), board_id, MovableClock(START))
    scores = ScoreService(index, ListSink(), MovableClock(START))
    with pytest.raises(BadRequest) as caught:
        scores.join(board_id, {"player_id": "ada", "team": "x"}, SERVER)
    assert (caught.value.details["fields"], caught.value.details["field"]) == (["team"], "team")
