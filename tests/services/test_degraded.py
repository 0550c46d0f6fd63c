"""Degraded mode (acceptance 5 of the persistence work): with Redis down, reads come from
PostgreSQL, say so, and rank exactly as Redis does; writes answer 503; with PostgreSQL down,
the persister fails its batches and loses nothing."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from devstack.servers import EmbeddedPostgres, EmbeddedValkey
from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import NotFound, Unavailable
from leaderboard.domain.queue_messages import parse_event
from leaderboard.services.health import HealthService
from leaderboard.services.reads import ReadService
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database, apply_migrations
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.postgres.record_reads import PostgresReadModel
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish
from tests.support.workloads import workload

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


def _queries(players):
    for region in (None, "EU", "NA"):
        base = {"region": region} if region else {}
        yield "entries", None, base | {"limit": "100"}
        yield "entries", None, base | {"offset": "2", "limit": "3"}
        for rank in ("1", "4", "30"):
            yield "entries", None, base | {"around_rank": rank, "limit": "5"}
        for player in players:
            yield "player", player, base
            yield "around", player, base | {"count": "5"}
        # Many players at once: all of them, a few with an unknown id, and duplicates.
        yield "players", None, base | {"ids": ",".join(players)}
        yield "players", None, base | {"ids": ",".join([*players[::3], "nobody", players[0]])}


def _read(service, op, board_id, player, query):
    if op in ("entries", "players"):
        return getattr(service, op)(board_id, query)
    return getattr(service, op)(board_id, player, query)


@pytest.mark.parametrize("ties", ["first", "shared"])
def test_postgres_reads_rank_exactly_like_redis(index, database_url, board_id, clock, ties):
    events = workload(index, board_id, clock, n=300, seed=4, ties=ties)
    db = Database(database_url)
    with db.transaction() as conn:  # the board must exist in the record too
        board = _board_config(index, board_id)
        BoardRepository(db).save(conn, board)
    StandingsStore(db).write(events)
    normal = ReadService(index, clock)
    degraded = ReadService(index, clock, fallback=lambda: PostgresReadModel(db))
    degraded._bypass_until = float("inf")  # as if Redis had just failed
    players = sorted({e.player_id for e in events})
    checked = 0
    for period in ("all-time", "daily", "weekly"):
        for op, player, query in _queries(players):
            query = query | {"period": period}
            try:
                expected = _read(normal, op, board_id, player, query)
            except Exception as exc:  # a 404 must be a 404 in both
                with pytest.raises(type(exc)):
                    _read(degraded, op, board_id, player, query)
                continue
            got = _read(degraded, op, board_id, player, query)
            assert got.pop("degraded") is True
            assert got == expected, (op, player, query)
            checked += 1
    assert checked > 100
    # One player on every current period, with and without a region.
    standings = 0
    for player in [*players, "nobody"]:
        for query in ({}, {"region": "EU"}, {"region": "NA"}):
            try:
                expected = normal.standings(board_id, player, query)
            except NotFound:
                with pytest.raises(NotFound):
                    degraded.standings(board_id, player, query)
                continue
            got = degraded.standings(board_id, player, query)
            assert got.pop("degraded") is True
            assert got == expected, (player, query)
            standings += len(got["standings"])
    assert standings > 20


def _board_config(index, board_id):
    import json

    from leaderboard.domain.boards import BoardConfig

    raw = index.client.hget("lb:boards", board_id)
    return BoardConfig.from_public(json.loads(raw))


def test_redis_down_reads_from_postgres_writes_503_then_recovers(
    database_url, board_id, clock, tmp_path
):
    with EmbeddedValkey(tmp_path / "valkey", persist=True) as valkey:
        index = RedisIndex(connect(valkey.url, timeout=0.5))
        db = Database(database_url)
        board = publish(index, board_id, regions=["EU"])
        with db.transaction() as conn:
            BoardRepository(db).save(conn, board)
        sink = ListSink()
        scores = ScoreService(index, sink, clock)
        for n, player in enumerate(("a", "b", "c")):
            scores.submit(
                board_id,
                {"player_id": player, "score": 10 * (n + 1), "metadata": {"n": n}},
                SERVER,
                f"k{n}",
            )
        StandingsStore(db).write([parse_event(e.to_message()) for e in sink.events])
        reads = ReadService(index, clock, fallback=lambda: PostgresReadModel(db))
        before = reads.entries(board_id, {})
        friends = {"ids": "c,nobody,a,c"}
        before_players = reads.players(board_id, friends)
        before_standings = reads.standings(board_id, "b", {})
        health = HealthService({"redis": index.ping, "postgres": db.ping})

        valkey.stop()
        during = reads.entries(board_id, {})
        assert during.pop("degraded") is True and during == before
        # Issue 13: the player-centred reads too, the same answers, marked degraded.
        during_players = reads.players(board_id, friends)
        assert during_players.pop("degraded") is True and during_players == before_players
        assert [e["player_id"] for e in during_players["entries"]] == ["c", "a"]
        during_standings = reads.standings(board_id, "b", {})
        assert during_standings.pop("degraded") is True and during_standings == before_standings
        assert reads.player(board_id, "a", {})["rank"] == 3
        assert reads.get_board(board_id)["board_id"] == board_id
        with pytest.raises(Unavailable) as refused:
            scores.submit(board_id, {"player_id": "d", "score": 1}, SERVER, "k-down")
        assert refused.value.status == 503 and refused.value.retry_after >= 1
        report = health.check()
        assert report["status"] == "degraded" and report["unreachable"] == ["redis"]

        valkey.start()  # same data directory: what was acknowledged is still there
        reads._bypass_until = 0
        assert "degraded" not in reads.entries(board_id, {})
        retried = scores.submit(board_id, {"player_id": "d", "score": 1}, SERVER, "k-down")
        assert not retried.replayed  # the refused attempt changed nothing
        replay = scores.submit(
            board_id, {"player_id": "a", "score": 10, "metadata": {"n": 0}}, SERVER, "k0"
        )
        assert replay.replayed  # acknowledged before the outage: still exactly once
        assert reads.player(board_id, "a", {})["score"] == 10
        assert health.check()["status"] == "ok"
        index.client.close()


def test_postgres_down_the_persister_fails_batches_and_loses_nothing(
    index, board_id, clock, tmp_path
):
    events = workload(index, board_id, clock, n=60, seed=2)
    base = Path(tempfile.mkdtemp(prefix="lb-pg-outage-"))
    base.chmod(0o755)  # reachable by the postgres user when running as root
    with EmbeddedPostgres(base / "data", persist=True) as postgres:
        url = postgres.create_database("outage")
        apply_migrations(url)
        store = StandingsStore(Database(url, connect_timeout=1))
        store.write(events[:20])
        postgres.stop()
        with pytest.raises(Unavailable):
            store.write(events[20:40])  # the handler reports every record failed: retried
        postgres.start()
        assert store.write(events[20:]) == 40  # the redelivery, once the database is back
        with Database(url).transaction() as conn:
            stored = conn.execute("SELECT count(*) FROM score_events").fetchone()
        assert stored == (60,)
    shutil.rmtree(base, ignore_errors=True)
