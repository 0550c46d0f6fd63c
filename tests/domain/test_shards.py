"""Issue 22: the merge arithmetic of sharded boards, against one sorted list holding the same
entries (no server: what a shard's script returns is computed here the way it computes it)."""

from __future__ import annotations

import math
import random
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.crc import key_slot as redis_key_slot

from leaderboard.domain.shards import (
    CLUSTER_SLOTS,
    Run,
    arrival_prefix,
    covers,
    key_slot,
    merge_runs,
    order_key,
    run_bounds,
    shard_board_ids,
    shard_of,
)


def _board(entries: list[tuple[str, float]], desc: bool) -> list[tuple[str, float]]:
    return sorted(entries, key=order_key(desc))


def _ranks(board: list[tuple[str, float]], desc: bool, first: bool) -> list[int]:
    ranks = []
    for position, (_, score) in enumerate(board):
        if first or position == 0 or board[position - 1][1] != score:
            ranks.append(position + 1)
        else:
            ranks.append(ranks[-1])
    return ranks


def _run(shard: list[tuple[str, float]], a: int, b: int, desc: bool, first: bool) -> Run:
    """What shard_read.lua's range op answers: start clamped into the set, `better` counted."""
    total = len(shard)
    start = min(a, max(total - 1, 0))
    rows = tuple(shard[start : b + 1]) if total else ()
    if first or not rows:
        better = start
    else:
        score = rows[0][1]
        better = sum(1 for _, s in shard if (s > score if desc else s < score))
    return Run(start, rows, better, total)


entries = st.lists(
    st.tuples(st.integers(0, 400), st.sampled_from([0.0, 1.0, 2.0, 5.5, 7.0, 9.0, 100.0])),
    min_size=0,
    max_size=150,
    unique_by=lambda e: e[0],
)


@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("desc", [True, False])
@given(
    rows=entries,
    shards=st.sampled_from([1, 2, 3, 8]),
    start=st.integers(0, 160),
    size=st.integers(1, 25),
)
def test_merged_runs_are_the_board_at_every_window(rows, shards, start, size, desc, first):
    board = _board([(f"p{n}", score) for n, score in rows], desc)
    ranks = _ranks(board, desc, first)
    parts = [[row for row in board if shard_of(row[0], shards) == s] for s in range(shards)]
    for attempt in range(3):
        a, b = run_bounds(start, start + size, shards, attempt)
        runs = [_run(part, a, b, desc, first) for part in parts]
        placed = merge_runs(runs, desc, first)
        for entry in placed:  # whatever is proven is right
            assert board[entry.position] == (entry.member, entry.score)
            assert entry.rank == ranks[entry.position]
        if covers(placed, start, start + size, len(board)):
            break
    else:
        pytest.fail("the last attempt must always cover the window")


def test_the_first_attempt_usually_covers_a_deep_page():
    """The players' hash spreads them evenly, so one round nearly always suffices."""
    rng = random.Random(7)
    board = _board([(f"player-{n}", float(rng.randrange(10**6))) for n in range(40_000)], True)
    parts = [[row for row in board if shard_of(row[0], 8) == s] for s in range(8)]
    hits = 0
    for start in range(0, 30_000, 1_000):
        a, b = run_bounds(start, start + 10, 8, 0)
        runs = [_run(part, a, b, True, False) for part in parts]
        hits += covers(merge_runs(runs, True, False), start, start + 10, len(board))
    assert hits == 30


def test_a_shard_is_chosen_by_the_player_alone_and_spreads_players_evenly():
    counts = [0] * 8
    for n in range(80_000):
        counts[shard_of(f"player-{n}", 8)] += 1
    assert shard_of("ada", 8) == shard_of("ada", 8)
    assert max(counts) < 1.05 * min(counts)
    assert all(shard_of(f"p{n}", 1) == 0 for n in range(100))


def test_arrival_prefixes_order_earlier_first_in_the_sets_own_order():
    early, late = 1_795_000_000_000_000, 1_795_000_000_000_001
    # desc boards read equal scores by descending member bytes, asc ones ascending
    assert arrival_prefix(early, 0, True) > arrival_prefix(late, 0, True)
    assert arrival_prefix(early, 0, False) < arrival_prefix(late, 0, False)
    assert arrival_prefix(early, 1, False) < arrival_prefix(early, 2, False)
    assert len(arrival_prefix(early, 999, True)) == 19


def _node_group_counts(board_id: str, shards: int, groups: int) -> list[int]:
    """Shards per node group, the slots split into equal contiguous ranges (a new cluster's
    split, and the local cluster's)."""
    bounds = [math.floor((g + 1) * CLUSTER_SLOTS / groups) for g in range(groups)]
    counts = [0] * groups
    for tag in shard_board_ids(board_id, shards):
        counts[next(g for g, end in enumerate(bounds) if key_slot(tag) < end)] += 1
    return counts


def test_a_boards_shards_spread_over_evenly_split_node_groups_as_evenly_as_counts_allow():
    # Plain `{board.s}` tags did not: CRC16 is linear, so on 8 node groups the 8 shards of
    # every board used only 4 of them, and on 2 node groups 2 shards always shared one.
    rng = random.Random(22)
    ids = [
        "".join(rng.choices(string.ascii_lowercase + "-_:", k=rng.randint(1, 40)))
        for _ in range(24)
    ]
    for groups in (2, 3, 4, 8, 16, 80):
        for shards in (2, 3, 4, 5, 7, 8, 16, 80, 256):
            for board_id in ids[:3] if shards >= 80 else ids:
                counts = _node_group_counts(board_id, shards, groups)
                assert max(counts) == math.ceil(shards / groups), (board_id, shards, counts)


def test_shard_tags_hash_as_redis_cluster_does_and_never_change():
    # The slot function is Redis Cluster's, on the key's hash tag.
    for tag in ("launch.0", "arena.2.1", "ü-board.7.13"):
        assert key_slot(tag) == redis_key_slot(f"lb:{{{tag}}}:cfg".encode())
    # Pinned: a board's keys must be found where earlier releases wrote them.
    assert shard_board_ids("launch", 8) == [
        "launch.0.71",
        "launch.1.29",
        "launch.2.10",
        "launch.3.48",
        "launch.4",
        "launch.5.49",
        "launch.6.70",
        "launch.7.28",
    ]
    assert shard_board_ids("arena", 3) == ["arena.0.4", "arena.1.2", "arena.2.1"]
    # Every tag of a board is its own, and names the board and the shard first.
    tags = shard_board_ids("b", 256)
    assert len(set(tags)) == 256
    assert all(tag.split(".")[:2] == ["b", str(s)] for s, tag in enumerate(tags))
