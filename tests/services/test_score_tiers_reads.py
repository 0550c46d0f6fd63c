"""Score tiers where the model test does not reach (docs/API.md, "Score tiers"): team rankings
and one team's members (each ranking's own total), an archived period served from the archive
once its serving keys were freed (the archive's total; tiers changed since apply, as a view),
a player's history, the record while Redis cannot answer, and a board without tiers, whose
reads carry no `tier` at all. Real Valkey and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from leaderboard.domain.auth import Caller
from leaderboard.domain.periods import current_period
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.postgres.record_reads import PostgresReadModel
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.keys import CATALOG_KEY
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, MovableClock, publish

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
PERCENT = {
    "by": "percentile",
    "tiers": [
        {"name": "top20", "top_percent": 20},
        {"name": "top50", "top_percent": 50},
        {"name": "rest"},
    ],
}
MEDALS = {"by": "score", "tiers": [{"name": "gold", "score": 50}, {"name": "silver", "score": 30}]}
# six players in four teams: red 90 (p1 + p4), blue 70, gold 40, green 10
WRITES = [
    ("p1", 60, "red"),
    ("p2", 50, "blue"),
    ("p3", 40, "gold"),
    ("p4", 30, "red"),
    ("p5", 20, "blue"),
    ("p6", 10, "green"),
]
# 6 players: top20 ends at ceil(1.2) = rank 2, top50 at ceil(3) = rank 3
PLAYERS_BY_PERCENT = [
    ("p1", 1, "top20"),
    ("p2", 2, "top20"),
    ("p3", 3, "top50"),
    ("p4", 4, "rest"),
    ("p5", 5, "rest"),
    ("p6", 6, "rest"),
]
# 4 teams: top20 ends at rank 1, top50 at rank 2
TEAMS_BY_PERCENT = [
    ("red", 1, "top20"),
    ("blue", 2, "top50"),
    ("gold", 3, "rest"),
    ("green", 4, "rest"),
]


def _tiers(entries: list[dict], key: str = "player_id") -> list[tuple]:
    return [(e[key], e["rank"], e["tier"]) for e in entries]


def _board(index: RedisIndex, db: Database, board_id: str, clock: MovableClock) -> ListSink:
    admin = BoardAdminService(db, index, clock)
    admin.put_board(
        board_id,
        {"periods": ["all-time", "daily"], "teams": "sum", "score_tiers": PERCENT},
        ADMIN,
    )
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    for player, score, team in WRITES:
        scores.submit(
            board_id, {"player_id": player, "score": score, "team_id": team}, SERVER, None
        )
    StandingsStore(db).write(sink.events)
    return sink


def test_team_rankings_members_and_the_record_name_tiers_by_their_own_totals(
    index: RedisIndex, database_url: str, board_id: str
) -> None:
    db = Database(database_url)
    clock = MovableClock(datetime(2026, 11, 24, 12, 0, tzinfo=UTC))
    _board(index, db, board_id, clock)
    reads = ReadService(index, clock)
    teams = {"by": "team"}
    assert _tiers(reads.entries(board_id, teams)["entries"], "team_id") == TEAMS_BY_PERCENT
    blue = reads.player(board_id, "blue", teams)
    assert (blue["rank"], blue["total"], blue["tier"]) == (2, 4, "top50")
    around = reads.around(board_id, "gold", teams | {"count": "3"})
    assert _tiers([around["team"]], "team_id") == [("gold", 3, "rest")]
    assert _tiers(around["entries"], "team_id") == TEAMS_BY_PERCENT[1:]
    chosen = reads.players(board_id, teams | {"ids": "green,red"})
    assert _tiers(chosen["entries"], "team_id") == [TEAMS_BY_PERCENT[0], TEAMS_BY_PERCENT[3]]
    # red's members: 2 of them, so top20 and top50 both end at rank 1
    members = reads.entries(board_id, {"team": "red"})
    assert _tiers(members["entries"]) == [("p1", 1, "top20"), ("p4", 2, "rest")]
    assert reads.player(board_id, "p4", {"team": "red"})["tier"] == "rest"

    # While Redis cannot answer, the record names the same tiers
    dead = RedisIndex(connect("redis://127.0.0.1:9", timeout=0.2))
    degraded = ReadService(dead, clock, fallback=lambda: PostgresReadModel(db))
    page = degraded.entries(board_id, {})
    assert page["degraded"] is True and _tiers(page["entries"]) == PLAYERS_BY_PERCENT
    assert degraded.player(board_id, "p3", {})["tier"] == "top50"
    assert _tiers(degraded.players(board_id, {"ids": "p6,p2"})["entries"]) == [
        PLAYERS_BY_PERCENT[1],
        PLAYERS_BY_PERCENT[5],
    ]
    standings = degraded.standings(board_id, "p2", {})["standings"]
    assert [(s["kind"], s["tier"]) for s in standings] == [
        ("all-time", "top20"),
        ("daily", "top20"),
    ]
    assert _tiers(degraded.entries(board_id, teams)["entries"], "team_id") == TEAMS_BY_PERCENT


def test_archived_periods_and_history_name_tiers_by_the_archives_total_and_todays_tiers(
    index: RedisIndex, database_url: str, board_id: str
) -> None:
    db = Database(database_url)
    clock = MovableClock(datetime(2026, 11, 24, 12, 0, tzinfo=UTC))
    sink = _board(index, db, board_id, clock)
    day = current_period("daily", clock.now).id
    clock.now = datetime(2026, 11, 25, 0, 5, tzinfo=UTC)
    sink.events.clear()
    # the next day: one more player on all-time, none yet on the new day
    ScoreService(index, sink, clock).submit(board_id, {"player_id": "p7", "score": 5}, SERVER, None)
    StandingsStore(db).write(sink.events)
    rollover = Rollover(db, index, clock, retention=timedelta(0))
    for _ in range(2):  # archived, then its keys freed
        report = rollover.run(board_ids={board_id})
        assert report.complete, report
    assert day not in index.period_sets(board_id)[1], "its serving keys were freed"

    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    archived = {"period": day}
    page = reads.entries(board_id, archived)
    assert page["total"] == 6 and _tiers(page["entries"]) == PLAYERS_BY_PERCENT
    assert reads.player(board_id, "p3", archived)["tier"] == "top50"
    assert _tiers(reads.players(board_id, archived | {"ids": "p2,p5"})["entries"]) == [
        PLAYERS_BY_PERCENT[1],
        PLAYERS_BY_PERCENT[4],
    ]
    teams = archived | {"by": "team"}
    assert _tiers(reads.entries(board_id, teams)["entries"], "team_id") == TEAMS_BY_PERCENT
    (result,) = reads.history(board_id, "p3", {"kind": "daily"})["results"]
    assert (result["rank"], result["total"], result["tier"]) == (3, 6, "top50")
    # all-time now counts 7: top20 still ends at ceil(1.4) = rank 2, top50 at ceil(3.5) = 4
    assert reads.player(board_id, "p4", {})["tier"] == "top50"

    # the tiers change (a view: with entries, and over archived periods too)
    BoardAdminService(db, index, clock).put_board(board_id, {"score_tiers": MEDALS}, ADMIN)
    medals = ["gold", "gold", "silver", "silver", None, None]
    page = reads.entries(board_id, archived)  # the archived window is cached: tiers are not
    assert [e["tier"] for e in page["entries"]] == medals
    assert [e["tier"] for e in reads.entries(board_id, teams)["entries"]] == [
        "gold",
        "gold",
        "silver",
        None,
    ]
    (result,) = reads.history(board_id, "p3", {"kind": "daily"})["results"]
    assert result["tier"] == "silver"
    (result,) = reads.history(board_id, "red", {"kind": "daily", "by": "team"})["results"]
    assert result["tier"] == "gold"

    # and without tiers no read names one
    BoardAdminService(db, index, clock).put_board(board_id, {"score_tiers": None}, ADMIN)
    for body in (
        reads.entries(board_id, archived)["entries"],
        reads.entries(board_id, {})["entries"],
        [reads.player(board_id, "p1", {})],
        reads.standings(board_id, "p1", {})["standings"],
        reads.history(board_id, "p3", {"kind": "daily"})["results"],
    ):
        assert body and all("tier" not in item for item in body)


def test_tiered_responses_and_board_errors_match_the_documented_contract(
    api: Any, admin_token: str, server_token: str, board_id: str
) -> None:
    """Through the real handlers, each reply checked against docs/openapi.json: the board with
    its tiers, every read's `tier` (players and teams), and the 400/422 of a bad declaration."""
    board = {"regions": ["EU"], "teams": "best", "score_tiers": MEDALS}
    created = api.call("PUT", f"/boards/{board_id}", board, token=admin_token)
    assert created.status == 201 and created.json()["score_tiers"] == MEDALS
    for player, score, team in WRITES:
        body = {"player_id": player, "score": score, "team_id": team, "region": "EU"}
        assert (
            api.call("POST", f"/boards/{board_id}/scores", body, token=server_token).status == 200
        )
    base = f"/boards/{board_id}"
    page = api.call("GET", f"{base}/entries?limit=3").json()
    assert [e["tier"] for e in page["entries"]] == ["gold", "gold", "silver"]
    for path in (
        "/players/p5?region=EU",
        "/players/p3/around?count=3",
        "/players?ids=p1,p6,nobody",
        "/players/p2/standings",
        "/entries?by=team",
        "/players/red?by=team",
        "/players/red/around?by=team",
        "/players?ids=red,green&by=team",
        "/entries?team=red",
    ):
        assert b'"tier"' in api.call("GET", base + path).body, path
    assert api.call("GET", f"{base}/players/p6").json()["tier"] is None
    for tiers, status, field in (
        ([{"name": "a", "top_percent": 5}], 400, "score_tiers.tiers[0].top_percent"),
        ([{"name": "a"}, {"name": "b", "score": 1}], 422, "score_tiers.tiers[0].score"),
        ([{"name": "a", "score": 1}, {"name": "b", "score": 2}], 422, "score_tiers.tiers[1].score"),
    ):
        body = {"score_tiers": {"by": "score", "tiers": tiers}}
        refused = api.call("PUT", base, body, token=admin_token)
        assert (refused.status, refused.json()["field"]) == (status, field), refused.body


def test_a_board_published_before_score_tiers_reads_as_having_none(
    index: RedisIndex, board_id: str
) -> None:
    """A catalog entry written by an older version has no `score_tiers` key: the board object
    still carries the field (null), as the contract requires."""
    publish(index, board_id)
    older = json.loads(index.client.hget(CATALOG_KEY, board_id))
    del older["score_tiers"]
    index.client.hset(CATALOG_KEY, board_id, json.dumps(older))
    assert index.get_board(board_id)["score_tiers"] is None
    assert [b["score_tiers"] for b in index.list_boards() if b["board_id"] == board_id] == [None]
