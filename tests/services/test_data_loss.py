"""Redis data loss is detected and repaired (acceptance 4 of the persistence work): after
FLUSHALL in the middle of a workload no write lands on an empty board, reads come from the
record, and after recovery Redis equals PostgreSQL for every board, period, region and player,
ranks and metadata included."""

from __future__ import annotations

import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from devstack.consistency import assert_redis_equals_postgres
from devstack.servers import EmbeddedValkey
from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import Unavailable
from leaderboard.domain.shards import shard_board_ids
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rebuild import VERSION_GAP, Rebuilder
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.postgres.record_reads import PostgresReadModel
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.api import drain_queue
from tests.support.boards import ListSink

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
RULES = [
    {
        "ties": "first",
        "max_entries": 15,
        "regions": ["EU", "NA"],
        "periods": ["all-time", "daily", "weekly", "monthly"],
    },
    {"mode": "best", "sort": "asc", "regions": ["EU"], "periods": ["all-time", "weekly"]},
    {  # issue 23: tie keys survive the rebuild, and reads from the record order by them
        "mode": "best",
        "ties": "first",
        "regions": ["EU"],
        "periods": ["all-time", "daily"],
        "tiebreakers": [{"name": "time_ms", "sort": "asc"}, {"name": "deaths", "sort": "desc"}],
    },
    {
        "mode": "increment",
        "regions": ["EU"],
        "periods": ["all-time", "weekly"],
        "tiebreakers": [{"name": "laps", "sort": "desc"}],
    },
]
COLUMNS = {n: [c["name"] for c in r.get("tiebreakers", [])] for n, r in enumerate(RULES)}


@pytest.fixture
def valkey(tmp_path):
    with EmbeddedValkey(tmp_path / "valkey") as server:  # its own: this test flushes it
        yield server


def _submit_many(scores: ScoreService, boards: list[str], seed: int, count: int) -> list:
    def worker(n: int) -> list:
        rng = random.Random(seed * 100 + n)
        outcomes = []
        for i in range(count):
            body = {
                "player_id": f"p{rng.randrange(40)}",
                "score": rng.randrange(-10, 90),
                "region": rng.choice(["EU", None]),
            }
            board = rng.choice(boards)
            names = COLUMNS[boards.index(board)]
            if names:  # few values: equal tuples happen
                body["tiebreakers"] = {name: rng.randrange(3) for name in names}
                body["score"] = rng.randrange(4)
            if rng.random() < 0.5:
                body["metadata"] = {"name": f"{seed}-{n}-{i}"}
            try:
                outcomes.append(scores.submit(board, body, SERVER, None))
            except Unavailable as exc:
                outcomes.append(exc)
        return outcomes

    with ThreadPoolExecutor(max_workers=6) as pool:
        return [o for chunk in pool.map(worker, range(6)) for o in chunk]


def test_flushall_mid_workload_is_detected_and_repaired(
    valkey, database_url, board_id, clock, caplog
):
    db = Database(database_url)
    index = RedisIndex(connect(valkey.url))
    admin = BoardAdminService(db, index, clock)
    boards = [f"{board_id}-{n}" for n in range(len(RULES))]
    for board, rules in zip(boards, RULES, strict=True):
        admin.put_board(board, rules, ADMIN)
    sink = ListSink()
    record = BoardRepository(db)
    scores = ScoreService(index, sink, clock, in_record=lambda b: record.get(b) is not None)
    store = StandingsStore(db)
    reads = ReadService(index, clock, fallback=lambda: PostgresReadModel(db))

    _submit_many(scores, boards, seed=1, count=40)
    store.write(sink.events)  # the queue drained: every acknowledged event is in the record
    before = {b: reads.entries(b, {"limit": "100"}) for b in boards}

    index.client.flushall()  # the serving data of every board vanishes

    refused = _submit_many(scores, boards, seed=2, count=5)
    assert refused and all(isinstance(o, Unavailable) and o.status == 503 for o in refused)
    assert index.client.dbsize() == 0  # nothing was written on top of an empty board
    for board in boards:
        during = reads.entries(board, {"limit": "100"})
        assert during.pop("degraded") is True and during == before[board]
    with pytest.raises(Exception, match="does not exist"):
        scores.submit("never-created", {"player_id": "p", "score": 1}, SERVER, None)

    rebuilder = Rebuilder(db, index, chunk_size=7)  # tiny chunks: streaming is exercised
    # (the shared test database may hold other tests' boards too: they are lost here as well)
    assert set(boards) <= set(rebuilder.lost_boards())
    assert rebuilder.recover(queue_in_flight=3, now_ms=0, max_wait_ms=10**9) == []  # waits
    with caplog.at_level(logging.INFO, logger="leaderboard.rebuild"):
        reports = rebuilder.recover(queue_in_flight=0, now_ms=0)
    assert set(boards) <= {r.board_id for r in reports}
    assert any("entries loaded" in m for m in caplog.messages)  # progress is logged
    for board in boards:
        assert_redis_equals_postgres(index.client, database_url, board)
        after = reads.entries(board, {"limit": "100"})
        assert "degraded" not in after and after == before[board]

    sink.events.clear()
    resumed = _submit_many(scores, boards, seed=3, count=30)
    assert all(not isinstance(o, Exception) for o in resumed)
    assert min(o.event.version for o in resumed) > VERSION_GAP  # newer than anything before
    store.write(sink.events)
    for board in boards:
        assert_redis_equals_postgres(index.client, database_url, board)
    index.client.close()


def test_rebuild_route_and_a_put_on_a_lost_board(
    api, sqs, queue_url, admin_token, server_token, board_id, redis_client
):
    assert (
        api.call("PUT", f"/boards/{board_id}", {"regions": ["EU"]}, token=admin_token).status == 201
    )
    for n in range(5):
        api.call(
            "POST",
            f"/boards/{board_id}/scores",
            {"player_id": f"p{n}", "score": n, "region": "EU"},
            token=server_token,
        )
    # The persister has not stored these yet: the rebuild stops the board's writes and waits
    # for the record to hold them (here the persister drains the queue meanwhile), so none is
    # left out of the rebuilt index.
    with ThreadPoolExecutor(1) as pool:
        rebuilding = pool.submit(api.call, "POST", f"/boards/{board_id}/rebuild", token=admin_token)
        time.sleep(0.5)
        assert not rebuilding.done()  # waiting for the record
        drain_queue(sqs, queue_url, lambda e: api.api.invoke("PersisterFunction", e))
        summary = rebuilding.result(timeout=30)
    assert summary.status == 200 and summary.json()["board_id"] == board_id
    assert summary.json()["players"] == 5
    assert [
        e["player_id"] for e in api.call("GET", f"/boards/{board_id}/entries").json()["entries"]
    ] == ["p4", "p3", "p2", "p1", "p0"]
    assert api.call("POST", f"/boards/{board_id}/rebuild", token=server_token).status == 403
    assert api.call("POST", "/boards/nope/rebuild", token=admin_token).status == 404

    for key in redis_client.scan_iter(match=f"lb:\\{{{board_id}\\}}:*"):
        redis_client.delete(key)  # this board's data is lost
    refused = api.call(
        "POST", f"/boards/{board_id}/scores", {"player_id": "x", "score": 1}, token=server_token
    )
    assert refused.status == 503 and refused.headers["retry-after"]
    assert api.call("GET", f"/boards/{board_id}/entries").json()["degraded"] is True
    # Changing the rules of a lost board restores it rather than opening an empty board.
    assert (
        api.call("PUT", f"/boards/{board_id}", {"title": "back"}, token=admin_token).status == 200
    )
    assert (
        api.call(
            "POST", f"/boards/{board_id}/scores", {"player_id": "x", "score": 1}, token=server_token
        ).status
        == 200
    )


def test_a_rebuild_the_record_cannot_serve_yet_changes_nothing(
    index, database_url, board_id, clock
):
    """While acknowledged submissions are still on their way to PostgreSQL, a rebuild would
    leave them out for good: after its wait it answers 503 and the board is as it was."""
    db = Database(database_url)
    BoardAdminService(db, index, clock).put_board(board_id, {}, ADMIN)
    scores = ScoreService(index, ListSink(), clock)  # the events never reach the record
    scores.submit(board_id, {"player_id": "ada", "score": 7}, SERVER, None)
    with pytest.raises(Unavailable) as refused:
        Rebuilder(db, index).rebuild(board_id, wait_for_record=0.3)
    assert "persister is behind" in str(refused.value) and refused.value.retry_after == 5
    reads = ReadService(index, clock)
    assert [e["player_id"] for e in reads.entries(board_id, {})["entries"]] == ["ada"]
    assert scores.submit(board_id, {"player_id": "bob", "score": 3}, SERVER, None)  # in service
    assert not index.rebuild_in_progress(board_id)


def test_one_rebuild_at_a_time(index, database_url, board_id, clock):
    from leaderboard.domain.errors import Conflict

    db = Database(database_url)
    BoardAdminService(db, index, clock).put_board(board_id, {}, ADMIN)
    rebuilder = Rebuilder(db, index)
    assert index.lock_rebuild(board_id)  # someone else is rebuilding it
    with pytest.raises(Conflict):
        rebuilder.rebuild(board_id)
    index.client.delete(f"lb:{{{board_id}}}:cfg")  # lost meanwhile: recover() leaves it
    assert board_id not in {r.board_id for r in rebuilder.recover(queue_in_flight=0, now_ms=0)}
    index.unlock_rebuild(board_id)
    assert board_id in {r.board_id for r in rebuilder.recover(queue_in_flight=0, now_ms=0)}
    assert not index.client.exists(f"lb:{{{board_id}}}:rebuilding")  # released


@pytest.mark.parametrize("ties", ["shared", "first"])
def test_a_sharded_board_lost_from_redis_is_rebuilt_shard_by_shard(
    index, database_url, board_id, clock, ties
):
    """Issue 22: the record's standings go back to the shard of each player; every read is
    what it was before the loss, and the versions restart above the record on every shard."""
    from dataclasses import replace

    db = Database(database_url)
    admin = Caller("admin", frozenset({"leaderboard/admin"}))
    BoardAdminService(db, index, clock).put_board(
        board_id, {"regions": ["EU"], "periods": ["all-time", "weekly"], "ties": ties}, admin
    )
    repository = BoardRepository(db)
    board = replace(repository.get(board_id), shards=4)
    board = replace(board, version=board.version + 1)
    with db.transaction() as conn:
        repository.save(conn, board)
    index.publish_board(board)

    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    rng = random.Random(4)
    items = [
        {
            "player_id": f"p{rng.randrange(120)}",
            "score": rng.randrange(-5, 50),
            "region": rng.choice(["EU", None]),
            "metadata": {"n": n},
        }
        for n in range(400)
    ]
    server = Caller("game-server", frozenset({"leaderboard/server"}))
    for start in range(0, len(items), 50):  # ties=first: equal scores from many batches
        scores.submit_batch(board_id, {"submissions": items[start : start + 50]}, server)
    # The queue delivers out of order and more than once: the record keeps the same order.
    delivered = sink.events + rng.sample(sink.events, 100)
    rng.shuffle(delivered)
    for start in range(0, len(delivered), 37):
        StandingsStore(db).write(delivered[start : start + 37])
    reads = ReadService(index, clock)

    def snapshot():
        seen = {}
        for region in (None, "EU"):
            scope = {"region": region} if region else {}
            seen[("top", region)] = reads.entries(board_id, scope | {"limit": "100"})
            seen[("deep", region)] = reads.entries(board_id, scope | {"offset": "60"})
            seen[("players", region)] = reads.players(
                board_id, scope | {"ids": ",".join(f"p{n}" for n in range(0, 120, 7))}
            )
        return seen

    before = snapshot()
    assert assert_redis_equals_postgres(index.client, database_url, board_id) == 4
    for space in [board_id, *index.key_spaces(board_id)]:  # the node lost everything
        keys = index.client.keys(f"lb:{{{space}}}:*")
        if keys:
            index.client.delete(*keys)
    assert not index.board_loaded(board_id)

    report = Rebuilder(db, index).rebuild(board_id)
    # all-time and weekly hold the same entries (one week of play)
    assert report.entries == 2 * sum(before[("top", region)]["total"] for region in (None, "EU"))
    assert snapshot() == before
    assert assert_redis_equals_postgres(index.client, database_url, board_id) == 4
    assert index.key_spaces(board_id) == shard_board_ids(board_id, 4)
    for space in index.key_spaces(board_id):
        assert int(index.client.get(f"lb:{{{space}}}:seq")) >= VERSION_GAP


def test_a_sharded_board_that_lost_only_some_shards_is_lost_until_rebuilt(
    index, database_url, board_id, clock
):
    """Issue 22: on Redis Cluster a sharded board's shards live on other nodes than its own
    rules, so one node coming back empty (a failover to a replica that had not synced) loses
    some shards and leaves the board's rules. Writes to those shards are refused (503), never
    applied on top of nothing; the board counts as lost, so the maintenance rebuilds it (and so
    does a PUT of its rules), and then it equals the record again."""
    from leaderboard.domain.shards import shard_board_id, shard_of

    db = Database(database_url)
    admin = BoardAdminService(db, index, clock)
    admin.put_board(board_id, {"shards": 4, "regions": ["EU"], "periods": ["all-time"]}, ADMIN)
    record = BoardRepository(db)
    sink = ListSink()
    scores = ScoreService(index, sink, clock, in_record=lambda b: record.get(b) is not None)
    for n in range(40):
        body = {"player_id": f"p{n}", "score": n, "region": "EU" if n % 2 else None}
        scores.submit(board_id, body, SERVER, None)
    StandingsStore(db).write(sink.events)  # the queue drained
    assert assert_redis_equals_postgres(index.client, database_url, board_id) == 2
    rebuilder = Rebuilder(db, index)
    assert board_id not in rebuilder.lost_boards()

    def lose_the_shard_of(player: str) -> None:
        keys = index.client.keys(f"lb:{{{shard_board_id(board_id, shard_of(player, 4), 4)}}}:*")
        assert keys
        index.client.delete(*keys)
        assert index.board_loaded(board_id)  # the board's own rules are on another node

    lose_the_shard_of("p1")
    with pytest.raises(Unavailable, match="being restored"):
        scores.submit(board_id, {"player_id": "p1", "score": 99}, SERVER, None)
    assert board_id in rebuilder.lost_boards()
    [report] = [r for r in rebuilder.recover(queue_in_flight=0, now_ms=0) if r.board_id == board_id]
    assert report.entries == 40 + 20
    assert board_id not in rebuilder.lost_boards()
    assert assert_redis_equals_postgres(index.client, database_url, board_id) == 2

    lose_the_shard_of("p2")
    admin.put_board(board_id, {"title": "back"}, ADMIN)  # restores it, never opens it empty
    assert assert_redis_equals_postgres(index.client, database_url, board_id) == 2
    done = scores.submit(board_id, {"player_id": "p2", "score": 99}, SERVER, None)
    assert done.body["standings"][0]["score"] == 2 + 99  # increments what was restored
