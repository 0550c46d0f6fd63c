"""Team boards (issue 23) beyond the reference model's checks of the serving index
(tests/services/test_reference_model_teams.py): the record keeps each player's contribution to
each team, so degraded reads, a rebuild, the rollover's archive and an admin delete all give
the same team rankings and members as the index; and the board's rules around teams."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack.consistency import assert_redis_equals_postgres
from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import BadRequest, Conflict, NotFound, Unprocessable
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rebuild import Rebuilder
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.postgres.record_reads import PostgresReadModel
from tests.support.boards import ListSink, MovableClock

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
PLAYERS = [f"p{n}" for n in range(12)]
TEAMS = ["red", "blue", "gold"]


def _board(index, db, board_id, clock, **rules) -> BoardAdminService:
    admin = BoardAdminService(db, index, clock)
    rules = {"regions": ["EU"], "periods": ["all-time", "weekly"], **rules}
    admin.put_board(board_id, rules, ADMIN)
    return admin


def _play(scores, board_id, seed, count) -> None:
    """Integer scores: a team's sum is then exact in any order (docs/API.md, "Team boards")."""
    rng = random.Random(seed)
    for _ in range(count):
        body: dict[str, Any] = {
            "player_id": rng.choice(PLAYERS),
            "score": rng.randrange(-3, 12),
            "region": rng.choice(["EU", None]),
        }
        team = rng.choice([*TEAMS, None])
        if team is not None:
            body["team_id"] = team
        scores.submit(board_id, body, SERVER, None)


def _read(reads, name, *args, caller=None):
    try:
        got = getattr(reads, name)(*args, caller=caller)
    except NotFound:
        return "404"
    got.pop("degraded", None)
    return got


def _team_views(reads, board_id, periods, viewers=(None,)) -> dict:
    """The team rankings and every team's members, on every read route."""
    seen: dict = {}
    for viewer in viewers:
        caller, extra = (None, {}) if viewer is None else (SERVER, {"viewer": viewer})
        for period in periods:
            for region in (None, "EU"):
                base = {"period": period} | ({"region": region} if region else {}) | extra
                for selector in [{"by": "team"}, *({"team": t} for t in TEAMS)]:
                    q = base | selector
                    key = (viewer, period, region, *selector.values())
                    seen[key] = _read(
                        reads, "entries", board_id, q | {"limit": "100"}, caller=caller
                    )
                    window = q | {"around_rank": "2", "limit": "2"}
                    seen[(*key, "rank")] = _read(reads, "entries", board_id, window, caller=caller)
                    ids = ",".join(TEAMS if "by" in selector else PLAYERS)
                    seen[(*key, "ids")] = _read(
                        reads, "players", board_id, q | {"ids": ids}, caller=caller
                    )
                    for who in TEAMS if "by" in selector else PLAYERS:
                        seen[(*key, who)] = _read(reads, "player", board_id, who, q, caller=caller)
                        seen[(*key, who, "around")] = _read(
                            reads, "around", board_id, who, q | {"count": "3"}, caller=caller
                        )
    return seen


@pytest.mark.parametrize("teams", ["sum", "best"])
def test_degraded_reads_and_a_rebuild_give_the_teams_the_index_gives(
    index, database_url, board_id, clock, teams
):
    db = Database(database_url)
    admin = _board(index, db, board_id, clock, teams=teams, mode="increment")
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    _play(scores, board_id, seed=1, count=80)
    scores.submit(board_id, {"player_id": "p3", "score": 9, "team_id": "red"}, SERVER, None)
    admin.hide_player(board_id, "p3", {}, ADMIN)  # a hidden member counts for nothing
    _play(scores, board_id, seed=2, count=20)
    admin.delete_player(board_id, "p5", ADMIN)  # nor does a deleted one
    StandingsStore(db).write(sink.events)
    assert_redis_equals_postgres(index.client, database_url, board_id)  # contributions too

    reads = ReadService(index, clock)
    periods = ["all-time", "weekly"]
    normal = _team_views(reads, board_id, periods, viewers=(None, "p3"))
    assert normal[(None, "all-time", None, "team")]["total"] == 3
    members = {
        e["player_id"] for t in TEAMS for e in normal[(None, "all-time", None, t)]["entries"]
    }
    assert members and not members & {"p3", "p5"}
    own = normal[("p3", "all-time", None, "red")]["entries"]  # in their own view, p3 is there
    assert "p3" in {e["player_id"] for e in own}

    degraded_reads = ReadService(index, clock, fallback=lambda: PostgresReadModel(db))
    degraded_reads._bypass_until = float("inf")  # as if Redis had just failed
    assert _team_views(degraded_reads, board_id, periods, viewers=(None, "p3")) == normal

    Rebuilder(db, index).rebuild(board_id)
    assert _team_views(reads, board_id, periods, viewers=(None, "p3")) == normal
    assert_redis_equals_postgres(index.client, database_url, board_id)
    admin.unhide_player(board_id, "p3", ADMIN)  # the rebuild kept the contributions apart
    shown = _team_views(reads, board_id, ["all-time"])
    assert "p3" in {
        e["player_id"] for t in TEAMS for e in shown[(None, "all-time", None, t)]["entries"]
    }


def test_the_archive_keeps_a_weeks_team_rankings(index, database_url, board_id):
    clock = MovableClock(datetime(2026, 11, 22, 20, 0, tzinfo=UTC))  # Sunday of 2026-W47
    db = Database(database_url)
    _board(index, db, board_id, clock, teams="sum")
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    _play(scores, board_id, seed=3, count=60)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    week = _team_views(reads, board_id, ["2026-W47"])

    clock.now = datetime(2026, 11, 23, 0, 5, tzinfo=UTC)
    StandingsStore(db).write(sink.events)
    rollover = Rollover(db, index, clock, chunk_size=2)
    assert rollover.run({"weekly"}, board_ids={board_id}).archived == [f"{board_id}/2026-W47"]
    assert _team_views(reads, board_id, ["2026-W47"]) == week
    clock.now += timedelta(days=8)  # past the retention: the serving keys go
    rollover.run(board_ids={board_id})
    prefix = f"lb:{{{board_id}}}:"
    assert not list(index.client.scan_iter(f"{prefix}zt:2026-W47*"))
    assert not list(index.client.scan_iter(f"{prefix}tm:2026-W47*"))
    assert _team_views(reads, board_id, ["2026-W47"]) == week
    # each team's past results, as it finished
    ranking = week[(None, "2026-W47", None, "team")]["entries"]
    for team in ranking:
        history = reads.history(board_id, team["team_id"], {"by": "team"})
        assert (history["by"], history["team_id"]) == ("team", team["team_id"])
        (result,) = history["results"]
        assert (result["period"], result["rank"], result["score"], result["total"]) == (
            "2026-W47",
            team["rank"],
            team["score"],
            len(ranking),
        )
    assert reads.history(board_id, "nobody", {"by": "team"})["results"] == []


def test_the_rules_of_team_boards(index, database_url, board_id, clock):
    db = Database(database_url)
    admin = _board(index, db, board_id, clock)
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    with pytest.raises(Unprocessable):  # this board keeps no teams
        scores.submit(board_id, {"player_id": "a", "score": 1, "team_id": "red"}, SERVER, None)
    with pytest.raises(NotFound):
        reads.entries(board_id, {"by": "team"})
    with pytest.raises(BadRequest):
        admin.put_board(board_id, {"teams": "most"}, ADMIN)
    with pytest.raises(Unprocessable):  # a rule between fields (docs/API.md, "Errors")
        admin.put_board(board_id, {"teams": "sum", "shards": 2}, ADMIN)
    admin.put_board(board_id, {"teams": "sum"}, ADMIN)  # no entries yet: may change
    scores.submit(board_id, {"player_id": "a", "score": 4, "team_id": "red"}, SERVER, None)
    scores.submit(board_id, {"player_id": "b", "score": 3, "team_id": "red"}, SERVER, None)
    scores.submit(board_id, {"player_id": "c", "score": 5, "team_id": "blue"}, SERVER, None)
    scores.submit(board_id, {"player_id": "a", "score": 2}, SERVER, None)  # names no team
    with pytest.raises(Conflict):
        admin.put_board(board_id, {"teams": "best"}, ADMIN)
    with pytest.raises(BadRequest):
        scores.submit(board_id, {"player_id": "a", "score": 1, "team_id": "a b"}, SERVER, None)
    page = reads.entries(board_id, {"by": "team"})
    assert page["by"] == "team"
    assert [(e["rank"], e["team_id"], e["score"]) for e in page["entries"]] == [
        (1, "red", 7),
        (2, "blue", 5),
    ]
    red = reads.entries(board_id, {"team": "red"})
    assert red["team_id"] == "red"
    assert [(e["player_id"], e["score"]) for e in red["entries"]] == [("a", 4), ("b", 3)]
    assert reads.player(board_id, "blue", {"by": "team"})["rank"] == 2
    assert reads.around(board_id, "red", {"by": "team"})["team"]["team_id"] == "red"
    with pytest.raises(Unprocessable):  # each well-formed, not both: 422
        reads.entries(board_id, {"by": "team", "team": "red"})
    with pytest.raises(BadRequest):  # a malformed one is still the 400
        reads.entries(board_id, {"by": "team", "team": "a b"})
    with pytest.raises(BadRequest):
        reads.entries(board_id, {"by": "clan"})
    with pytest.raises(NotFound):
        reads.player(board_id, "green", {"by": "team"})
