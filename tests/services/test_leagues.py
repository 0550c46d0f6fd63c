"""Leagues (issue 40, acceptance 1): several seasons of random writes, first writes racing in
threads, reads of every group, tier and player, and each season's end, all checked against a
model written here from docs/API.md's rules alone (not the service's domain code): group sizes
and placement order, every read, and each season's promotions, relegations and idle players'
moves, with the rollover run before or after the next season's first writes."""

from __future__ import annotations

import math
import threading
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import BadRequest, Conflict, NotFound, Unavailable, Unprocessable
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.aws.event_bus import ListSink as EventListSink
from leaderboard.stores.postgres.database import Database
from tests.support.boards import ListSink, MovableClock
from tests.support.examples import examples

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
# Seasons end every Monday 00:00 UTC; the board is made inside the season of 2026-11-30.
MADE = datetime(2026, 12, 1, 12, tzinfo=UTC)
WEEK = timedelta(days=7)
TIERS = ["bronze", "silver", "gold"]


def season_id(n: int) -> str:
    return (datetime(2026, 11, 30, tzinfo=UTC) + n * WEEK).strftime("%Y-%m-%dT%H%M%SZ")


# --- the model ------------------------------------------------------------------------------


@dataclass
class Model:
    """docs/API.md, "Leagues": tiers lowest first; a player's first write of a season places
    them in their tier's open group, which fills to group_size; at the season's end rank <=
    promote goes up (not from the top tier), rank > players - relegate goes down (not from
    the lowest), shares round down; an idle player stays or drops one tier."""

    size: int
    promote: int | None
    relegate: int | None
    promote_percent: float | None
    relegate_percent: float | None
    drop: bool
    tier: dict[str, int] = field(default_factory=dict)  # after the settled seasons
    score: dict[str, int] = field(default_factory=dict)  # this season's best
    group: dict[str, tuple[int, int]] = field(default_factory=dict)  # this season's

    def counts(self, members: int) -> tuple[int, int]:
        """Promoted and relegated ranks of a group: a share of its players, rounded down."""

        def of(count: int | None, share: float | None) -> int:
            return count if count is not None else math.floor(members * (share or 0) / 100)

        return of(self.promote, self.promote_percent), of(self.relegate, self.relegate_percent)

    def standings(self, group: tuple[int, int]) -> list[tuple[str, int, int]]:
        """(player, score, shared rank), best first; equal scores in the order a read lists
        them on a shared-ties board of sort desc: player ids descending."""
        members = sorted(
            (p for p, g in self.group.items() if g == group),
            key=lambda p: (self.score[p], p),
            reverse=True,
        )
        out: list[tuple[str, int, int]] = []
        for n, player in enumerate(members):
            same = out and out[-1][1] == self.score[player]
            out.append((player, self.score[player], out[-1][2] if same else n + 1))
        return out

    def zone(self, tier: int, rank: int, members: int) -> str:
        up, down = self.counts(members)
        if tier < len(TIERS) - 1 and rank <= up:
            return "promotion"
        if tier > 0 and rank > members - down:
            return "relegation"
        return "safe"

    def season_end(self) -> dict[str, tuple[str, str, str | None, int | None]]:
        """player -> (from tier, to tier, group id, rank); then the next season starts."""
        moves: dict[str, tuple[str, str, str | None, int | None]] = {}
        for group in set(self.group.values()):
            table = self.standings(group)
            for player, _, rank in table:
                new = group[0]
                zone = self.zone(group[0], rank, len(table))
                new += 1 if zone == "promotion" else -1 if zone == "relegation" else 0
                gid = f"{TIERS[group[0]]}-{group[1]}"
                moves[player] = (TIERS[group[0]], TIERS[new], gid, rank)
        for player, tier in self.tier.items():
            if player not in moves:
                new = max(0, tier - 1) if self.drop else tier
                moves[player] = (TIERS[tier], TIERS[new], None, None)
        self.tier = {p: TIERS.index(m[1]) for p, m in moves.items()}
        self.score, self.group = {}, {}
        return moves


# --- the property ---------------------------------------------------------------------------

PLAYERS = [f"p{n:02d}" for n in range(14)]
season_ops = st.lists(
    st.tuples(
        st.lists(st.sampled_from(PLAYERS), min_size=1, max_size=5, unique=True),  # together
        st.integers(0, 6),  # score (small: ties)
    ),
    min_size=1,
    max_size=7,
)


def _line(side: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.integers(0, 2).map(lambda n: {side: n}),
        st.sampled_from([0, 10, 33.3, 50, 100]).map(lambda p: {f"{side}_percent": p}),
    )


league_rules = st.builds(
    lambda size, up, down, drop: {
        "tiers": TIERS,
        "group_size": size,
        "inactive": "drop" if drop else "stay",
        **up,
        **down,
    },
    st.integers(2, 4),
    _line("promote"),
    _line("relegate"),
    st.booleans(),
)


def _model(body: dict[str, Any]) -> Model:
    return Model(
        body["group_size"],
        body.get("promote"),
        body.get("relegate"),
        body.get("promote_percent"),
        body.get("relegate_percent"),
        body["inactive"] == "drop",
    )


def _write(scores: ScoreService, board_id: str, player: str, score: int) -> dict[str, Any]:
    return scores.submit(board_id, {"player_id": player, "score": score}, SERVER, None).body


def _check_reads(reads: ReadService, board_id: str, model: Model, season: str) -> None:
    league = reads.league(board_id, {})
    assert league["season"]["period"] == season
    by_tier: dict[int, list[int]] = defaultdict(list)
    for group in model.group.values():
        by_tier[group[0]].append(group[1])
    for n, row in enumerate(league["tiers"]):
        numbers = by_tier.get(n, [])
        assert row == {
            "tier": TIERS[n],
            "groups": max(numbers, default=0),
            "players": len(numbers),
        }
        # first come first served: groups 1..k-1 full, the open one holds the rest
        sizes = [numbers.count(g) for g in range(1, max(numbers, default=0) + 1)]
        assert sizes[:-1] == [model.size] * (len(sizes) - 1) and all(s >= 1 for s in sizes)
    for group in set(model.group.values()):
        table = model.standings(group)
        members = len(table)
        got = reads.league_group(board_id, f"{TIERS[group[0]]}-{group[1]}", {})
        assert got["players"] == members
        assert [(e["player_id"], e["score"], e["rank"], e["zone"]) for e in got["entries"]] == [
            (p, s, r, model.zone(group[0], r, members)) for p, s, r in table
        ]
        # the lines as docs/API.md defines them: the last rank promoted, the first relegated
        # below the promoted ones; null where no rank is
        up, down = model.counts(members)
        promotion = (min(up, members) or None) if group[0] < 2 else None
        relegation = None
        if group[0] > 0 and down > 0:
            first = max(members - down + 1, (promotion or 0) + 1)
            relegation = first if first <= members else None
        assert (got["promotion_line"], got["relegation_line"]) == (promotion, relegation)
    for player in PLAYERS:
        mine = reads.league_player(board_id, player, {})
        if player not in model.group:
            assert mine["group_id"] is None and mine["entries"] == []
            continue
        group = model.group[player]
        assert mine["group_id"] == f"{TIERS[group[0]]}-{group[1]}"
        assert mine["tier"] == TIERS[group[0]]
        rank = next(r for p, _, r in model.standings(group) if p == player)
        assert mine["rank"] == rank


@settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rules=league_rules,
    seasons=st.lists(st.tuples(season_ops, st.booleans()), min_size=2, max_size=3),
)
def test_seasons_of_random_writes_match_the_model(index, database_url, rules, seasons):
    db = Database(database_url)
    try:
        _play_seasons(index, db, rules, seasons)
    finally:
        db.close()


def _play_seasons(index, db, rules, seasons) -> None:
    board_id = f"t-{uuid.uuid4().hex[:16]}"
    clock = MovableClock(MADE)
    body = rules
    BoardAdminService(db, index, clock).put_board(
        board_id,
        {
            "mode": "best",
            "periods": ["custom"],
            "schedule": {"cron": "0 0 * * MON", "timezone": "UTC"},
            "league": body,
        },
        ADMIN,
    )
    model = _model(body)
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    events = EventListSink()
    rollover = Rollover(db, index, clock, sink=events)
    unsettled: dict[str, dict[str, tuple[str, str, str | None, int | None]]] = {}
    for n, (ops, settle_first) in enumerate(seasons):
        for together, score in ops:
            # a first write places the player in the tier the model says, in some open group
            fresh = [p for p in together if p not in model.group]
            with ThreadPoolExecutor(len(together)) as pool:
                gate = threading.Barrier(len(together))

                def write(
                    player: str, gate: threading.Barrier = gate, score: int = score
                ) -> dict[str, Any]:
                    gate.wait()
                    return _write(scores, board_id, player, score)

                answers = dict(zip(together, pool.map(write, together), strict=True))
            for player, answer in answers.items():
                tier, _, number = answer["league"]["group_id"].rpartition("-")
                expected = model.tier.get(player, 0)
                if player in fresh:
                    assert TIERS.index(tier) == expected, (player, answer)
                    model.group[player] = (expected, int(number))
                assert answer["league"]["placed"] == (player in fresh)
                assert model.group[player] == (TIERS.index(tier), int(number))
                model.score[player] = max(model.score.get(player, score), score)
        _check_reads(reads, board_id, model, season_id(n))
        # the season ends; the next one's first writes may come before its settling (one
        # season behind at most: two is a 503, tested below)
        clock.now = MADE + (n + 1) * WEEK
        unsettled[season_id(n)] = model.season_end()
        if settle_first or len(unsettled) > 1 or n == len(seasons) - 1:
            report = rollover.run(board_ids={board_id})
            assert report.complete
            for season, expected in unsettled.items():
                got = {
                    m["player_id"]: (m["from_tier"], m["to_tier"], m["group_id"], m["rank"])
                    for e in events.events
                    if e.period_id == season and e.league
                    for m in e.league["moves"]
                }
                assert got == expected, season
            unsettled.clear()


# --- the rules at their edges -----------------------------------------------------------------


def _league_board(index, database_url, board_id, clock, **league) -> BoardAdminService:
    admin = BoardAdminService(Database(database_url), index, clock)
    admin.put_board(
        board_id,
        {
            "mode": "increment",
            "periods": ["all-time", "custom"],
            "schedule": {"cron": "0 0 * * MON", "timezone": "UTC"},
            "league": {"tiers": TIERS, "group_size": 3, "promote": 1, "relegate": 1, **league},
        },
        ADMIN,
    )
    return admin


def test_thirty_clients_racing_for_first_writes_never_overfill_a_group(
    index, database_url, board_id
):
    clock = MovableClock(MADE)
    _league_board(index, database_url, board_id, clock)
    scores = ScoreService(index, ListSink(), clock)
    gate = threading.Barrier(30)

    def first(n: int) -> str:
        gate.wait()
        return _write(scores, board_id, f"r{n}", n)["league"]["group_id"]

    with ThreadPoolExecutor(30) as pool:
        groups = list(pool.map(first, range(30)))
    assert sorted(groups.count(g) for g in set(groups)) == [3] * 10


def test_a_hidden_player_leaves_the_group_tables_and_keeps_their_tier(
    index, database_url, board_id
):
    clock = MovableClock(MADE)
    admin = _league_board(index, database_url, board_id, clock)
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    for player, score in (("a", 30), ("b", 20), ("c", 10)):
        _write(scores, board_id, player, score)
    admin.hide_player(board_id, "a", {}, ADMIN)
    table = reads.league_group(board_id, "bronze-1", {})
    assert [(e["player_id"], e["rank"]) for e in table["entries"]] == [("b", 1), ("c", 2)]
    assert table["players"] == 2 and table["entries"][0]["zone"] == "promotion"
    # the hidden player reading as themselves sees their place, and is not counted
    own = reads.league_player(board_id, "a", {"viewer": "a"}, caller=SERVER)
    assert own["rank"] == 1 and own["players"] == 2
    events = EventListSink()
    clock.now = MADE + WEEK
    Rollover(Database(database_url), index, clock, sink=events).run(board_ids={board_id})
    moves = {m["player_id"]: m for e in events.events if e.league for m in e.league["moves"]}
    assert (moves["a"]["move"], moves["b"]["move"], moves["c"]["move"]) == (
        "stayed",
        "promoted",
        "stayed",
    )
    # a removal takes the player out of the group and the league
    admin.unhide_player(board_id, "a", ADMIN)
    assert reads.league_group(board_id, "bronze-1", {"season": season_id(0)})["players"] == 3
    admin.delete_player(board_id, "c", ADMIN)
    after = reads.league_group(board_id, "bronze-1", {"season": season_id(0)})
    assert [e["player_id"] for e in after["entries"]] == ["a", "b"]


def test_a_removed_player_leaves_the_league_and_is_placed_again_as_new(
    index, database_url, board_id
):
    """API.md Leagues: a removal takes the player out of every group and out of the league
    (they start again in start_tier); a place once taken stays taken."""
    clock = MovableClock(MADE)
    admin = _league_board(index, database_url, board_id, clock, start_tier="silver")
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    for player, score in (("a", 30), ("b", 20), ("c", 10)):
        _write(scores, board_id, player, score)
    clock.now = MADE + WEEK
    Rollover(Database(database_url), index, clock, sink=EventListSink()).run(board_ids={board_id})
    assert _write(scores, board_id, "a", 5)["league"]["group_id"] == "gold-1"  # promoted
    _write(scores, board_id, "b", 4)  # silver-1
    admin.delete_player(board_id, "a", ADMIN)
    gone = reads.league_player(board_id, "a", {})
    assert (gone["group_id"], gone["tier"], gone["entries"]) == (None, "silver", [])
    # the next write places them anew, in the start tier, after the places already taken
    again = _write(scores, board_id, "a", 7)["league"]
    assert (again["group_id"], again["placed"]) == ("silver-1", True)
    assert [e["player_id"] for e in reads.league_group(board_id, "silver-1", {})["entries"]] == [
        "a",
        "b",
    ]
    assert reads.league_group(board_id, "gold-1", {})["entries"] == []
    tiers = {t["tier"]: t["players"] for t in reads.league(board_id, {})["tiers"]}
    assert (tiers["gold"], tiers["silver"]) == (1, 2)  # gold-1's place stays taken


def test_first_writes_before_the_settling_take_the_same_tier_and_two_behind_is_503(
    index, database_url, board_id
):
    clock = MovableClock(MADE)
    _league_board(index, database_url, board_id, clock)
    scores = ScoreService(index, ListSink(), clock)
    for player, score in (("a", 30), ("b", 20), ("c", 10)):
        _write(scores, board_id, player, score)
    clock.now = MADE + WEEK  # season 1: the rollover has not run
    assert _write(scores, board_id, "a", 1)["league"]["group_id"] == "silver-1"
    assert _write(scores, board_id, "c", 1)["league"]["group_id"] == "bronze-1"
    clock.now = MADE + 2 * WEEK  # season 2, and season 0 is still not settled
    with pytest.raises(Unavailable):
        _write(scores, board_id, "b", 1)
    Rollover(Database(database_url), index, clock, sink=EventListSink()).run(board_ids={board_id})
    assert _write(scores, board_id, "b", 1)["league"]["group_id"] == "bronze-1"  # idle: stays
    assert _write(scores, board_id, "a", 1)["league"]["group_id"] == "gold-1"


def test_idle_players_drop_a_tier_even_in_a_season_nobody_played(index, database_url, board_id):
    clock = MovableClock(MADE)
    _league_board(index, database_url, board_id, clock, inactive="drop", promote=2)
    scores = ScoreService(index, ListSink(), clock)
    rollover = Rollover(Database(database_url), index, clock, sink=EventListSink())
    for player, score in (("a", 30), ("b", 20)):
        _write(scores, board_id, player, score)
    clock.now = MADE + WEEK
    rollover.run(board_ids={board_id})  # both promoted to silver
    clock.now = MADE + 2 * WEEK  # season 1 had no writes at all
    rollover.run(board_ids={board_id})
    assert _write(scores, board_id, "a", 1)["league"]["tier"] == "bronze"


def test_league_rules_are_checked(index, database_url, board_id, clock):
    admin = BoardAdminService(Database(database_url), index, clock)
    season = {"periods": ["custom"], "schedule": {"cron": "0 0 * * MON", "timezone": "UTC"}}
    good = {"tiers": ["a", "b"], "group_size": 5, "promote": 1, "relegate": 1}
    bad_shapes = [
        {**good, "tiers": ["a"]},
        {**good, "tiers": ["a", "B"]},
        {**good, "group_size": 1},
        {**good, "promote_percent": 10},
        {k: v for k, v in good.items() if k != "relegate"},
        {**good, "inactive": "leave"},
        {**good, "colour": 1},
    ]
    for league in bad_shapes:
        with pytest.raises(BadRequest):
            admin.put_board(board_id, {**season, "league": league}, ADMIN)
    with pytest.raises(Unprocessable):
        admin.put_board(board_id, {**season, "league": {**good, "tiers": ["a", "a"]}}, ADMIN)
    with pytest.raises(Unprocessable):  # more than a group holds: a rule between two fields
        admin.put_board(board_id, {**season, "league": {**good, "promote": 6}}, ADMIN)
    with pytest.raises(BadRequest):  # a shape error first, whatever else is wrong
        admin.put_board(
            board_id, {**season, "league": {**good, "promote": 6, "inactive": "x"}}, ADMIN
        )
    with pytest.raises(Unprocessable):
        admin.put_board(board_id, {**season, "league": {**good, "start_tier": "z"}}, ADMIN)
    with pytest.raises(Unprocessable):
        admin.put_board(board_id, {"league": good}, ADMIN)  # no seasons
    for other in ({"shards": 2}, {"teams": "sum"}, {"max_entries": 10}):
        with pytest.raises(Unprocessable):
            admin.put_board(board_id, {**season, **other, "league": good}, ADMIN)
    admin.put_board(board_id, {**season, "league": {**good, "start_tier": "b"}}, ADMIN)
    reads = ReadService(index, clock)
    with pytest.raises(BadRequest):
        reads.league_group(board_id, "b_3", {})
    with pytest.raises(Unprocessable):
        reads.league_group(board_id, "c-1", {})
    with pytest.raises(NotFound):
        reads.league_group(board_id, "b-1", {})
    assert reads.league_player(board_id, "new", {})["tier"] == "b"
    admin.put_board(f"{board_id}-plain", {}, ADMIN)
    with pytest.raises(Conflict):
        reads.league(f"{board_id}-plain", {})


@pytest.mark.parametrize(
    "rules, writes, order, moves",
    [
        # ties=first: equal scores rank by arrival, so one is promoted and one relegated
        (
            {"ties": "first"},
            [("a", 10, None), ("b", 10, None), ("c", 10, None)],
            [("a", 1), ("b", 2), ("c", 3)],
            {"a": "gold", "b": "silver", "c": "bronze"},
        ),
        # shared ties: all three share rank 1, on the better side of both lines
        (
            {},
            [("a", 10, None), ("b", 10, None), ("c", 10, None)],
            [("c", 1), ("b", 1), ("a", 1)],
            {"a": "gold", "b": "gold", "c": "gold"},
        ),
        # tie-breakers order equal scores (the lower time first)
        (
            {"tiebreakers": [{"name": "time", "sort": "asc"}]},
            [("a", 10, 5), ("b", 10, 3), ("c", 10, 9)],
            [("b", 1), ("a", 2), ("c", 3)],
            {"b": "gold", "a": "silver", "c": "bronze"},
        ),
        # an asc board: the lowest score leads
        (
            {"sort": "asc"},
            [("a", 30, None), ("b", 10, None), ("c", 20, None)],
            [("b", 1), ("c", 2), ("a", 3)],
            {"b": "gold", "c": "silver", "a": "bronze"},
        ),
    ],
    ids=["ties-first", "ties-shared", "tiebreakers", "asc"],
)
def test_groups_rank_and_move_as_the_board_ranks(
    index, database_url, board_id, rules, writes, order, moves
):
    clock = MovableClock(MADE)
    admin = BoardAdminService(Database(database_url), index, clock)
    league = {"tiers": TIERS, "group_size": 3, "promote": 1, "relegate": 1}
    admin.put_board(
        board_id,
        {
            "mode": "best",
            "periods": ["custom"],
            "schedule": {"cron": "0 0 * * MON", "timezone": "UTC"},
            "league": {**league, "start_tier": "silver"},
            **rules,
        },
        ADMIN,
    )
    scores = ScoreService(index, ListSink(), clock)
    for player, score, time in writes:
        body: dict[str, Any] = {"player_id": player, "score": score}
        if time is not None:
            body["tiebreakers"] = {"time": time}
        scores.submit(board_id, body, SERVER, None)
    group = ReadService(index, clock).league_group(board_id, "silver-1", {})
    assert [(e["player_id"], e["rank"]) for e in group["entries"]] == order
    events = EventListSink()
    clock.now = MADE + WEEK
    Rollover(Database(database_url), index, clock, sink=events).run(board_ids={board_id})
    got = {
        m["player_id"]: m["to_tier"] for e in events.events if e.league for m in e.league["moves"]
    }
    assert got == moves
