"""Persister throughput: SQS batches of score events into PostgreSQL, against a raw COPY floor.

Generates realistic score events (one best-score board, 20k players, 2 regions, all-time, daily
and weekly periods crossing midnight into a new week, 3 or 6 scores per event, ~30% with
metadata, a few evictions, increasing versions), turns them into Lambda SQS events of `batch`
records and calls the real persister handler (functions/persister/app.py, loaded as the local
runtime loads it) in this process: the time runs from the SQS event to the committed rows.

The floor writes the same rows -- the score_events rows, and per batch the standings and
metadata rows the persister's upsert writes, folded in Python beforehand -- with plain psycopg
COPY, one transaction per batch, into fresh tables shaped like the real ones (score_events with
its indexes; standings and player_metadata keyed by their real key plus version, since the same
key is written again by later batches).

    PYTHONPATH=layers/shared/python:. .venv/bin/python -m benchmarks.persister_throughput
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import multiprocessing
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from queue import Empty
from typing import Any

import psycopg

from benchmarks.progress import progress
from devstack.queue_consumer import sqs_record
from devstack.runtime import load_handler, make_context
from devstack.template import FunctionSpec
from devstack.template import load as load_template
from leaderboard.domain.events import Eviction, ScoreEvent, Standing, event_id_at
from leaderboard.domain.folding import MetadataRow, StandingRow, fold_events
from leaderboard.domain.periods import current_periods

FUNCTION = "PersisterFunction"
REGIONS = ("EU", "NA")
QUEUE_ARN = "arn:aws:sqs:us-east-1:000000000000:leaderboard-scores"
START = datetime(2026, 11, 22, 20, 0, tzinfo=UTC)  # a Sunday: midnight opens a day and a week
SPAN = timedelta(hours=8)
TARGET_RATIO = 0.25
TARGET_EVENTS_PER_S = 20_000

StandingKey = tuple[str, str, str, str]  # board, period, region ('' = global), player
EventRow = tuple[str, str, str, int, datetime, str]


# --- the workload ---------------------------------------------------------------------------


def make_events(
    board_id: str, count: int, *, players: int = 20_000, seed: int = 7, first_version: int = 1
) -> list[ScoreEvent]:
    """`count` events as the write path emits them for a best-score board."""
    rng = random.Random(seed)
    ids = random.Random(f"{board_id}/{seed}")  # event ids of its own for every board
    home = [rng.choice((*REGIONS, *REGIONS, None)) for _ in range(players)]  # 40/40/20
    skill = [rng.gauss(1000, 250) for _ in range(players)]
    best: dict[tuple[str, str | None, int], float] = {}
    clans = ("red", "blue", "green", "gold")
    events = []
    for i in range(count):
        at = START + SPAN * i / max(1, count)
        periods = current_periods(at)
        period_ids = (periods["all-time"].id, periods["daily"].id, periods["weekly"].id)
        p = int(players * rng.random() ** 1.3)  # some players play more than others
        region = home[p] if rng.random() < 0.95 else None
        score = max(0, round(rng.gauss(skill[p], 200)))
        standings = []
        for period in period_ids:
            for where in (None, region) if region else (None,):
                old = best.get((period, where, p))
                changed = old is None or score > old
                # a regional board with max_entries may leave a weak new score out
                kept = not (where and changed and old is None and score < 450)
                if kept and changed:
                    best[(period, where, p)] = score
                standings.append(
                    Standing(
                        period, where, score if changed else old or 0, 1 if kept else None, changed
                    )
                )
        evictions = []
        if rng.random() < 0.03:  # max_entries pushed someone out of one of these boards
            for _ in range(rng.choice((1, 1, 2))):
                other, period = rng.randrange(players), rng.choice(period_ids)
                where = rng.choice((None, region))
                if other != p and best.pop((period, where, other), None) is not None:
                    # as the script does: the next score of theirs there is a change again
                    evictions.append(
                        Eviction(
                            period=period,
                            region=where,
                            player_id=f"player-{other:05d}",
                            gone=rng.random() < 0.2,
                        )
                    )
        metadata = None
        if rng.random() < 0.3:
            metadata = {
                "name": f"Player {p}",
                "level": rng.randint(1, 80),
                "clan": rng.choice(clans),
            }
        events.append(
            ScoreEvent(
                event_id=event_id_at(int(at.timestamp() * 1000), ids.getrandbits(80)),
                board_id=board_id,
                player_id=f"player-{p:05d}",
                operation="best",
                submitted_score=score,
                region=region,
                metadata=metadata,
                version=first_version + i,
                applied=any(s.changed for s in standings),
                occurred_at_ms=int(at.timestamp() * 1000),
                standings=tuple(standings),
                evictions=tuple(evictions),
            )
        )
    return events


def sqs_events(bodies: Sequence[str], batch: int, *, seed: int = 11) -> list[dict[str, Any]]:
    """Lambda SQS events of up to `batch` records each, as the event source mapping sends."""
    rng = random.Random(seed)
    sent_ms = int(START.timestamp() * 1000)
    out = []
    for start in range(0, len(bodies), batch):
        records = []
        for body in bodies[start : start + batch]:
            message_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            message = {
                "MessageId": message_id,
                "ReceiptHandle": f"bench-{message_id}",
                "Body": body,
                "Attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": str(sent_ms),
                    "SenderId": "AROAEXAMPLE:leaderboard-api-write",
                    "ApproximateFirstReceiveTimestamp": str(sent_ms + 5),
                },
                "MD5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
            }
            records.append(sqs_record(message, QUEUE_ARN, "us-east-1"))
        out.append({"Records": records})
    return out


# --- the rows the persister writes ----------------------------------------------------------


@dataclass
class BatchRows:
    events: list[EventRow] = field(default_factory=list)
    standings: list[StandingRow] = field(default_factory=list)
    metadata: list[MetadataRow] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.events) + len(self.standings) + len(self.metadata)


def batch_rows(events: Sequence[ScoreEvent], messages: Sequence[str]) -> BatchRows:
    """What one batch inserts or upserts: its events as delivered, and the standings and
    metadata rows the persister folds them into (the same function it uses)."""
    folded = fold_events(events)
    return BatchRows(
        events=[
            (
                e.event_id,
                e.board_id,
                e.player_id,
                e.version,
                datetime.fromtimestamp(e.occurred_at_ms / 1000, UTC),
                message,
            )
            for e, message in zip(events, messages, strict=True)
        ],
        standings=folded.standings,
        metadata=folded.metadata,
    )


def final_state(batches: Sequence[BatchRows]) -> tuple[int, float, int, int]:
    """(standings rows, sum of scores, sum of versions, metadata rows) after every batch's
    upsert: a newer version wins, reached_version only grows."""
    standings: dict[StandingKey, tuple[float, int]] = {}
    metadata: dict[tuple[str, str], int] = {}
    for rows in batches:
        for b, period, region, player, score, version, *_ in rows.standings:
            old = standings.get((b, period, region, player))
            if old is None or version > old[1]:
                standings[(b, period, region, player)] = (score, version)
        for b, player, _, version in rows.metadata:
            if metadata.get((b, player), 0) < version:
                metadata[(b, player)] = version
    return (
        len(standings),
        sum(s for s, _ in standings.values()),
        sum(v for _, v in standings.values()),
        len(metadata),
    )


# --- the persister, as the event source mapping calls it -------------------------------------


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """The handler logs a line and flushes metrics per batch: still written, to /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _persister(spec: FunctionSpec, database_url: str) -> tuple[Any, Any]:
    """The real handler and its module, bound to `database_url`."""
    name = f"lambda_{spec.name}_app"
    module = sys.modules.get(name)
    if module is not None and module.store.db.url != database_url:
        del sys.modules[name]  # loaded for another database: load a fresh copy
    handler = load_handler(spec)
    return handler, sys.modules[name]


def _invoke(handler: Any, spec: FunctionSpec, event: dict[str, Any]) -> None:
    response = handler(event, make_context(spec))
    failures = response.get("batchItemFailures")
    assert not failures, f"{len(failures)} records failed"


def _check_persisted(
    database_url: str, board_id: str, events: int, expected: tuple[int, float, int, int]
) -> None:
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            "SELECT count(*) FROM score_events WHERE board_id = %s", (board_id,)
        ).fetchone()
        got = conn.execute(
            "SELECT count(*), coalesce(sum(score), 0), coalesce(sum(version), 0)"
            " FROM standings WHERE board_id = %s",
            (board_id,),
        ).fetchone()
        meta = conn.execute(
            "SELECT count(*) FROM player_metadata WHERE board_id = %s", (board_id,)
        ).fetchone()
    assert stored is not None and got is not None and meta is not None
    actual = (int(got[0]), float(got[1]), int(got[2]), int(meta[0]))
    assert stored[0] == events, f"{stored[0]} events stored, {events} sent"
    assert (actual[0], actual[2], actual[3]) == (expected[0], expected[2], expected[3]), (
        actual,
        expected,
    )
    assert abs(actual[1] - expected[1]) < 1e-6 * max(1.0, expected[1]), (actual, expected)


def _backend_cpu(pid: int) -> float:
    """CPU seconds a PostgreSQL backend used so far (0 where /proc is not readable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Timing:
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)


@contextlib.contextmanager
def _timed(backend_pid: int) -> Iterator[Timing]:
    timing = Timing()
    cpu, server, started = time.process_time(), _backend_cpu(backend_pid), time.perf_counter()
    yield timing
    timing.seconds = time.perf_counter() - started
    timing.client_cpu = time.process_time() - cpu
    timing.server_cpu = _backend_cpu(backend_pid) - server


# --- workers: one process each, as Lambda runs one batch per execution environment -----------


def _share(items: Sequence[Any], workers: int, worker: int) -> list[Any]:
    """Round-robin, as an event source mapping hands consecutive batches to its pollers."""
    return list(items[worker::workers])


def _persister_worker(
    database_url: str, deliveries: list[dict[str, Any]], warm: dict[str, Any], start: Any, out: Any
) -> None:
    spec = load_template().functions[FUNCTION]
    env = spec.resolved_environment({})
    env.update(DATABASE_URL=database_url, POWERTOOLS_TRACE_DISABLED="true")
    with _environment(env), _quiet_stdout():
        handler, module = _persister(spec, database_url)
        _invoke(handler, spec, warm)  # a warm execution environment: connected, statement seen
        # The deliveries this process holds stand in for the queue, not for the function's
        # memory: keep the collector from scanning them at every collection.
        gc.freeze()
        pid = module.store.db.connection().info.backend_pid
        start.wait()
        with _timed(pid) as timing:
            for delivery in deliveries:
                t0 = time.perf_counter()
                _invoke(handler, spec, delivery)
                timing.latencies.append(time.perf_counter() - t0)
        module.store.db.close()
    out.put(timing)


def _floor_worker(
    database_url: str, batches: list[BatchRows], tables: tuple[str, str, str], start: Any, out: Any
) -> None:
    events, standings, metadata = tables
    targets = (
        (f"{events} (event_id, board_id, player_id, version, occurred_at, payload)", "events"),
        (
            f"{standings} (board_id, period, region, player_id, score, version, reached_version,"
            " present, reached_arrival, tie_key)",
            "standings",
        ),
        (f"{metadata} (board_id, player_id, metadata, version)", "metadata"),
    )
    gc.freeze()
    with psycopg.connect(database_url, autocommit=True) as conn:
        start.wait()
        with _timed(conn.info.backend_pid) as timing:
            for rows in batches:
                t0 = time.perf_counter()
                with conn.transaction(), conn.cursor() as cur:
                    for target, attr in targets:
                        with cur.copy(f"COPY {target} FROM STDIN") as copy:
                            for row in getattr(rows, attr):
                                copy.write_row(row)
                timing.latencies.append(time.perf_counter() - t0)
    out.put(timing)


def _run_workers(target: Any, shares: list[tuple[Any, ...]]) -> Timing:
    """Start one process per share, release them together; their summed work and the wall
    time until the last one finished."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(len(shares) + 1)
    out = context.Queue()
    processes = [context.Process(target=target, args=(*share, start, out)) for share in shares]
    for process in processes:
        process.start()
    try:
        start.wait(timeout=120)
        timings: list[Timing] = []
        deadline = time.monotonic() + 600
        while len(timings) < len(processes):
            try:
                timings.append(out.get(timeout=2))
            except Empty:
                # A worker that died never reports: fail now, not when the deadline passes.
                dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"a worker stopped without its timing: {dead}") from None
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    failed = [p.exitcode for p in processes if p.exitcode]
    assert not failed, f"worker exit codes {failed}"
    return Timing(
        seconds=max(t.seconds for t in timings),
        client_cpu=sum(t.client_cpu for t in timings),
        server_cpu=sum(t.server_cpu for t in timings),
        latencies=[latency for t in timings for latency in t.latencies],
    )


def _copy_floor(
    database_url: str, batches: Sequence[BatchRows], suffix: str, workers: int
) -> Timing:
    tables = tuple(f"bench_floor_{suffix}_{t}" for t in ("ev", "st", "md"))
    events, standings, metadata = tables
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {events} (LIKE score_events INCLUDING ALL)")
        conn.execute(f"CREATE TABLE {standings} (LIKE standings INCLUDING DEFAULTS)")
        conn.execute(
            f"ALTER TABLE {standings} ADD PRIMARY KEY (board_id, period, region, player_id,"
            " version)"
        )
        conn.execute(f"CREATE TABLE {metadata} (LIKE player_metadata INCLUDING DEFAULTS)")
        conn.execute(f"ALTER TABLE {metadata} ADD PRIMARY KEY (board_id, player_id, version)")
        try:
            return _run_workers(
                _floor_worker,
                [(database_url, _share(batches, workers, w), tables) for w in range(workers)],
            )
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {events}, {standings}, {metadata}")


# --- the run ---------------------------------------------------------------------------------


def run(
    database_url: str,
    *,
    events: int = 100_000,
    batch: int = 1000,
    workers: Sequence[int] = (1, 2),
) -> list[dict[str, Any]]:
    """Persister and COPY floor on the same rows, with each number of concurrent workers; one
    dict per measurement."""
    results = []
    for count in workers:
        progress(f"persister: {events:,} events, {count} worker(s)")
        suffix = uuid.uuid4().hex[:8]
        board_id = f"bench-persist-{suffix}"
        workload = make_events(board_id, events)
        bodies = [e.to_message() for e in workload]
        deliveries = sqs_events(bodies, batch)
        batches = [
            batch_rows(workload[i : i + batch], bodies[i : i + batch])
            for i in range(0, len(workload), batch)
        ]
        rows = sum(b.count for b in batches)
        expected = final_state(batches)
        warm = [
            sqs_events(
                [e.to_message() for e in make_events(f"bench-warm-{suffix}-{w}", 200)], batch
            )[0]
            for w in range(count)
        ]
        persister = _run_workers(
            _persister_worker,
            [(database_url, _share(deliveries, count, w), warm[w]) for w in range(count)],
        )
        # concurrent batches arrive out of order: the rows must still be exactly these
        _check_persisted(database_url, board_id, events, expected)
        floor = _copy_floor(database_url, batches, suffix, count)
        results += [
            _row(
                "persister",
                count,
                persister,
                events,
                batch,
                rows,
                floor.seconds / persister.seconds,
            ),
            _row("copy-floor", count, floor, events, batch, rows, 1.0),
        ]
    return results


def _row(
    name: str, workers: int, timing: Timing, events: int, batch: int, rows: int, ratio: float
) -> dict[str, Any]:
    return {
        "name": f"{name} x{workers}",
        "workers": workers,
        "events": events,
        "batch": batch,
        "rows": rows,
        "seconds": round(timing.seconds, 3),
        "events_per_second": round(events / timing.seconds),
        "rows_per_second": round(rows / timing.seconds),
        "batch_ms_p50": round(statistics.median(timing.latencies) * 1000, 1),
        "client_cpu_us_per_event": round(timing.client_cpu / events * 1e6, 1),
        "server_cpu_us_per_event": round(timing.server_cpu / events * 1e6, 1),
        "ratio": round(ratio, 3),
    }


def print_table(results: list[dict[str, Any]]) -> None:
    print(
        f"{'step':<14} {'events':>8} {'batch':>6} {'rows':>8} {'seconds':>8} {'events/s':>9}"
        f" {'rows/s':>9} {'batch ms':>9} {'client us/ev':>12} {'server us/ev':>12} {'ratio':>6}"
    )
    for r in results:
        print(
            f"{r['name']:<14} {r['events']:>8} {r['batch']:>6} {r['rows']:>8} {r['seconds']:>8}"
            f" {r['events_per_second']:>9} {r['rows_per_second']:>9} {r['batch_ms_p50']:>9}"
            f" {r['client_cpu_us_per_event']:>12} {r['server_cpu_us_per_event']:>12}"
            f" {r['ratio']:>6}"
        )
    for line in target_lines(results):
        print(line)


def targets(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's targets, judged on the fastest persister configuration of the run."""
    best = max(
        (r for r in results if r["name"].startswith("persister")),
        key=lambda r: r["events_per_second"],
    )
    return {
        "configuration": best["name"],
        "events_per_second": best["events_per_second"],
        "ratio_to_copy_floor": best["ratio"],
        f"at_least_{TARGET_RATIO:.0%}_of_copy_floor": best["ratio"] >= TARGET_RATIO,
        f"at_least_{TARGET_EVENTS_PER_S}_events_per_s": (
            best["events_per_second"] >= TARGET_EVENTS_PER_S
        ),
    }


def target_lines(results: list[dict[str, Any]]) -> list[str]:
    t = targets(results)
    ok = {True: "OK", False: "MISSED"}
    return [
        f"target: persister >= {TARGET_RATIO:.0%} of the COPY floor:"
        f" {t['ratio_to_copy_floor']:.1%} ({t['configuration']})"
        f" {ok[t[f'at_least_{TARGET_RATIO:.0%}_of_copy_floor']]}",
        f"target: persister >= {TARGET_EVENTS_PER_S} events/s:"
        f" {t['events_per_second']} ({t['configuration']})"
        f" {ok[t[f'at_least_{TARGET_EVENTS_PER_S}_events_per_s']]}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    from devstack.servers import EmbeddedPostgres
    from leaderboard.stores.postgres.database import apply_migrations

    with EmbeddedPostgres() as pg:
        url = pg.create_database("bench")
        apply_migrations(url)
        results = run(url, events=args.events, batch=args.batch)
    print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
