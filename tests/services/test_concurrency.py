"""Acceptance 3: concurrent writers on real Redis. Increments sum exactly, `best` keeps the
best, and `max_entries` never leaves more than N entries or metadata without an entry."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from leaderboard.domain.auth import Caller
from leaderboard.services.scores import ScoreService
from tests.support.boards import ListSink, publish

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
THREADS = 16


def _run(threads: int, job) -> list:
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(job, range(threads)))


def test_sixteen_threads_of_increments_end_at_the_exact_total(index, board_id, clock):
    publish(index, board_id, mode="increment", periods=["all-time", "weekly"], regions=["EU"])
    service = ScoreService(index, ListSink(), clock)

    def job(_: int) -> None:
        for _ in range(200):
            service.submit(board_id, {"player_id": "hot", "score": 1, "region": "EU"}, SERVER, None)

    _run(THREADS, job)
    for period in ("all-time", "2026-W47"):
        for region in (None, "EU"):
            key = f"lb:{{{board_id}}}:z:{period}" + (f":{region}" if region else "")
            assert index.client.zscore(key, "hot") == THREADS * 200, key
    assert int(index.client.get(f"lb:{{{board_id}}}:seq")) == THREADS * 200


def test_concurrent_best_submissions_keep_the_best(index, board_id, clock):
    for sort in ("desc", "asc"):
        board = f"{board_id}-{sort}"
        publish(index, board, mode="best", sort=sort, ties="first")
        service = ScoreService(index, ListSink(), clock)
        rng = random.Random(7)
        values = [[rng.randint(-10_000, 10_000) for _ in range(100)] for _ in range(THREADS)]

        def job(n: int, board=board, service=service, values=values) -> None:
            for value in values[n]:
                service.submit(board, {"player_id": "p", "score": value}, SERVER, None)

        _run(THREADS, job)
        everything = [v for chunk in values for v in chunk]
        best = max(everything) if sort == "desc" else min(everything)
        assert (
            index.client.zscore(
                f"lb:{{{board}}}:z:all-time", index.client.hget(f"lb:{{{board}}}:m:all-time", "p")
            )
            == best
        )


def test_max_entries_never_exceeded_and_no_orphan_metadata(index, board_id, clock):
    limit = 10
    publish(
        index,
        board_id,
        mode="set",
        max_entries=limit,
        ties="first",
        periods=["all-time", "daily", "weekly"],
        regions=["EU", "NA"],
    )
    service = ScoreService(index, ListSink(), clock)

    def job(n: int) -> None:
        rng = random.Random(n)
        for i in range(150):
            service.submit(
                board_id,
                {
                    "player_id": f"p{rng.randrange(60)}",
                    "score": rng.randrange(1000),
                    "region": rng.choice(["EU", "NA", None]),
                    "metadata": {"n": n, "i": i},
                },
                SERVER,
                None,
            )

    _run(THREADS, job)
    client = index.client
    prefix = f"lb:{{{board_id}}}:"
    suffixes = client.smembers(prefix + "keys")
    assert len(suffixes) == 3 * 3  # three periods, global + two regions
    holders: dict[str, int] = {}
    for suffix in suffixes:
        members = client.zrange(prefix + "z:" + suffix, 0, -1)
        assert 0 < len(members) <= limit, suffix
        mapped = client.hgetall(prefix + "m:" + suffix)
        assert sorted(mapped.values()) == sorted(members), suffix  # member map is exact
        for player in mapped:
            holders[player] = holders.get(player, 0) + 1
    metadata = client.hgetall(prefix + "meta")
    refs = {p: int(n) for p, n in client.hgetall(prefix + "refs").items()}
    assert set(metadata) == set(holders), "metadata without an entry, or an entry without it"
    assert refs == holders
