"""Score tiers against an independent model (docs/API.md, "Score tiers"): random boards (desc or
asc, ties shared or first, tiers by score or by percentile, one shard or three) take random
writes, players are hidden and shown again, and the tiers themselves change between writes (a
view: any time, entries or not). Then every read kind is compared, as nobody in particular and
as each hidden player in their own view: pages, around a rank, one player, around a player,
chosen players and a player's every period, globally and in a region. Each standing's `tier`
must be the model's: its own ranks, its own totals (hidden players left out), its own tier
rule, exact on decimal percentages. `make test-deep` runs it longer (tests/support/examples.py)."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import NotFound
from leaderboard.domain.events import new_event_id
from leaderboard.domain.score_tiers import ScoreTiers
from leaderboard.services.reads import ReadService
from leaderboard.services.scores import ScoreService
from tests.support.boards import ListSink, MovableClock, publish
from tests.support.examples import examples

PLAYERS = ["ann", "bob", "cy", "dee", "eve", "fay"]
REGIONS: list[str | None] = [None, "EU"]
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
SCORES = st.one_of(st.integers(-5, 12), st.sampled_from([2.5, 7.25]))
PERCENTS = [1, 4.4, 10, 20, 25, 33.3, 50, 75, 100]


@st.composite
def score_tiers(draw: Any, sort: str) -> dict:
    """1-4 tiers best first, the last one bounded or not."""
    by = draw(st.sampled_from(["score", "percentile"]))
    n = draw(st.integers(1, 4))
    if by == "score":
        bounds: list[Any] = sorted(draw(st.sets(SCORES, min_size=n, max_size=n)))
        if sort == "desc":
            bounds.reverse()
        key = "score"
    else:
        bounds = sorted(draw(st.sets(st.sampled_from(PERCENTS), min_size=n, max_size=n)))
        key = "top_percent"
    tiers = [{"name": f"t{i}", key: b} for i, b in enumerate(bounds)]
    if draw(st.booleans()):
        tiers.append({"name": "rest"})
    return {"by": by, "tiers": tiers}


@st.composite
def boards(draw: Any) -> dict:
    sort = draw(st.sampled_from(["desc", "asc"]))
    return {
        "sort": sort,
        "ties": draw(st.sampled_from(["shared", "first"])),
        "mode": draw(st.sampled_from(["best", "set"])),
        "shards": draw(st.sampled_from([1, 3])),
        "score_tiers": draw(score_tiers(sort)),
        "retiers": draw(st.lists(score_tiers(sort), min_size=1, max_size=1)),
    }


_submit = st.tuples(st.just("submit"), st.sampled_from(PLAYERS), SCORES, st.sampled_from(REGIONS))
_hide = st.tuples(st.sampled_from(["hide", "hide", "unhide"]), st.sampled_from(PLAYERS[:3]))
OPS = st.lists(
    st.one_of(_submit, _submit, _submit, _submit, _hide, st.tuples(st.just("retier"))),
    min_size=1,
    max_size=24,
)


# --- the model ------------------------------------------------------------------------------
@dataclass
class Model:
    sort: str
    ties: str
    mode: str
    tiers: dict
    rows: dict[str | None, dict[str, tuple[float, int]]] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    seq: int = 0

    def submit(self, player: str, score: float, region: str | None) -> None:
        self.seq += 1
        for where in {None, region}:
            rows = self.rows.setdefault(where, {})
            old = rows.get(player)
            new = score
            if old is not None and self.mode == "best" and not self._better(score, old[0]):
                new = old[0]
            if old is None or new != old[0]:
                rows[player] = (new, self.seq)

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.sort == "desc" else a < b

    def ranked(self, region: str | None, viewer: str | None) -> list[tuple[str, float, int]]:
        """(player, score, rank) in board order, as `viewer` sees the board."""
        rows = [
            (p, s, stamp)
            for p, (s, stamp) in self.rows.get(region, {}).items()
            if p not in self.hidden or p == viewer
        ]
        desc = self.sort == "desc"
        if self.ties == "first":
            rows.sort(key=lambda r: (-r[1] if desc else r[1], r[2]))
            return [(p, s, i + 1) for i, (p, s, _) in enumerate(rows)]
        rows.sort(key=lambda r: (r[1], r[0]), reverse=desc)
        return [(p, s, 1 + sum(self._better(o[1], s) for o in rows)) for p, s, _ in rows]

    def tier(self, rank: int, score: float, total: int) -> str | None:
        for tier in self.tiers["tiers"]:
            if "score" in tier:
                if score == tier["score"] or self._better(score, tier["score"]):
                    return tier["name"]
            elif "top_percent" in tier:
                share = Fraction(total) * Fraction(str(tier["top_percent"])) / 100
                if rank <= max(1, math.ceil(share)):
                    return tier["name"]
            else:
                return tier["name"]
        return None

    def tiered(self, region: str | None, viewer: str | None) -> list[tuple[str, int, str | None]]:
        ranked = self.ranked(region, viewer)
        return [(p, r, self.tier(r, s, len(ranked))) for p, s, r in ranked]


def _tiered(entries: list[dict]) -> list[tuple[str, int, str | None]]:
    return [(e["player_id"], e["rank"], e["tier"]) for e in entries]


def _centre(position: int, size: int, total: int) -> int:
    return max(0, min(position - (size - 1) // 2, total - size))


# --- the check ------------------------------------------------------------------------------
@settings(max_examples=examples(8))
@given(board=boards(), ops=OPS)
def test_every_reads_tiers_match_the_model(session_index: Any, board: dict, ops: list) -> None:
    index = session_index
    board_id = f"st-{uuid.uuid4().hex[:12]}"
    rules = {k: v for k, v in board.items() if k != "retiers"}
    config = publish(index, board_id, periods=["all-time", "daily"], regions=["EU"], **rules)
    clock = MovableClock(datetime(2026, 11, 24, 12, 0, tzinfo=UTC))
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    model = Model(board["sort"], board["ties"], board["mode"], board["score_tiers"])
    retiers = list(board["retiers"])
    for op in ops:
        if op[0] == "submit":
            _, player, score, region = op
            body = {"player_id": player, "score": score} | ({"region": region} if region else {})
            scores.submit(board_id, body, SERVER, None)
            model.submit(player, float(score), region)
        elif op[0] == "retier" and retiers:
            model.tiers = retiers.pop()
            config = replace(
                config,
                score_tiers=ScoreTiers.parse(model.tiers),
                version=config.version + 1,
            )
            index.publish_board(config)  # PUT /boards/{id}'s publish, with entries
        elif op[0] in ("hide", "unhide"):
            ms = int(clock().timestamp() * 1000)
            index.set_hidden(board_id, op[1], op[0] == "hide", event_id=new_event_id(ms), now_ms=ms)
            (model.hidden.add if op[0] == "hide" else model.hidden.discard)(op[1])

    for viewer in [None, *sorted(model.hidden)]:
        _compare(model, reads, board_id, viewer)


def _compare(model: Model, reads: ReadService, board_id: str, viewer: str | None) -> None:
    caller, seen = (None, {}) if viewer is None else (SERVER, {"viewer": viewer})
    for region in REGIONS:
        where = ({"region": region} if region else {}) | seen
        expected = model.tiered(region, viewer)
        total = len(expected)
        page = reads.entries(board_id, where | {"limit": "100"}, caller=caller)
        assert (page["total"], _tiered(page["entries"])) == (total, expected), (region, viewer)
        for rank in (1, 2, total):
            got = reads.entries(
                board_id, where | {"around_rank": str(max(rank, 1)), "limit": "3"}, caller=caller
            )
            start = _centre(max(rank, 1) - 1, 3, total)
            assert _tiered(got["entries"]) == expected[start : start + 3], (region, rank)
        chosen = reads.players(board_id, where | {"ids": ",".join(PLAYERS)}, caller=caller)
        assert _tiered(chosen["entries"]) == expected, (region, viewer)
        for position, (player, rank, tier) in enumerate(expected):
            one = reads.player(board_id, player, where, caller=caller)
            assert (one["rank"], one["total"], one["tier"]) == (rank, total, tier), player
            around = reads.around(board_id, player, where | {"count": "3"}, caller=caller)
            start = _centre(position, 3, total)
            assert _tiered(around["entries"]) == expected[start : start + 3], player
            assert _tiered([around["player"]]) == [(player, rank, tier)]
        visible = {p for p, _, _ in expected}
        for player in PLAYERS:
            if player not in visible:
                with pytest.raises(NotFound):
                    reads.player(board_id, player, where, caller=caller)
    for player in PLAYERS:
        standings = _standings(model, player, viewer)
        query = seen
        if not standings:
            with pytest.raises(NotFound):
                reads.standings(board_id, player, query, caller=caller)
            continue
        got = reads.standings(board_id, player, query, caller=caller)["standings"]
        assert [(s["kind"], s["region"], s["rank"], s["total"], s["tier"]) for s in got] == (
            standings
        ), (player, viewer)


def _standings(model: Model, player: str, viewer: str | None) -> list[tuple]:
    """The player on all-time and today (one and the same here: the clock stands still),
    globally then in EU, as `viewer` sees them."""
    found = []
    for region in REGIONS:
        expected = model.tiered(region, viewer)
        mine = [(rank, tier) for p, rank, tier in expected if p == player]
        for kind in ("all-time", "daily"):
            if mine:
                found.append((kind, region, mine[0][0], len(expected), mine[0][1]))
    return found
