"""Random submission sequences replayed through the real services and on the reference model,
every read compared: one check for a single node (tests/services/test_reference_model.py) and
for a cluster (tests/stores/redis/test_cluster.py)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import strategies as st

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import DomainError, NotFound
from leaderboard.domain.events import new_event_id
from leaderboard.domain.periods import ALL_TIME
from leaderboard.domain.tiebreakers import TIEBREAKER_LIMIT
from leaderboard.services.reads import ReadService
from leaderboard.services.scores import ScoreService
from tests.support.boards import ListSink, MovableClock, publish
from tests.support.reference_model import ModelBoard, ModelError

PLAYERS = ["ann", "bob", "cy", "dee", "eve", "fay", "gus"]
REGIONS = [None, "EU", "NA"]
SCORES = st.one_of(st.integers(-40, 60), st.sampled_from([0.5, 2.25, -1.5, 7.75, 100]))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
LIMIT = TIEBREAKER_LIMIT
# Few values, so tuples tie often, and the bounds themselves.
TB_VALUES = st.one_of(st.integers(-1, 2), st.sampled_from([-LIMIT, LIMIT, LIMIT - 1]))

_SUBMIT = (
    st.just("submit"),
    st.sampled_from(PLAYERS),
    SCORES,
    st.sampled_from([*REGIONS, "XX"]),
    st.one_of(st.none(), st.fixed_dictionaries({"n": st.integers(0, 9)})),
    # tie-breaker values for whichever columns the board has, sometimes given wrong (422)
    st.fixed_dictionaries({"t1": TB_VALUES, "t2": TB_VALUES, "t3": TB_VALUES}),
    st.sampled_from(["ok"] * 8 + ["missing", "extra"]),
)
submit_op = st.tuples(*_SUBMIT)
advance_op = st.tuples(st.just("advance"), st.sampled_from([1, 5, 23, 24 * 3, 24 * 8, 24 * 31]))
OPS = st.lists(st.one_of(submit_op, submit_op, submit_op, advance_op), min_size=1, max_size=28)
# Issue 23: team boards. A submission may name a team; a few names a board has none of too
# (refused with 422 on boards without teams).
TEAMS = ["red", "blue", "gold"]
team_submit_op = st.tuples(*_SUBMIT, st.sampled_from([None, *TEAMS, "red"]))
# Issue 23: an admin hides players and shows them again between writes.
hide_op = st.tuples(st.sampled_from(["hide", "hide", "unhide"]), st.sampled_from(PLAYERS[:4]))
HIDDEN_OPS = st.lists(
    st.one_of(submit_op, submit_op, submit_op, advance_op, hide_op), min_size=1, max_size=28
)
TEAM_OPS = st.lists(
    st.one_of(team_submit_op, team_submit_op, team_submit_op, advance_op, hide_op),
    min_size=1,
    max_size=28,
)
team_rules = st.fixed_dictionaries(
    {
        "max_entries": st.sampled_from([None, None, 3]),
        "bounds": st.sampled_from([None, (-50, 80)]),
        "max_increment": st.sampled_from([None, 25]),
        "teams": st.sampled_from(["sum", "best"]),
        "tiebreakers": st.sampled_from([None, [{"name": "t1", "sort": "asc"}]]),
    }
)
rules = st.fixed_dictionaries(
    {
        "max_entries": st.sampled_from([None, None, 3]),
        "bounds": st.sampled_from([None, (-50, 80)]),
        "max_increment": st.sampled_from([None, 25]),
    }
)
_column = st.sampled_from(["asc", "desc"])
# Issue 23: 1-3 tie-breaker columns in mixed directions.
tiebreaker_rules = st.fixed_dictionaries(
    {
        "max_entries": st.sampled_from([None, None, 3]),
        "bounds": st.sampled_from([None, (-50, 80)]),
        "max_increment": st.sampled_from([None, 25]),
        "tiebreakers": st.lists(_column, min_size=1, max_size=3).map(
            lambda sorts: [{"name": f"t{i + 1}", "sort": s} for i, s in enumerate(sorts)]
        ),
    }
)


def _tiebreakers(model: ModelBoard, values: dict, how: str) -> dict | None:
    """What a submission sends: the board's columns, or a wrong set of them."""
    names = [c.name for c in model.cfg.tiebreakers]
    if how == "missing":
        names = names[:-1]
    elif how == "extra":
        names = [*names, "zz"]
    return {n: values.get(n, 0) for n in names} or None


def _norm(entries: list[dict]) -> list[tuple]:
    return [
        (
            e["rank"],
            e["player_id"],
            float(e["score"]),
            e["metadata"],
            e.get("tiebreakers"),
            e.get("hidden", False),
        )
        for e in entries
    ]


def _compare_reads(
    model: ModelBoard, reads: ReadService, board_id: str, clock: MovableClock
) -> None:
    """Every read of every period and region, as nobody in particular and, on a board that
    hides players, as each hidden player (their own view: a server reading for them, told which
    entry is hidden) and as a visible one (the public view)."""
    viewers: list[str | None] = [None]
    if model.hidden:
        visible = [p for p in PLAYERS if p not in model.hidden]
        viewers += [*sorted(model.hidden), visible[0]]
    for viewer in viewers:
        _compare_view(model, reads, board_id, clock, viewer)
        if model.cfg.teams:
            _compare_teams(model, reads, board_id, clock, viewer)
    for player in sorted(model.hidden):  # with their own token: no sign of it
        as_player = Caller(player, frozenset())
        for period, region in list(model.keys):
            exp = model.player(period, region, player, player)
            query = {"period": period} | ({"region": region} if region else {})
            if exp is not None and not _closed(period, clock):
                got = reads.player(board_id, player, query, caller=as_player)
                assert "hidden" not in got
                assert (got["rank"], got["total"]) == (exp["rank"], exp["total"])


def _closed(period: str, clock: MovableClock) -> bool:
    return period != ALL_TIME and not any(
        p.id == period and p.is_open_at(clock()) for p in _open(clock)
    )


def _compare_view(
    model: ModelBoard,
    reads: ReadService,
    board_id: str,
    clock: MovableClock,
    viewer: str | None,
) -> None:
    caller = None if viewer is None else SERVER
    seen = {} if viewer is None else {"viewer": viewer}
    period_ids = {pid for (pid, _region) in model.keys} | {ALL_TIME}
    for period in sorted(period_ids):
        for region in REGIONS:
            query = {"period": period} | ({"region": region} if region else {}) | seen
            total, expected = model.page(period, region, 0, 100, viewer)
            if total == 0 and _closed(period, clock):
                with pytest.raises(NotFound):
                    reads.entries(board_id, query | {"limit": "100"}, caller=caller)
                continue
            got = reads.entries(board_id, query | {"limit": "100"}, caller=caller)
            assert (got["total"], _norm(got["entries"])) == (total, _norm(expected)), (
                period,
                region,
                viewer,
            )
            for offset, limit in ((1, 2), (3, 3)):
                _, exp = model.page(period, region, offset, limit, viewer)
                got = reads.entries(
                    board_id, query | {"offset": str(offset), "limit": str(limit)}, caller=caller
                )
                assert _norm(got["entries"]) == _norm(exp), (period, region, offset, viewer)
            for rank in (1, 2, total, total + 3):
                if rank < 1:
                    continue
                _, exp = model.around_rank(period, region, rank, 3, viewer)
                got = reads.entries(
                    board_id, query | {"around_rank": str(rank), "limit": "3"}, caller=caller
                )
                assert _norm(got["entries"]) == _norm(exp), (period, region, rank, viewer)
            for player in PLAYERS:
                exp_player = model.player(period, region, player, viewer)
                if exp_player is None:
                    with pytest.raises(NotFound):
                        reads.player(board_id, player, query, caller=caller)
                    continue
                got = reads.player(board_id, player, query, caller=caller)
                assert (
                    got["rank"],
                    float(got["score"]),
                    got["total"],
                    got["metadata"],
                    got.get("tiebreakers"),
                    got.get("hidden", False),
                ) == (
                    exp_player["rank"],
                    exp_player["score"],
                    exp_player["total"],
                    exp_player["metadata"],
                    exp_player.get("tiebreakers"),
                    exp_player.get("hidden", False),
                ), (period, region, player, viewer)
                _, exp_window = model.around(period, region, player, 3, viewer)
                got = reads.around(board_id, player, query | {"count": "3"}, caller=caller)
                assert _norm(got["entries"]) == _norm(exp_window), (period, region, player, viewer)
                assert got["player"]["player_id"] == player
            _compare_players(model, reads, board_id, period, region, query, viewer, caller)
    _compare_standings(model, reads, board_id, clock, viewer, caller)


def _plain_norm(entries: list[dict], key: str = "player_id") -> list[tuple]:
    return [(e["rank"], e[key], float(e["score"]), e.get("hidden", False)) for e in entries]


def _plain_expect(model, rows, start, stop, flagged) -> list[tuple]:
    """Entries [start, stop) of a team ranking or a members set; `flagged`: the hidden
    reader's own entry, marked for the server that reads for them."""
    return [
        (model.plain_rank(rows, i), rows[i][0], rows[i][1], rows[i][0] == flagged)
        for i in range(start, min(stop, len(rows)))
    ]


def _compare_teams(model, reads, board_id, clock, viewer) -> None:
    """Issue 23: the team rankings (`by=team`) and each team's members (`team=<id>`), every
    read route and period, in this viewer's view."""
    caller = None if viewer is None else SERVER
    seen = {} if viewer is None else {"viewer": viewer}
    centre = ModelBoard._centre
    hidden_reader = viewer if viewer in model.hidden else None
    for period, region in sorted(set(model.keys), key=lambda k: (k[0], k[1] or "")):
        base = {"period": period} | ({"region": region} if region else {}) | seen
        views = [({"by": "team"}, model.teams_ranked(period, region), "team_id", None)]
        for team in TEAMS:
            rows = model.members_ranked(period, region, team, viewer)
            views.append(({"team": team}, rows, "player_id", hidden_reader))
        for selector, rows, key, flagged in views:
            query = base | selector
            where = (selector, period, region, viewer)
            total = len(rows)
            if total == 0 and _closed(period, clock):
                with pytest.raises(NotFound):
                    reads.entries(board_id, query, caller=caller)
                continue
            got = reads.entries(board_id, query | {"limit": "100"}, caller=caller)
            assert got["total"] == total, where
            exp = _plain_expect(model, rows, 0, 100, flagged)
            assert _plain_norm(got["entries"], key) == exp, where
            for rank in {1, max(total, 1), total + 2}:
                start = centre(rank - 1, 2, total)
                got = reads.entries(
                    board_id, query | {"around_rank": str(rank), "limit": "2"}, caller=caller
                )
                exp = _plain_expect(model, rows, start, start + 2, flagged)
                assert _plain_norm(got["entries"], key) == exp, (*where, rank)
            ids = [*(r[0] for r in rows[:3]), "nobody"]
            got = reads.players(board_id, query | {"ids": ",".join(ids)}, caller=caller)
            assert [e[key] for e in got["entries"]] == ids[:-1], where
            assert got["missing"] == ["nobody"] and got["total"] == total, where
            for i, (who, score) in enumerate(rows[:4]):
                one = reads.player(board_id, who, query, caller=caller)
                assert (one[key], one["rank"], float(one["score"]), one["total"]) == (
                    who,
                    model.plain_rank(rows, i),
                    score,
                    total,
                ), (*where, who)
                around = reads.around(board_id, who, query | {"count": "3"}, caller=caller)
                start = centre(i, 3, total)
                exp = _plain_expect(model, rows, start, start + 3, flagged)
                assert _plain_norm(around["entries"], key) == exp, (*where, who)
            with pytest.raises(NotFound):
                reads.player(board_id, "nobody", query, caller=caller)


# Each list mixes players with an entry, players of the board without one in this period or
# region, an id the board never saw, and a duplicate.
ID_LISTS = [PLAYERS, ["gus", "zed", "ann", "gus"], ["zed"], ["cy", "cy", "bob"]]


def _compare_players(model, reads, board_id, period, region, query, viewer, caller) -> None:
    for ids in ID_LISTS:
        total, entries, missing = model.players(period, region, ids, viewer)
        got = reads.players(board_id, query | {"ids": ",".join(ids)}, caller=caller)
        assert got["total"] == total, (period, region, ids)
        assert _norm(got["entries"]) == _norm(entries), (period, region, ids)
        assert got["missing"] == missing, (period, region, ids)


def _compare_standings(model, reads, board_id, clock, viewer, caller) -> None:
    seen = {} if viewer is None else {"viewer": viewer}
    for player in [*PLAYERS, "zed"]:
        for region in REGIONS:
            expected = model.standings(player, clock(), region, viewer)
            query = ({"region": region} if region else {}) | seen
            if not expected:
                with pytest.raises(NotFound):
                    reads.standings(board_id, player, query, caller=caller)
                continue
            got = reads.standings(board_id, player, query, caller=caller)["standings"]
            assert [
                (s["period"], s["kind"], s["region"], s["rank"], float(s["score"]), s["total"])
                + ((s["tiebreakers"],) if "tiebreakers" in s else ())
                + ((True,) if s.get("hidden") else ())
                for s in got
            ] == expected, (player, region, viewer)
            assert all(s["top_percent"] == round(100 * s["rank"] / s["total"], 4) for s in got)


def _open(clock: MovableClock):
    from leaderboard.domain.periods import current_periods

    return current_periods(clock()).values()


def _new_board(index, mode, sort, ties, board_rules, shards=1):
    board_id = f"m-{uuid.uuid4().hex[:12]}"
    body = {
        "mode": mode,
        "sort": sort,
        "ties": ties,
        "periods": ["all-time", "daily", "weekly", "monthly"],
        "regions": ["EU", "NA"],
        "max_entries": board_rules["max_entries"],
    }
    if board_rules["bounds"]:
        body["min_score"], body["max_score"] = board_rules["bounds"]
    if mode == "increment":
        body["max_increment"] = board_rules["max_increment"]
    if board_rules.get("tiebreakers"):
        body["tiebreakers"] = board_rules["tiebreakers"]
    if board_rules.get("teams"):
        body["teams"] = board_rules["teams"]
    board = publish(index, board_id, **body)
    if shards > 1:  # not a field of the API yet: set on the parsed board
        board = replace(board, shards=shards)
        index.publish_board(board)
    # Start just before midnight on a Sunday at the end of a month: the first advances cross
    # a day, an ISO week and a month boundary.
    from datetime import UTC, datetime

    clock = MovableClock(datetime(2026, 5, 31, 22, 30, tzinfo=UTC))
    return board_id, clock, ModelBoard(board)


def _set_hidden(index, model, board_id, clock, op) -> None:
    """An admin hides a player or shows them again (the index's part of the admin route)."""
    kind, player = op
    ms = int(clock().timestamp() * 1000)
    index.set_hidden(board_id, player, kind == "hide", event_id=new_event_id(ms), now_ms=ms)
    model.set_hidden(player, kind == "hide")


def _payload(player, score, region, metadata, tiebreakers=None, team=None) -> dict:
    payload = {"player_id": player, "score": score}
    if team is not None:
        payload["team_id"] = team
    if region:
        payload["region"] = region
    if metadata is not None:
        payload["metadata"] = metadata
    if tiebreakers is not None:
        payload["tiebreakers"] = tiebreakers
    return payload


def _as_answered(standings: list[tuple], shards: int) -> list[tuple]:
    """(period, region, score, rank, previous score, previous rank, tie-breakers) as a
    submission answers them: one to a sharded board reaches one shard, so it answers no rank
    (documented)."""
    return [
        (
            period,
            region,
            score,
            rank if shards == 1 else None,
            old,
            before if shards == 1 else None,
            tb,
        )
        for period, region, score, rank, old, before, tb in standings
    ]


def _answered(standings: list[dict]) -> list[tuple]:
    return [
        (
            s["period"],
            s["region"],
            float(s["score"]),
            s["rank"],
            None if s["previous_score"] is None else float(s["previous_score"]),
            s["previous_rank"],
            s.get("tiebreakers"),
        )
        for s in standings
    ]


def check_against_model(index, mode, sort, ties, ops, board_rules, shards=1) -> None:
    """Replay `ops` on a new board through the real services and on the model; compare."""
    board_id, clock, model = _new_board(index, mode, sort, ties, board_rules, shards)
    service = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)

    for op in ops:
        if op[0] == "advance":
            clock.now += timedelta(hours=op[1])
            continue
        if op[0] in ("hide", "unhide"):
            _set_hidden(index, model, board_id, clock, op)
            continue
        _, player, score, region, metadata, tb_values, how, *named = op
        tiebreakers = _tiebreakers(model, tb_values, how)
        team = named[0] if named else None
        payload = _payload(player, score, region, metadata, tiebreakers, team)
        try:
            applied, standings = model.submit(
                player, float(score), region, metadata, clock(), tiebreakers, team
            )
            expected_error = None
        except ModelError as exc:
            expected_error = exc.code
        try:
            got = service.submit(board_id, payload, SERVER, None).body
        except DomainError as exc:
            assert expected_error is not None, f"unexpected {exc!r} for {payload}"
            assert exc.status == 422
            continue
        assert expected_error is None, f"expected {expected_error} for {payload}, got {got}"
        assert got["applied"] == applied
        assert _answered(got["standings"]) == _as_answered(standings, shards)

    _compare_reads(model, reads, board_id, clock)


# Batches: the same submissions plus what only a batch holds: an item sent again with its
# idempotency key (a replay inside the batch), the key reused with another score (409), an
# item that is not a valid submission (400), and a cut between batches.
batch_op = st.one_of(
    submit_op,
    submit_op,
    submit_op,
    advance_op,
    st.tuples(st.just("replay")),
    st.tuples(st.just("conflict")),
    st.tuples(st.just("bad"), st.sampled_from([{"score": "7"}, {"player_id": "a b", "score": 1}])),
    st.tuples(st.just("cut")),
)
BATCH_OPS = st.lists(batch_op, min_size=1, max_size=36)
HIDDEN_BATCH_OPS = st.lists(st.one_of(batch_op, hide_op), min_size=1, max_size=36)


def check_batches_against_model(index, mode, sort, ties, ops, board_rules, shards=1) -> None:
    """Replay `ops` as batches (cut at each advance, each "cut" and every 9 items) through
    `submit_batch` and on the model; every item's result and then every read compared."""
    board_id, clock, model = _new_board(index, mode, sort, ties, board_rules, shards)
    service = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    stored: dict[str, tuple[dict, dict]] = {}  # key -> (body, its first result): Redis's record
    items: list[dict] = []
    keyed: list[dict] = []  # this batch's items that carry a key

    def expect(item: dict) -> tuple:
        """What the item must answer, evaluated in batch order on the model."""
        if "bad" in item:
            return (400,)
        key = item.get("idempotency_key")
        body = {k: v for k, v in item.items() if k != "idempotency_key"}
        if key in stored:
            return ("replay", key) if stored[key][0] == body else (409,)
        try:
            applied, standings = model.submit(
                body["player_id"],
                float(body["score"]),
                body.get("region"),
                body.get("metadata"),
                clock(),
                body.get("tiebreakers"),
                body.get("team_id"),
            )
        except ModelError:
            return (422,)
        if key:
            stored[key] = (body, {})  # its result is filled in when the batch answers
        return (200, applied, standings, key)

    def flush() -> None:
        if not items:
            return
        expected = [expect(item) for item in items]
        sent = [item.get("bad", item) for item in items]
        results = service.submit_batch(board_id, {"submissions": sent}, SERVER).body["results"]
        assert len(results) == len(items)
        for item, want, got in zip(items, expected, results, strict=True):
            if want[0] == "replay":
                first = stored[want[1]][1]
                assert (got["status"], got["replayed"], got["result"]) == (200, True, first), item
            elif want[0] == 200:
                _, applied, standings, key = want
                assert got["status"] == 200 and not got["replayed"], (item, got)
                result = got["result"]
                assert result["applied"] == applied, item
                assert _answered(result["standings"]) == _as_answered(standings, shards), item
                if key:
                    stored[key][1].update(result)
            else:
                assert got["status"] == want[0], (item, got)
        items.clear()
        keyed.clear()

    for n, op in enumerate(ops):
        kind = op[0]
        if kind == "advance":
            flush()
            clock.now += timedelta(hours=op[1])
        elif kind in ("hide", "unhide"):
            flush()
            _set_hidden(index, model, board_id, clock, op)
        elif kind == "cut":
            flush()
        elif kind == "bad":
            items.append({"bad": op[1]})
        elif kind in ("replay", "conflict") and keyed:
            again = dict(keyed[-1])
            if kind == "conflict":
                again["score"] = again["score"] + 1
            items.append(again)
        elif kind == "submit":
            _, player, score, region, metadata, tb_values, how, *named = op
            item = _payload(
                player,
                score,
                region,
                metadata,
                _tiebreakers(model, tb_values, how),
                named[0] if named else None,
            )
            if n % 2 == 0:
                item["idempotency_key"] = f"k-{n}"
                keyed.append(item)
            items.append(item)
        if len(items) >= 9:
            flush()
    flush()
    _compare_reads(model, reads, board_id, clock)
