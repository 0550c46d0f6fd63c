"""A submission is acknowledged only once a replica has it (REDIS_REPLICA_ACKS), on a real local
cluster with a replica per master. Replication is asynchronous: without the WAIT, a master that
answered a write and died before its replica had it loses the write on failover while the record
keeps it. With it, a write the replica has not confirmed is answered 503 and not queued; its
retry with the same key replays it once the replica has it."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from redis.crc import key_slot

from devstack.servers import EmbeddedValkey, EmbeddedValkeyCluster
from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import Unavailable
from leaderboard.domain.shards import shard_board_id, shard_of
from leaderboard.services.scores import ScoreService
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish

pytestmark = pytest.mark.cluster
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedValkeyCluster]:
    with EmbeddedValkeyCluster(masters=3, replicas=1) as nodes:
        yield nodes


@pytest.fixture
def scores(cluster, clock) -> Iterator[tuple[ScoreService, ListSink, RedisIndex]]:
    client = connect(cluster.url, cluster=True, timeout=5)
    index = RedisIndex(client, replica_acks=1, replica_ack_timeout_ms=200)
    sink = ListSink()
    yield ScoreService(index, sink, clock), sink, index
    client.close()


@contextmanager
def _frozen(node: EmbeddedValkey) -> Iterator[None]:
    """The node stops answering (and acknowledging replication) until the block ends."""
    os.kill(node.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(node.pid, signal.SIGCONT)


def _replica_of(cluster: EmbeddedValkeyCluster, tag: str) -> EmbeddedValkey:
    _, replicas = cluster.slot_owner(key_slot(BoardKeys(tag).cfg.encode()))
    return replicas[0]


def test_a_write_no_replica_confirmed_is_503_and_not_queued_until_its_retry_replays(
    cluster, scores, board_id
):
    service, sink, index = scores
    publish(index, board_id, mode="increment")
    body = {"player_id": "ada", "score": 5}
    assert service.submit(board_id, body, SERVER, "k0").body["version"] == 1
    assert len(sink.events) == 1  # confirmed by the replica: acknowledged and queued

    with _frozen(_replica_of(cluster, board_id)):
        with pytest.raises(Unavailable, match="no replica has confirmed it"):
            service.submit(board_id, body, SERVER, "k1")
        assert len(sink.events) == 1  # not queued: a failover now could still lose it
    # The replica caught up: the retry with the same key replays the write, applied once.
    again = service.submit(board_id, body, SERVER, "k1")
    assert again.replayed and again.body["standings"][0]["score"] == 10
    assert [e.version for e in sink.events] == [1, 2]


def test_a_batch_refuses_only_the_items_of_the_node_whose_replica_is_frozen(
    cluster, scores, board_id
):
    service, sink, index = scores
    board = publish(index, board_id, mode="best")
    from dataclasses import replace

    index.publish_board(replace(board, shards=8, version=board.version + 1))
    players = [f"p{n}" for n in range(40)]
    tags = {p: shard_board_id(board_id, shard_of(p, 8), 8) for p in players}
    frozen = _replica_of(cluster, tags["p0"])
    stuck = {p for p in players if _replica_of(cluster, tags[p]).port == frozen.port}
    assert stuck and len(stuck) < len(players)  # the shards span several nodes
    items = [
        {"player_id": p, "score": 10 + n, "idempotency_key": f"i{n}"} for n, p in enumerate(players)
    ]
    index.write_rules(board_id)
    with _frozen(frozen):
        results = service.submit_batch(board_id, {"submissions": items}, SERVER).body["results"]
    for player, result in zip(players, results, strict=True):
        if player in stuck:
            assert result["status"] == 503 and result["error"]["retry_after"] == 1, result
        else:
            assert result["status"] == 200 and not result["replayed"], result
    assert {e.player_id for e in sink.events} == set(players) - stuck
    # Their retry replays them: each applied once, every event queued once in all.
    retry = service.submit_batch(board_id, {"submissions": items}, SERVER).body["results"]
    assert all(r["status"] == 200 and r["replayed"] for r in retry)
    assert sorted(e.player_id for e in sink.events if e.player_id in stuck) == sorted(stuck)


def test_without_replica_acks_nothing_waits(cluster, clock, board_id):
    client = connect(cluster.url, cluster=True, timeout=5)
    index = RedisIndex(client)
    service = ScoreService(index, ListSink(), clock)
    publish(index, board_id)
    with _frozen(_replica_of(cluster, board_id)):
        result = service.submit(board_id, {"player_id": "ada", "score": 1}, SERVER, None)
    assert result.body["version"] == 1
    client.close()


def test_the_wait_rides_in_the_submissions_round_trip(cluster, clock, board_id):
    """Still one round trip per submission, and per node for a batch (issue 22's counts)."""
    from dataclasses import replace

    from redis.cluster import RedisCluster

    from tests.support.round_trips import CountingConnection, counted

    client = RedisCluster.from_url(
        cluster.url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client, replica_acks=1)
    service = ScoreService(index, ListSink(), clock)
    board = publish(index, board_id, mode="increment")
    service.submit(board_id, {"player_id": "warm", "score": 1}, SERVER, None)
    trips, _ = counted(
        lambda: service.submit(board_id, {"player_id": "a", "score": 1}, SERVER, "k")
    )
    assert trips == 1
    index.publish_board(replace(board, shards=8, version=board.version + 1))
    index.write_rules(board_id)
    items = [{"player_id": f"p{n}", "score": n} for n in range(100)]
    nodes = {
        client.get_node_from_key(BoardKeys(shard_board_id(board_id, s, 8)).cfg).name
        for s in range(8)
    }
    trips, response = counted(
        lambda: service.submit_batch(board_id, {"submissions": items}, SERVER)
    )
    assert {r["status"] for r in response.body["results"]} == {200}
    assert trips == len(nodes) == 3  # one pipeline to each node holding shards, WAIT included
    client.close()


def test_a_node_left_without_a_replica_keeps_taking_writes(cluster, scores, board_id):
    """Its replica gone (dead, or promoted in its place), no failover can promote a copy
    without the write: asking for a confirmation nobody can give would only refuse writes. A
    lagging replica (the frozen case above) still counts, and refuses them."""
    service, sink, index = scores
    publish(index, board_id, mode="increment")
    replica = _replica_of(cluster, board_id)
    replica.kill()
    try:
        deadline = time.monotonic() + 10
        while True:  # the master notices the closed replication link at once
            try:
                result = service.submit(board_id, {"player_id": "ada", "score": 1}, SERVER, "a")
                break
            except Unavailable:
                assert time.monotonic() < deadline, "writes were refused with no replica left"
                time.sleep(0.1)
        assert result.body["version"] >= 1 and len(sink.events) == 1
    finally:
        replica.start()
        cluster.wait_role(replica, "slave", timeout=60)
