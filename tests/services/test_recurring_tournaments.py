"""Recurring tournaments (a window at each fire of a cron): sign-ups, caps and attempts counted
per window; between windows a submission is refused (`not_started`) and a sign-up is for the
next window; reads of `custom` show the open window, else the last one that started; the
rollover archives each played window (one `period.ended`, reason `tournament`) and removes
every window's sign-up and attempt keys once it is over; the listing, the board object and
the routes through the real handlers (their replies held to docs/openapi.json). The model-based
property test is test_recurring_tournaments_model.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import Conflict, NotFound, TournamentRefused, Unprocessable
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.live import board_channels
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
# 18:00 in Berlin for an hour: 17:00 UTC until the change of 29 March 2026, then 16:00 UTC
DAILY = {"cron": "0 18 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}
W1, W2, W3 = "2026-03-27T170000Z", "2026-03-28T170000Z", "2026-03-29T160000Z"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _refused(reason: str, call, *args) -> None:
    with pytest.raises(TournamentRefused) as caught:
        call(*args)
    assert (caught.value.status, caught.value.details["reason"]) == (409, reason)


class Play:
    def __init__(self, index, database_url, board_id, clock, **tournament) -> None:
        self.db = Database(database_url)
        self.admin = BoardAdminService(self.db, index, clock)
        body = {"mode": "best", "tournament": {"recurrence": DAILY, **tournament}}
        self.board, _ = self.admin.put_board(board_id, body, ADMIN)
        self.sink = ListSink()
        self.scores = ScoreService(index, self.sink, clock)
        self.board_id, self.clock, self.index = board_id, clock, index

    def submit(self, player: str, score: int):
        body = {"player_id": player, "score": score}
        return self.scores.submit(self.board_id, body, SERVER, None)

    def join(self, player: str) -> dict:
        return self.scores.join(self.board_id, {"player_id": player}, SERVER)

    def reads(self) -> ReadService:  # a new one: no calendar cached from an earlier instant
        return ReadService(self.index, self.clock, archive=lambda: ArchiveStore(self.db))

    def key(self, name: str) -> str:
        return f"lb:{{{self.board_id}}}:{name}"


def _listed(play: Play, board_id: str) -> dict:
    """The tournament as GET /tournaments lists it."""
    return next(t for t in play.reads().tournaments({})["tournaments"] if t["board_id"] == board_id)


def test_each_window_has_its_own_sign_ups_caps_and_attempts(index, database_url, board_id):
    clock = MovableClock(utc("2026-03-27T12:00:00"))  # the series starts with the board
    play = Play(index, database_url, board_id, clock, max_participants=2, max_attempts=2)
    _refused("not_started", play.submit, "ada", 1)
    assert play.join("ada")["period"] == W1  # before the first window: signs up for it
    with pytest.raises(NotFound):  # nothing to read before it starts
        play.reads().entries(board_id, {"period": "custom"})

    clock.now = utc("2026-03-27T17:00:00")
    assert play.submit("ada", 5).body["applied"]
    assert play.submit("bo", 7).body["applied"]
    _refused("full", play.submit, "cy", 9)
    assert play.submit("ada", 6).body["applied"]
    _refused("attempts_exhausted", play.submit, "ada", 8)
    assert play.index.client.smembers(play.key(f"joined:{W1}")) == {"ada", "bo"}
    shown = _listed(play, board_id)
    assert (shown["period"], shown["participants"], shown["attempts"]) == (W1, 2, 3)

    clock.now = utc("2026-03-27T18:00:00")  # between windows
    _refused("not_started", play.submit, "ada", 9)
    got = play.join("cy")  # for the next window, whose cap is its own
    assert (got["period"], got["joined"], got["participants"]) == (W2, True, 1)
    shown = _listed(play, board_id)
    assert (shown["period"], shown["participants"], shown["attempts"]) == (W2, 1, 0)  # the next
    final = play.reads().entries(board_id, {"period": "custom"})  # the last window's standings
    assert (final["period"], [(e["player_id"], e["score"]) for e in final["entries"]]) == (
        W1,
        [("bo", 7), ("ada", 6)],
    )

    clock.now = utc("2026-03-28T17:30:00")
    assert play.submit("cy", 3).body["standings"][0]["period"] == W2
    assert play.submit("ada", 4).body["applied"]  # a new window: new attempts, a new cap
    assert play.submit("ada", 5).body["applied"]
    _refused("attempts_exhausted", play.submit, "ada", 6)
    _refused("full", play.submit, "bo", 1)
    counted = play.index.client.hgetall(play.key(f"attempts:{W2}"))
    assert counted == {"cy": "1", "ada": "2", "~": "3"}  # '~': the window's total
    assert play.index.client.smembers(play.key("windows")) == {W1, W2}

    clock.now = utc("2026-03-29T16:00:00")  # after the change: 18:00 CEST, an hour long
    reads = play.reads()
    assert reads.entries(board_id, {"period": "custom"})["total"] == 0  # open, empty
    past = reads.entries(board_id, {"period": W1})  # a past window by its id
    assert [e["player_id"] for e in past["entries"]] == ["bo", "ada"]
    with pytest.raises(NotFound):  # an id no window starts at
        reads.entries(board_id, {"period": "2026-03-27T180000Z"})
    clock.now = utc("2026-03-29T16:59:59")
    assert play.submit("bo", 1).body["applied"]
    clock.now = utc("2026-03-29T17:00:00")
    _refused("not_started", play.submit, "bo", 2)

    # the live publisher's channel and a player's standings name the window the reads show
    channel = board_channels(play.board, utc("2026-03-29T16:30:00")).channels[0]
    assert channel.period_id == W3
    standing = play.reads().standings(board_id, "bo", {})["standings"]
    assert [(s["period"], s["score"]) for s in standing] == [(W3, 1)]


def test_the_rollover_archives_each_window_and_leaves_no_keys(index, database_url, board_id):
    clock = MovableClock(utc("2026-03-27T16:30:00"))
    series = {"starts_at": "2026-03-27T00:00:00Z", "ends_at": "2026-03-30T00:00:00Z"}
    play = Play(index, database_url, board_id, clock, max_attempts=3, **series)
    play.join("early")  # W1's sign-up, before it opens
    clock.now = utc("2026-03-27T17:10:00")
    for player, score in [("ada", 10), ("bo", 30), ("cy", 20)]:
        play.submit(player, score)
    clock.now = utc("2026-03-28T12:00:00")
    play.join("lonely")  # W2: signed up for, never played
    clock.now = utc("2026-03-29T16:20:00")  # W3, after the change
    play.submit("ada", 50)
    play.submit("ada", 60)
    StandingsStore(play.db).write(play.sink.events)

    events = EventListSink()
    rollover = Rollover(play.db, play.index, clock, sink=events)
    assert rollover.run(board_ids={board_id}, due=True).archived == [f"{board_id}/{W1}"]
    clock.now = utc("2026-03-29T17:00:30")  # W3 is over, and with it the series
    assert rollover.run(board_ids={board_id}, due=True).archived == [f"{board_id}/{W3}"]
    assert [e.envelope()["data"]["period"]["id"] for e in events.events] == [W1, W3]
    assert {e.envelope()["data"]["reason"] for e in events.events} == {"tournament"}
    ended = events.events[1].envelope()["data"]["period"]
    assert (ended["starts_at"], ended["ends_at"]) == (
        "2026-03-29T16:00:00Z",
        "2026-03-29T17:00:00Z",
    )
    assert [(r[3], r[4]) for r in _archive_rows(database_url, board_id, W1)] == [
        ("bo", 30),
        ("cy", 20),
        ("ada", 10),
    ]
    # every window's sign-ups and attempts are gone, the unplayed one's too
    held = [
        k for k in play.index.client.scan_iter(play.key("*")) if "joined" in k or "attempt" in k
    ]
    assert held == [] and play.index.client.exists(play.key("windows")) == 0

    # after the series: refused as ended; the last window read for good, from its archive
    _refused("ended", play.submit, "ada", 1)
    _refused("ended", play.join, "ada")
    clock.now += timedelta(days=30)
    rollover.run(board_ids={board_id})  # keys freed after the retention
    assert board_id not in play.index.rollover_due(utc("2030-01-01T00:00:00"))  # nothing left
    final = play.reads().entries(board_id, {"period": "custom"})
    assert (final["period"], final["entries"][0]["score"]) == (W3, 60)
    listed = play.reads().periods(board_id)["periods"]
    assert [(p["period"], p["status"]) for p in listed] == [(W3, "archived"), (W1, "archived")]


def test_the_listing_and_the_board_show_the_window_and_the_series(index, database_url):
    clock = MovableClock(utc("2026-06-01T12:00:00"))
    admin = BoardAdminService(Database(database_url), index, clock)
    tag = uuid.uuid4().hex[:8]
    recurrence = {"cron": "0 20 * * *", "timezone": "UTC", "duration_seconds": 1800}
    boards = {
        f"r-now-{tag}": {"recurrence": {**recurrence, "cron": "0 12 * * *"}},
        f"r-later-{tag}": {"recurrence": recurrence, "ends_at": "2026-06-03T00:00:00Z"},
        f"r-over-{tag}": {
            "recurrence": recurrence,
            "starts_at": "2026-05-01T00:00:00Z",
            "ends_at": "2026-05-03T00:00:00Z",
        },
        f"once-{tag}": {"starts_at": "2026-06-01T00:00:00Z", "ends_at": "2026-06-02T00:00:00Z"},
    }
    for board, tournament in boards.items():
        admin.put_board(board, {"tournament": tournament}, ADMIN)
    listed = {
        t["board_id"]: t
        for t in ReadService(index, clock).tournaments({})["tournaments"]
        if t["board_id"].endswith(tag)
    }
    shown = {b: (t["status"], t["period"], t["starts_at"], t["ends_at"]) for b, t in listed.items()}
    assert shown == {
        f"r-now-{tag}": (
            "open",
            "2026-06-01T120000Z",
            "2026-06-01T12:00:00Z",
            "2026-06-01T12:30:00Z",
        ),
        f"r-later-{tag}": (
            "upcoming",
            "2026-06-01T200000Z",
            "2026-06-01T20:00:00Z",
            "2026-06-01T20:30:00Z",
        ),
        f"r-over-{tag}": (
            "ended",
            "2026-05-02T200000Z",
            "2026-05-02T20:00:00Z",
            "2026-05-02T20:30:00Z",
        ),
        f"once-{tag}": (
            "open",
            "2026-06-01T000000Z",
            "2026-06-01T00:00:00Z",
            "2026-06-02T00:00:00Z",
        ),
    }
    series = {b: (t["series_starts_at"], t["series_ends_at"]) for b, t in listed.items()}
    assert series == {
        f"r-now-{tag}": ("2026-06-01T12:00:00Z", None),  # from the board's creation, forever
        f"r-later-{tag}": ("2026-06-01T12:00:00Z", "2026-06-03T00:00:00Z"),
        f"r-over-{tag}": ("2026-05-01T00:00:00Z", "2026-05-03T00:00:00Z"),
        f"once-{tag}": ("2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z"),
    }
    assert listed[f"r-later-{tag}"]["recurrence"] == recurrence
    assert listed[f"once-{tag}"]["recurrence"] is None
    board = ReadService(index, clock).get_board(f"r-later-{tag}")
    assert board["tournament"]["recurrence"] == recurrence
    assert (board["tournament"]["starts_at"], board["tournament"]["ends_at"]) == (
        None,
        "2026-06-03T00:00:00Z",
    )
    with pytest.raises(Conflict):  # a recurring tournament's windows end by its rules only
        admin.end_period(f"r-now-{tag}", ADMIN)
    with pytest.raises(Unprocessable):
        admin.put_board(f"r-now-{tag}", {"shards": 2}, ADMIN)


def test_the_routes_answer_as_the_document_says(api, admin_token, server_token, board_id):
    """Through the real handlers (the system clock): every reply is checked against
    docs/openapi.json by the `api` fixture. A window every minute, each a minute long: one
    is always open."""
    tournament = {
        "recurrence": {"cron": "* * * * *", "timezone": "UTC", "duration_seconds": 60},
        "max_participants": 10,
    }
    put = api.call("PUT", f"/boards/{board_id}", {"tournament": tournament}, token=admin_token)
    assert put.status == 201, put.body
    assert put.json()["tournament"]["recurrence"] == tournament["recurrence"]
    joined = api.call("POST", f"/boards/{board_id}/join", {"player_id": "ada"}, token=server_token)
    assert joined.status == 200 and joined.json()["period"].endswith("00Z"), joined.body
    listed = api.call("GET", "/tournaments").json()["tournaments"]
    (mine,) = [t for t in listed if t["board_id"] == board_id]
    assert mine["recurrence"] == tournament["recurrence"] and mine["series_ends_at"] is None
    bad = {"recurrence": {**tournament["recurrence"], "duration_seconds": 30}}
    refused = api.call("PUT", f"/boards/{board_id}-x", {"tournament": bad}, token=admin_token)
    assert (refused.status, refused.json()["field"]) == (
        400,
        "tournament.recurrence.duration_seconds",
    )
