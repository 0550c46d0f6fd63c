"""Hidden players (issue 23) beyond the reference model's checks of the serving index
(tests/services/test_reference_model_hidden.py): the admin routes' rules, and the hiding kept
by everything that reads or rebuilds from PostgreSQL: degraded reads, a rebuild, the rollover's
archive and history, and the relay, which must not send the outbox entries a hiding leaves."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack.consistency import assert_redis_equals_postgres
from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import BadRequest, Forbidden, NotFound, Unauthorized
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rebuild import Rebuilder
from leaderboard.services.relay import OutboxRelay
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.postgres.record_reads import PostgresReadModel
from tests.support.boards import ListSink, MovableClock

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
PLAYERS = [f"p{n}" for n in range(10)]
TIEBREAKERS = [{"name": "time_ms", "sort": "asc"}]


def _board(index, db, board_id, clock, **rules) -> BoardAdminService:
    admin = BoardAdminService(db, index, clock)
    rules = {"regions": ["EU"], "periods": ["all-time", "daily", "weekly"], **rules}
    admin.put_board(board_id, rules, ADMIN)
    return admin


def _play(scores, board_id, seed, count, tiebreakers=False) -> None:
    rng = random.Random(seed)
    for i in range(count):
        body: dict[str, Any] = {
            "player_id": rng.choice(PLAYERS),
            "score": rng.randrange(1, 9),
            "region": rng.choice(["EU", None]),
            "metadata": {"i": i},
        }
        if tiebreakers:
            body["tiebreakers"] = {"time_ms": rng.randrange(3)}
        scores.submit(board_id, body, SERVER, None)


def _views(
    reads, board_id, hidden, periods=("all-time", "daily", "weekly"), standings=True
) -> dict:
    """Every read a client could make of `periods`, as nobody in particular, as each hidden
    player (a server reading for them) and as a visible player; and every player's standings
    on the current periods."""
    viewers = [None, *sorted(hidden), next(p for p in PLAYERS if p not in hidden)]
    seen: dict = {}
    for viewer in viewers:
        caller, extra = (None, {}) if viewer is None else (SERVER, {"viewer": viewer})

        def read(name, *args, caller=caller):
            try:
                got = getattr(reads, name)(board_id, *args, caller=caller)
            except NotFound:
                return "404"
            got.pop("degraded", None)
            return got

        for period in periods:
            for region in (None, "EU"):
                query = {"period": period} | ({"region": region} if region else {}) | extra
                key = (viewer, period, region)
                seen[(*key, "page")] = read("entries", query | {"limit": "100"})
                seen[(*key, "rank")] = read("entries", query | {"around_rank": "4", "limit": "3"})
                seen[(*key, "ids")] = read("players", query | {"ids": ",".join(PLAYERS)})
                for player in PLAYERS:
                    seen[(*key, player)] = read("player", player, query)
                    seen[(*key, player, "around")] = read("around", player, query | {"count": "3"})
        for player in PLAYERS if standings else ():
            seen[(viewer, player, "standings")] = read("standings", player, extra)
    return seen


def _hidden_flags(seen: dict) -> set:
    """The (viewer, player) pairs whose entries a read marked hidden."""
    flagged = set()
    for key, value in seen.items():
        if not isinstance(value, dict):
            continue
        for entry in [value, value.get("player") or {}, *value.get("entries", [])]:
            if entry.get("hidden"):
                flagged.add((key[0], entry["player_id"]))
        for standing in value.get("standings", []):
            if standing.get("hidden"):
                flagged.add((key[0], value["player_id"]))
    return flagged


@pytest.mark.parametrize("ties", ["shared", "first"])
def test_degraded_reads_leave_hidden_players_out_exactly_as_the_index_does(
    index, database_url, board_id, clock, ties
):
    """While Redis cannot answer, PostgreSQL serves every view: hidden players left out for
    everyone but themselves, each hidden reader's own entry where the index puts it."""
    db = Database(database_url)
    admin = _board(index, db, board_id, clock, ties=ties, mode="best", tiebreakers=TIEBREAKERS)
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    _play(scores, board_id, seed=3, count=60, tiebreakers=True)
    admin.hide_player(board_id, "p1", {}, ADMIN)
    admin.hide_player(board_id, "p4", {"reason": "aimbot"}, ADMIN)
    _play(scores, board_id, seed=4, count=20, tiebreakers=True)  # they keep submitting
    StandingsStore(db).write(sink.events)

    normal = _views(ReadService(index, clock), board_id, {"p1", "p4"})
    degraded_reads = ReadService(index, clock, fallback=lambda: PostgresReadModel(db))
    degraded_reads._bypass_until = float("inf")  # as if Redis had just failed
    degraded = _views(degraded_reads, board_id, {"p1", "p4"})
    assert degraded == normal
    assert _hidden_flags(normal) == {("p1", "p1"), ("p4", "p4")}
    public = normal[(None, "all-time", None, "page")]
    assert {e["player_id"] for e in public["entries"]} <= set(PLAYERS) - {"p1", "p4"}


def test_a_rebuild_from_the_record_hides_the_same_players(index, database_url, board_id, clock):
    db = Database(database_url)
    admin = _board(index, db, board_id, clock, ties="first", max_entries=7)
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    _play(scores, board_id, seed=5, count=50)
    admin.hide_player(board_id, "p2", {}, ADMIN)
    admin.hide_player(board_id, "p9", {}, ADMIN)  # perhaps without entries: still hidden
    _play(scores, board_id, seed=6, count=30)
    StandingsStore(db).write(sink.events)
    reads = ReadService(index, clock)
    before = _views(reads, board_id, {"p2", "p9"})

    assert_redis_equals_postgres(index.client, database_url, board_id)  # shadows included
    Rebuilder(db, index).rebuild(board_id)
    assert _views(reads, board_id, {"p2", "p9"}) == before
    assert_redis_equals_postgres(index.client, database_url, board_id)
    assert index.hidden_players(board_id) == ["p2", "p9"]
    # and they still submit hidden, and come back when shown again
    scores.submit(board_id, {"player_id": "p2", "score": 99}, SERVER, None)
    assert reads.player(board_id, "p2", {}, caller=Caller("p2", frozenset()))["rank"] == 1
    with pytest.raises(NotFound):
        reads.player(board_id, "p2", {})
    admin.unhide_player(board_id, "p2", ADMIN)
    assert reads.player(board_id, "p2", {})["rank"] == 1


def test_the_archive_keeps_hidden_players_apart_and_shows_them_their_own_results(
    index, database_url, board_id
):
    """A week closes with hidden players: public reads of the archive (and the archived
    totals, and others' history) leave them out; their own reads show their entry where it
    stood, before and after the week's serving keys are freed."""
    clock = MovableClock(datetime(2026, 11, 22, 20, 0, tzinfo=UTC))  # Sunday of 2026-W47
    db = Database(database_url)
    admin = _board(index, db, board_id, clock, periods=["all-time", "weekly"])
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    _play(scores, board_id, seed=7, count=60)
    admin.hide_player(board_id, "p3", {}, ADMIN)
    admin.hide_player(board_id, "p5", {}, ADMIN)
    _play(scores, board_id, seed=8, count=20)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    week = _views(reads, board_id, {"p3", "p5"}, periods=["2026-W47"], standings=False)
    assert _hidden_flags(week) == {("p3", "p3"), ("p5", "p5")}

    clock.now = datetime(2026, 11, 23, 0, 5, tzinfo=UTC)
    StandingsStore(db).write(sink.events)
    report = Rollover(db, index, clock, chunk_size=4).run({"weekly"}, board_ids={board_id})
    assert report.archived == [f"{board_id}/2026-W47"] and report.differences == 0
    assert _views(reads, board_id, {"p3", "p5"}, periods=["2026-W47"], standings=False) == week
    clock.now += timedelta(days=8)  # past the retention: served from the archive alone
    Rollover(db, index, clock).run(board_ids={board_id})
    assert _views(reads, board_id, {"p3", "p5"}, periods=["2026-W47"], standings=False) == week

    mine = week[("p3", "2026-W47", None, "p3")]
    own = reads.history(board_id, "p3", {}, caller=Caller("p3", frozenset()))["results"]
    assert [(r["rank"], r["total"]) for r in own] == [(mine["rank"], mine["total"])]
    assert "hidden" not in own[0]  # a hidden player is never told
    as_server = reads.history(board_id, "p3", {}, caller=SERVER)["results"]
    assert as_server[0]["hidden"] is True
    assert reads.history(board_id, "p3", {})["results"] == []  # everyone else: nothing
    public_total = week[(None, "2026-W47", None, "page")]["total"]
    assert mine["total"] == public_total + 1
    periods = {p["period"]: p for p in reads.periods(board_id)["periods"]}
    assert periods["2026-W47"]["entries"] == public_total


def test_hiding_and_showing_again_through_the_admin_routes(index, database_url, board_id, clock):
    db = Database(database_url)
    admin = _board(index, db, board_id, clock)
    scores = ScoreService(index, ListSink(), clock)
    for n, player in enumerate(["a", "b", "c"]):
        scores.submit(board_id, {"player_id": player, "score": 10 * (n + 1)}, SERVER, None)
    reads = ReadService(index, clock)

    body, created = admin.hide_player(board_id, "c", {"reason": "aimbot"}, ADMIN)
    assert created and body["hidden"] is True and body["reason"] == "aimbot"
    assert body["hidden_at"].endswith("Z")
    again, created = admin.hide_player(board_id, "c", {}, ADMIN)
    assert not created and again["reason"] == "aimbot" and again["hidden_at"] == body["hidden_at"]
    assert [e["player_id"] for e in reads.entries(board_id, {})["entries"]] == ["b", "a"]
    assert reads.player(board_id, "b", {})["rank"] == 1  # the ranks close up
    assert reads.entries(board_id, {})["total"] == 2
    admin.hide_player(board_id, "zed", {}, ADMIN)  # no entry yet: hidden from the first one
    scores.submit(board_id, {"player_id": "zed", "score": 5}, SERVER, None)
    listed = admin.hidden_players(board_id, {"limit": "1"}, ADMIN)
    assert [p["player_id"] for p in listed["players"]] == ["c"] and listed["next"] == "c"
    rest = admin.hidden_players(board_id, {"after": "c"}, ADMIN)
    assert [p["player_id"] for p in rest["players"]] == ["zed"] and rest["next"] is None

    # the hidden player's own submission answers the ranks they would hold
    standing = scores.submit(board_id, {"player_id": "c", "score": 31}, SERVER, None).body
    assert standing["standings"][0]["rank"] == 1
    assert reads.entries(board_id, {})["total"] == 2

    # who may read as whom
    as_c = Caller("c", frozenset())
    assert reads.entries(board_id, {}, caller=as_c)["entries"][0]["player_id"] == "c"
    with pytest.raises(Forbidden):
        reads.entries(board_id, {"viewer": "c"}, caller=Caller("b", frozenset()))
    with pytest.raises(Unauthorized):
        reads.entries(board_id, {"viewer": "c"})
    with pytest.raises(BadRequest):
        reads.entries(board_id, {"viewer": "c d"}, caller=SERVER)
    assert reads.player(board_id, "c", {}, caller=SERVER)["hidden"] is True

    admin.unhide_player(board_id, "c", ADMIN)
    assert [e["player_id"] for e in reads.entries(board_id, {})["entries"]] == ["c", "b", "a"]
    with pytest.raises(NotFound):
        admin.unhide_player(board_id, "c", ADMIN)
    with pytest.raises(NotFound):
        admin.hide_player("no-such-board", "c", {}, ADMIN)
    with pytest.raises(BadRequest):
        admin.hide_player(board_id, "c", {"reason": "x" * 501}, ADMIN)
    with pytest.raises(BadRequest):
        admin.hide_player(board_id, "c", {"why": "x"}, ADMIN)
    with pytest.raises(Forbidden):
        admin.hide_player(board_id, "c", {}, SERVER)

    # deleting a hidden player's entries keeps the hiding
    admin.delete_player(board_id, "zed", ADMIN)
    scores.submit(board_id, {"player_id": "zed", "score": 50}, SERVER, None)
    assert reads.entries(board_id, {})["entries"][0]["player_id"] == "c"
    assert "zed" in index.hidden_players(board_id)


def test_the_relay_trims_a_hidings_outbox_entries_without_sending_them(
    index, database_url, board_id, clock
):
    """Hiding leaves an outbox entry for the live publisher; the record keeps the hiding in
    its own table, so the relay must not send it on as a score event."""
    db = Database(database_url)
    admin = _board(index, db, board_id, clock)
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    scores.submit(board_id, {"player_id": "a", "score": 3}, SERVER, None)
    StandingsStore(db).write(sink.events)
    admin.hide_player(board_id, "a", {}, ADMIN)
    admin.unhide_player(board_id, "a", ADMIN)
    relayed = ListSink()
    report = OutboxRelay(index, StandingsStore(db), relayed).run([board_id], min_age_ms=0)
    assert relayed.events == [] and report.already_stored == 1
    assert index.client.xlen(f"lb:{{{board_id}}}:outbox") == 0
