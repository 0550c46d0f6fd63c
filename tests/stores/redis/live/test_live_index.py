"""The changes the live publisher reads from Redis (stores/redis/live/: index.py and sharded.py),
checked against the reference model: one update per channel per batch of writes, malformed
outbox entries skipped, changed entries capped."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.domain.shards import shard_board_id, shard_of
from leaderboard.services.live import board_channels
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.live.index import LiveIndex
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import publish
from tests.support.examples import examples
from tests.support.live import NOW, num, submit, submit_on_both
from tests.support.reference_model import ModelBoard


def _changes(live: LiveIndex, index: RedisIndex, board_id: str) -> Any:
    (public,) = [b for b in live.catalog() if b["board_id"] == board_id]
    (result,) = live.changes([board_channels(public, NOW)])
    assert not isinstance(result, Exception), result
    return result


OPS = st.lists(
    st.tuples(
        st.sampled_from(["p1", "p2", "p3", "p4", "p5", "p6"]),
        st.integers(-5, 20),
        st.sampled_from([None, "EU"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=examples(16),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rules=st.fixed_dictionaries(
        {
            "mode": st.sampled_from(["best", "increment", "set"]),
            "ties": st.sampled_from(["shared", "first"]),
            "sort": st.sampled_from(["desc", "asc"]),
            "max_entries": st.sampled_from([None, 4]),
            "live_top": st.integers(1, 5),
            # issue 23: tops and changed entries carry tie-breakers, ranked by the tuple
            "tiebreakers": st.sampled_from(
                [None, None, [{"name": "t1", "sort": "asc"}, {"name": "t2", "sort": "desc"}]]
            ),
        }
    ),
    batches=st.lists(OPS, min_size=1, max_size=4),
)
def test_each_batch_of_writes_becomes_one_update_per_channel_matching_the_model(
    session_index: RedisIndex, rules: dict[str, Any], batches: list[list[tuple]]
) -> None:
    _check_live(session_index, rules, batches, shards=1)


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rules=st.fixed_dictionaries(
        {
            "mode": st.sampled_from(["best", "increment", "set"]),
            "ties": st.sampled_from(["shared", "first"]),
            "sort": st.sampled_from(["desc", "asc"]),
            "live_top": st.integers(1, 5),
            "tiebreakers": st.sampled_from([None, [{"name": "t1", "sort": "desc"}]]),
        }
    ),
    batches=st.lists(OPS, min_size=1, max_size=4),
    shards=st.sampled_from([2, 3, 8]),
)
def test_sharded_boards_send_the_same_updates_merged_over_their_shards(
    session_index: RedisIndex, rules: dict[str, Any], batches: list[list[tuple]], shards: int
) -> None:
    """Issue 22: tops, changed players' ranks, totals and the version chain of a sharded board
    are the board's, not a shard's."""
    _check_live(session_index, rules, batches, shards)


def _check_live(
    session_index: RedisIndex, rules: dict[str, Any], batches: list[list[tuple]], shards: int
) -> None:
    from dataclasses import replace

    board_id = f"live-{uuid.uuid4().hex[:12]}"
    board = publish(
        session_index, board_id, regions=["EU"], periods=["all-time", "weekly"], **rules
    )
    if shards > 1:
        board = replace(board, shards=shards, version=board.version + 1)
        session_index.publish_board(board)
    model = ModelBoard(board)
    live = LiveIndex(session_index.client)
    last_version: dict[tuple[str, str | None], int] = {}
    for batch in batches:
        touched: dict[tuple[str, str | None], set[str]] = defaultdict(set)
        before = {k: dict(v) for k, v in model.keys.items()}
        # Issue 23: a changed entry's previous_rank is its rank before its first change since
        # the last update (None: it had no entry, it was trimmed out first, a sharded board).
        previous: dict[tuple[str, str | None], dict[str, int | None]] = defaultdict(dict)
        for player, score, region in batch:
            held = {k: dict(v) for k, v in model.keys.items()}
            _, standings = submit_on_both(
                session_index, model, board_id, player, score, region, {"n": player}
            )
            for period, where, _, _, old, prev_rank, _ in standings:
                rows = model.keys.get((period, where), {})
                # changed: a new entry (even one trimmed out at once), a new score or new
                # tie-breakers (the model replaces a row that changes)
                if old is None or rows.get(player) is not held.get((period, where), {}).get(player):
                    previous[(period, where)].setdefault(player, prev_rank)
            for key, players in held.items():
                for gone in set(players) - set(model.keys.get(key, {})):
                    previous[key].setdefault(gone, None)
        for key, rows in model.keys.items():
            old = before.get(key, {})
            for player in set(rows) | set(old):
                if (
                    player not in rows
                    or player not in old
                    or rows[player].score != old[player].score
                ):
                    touched[key].add(player)
        changes = _changes(live, session_index, board_id)
        by_scope = {(u.channel.period_id, u.channel.region): u for u in changes.updates}
        assert set(by_scope) >= {k for k, players in touched.items() if players}
        written = {player for player, _, _ in batch}
        for (period, region), update in by_scope.items():
            total, top = model.page(period, region, 0, board.live_top)
            assert update.total == total
            assert [e.to_json() for e in update.top] == [
                dict(e, score=num(e["score"])) for e in top
            ]
            # Every player whose standing changed is reported, with its current rank and score
            # (or as removed); a player who entered and was trimmed out in the same tick is
            # reported removed, which a client applies as a no-op.
            reported = {e.player_id: (e.rank, e.score, e.tiebreakers) for e in update.changed}
            assert set(reported) >= touched[(period, region)]
            assert set(reported) <= written | {p for rows in before.values() for p in rows}
            ordered = model.ordered(period, region)
            for player, state in reported.items():
                index = next((i for i, r in enumerate(ordered) if r.player == player), None)
                assert state == (
                    (None, None, None)
                    if index is None
                    else (
                        model.rank_of(ordered, index),
                        num(ordered[index].score),
                        model.entry(ordered, index).get("tiebreakers"),
                    )
                )
            assert {e.player_id: e.previous_rank for e in update.changed} == {
                p: previous[(period, region)][p] if shards == 1 else None for p in reported
            }
            key = (update.channel.period_kind, region)
            assert update.previous_version == last_version.get(key)
            assert update.version > (last_version.get(key) or 0)  # versions only grow
            last_version[key] = update.version
    assert _changes(live, session_index, board_id).updates == ()  # nothing new: no message


def test_a_malformed_outbox_entry_is_skipped_and_counted(index: RedisIndex, board_id: str) -> None:
    board = publish(index, board_id)
    model = ModelBoard(board)
    live = LiveIndex(index.client)
    index.client.xadd(BoardKeys(board_id).outbox, {"junk": "not an event"})
    submit(index, model, board_id, "p1", 5)
    changes = _changes(live, index, board_id)
    assert changes.skipped == 1 and changes.entries_read == 2
    assert [e.player_id for u in changes.updates for e in u.changed] == ["p1", "p1"]


def test_changed_entries_are_capped_and_flagged(index: RedisIndex, board_id: str) -> None:
    board = publish(index, board_id, periods=["all-time"])
    model = ModelBoard(board)
    live = LiveIndex(index.client, max_changed=3)
    for i in range(5):
        submit(index, model, board_id, f"p{i}", i)
    (update,) = _changes(live, index, board_id).updates
    assert update.changed_truncated
    assert [e.player_id for e in update.changed] == ["p4", "p3", "p2"]  # the latest first


@pytest.mark.parametrize("shards", [1, 3])
def test_hiding_a_player_takes_them_out_of_live_messages_and_their_writes_stay_silent(
    index: RedisIndex, board_id: str, shards: int
) -> None:
    """Issue 23: hiding a player is a change of every channel the player was on (they leave
    its top, reported removed with the rank they had); their own writes while hidden change
    nothing anyone sees, so they publish nothing; showing them again brings them back."""
    from dataclasses import replace

    board = publish(index, board_id, periods=["all-time"], live_top=3)
    if shards > 1:
        index.publish_board(replace(board, shards=shards, version=board.version + 1))
    model = ModelBoard(board)
    live = LiveIndex(index.client)
    for player, score in [("p1", 50), ("p2", 40), ("p3", 30), ("p4", 20)]:
        submit(index, model, board_id, player, score)
    _changes(live, index, board_id)

    def hide(player: str, hidden: bool) -> None:
        index.set_hidden(board_id, player, hidden, event_id=str(uuid.uuid4()), now_ms=1)

    hide("p1", True)
    (update,) = _changes(live, index, board_id).updates
    assert [(e.player_id, e.rank) for e in update.top] == [("p2", 1), ("p3", 2), ("p4", 3)]
    assert update.total == 3
    ((gone),) = update.changed
    assert (gone.player_id, gone.rank, gone.score) == ("p1", None, None)
    assert gone.previous_rank == (1 if shards == 1 else None)

    submit(index, model, board_id, "p1", 60)  # hidden, yet applied and recorded
    assert _changes(live, index, board_id).updates == ()

    hide("p1", False)
    (update,) = _changes(live, index, board_id).updates
    top = update.top[0]
    assert (top.player_id, top.rank, top.score) == ("p1", 1, 110)
    assert [(e.player_id, e.rank) for e in update.changed] == [("p1", 1)]


def _sharded(index: RedisIndex, board_id: str, shards: int) -> ModelBoard:
    """A board of `shards` shards, published, with its reference model."""
    board = publish(index, board_id, periods=["all-time"])
    board = replace(board, shards=shards, version=board.version + 1)
    index.publish_board(board)
    return ModelBoard(board)


def _written_once(index: RedisIndex, board_id: str, shards: int) -> tuple[LiveIndex, Any]:
    """A sharded board with one write, and its catalog entry as the publisher read it."""
    model = _sharded(index, board_id, shards)
    live = LiveIndex(index.client)
    submit(index, model, board_id, "p1", 5)
    (public,) = [b for b in live.catalog() if b["board_id"] == board_id]
    return live, public


def test_a_sharded_boards_changes_are_capped_with_the_newest_first(
    index: RedisIndex, board_id: str
) -> None:
    """Over its shards a board keeps the newest changes: shards ordered by their newest
    change (each node's stream clock, to the millisecond), each shard's changes newest first,
    and the update says it was truncated."""
    model = _sharded(index, board_id, 3)
    live = LiveIndex(index.client, max_changed=3)
    players = [f"p{i}" for i in range(7)]
    for i, player in enumerate(players):
        submit(index, model, board_id, player, i)
    (update,) = _changes(live, index, board_id).updates
    assert update.changed_truncated
    changed = [e.player_id for e in update.changed]
    assert len(changed) == 3
    for shard in {shard_of(p, 3) for p in changed}:  # of each shard, its newest changes
        own = [p for p in changed if shard_of(p, 3) == shard]
        newest = [p for p in reversed(players) if shard_of(p, 3) == shard]
        assert own == newest[: len(own)]


def test_a_sharded_board_deleted_since_the_catalog_was_read_publishes_nothing(
    index: RedisIndex, board_id: str
) -> None:
    """The publisher read the catalog, then the board went (its shards' configurations with
    it): no message and no error, as for a board of one shard."""
    live, public = _written_once(index, board_id, 3)
    for shard in range(3):
        index.client.delete(BoardKeys(shard_board_id(board_id, shard, 3)).cfg)
    (result,) = live.changes([board_channels(public, NOW)])
    assert not isinstance(result, Exception), result
    assert result.updates == ()


def test_a_sharded_board_is_read_after_the_node_lost_its_scripts(
    index: RedisIndex, board_id: str
) -> None:
    """A restarted node has no scripts: the publisher loads them again and reads on."""
    live, _ = _written_once(index, board_id, 2)
    index.client.script_flush()
    (update,) = _changes(live, index, board_id).updates
    assert [(e.player_id, e.rank) for e in update.changed] == [("p1", 1)]


def test_a_sharded_board_whose_shard_fails_is_an_error_not_a_partial_update(
    index: RedisIndex, board_id: str
) -> None:
    """One shard's script failing (here: a key of the wrong type) fails the board's read as a
    whole, reported as its error: no update made of the other shards alone."""
    live, public = _written_once(index, board_id, 2)
    broken = BoardKeys(shard_board_id(board_id, 1, 2)).outbox
    index.client.delete(broken)
    index.client.set(broken, "not a stream")
    (result,) = live.changes([board_channels(public, NOW)])
    assert isinstance(result, Exception) and "WRONGTYPE" in str(result)
