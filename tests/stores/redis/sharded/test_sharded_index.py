"""Issue 22: boards split over K shards answer every read exactly as one sorted set would, on a
real local Redis Cluster (the shards spread over its three nodes) and on one node."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from devstack.servers import EmbeddedValkeyCluster
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.examples import examples
from tests.support.model_check import (
    BATCH_OPS,
    OPS,
    check_against_model,
    check_batches_against_model,
    rules,
    tiebreaker_rules,
)

NO_MAX_ENTRIES = rules.filter(lambda r: r["max_entries"] is None)
TIEBREAKERS = tiebreaker_rules.map(lambda r: {**r, "max_entries": None})


@pytest.fixture(scope="module")
def cluster_index():
    with EmbeddedValkeyCluster() as nodes:
        client = connect(nodes.url, cluster=True)
        yield RedisIndex(client)
        client.close()


@pytest.mark.cluster
@pytest.mark.parametrize("shards", [1, 2, 3, 8])
@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@settings(max_examples=examples(1))
@given(ops=OPS, board_rules=NO_MAX_ENTRIES)
def test_sharded_boards_match_the_reference_model_on_a_cluster(
    cluster_index, mode, sort, ties, shards, ops, board_rules
):
    check_against_model(cluster_index, mode, sort, ties, ops, board_rules, shards)


@pytest.mark.cluster
@pytest.mark.parametrize(
    "shards", [2, 3, 8]
)  # K = 1 on the cluster: tests/stores/redis/test_cluster.py
@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@settings(max_examples=examples(1))
@given(ops=BATCH_OPS, board_rules=NO_MAX_ENTRIES)
def test_sharded_batches_match_the_reference_model_on_a_cluster(
    cluster_index, mode, sort, ties, shards, ops, board_rules
):
    check_batches_against_model(cluster_index, mode, sort, ties, ops, board_rules, shards)


@pytest.mark.parametrize("shards", [3, 8])
@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@settings(max_examples=examples(8))
@given(ops=OPS, board_rules=NO_MAX_ENTRIES)
def test_sharded_boards_match_the_reference_model_on_one_node(
    session_index, sort, ties, shards, ops, board_rules
):
    check_against_model(session_index, "best", sort, ties, ops, board_rules, shards)


@pytest.mark.cluster
@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@settings(max_examples=examples(1))
@given(ops=BATCH_OPS, board_rules=TIEBREAKERS)
def test_sharded_tiebreaker_batches_match_the_reference_model_on_a_cluster(
    cluster_index, sort, ties, ops, board_rules
):
    check_batches_against_model(cluster_index, "best", sort, ties, ops, board_rules, 3)


def _fed_alike(index, clock, shards: int, ties: str, sort: str) -> tuple[str, str]:
    """An unsharded board and a sharded one fed the same 3,000 submissions (many ties)."""
    import random
    import uuid
    from dataclasses import replace

    from leaderboard.services.scores import ScoreService
    from tests.support.boards import ListSink, publish

    rules = {"mode": "best", "ties": ties, "sort": sort, "regions": ["EU"]}
    plain, split = f"d1-{uuid.uuid4().hex[:8]}", f"d{shards}-{uuid.uuid4().hex[:8]}"
    publish(index, plain, **rules)
    board = publish(index, split, **rules)
    index.publish_board(replace(board, shards=shards, version=board.version + 1))
    service = ScoreService(index, ListSink(), clock)
    rng = random.Random(shards)
    items = [
        {
            "player_id": f"p{n:04d}",
            "score": rng.randrange(40),
            "region": "EU" if n % 3 else None,
            "metadata": {"n": n},
        }
        for n in range(3000)
    ]
    for start in range(0, len(items), 500):
        body = {"submissions": items[start : start + 500]}
        for board_id in (plain, split):
            results = service.submit_batch(board_id, body, SERVER)
            assert {r["status"] for r in results.body["results"]} == {200}
    return plain, split


SERVER = __import__("leaderboard.domain.auth", fromlist=["Caller"]).Caller(
    "game-server", frozenset({"leaderboard/server"})
)


@pytest.mark.parametrize(
    ("shards", "ties", "sort"), [(8, "shared", "desc"), (3, "first", "asc"), (5, "first", "desc")]
)
def test_a_sharded_board_reads_exactly_as_the_same_board_unsharded(
    session_index, clock, shards, ties, sort
):
    """Deep pages, windows around ranks and players, many players and standings, on boards big
    enough that the shards' runs start far down (the reference-model boards are small)."""
    from leaderboard.services.reads import ReadService

    plain, split = _fed_alike(session_index, clock, shards, ties, sort)
    reads = ReadService(session_index, clock)

    def both(call, *args):
        return call(plain, *args), call(split, *args)

    for region in (None, "EU"):
        scope = {"region": region} if region else {}
        for offset in (0, 1, 37, 499, 1000, 1990, 2750, 2999, 3100):
            a, b = both(reads.entries, scope | {"offset": str(offset), "limit": "25"})
            assert a == b | {"board_id": plain}, (region, offset)
        for rank in (1, 2, 500, 1234, 2999, 5000):
            query = scope | {"around_rank": str(rank), "limit": "11"}
            a, b = both(reads.entries, query)
            assert a == b | {"board_id": plain}, (region, rank)
        for player in ("p0000", "p0001", "p1500", "p2999"):
            if region and int(player[1:]) % 3 == 0:  # no regional entry
                continue
            a, b = (reads.player(board, player, scope) for board in (plain, split))
            assert a == b | {"board_id": plain}, (region, player)
            query = scope | {"count": "9"}
            a, b = (reads.around(board, player, query) for board in (plain, split))
            assert a == b | {"board_id": plain}, (region, player)
        ids = ",".join(f"p{n:04d}" for n in range(0, 3000, 97)) + ",nobody,p0001"
        a, b = both(reads.players, scope | {"ids": ids})
        assert a == b | {"board_id": plain}, region
    for player in ("p0000", "p0002", "p2999"):
        a, b = (reads.standings(board, player, {}) for board in (plain, split))
        assert a == b | {"board_id": plain}, player


def _sharded(index, board_id: str, shards: int, **rules):
    from dataclasses import replace

    from tests.support.boards import publish

    board = publish(index, board_id, **rules)
    board = replace(board, shards=shards, version=board.version + 1)
    index.publish_board(board)
    return board


def test_admin_delete_removes_the_player_from_its_shard_and_the_ranks_close_up(
    index, board_id, clock
):
    from leaderboard.domain.errors import NotFound
    from leaderboard.services.reads import ReadService
    from leaderboard.services.scores import ScoreService
    from tests.support.boards import ListSink

    _sharded(index, board_id, 4, regions=["EU"])
    scores = ScoreService(index, ListSink(), clock)
    items = [{"player_id": f"p{n}", "score": n, "region": "EU"} for n in range(40)]
    scores.submit_batch(board_id, {"submissions": items}, SERVER)
    removed, version = index.delete_player(board_id, "p39")
    assert removed == 4 and version >= 1  # all-time and weekly, globally and in EU
    reads = ReadService(index, clock)
    with pytest.raises(NotFound):
        reads.player(board_id, "p39", {})
    top = reads.entries(board_id, {"limit": "2", "region": "EU"})
    assert [(e["rank"], e["player_id"]) for e in top["entries"]] == [(1, "p38"), (2, "p37")]
    assert top["total"] == 39
    assert index.board_entry_count(board_id) == 39 * 4


def test_the_relay_drains_every_shards_outbox_under_the_boards_own_id(index, board_id, clock):
    """A sharded board keeps one outbox per shard; the relay sends what PostgreSQL lacks."""
    from leaderboard.services.relay import OutboxRelay
    from leaderboard.services.scores import ScoreService
    from tests.support.boards import ListSink

    _sharded(index, board_id, 3)
    lost = ListSink(refuse={f"p{n}" for n in range(30)})  # every queue send fails
    items = [{"player_id": f"p{n}", "score": n} for n in range(30)]
    ScoreService(index, lost, clock).submit_batch(board_id, {"submissions": items}, SERVER)
    assert lost.events == []

    class Record:
        stored: set[str] = set()

        def stored_event_ids(self, ids):
            return self.stored & set(ids)

    sink = ListSink()
    report = OutboxRelay(index, Record(), sink).run([board_id], min_age_ms=-60_000)
    assert report.sent == 30 and report.boards == 1
    assert {e.board_id for e in sink.events} == {board_id}
    assert sorted(e.player_id for e in sink.events) == sorted(f"p{n}" for n in range(30))
    assert OutboxRelay(index, Record(), ListSink()).run([board_id], min_age_ms=-60_000).sent == 0
