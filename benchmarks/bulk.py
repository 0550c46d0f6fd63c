"""Rollover and rebuild of a large board: entries per second and peak memory growth.

Fills a closed week of N entries (global board plus one region) straight into the stores, then
times the real Rollover and Rebuilder against them. Memory is the process's peak resident set
growth during each step, which is what a Lambda function's memory setting must cover.
"""

from __future__ import annotations

import multiprocessing
import resource
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.progress import progress
from leaderboard.domain.auth import Caller
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.rebuild import Rebuilder
from leaderboard.services.rollover import Rollover
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex

ADMIN = Caller("bench", frozenset({"leaderboard/admin"}))
WEEK, REGION = "2026-W46", "EU"


@dataclass
class BulkResult:
    name: str
    entries: int
    seconds: float
    entries_per_second: float
    peak_rss_growth_mb: float


def _reset_peak() -> float:
    """Start a new peak-memory window (Linux resets VmHWM); returns the current RSS in MB."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_mb("VmRSS")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_mb() -> float:
    try:
        return _status_mb("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise OSError(field)


def _fill(index: RedisIndex, db: Database, board_id: str, entries: int) -> None:
    """N players in a closed week (and a tenth of them in a region), in Redis and in the
    persisted standings, written in bulk outside the measurement."""
    keys = BoardKeys(board_id)
    client = index.client
    batch = 20_000
    for start in range(0, entries, batch):
        pipe = client.pipeline(transaction=False)
        chunk = range(start, min(entries, start + batch))
        pipe.zadd(keys.zset(WEEK), {f"p{i}": (i * 7919) % 1_000_003 for i in chunk})
        regional = [i for i in chunk if i % 10 == 0]
        if regional:
            pipe.zadd(keys.zset(WEEK, REGION), {f"p{i}": (i * 7919) % 1_000_003 for i in regional})
        pipe.hset(keys.refs, mapping={f"p{i}": 2 if i % 10 == 0 else 1 for i in chunk})
        pipe.hset(keys.meta, mapping={f"p{i}": '{"name":"n"}' for i in chunk if i % 4 == 0})
        pipe.execute()
    client.sadd(keys.registry, WEEK, f"{WEEK}:{REGION}")
    with (
        db.transaction() as conn,
        conn.cursor().copy(
            "COPY standings (board_id, period, region, player_id, score, version,"
            " reached_version, present) FROM STDIN"
        ) as copy,
    ):
        for i in range(entries):
            score = float((i * 7919) % 1_000_003)
            copy.write_row((board_id, WEEK, "", f"p{i}", score, i + 1, i + 1, True))
            if i % 10 == 0:
                copy.write_row((board_id, WEEK, REGION, f"p{i}", score, i + 1, i + 1, True))


def _fill_in_child(redis_url: str, database_url: str, board_id: str, entries: int) -> None:
    client = connect(redis_url, timeout=30)
    db = Database(database_url)
    at = datetime(2026, 11, 16, tzinfo=UTC)
    index = RedisIndex(client)
    BoardAdminService(db, index, lambda: at).put_board(
        board_id, {"periods": ["all-time", "weekly"], "regions": [REGION]}, ADMIN
    )
    _fill(index, db, board_id, entries)
    db.close()
    client.close()


def run(
    redis_url: str, database_url: str, entries: int, *, chunk_size: int = 5000
) -> list[BulkResult]:
    """Fill in another process (its memory must not hide ours), then time each step here."""
    board_id = f"bench-{uuid.uuid4().hex[:8]}"
    progress(f"bulk: filling Valkey and PostgreSQL with {entries:,} entries")
    filler = multiprocessing.get_context("spawn").Process(
        target=_fill_in_child, args=(redis_url, database_url, board_id, entries)
    )
    filler.start()
    filler.join()
    assert filler.exitcode == 0, "filling the stores failed"
    index = RedisIndex(connect(redis_url, timeout=30))
    db = Database(database_url)
    total = entries + entries // 10 + (1 if entries % 10 else 0)
    results = []

    rollover = Rollover(
        db, index, lambda: datetime(2026, 11, 16, 0, 5, tzinfo=UTC), chunk_size=chunk_size
    )
    progress("bulk: rollover")
    before, started = _reset_peak(), time.perf_counter()
    report = rollover.run({"weekly"}, board_ids={board_id})
    seconds = time.perf_counter() - started
    assert report.archived == [f"{board_id}/{WEEK}"] and report.differences == 0, report
    results.append(
        BulkResult(
            "rollover",
            total,
            round(seconds, 2),
            round(total / seconds),
            round(_peak_mb() - before, 1),
        )
    )

    progress("bulk: rebuild")
    before, started = _reset_peak(), time.perf_counter()
    rebuilt = Rebuilder(db, index, chunk_size=chunk_size).rebuild(board_id)
    seconds = time.perf_counter() - started
    assert rebuilt.entries == total, rebuilt
    db.close()
    index.client.close()
    results.append(
        BulkResult(
            "rebuild",
            total,
            round(seconds, 2),
            round(total / seconds),
            round(_peak_mb() - before, 1),
        )
    )
    return results


def _run_in_child(redis_url: str, database_url: str, entries: int, out: Any) -> None:
    out.put(run(redis_url, database_url, entries))


def run_isolated(redis_url: str, database_url: str, entries: int) -> list[BulkResult]:
    """run() in a fresh process: memory that earlier benchmarks freed but this process kept
    would otherwise absorb the growth being measured."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(target=_run_in_child, args=(redis_url, database_url, entries, out))
    child.start()
    try:
        results: list[BulkResult] = out.get(timeout=1800)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0, "the rollover/rebuild benchmark failed"
    return results


def as_rows(results: list[BulkResult]) -> list[dict[str, Any]]:
    return [asdict(r) for r in results]
