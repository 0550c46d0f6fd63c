"""Live updates under load: an acknowledged write to a message received by WebSocket clients.

The issue's target: p99 at most 1 s from an acknowledged write to the message at the client, at
1, 100 and 1,000 writes/s with 1, 100 and 1,000 local subscribers.

1. Start the local stack in this process on free ports with throwaway data and embedded stores
   (as `make run` does on a fresh machine), so the real live publisher runs in its worker on its
   own schedule (LIVE_PUBLISH_RATE ticks a second) and the real local event API process fans out.
2. Per cell (a write rate and a subscriber count): a new board (all-time only) made over HTTP;
   a child process opens the subscribers' WebSocket connections (connection_init, subscribe to
   the board's all-time channel) and says when all are subscribed; then a writer in another
   child process writes open loop at the rate, a warm-up first, then the measured seconds.
3. The writes call the submit script directly (`RedisIndex.submit`): the write path's one Redis
   round trip, the step that makes a write visible to the live path. The HTTP layer in front of
   it is not measured here: the HTTP suite measures it, and this 2-core machine cannot push
   1,000 writes/s through HTTP (the README's HTTP section says so). The writer records each
   write's version and the monotonic time right after the script returned (CLOCK_MONOTONIC is
   system-wide on Linux, so comparable across processes).
4. The latency of write v at subscriber s: the first message on s with a version >= v, minus v's
   acknowledgement. p50, p99 and max over every (write, subscriber) pair; writes a subscriber
   never saw (after a short drain) are counted as missed. Each message's `published_at` (the
   tick's start) splits the latency into the wait for a tick and the delivery after it.
5. `handovers`: how often the publisher lease changed hands during the cell. A run publishes
   for about a minute and the next is started every minute; a handover can pause the messages
   (on a fresh stack the first successor starts a new worker), and the cell it falls in shows it.

The subscribers share one process and one event loop, so at 1,000 of them "received" includes
that loop's queueing behind the other 999 copies of the same message (real clients would each
have their own machine); frames are not JSON-decoded there, only the version is picked out.
Writes that bypass HTTP also bypass its SQS send: the outbox relay sends them to the persister
on its schedule (once a minute), which is background load in some cells.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.progress import progress

if TYPE_CHECKING:  # the child processes import this module: keep its imports light
    import numpy as np

    from devstack.stack import LocalStack

TARGET_P99_MS = 1000.0
PLAYERS = 5000
# The event is an escaped JSON string inside the data frame: `...\"version\":123,...`.
_VERSION = re.compile(rb'\\"version\\":(\d+)')
_PUBLISHED_AT = re.compile(rb'\\"published_at\\":\\"([^\\"]+)\\"')
_DATA = b'{"type":"data"'


@dataclass
class Settings:
    """The cells (every rate with every subscriber count) and how long each is measured."""

    rates: tuple[float, ...] = (1, 100, 1000)  # writes a second
    subscribers: tuple[int, ...] = (1, 100, 1000)
    seconds: float = 5.0  # measured, per cell
    min_writes: int = 10  # a slow cell runs longer to make at least this many writes
    warm_seconds: float = 2.0  # writes not measured: the board reaches the publisher's catalog
    drain_seconds: float = 2.0  # after the last write, for its message to arrive
    connect_concurrency: int = 50  # WebSocket handshakes in flight at once

    def cell_seconds(self, rate: float) -> float:
        return max(self.seconds, self.min_writes / rate)


# --- the stack ------------------------------------------------------------------------------


@contextlib.contextmanager
def _environment(updates: dict[str, str | None]) -> Iterator[None]:
    saved = dict(os.environ)
    for name, value in updates.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def local_stack() -> Iterator[LocalStack]:
    """The local stack on free ports and throwaway data, with its own embedded stores."""
    from devstack.servers import free_port
    from devstack.stack import LocalStack, StackConfig

    base = Path(tempfile.mkdtemp(prefix="bench-live-"))
    base.chmod(0o755)  # the embedded PostgreSQL user must reach it when running as root
    stack = LocalStack(StackConfig(data_dir=base / "data", port=free_port()))
    try:
        unset: dict[str, str | None] = dict.fromkeys(
            ("REDIS_URL", "DATABASE_URL", "SQS_ENDPOINT_URL")
        )
        with _environment(unset):
            stack.start()
        yield stack
    finally:
        stack.stop()
        shutil.rmtree(base, ignore_errors=True)


def publish_rate(stack: LocalStack) -> int:
    """The publisher's ticks a second as its worker sees them (template, then environment)."""
    from leaderboard.settings import LiveSettings

    spec = stack.template.functions["LivePublisherFunction"]
    env: dict[str, str | None] = dict(spec.resolved_environment(stack.env))
    with _environment(env):
        return LiveSettings.from_env().publish_rate


def _create_board(stack: LocalStack, admin: str, **rules: Any) -> dict[str, Any]:
    """A new all-time board over HTTP (`rules`: more fields of its body, e.g. mode)."""
    board_id = f"live-bench-{uuid.uuid4().hex[:8]}"
    body = {"title": "Live bench", "periods": ["all-time"], **rules}
    request = urllib.request.Request(
        f"{stack.url}/boards/{board_id}",
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"content-type": "application/json", "authorization": f"Bearer {admin}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        board: dict[str, Any] = json.loads(response.read())
    return board


# --- the writer (a child process) -------------------------------------------------------------


def _write(redis_url: str, board_id: str, rate: float, warm: float, seconds: float) -> dict:
    """Open loop: the n-th write is due at a random moment of its slot [n, n+1)/rate (evenly
    spaced writes at 1/s would all land at the same point of the publisher's 250 ms cycle, and
    their latency would be that one point's); a late write goes at once, and the writes still
    due at the cell's end are not made (the achieved rate shows it)."""
    from leaderboard.domain.clock import to_ms
    from leaderboard.domain.events import new_event_id
    from leaderboard.domain.periods import current_periods
    from leaderboard.domain.submissions import Submission
    from leaderboard.stores.redis.client import connect
    from leaderboard.stores.redis.serving_index import RedisIndex

    client = connect(redis_url)
    index = RedisIndex(client)
    warm_writes = round(rate * warm)
    planned = warm_writes + max(1, round(rate * seconds))
    acks: list[tuple[int, float, float]] = []  # version, monotonic and wall clock at the ack
    start = time.monotonic()
    deadline = start + planned / rate
    jitter = random.Random(f"{board_id}-{rate}")
    for n in range(planned):
        delay = start + (n + jitter.random()) / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif time.monotonic() > deadline:
            break
        now = datetime.now(UTC)
        result = index.submit(
            board_id,
            Submission(player_id=f"p{n % PLAYERS}", score=n + 1, region=None, metadata=None),
            event_id=new_event_id(to_ms(now)),
            now_ms=to_ms(now),
            periods=current_periods(now),
            idempotency=None,
        )
        acks.append((result.version, time.monotonic(), time.time()))
    client.close()
    return {
        "measure_from": start + warm_writes / rate,
        "warm_writes": warm_writes,
        "planned": planned - warm_writes,
        "acks": acks[warm_writes:],
        "warm_acks": acks[:warm_writes],
    }


# --- the subscribers (a child process) --------------------------------------------------------


def _subscribers_main(
    conn: Connection, url: str, host: str, api_key: str, channel: str, count: int, limit: int
) -> None:
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        result = runner(_subscribe_all(conn, url, host, api_key, channel, count, limit))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("done", result))


async def _expect(ws: Any, kind: str) -> None:
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if message.get("type") == kind:
            return
        if message.get("type") != "ka":
            raise ConnectionError(f"expected {kind}, got {message}")


async def _subscribe_all(
    conn: Connection, url: str, host: str, api_key: str, channel: str, count: int, limit: int
) -> dict[str, Any]:
    """Open `count` subscriptions, say "ready", record every data frame until told to stop."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.typing import Subprotocol

    from devstack.live_client import PROTOCOL, auth_subprotocol

    loop = asyncio.get_running_loop()
    gate = asyncio.Semaphore(limit)
    protocols = [Subprotocol(PROTOCOL), Subprotocol(auth_subprotocol(host, api_key))]
    subscribe = json.dumps(
        {
            "type": "subscribe",
            "id": "live-bench",
            "channel": channel,
            "authorization": {"host": host, "x-api-key": api_key},
        }
    )
    times: list[list[float]] = [[] for _ in range(count)]
    versions: list[list[int]] = [[] for _ in range(count)]
    published: dict[int, str] = {}  # version -> published_at, from its first copy
    closed = [False] * count

    async def open_one() -> Any:
        async with gate:
            ws = await connect(
                url,
                subprotocols=protocols,
                compression=None,
                proxy=None,
                ping_interval=None,
                open_timeout=60,
                max_size=1 << 20,
            )
            await ws.send('{"type":"connection_init"}')
            await _expect(ws, "connection_ack")
            await ws.send(subscribe)
            await _expect(ws, "subscribe_success")
            return ws

    async def read(i: int, ws: Any) -> None:
        at, seen = times[i], versions[i]
        try:
            while True:
                raw = await ws.recv(decode=False)
                now = time.monotonic()
                if not raw.startswith(_DATA):
                    continue
                match = _VERSION.search(raw)
                if match is None:
                    continue
                version = int(match[1])
                at.append(now)
                seen.append(version)
                if version not in published:
                    stamp = _PUBLISHED_AT.search(raw)
                    published[version] = stamp[1].decode() if stamp else ""
        except ConnectionClosed:
            closed[i] = True

    sockets = await asyncio.gather(*(open_one() for _ in range(count)))
    readers = [loop.create_task(read(i, ws)) for i, ws in enumerate(sockets)]
    conn.send(("ready", count))
    await loop.run_in_executor(None, conn.recv)  # "stop"
    dropped = sum(closed)
    for task in readers:
        task.cancel()
    for ws in sockets:
        ws.transport.abort()
    return {"times": times, "versions": versions, "published": published, "dropped": dropped}


# --- the publisher's runs ------------------------------------------------------------------


class LeaseWatch:
    """Samples which publisher run holds the lease, so a row can say that a run handed over to
    the next one (started every minute) during the cell: a handover may pause the messages."""

    def __init__(self, redis_url: str, every: float = 0.025) -> None:
        from leaderboard.stores.redis.client import connect

        self.client = connect(redis_url)
        self.every = every
        self.samples: list[tuple[float, str | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-watch", daemon=True)

    def _run(self) -> None:
        from leaderboard.stores.redis.live.channels import LEASE_KEY

        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self.client.get(LEASE_KEY)))
            self._stop.wait(self.every)

    def __enter__(self) -> LeaseWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.client.close()

    def handovers(self, since: float) -> int:
        """Changes of the lease's holder from `since` on (the first holder seen is no change)."""
        owners = [owner for at, owner in self.samples if at >= since and owner]
        return sum(1 for a, b in itertools.pairwise(owners) if a != b)


# --- one cell -------------------------------------------------------------------------------


def _quantile_ms(values: np.ndarray, q: float) -> float:
    import numpy as np

    if not len(values):
        return float("nan")
    return round(float(np.quantile(values, q, method="inverted_cdf")) * 1000, 1)


def _wall(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def analyse(writes: dict, received: dict, rate: float, subscribers: int) -> dict[str, Any]:
    """One row: latencies over every (write, subscriber) pair, and where they went."""
    import numpy as np

    acks = np.array([a[1] for a in writes["acks"]])
    acks_wall = np.array([a[2] for a in writes["acks"]])
    wanted = np.array([a[0] for a in writes["acks"]], dtype=np.int64)
    start = writes["measure_from"]
    end = float(acks[-1]) if len(acks) else start
    window = max(end - start, 1e-9)
    offset = time.time() - time.monotonic()  # monotonic -> wall clock, same machine
    ticked_at = {v: _wall(s) for v, s in received["published"].items() if s}
    latencies: list[np.ndarray] = []
    delivery: list[np.ndarray] = []
    missed, messages = 0, 0
    for at_list, seen_list in zip(received["times"], received["versions"], strict=True):
        if not seen_list:
            missed += len(wanted)
            continue
        at = np.array(at_list)
        seen = np.maximum.accumulate(np.array(seen_list, dtype=np.int64))
        first = np.searchsorted(seen, wanted, side="left")  # first message with version >= v
        found = first < len(seen)
        missed += int((~found).sum())
        latencies.append(at[first[found]] - acks[found])
        measured = at >= start
        messages += int((measured & (at <= end)).sum())
        ticked = np.array([ticked_at.get(v, np.nan) for v in seen_list])
        keep = measured & ~np.isnan(ticked)
        delivery.append(at[keep] + offset - ticked[keep])
    every = np.concatenate(latencies) if latencies else np.array([])
    spread = np.concatenate(delivery) if delivery else np.array([])
    # The wait for a tick: from a write's ack to the start of the tick that published it.
    versions = np.array(sorted(ticked_at), dtype=np.int64)
    ticks = np.array([ticked_at[v] for v in versions])
    index = np.searchsorted(versions, wanted, side="left")
    covered = index < len(versions)
    wait = ticks[index[covered]] - acks_wall[covered]
    seconds = max(window, writes["planned"] / rate)
    return {
        "writes_per_s": rate,
        "achieved_per_s": round(len(acks) / seconds, 1),
        "subscribers": subscribers,
        "writes": len(acks),
        "msgs_per_sub_s": round(messages / subscribers / window, 2),
        "p50_ms": _quantile_ms(every, 0.5),
        "p99_ms": _quantile_ms(every, 0.99),
        "max_ms": _quantile_ms(every, 1.0),
        "tick_wait_p50_ms": _quantile_ms(wait, 0.5),
        "tick_wait_p99_ms": _quantile_ms(wait, 0.99),
        "delivery_p50_ms": _quantile_ms(spread, 0.5),
        "delivery_p99_ms": _quantile_ms(spread, 0.99),
        "missed": missed,
        "dropped": received["dropped"],
    }


def _cell(
    stack: LocalStack, admin: str, writers: Any, rate: float, count: int, settings: Settings
) -> dict[str, Any]:
    board = _create_board(stack, admin)
    live = stack.live_config()
    assert live is not None, "the stack has no event API"
    channel = board["live_channel"] + "/all-time"
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(
        target=_subscribers_main,
        args=(
            child,
            live["realtime_url"],
            live["http_host"],
            live["api_key"],
            channel,
            count,
            settings.connect_concurrency,
        ),
        daemon=True,
    )
    process.start()
    try:
        kind, value = _receive(parent, 120)
        if kind != "ready":
            raise RuntimeError(f"the subscribers did not start: {value}")
        with LeaseWatch(stack.env["REDIS_URL"]) as lease:
            writes = writers.apply(
                _write,
                (
                    stack.env["REDIS_URL"],
                    board["board_id"],
                    rate,
                    settings.warm_seconds,
                    settings.cell_seconds(rate),
                ),
            )
            time.sleep(settings.drain_seconds)
        parent.send("stop")
        kind, received = _receive(parent, 120)
        if kind != "done":
            raise RuntimeError(f"the subscribers failed: {received}")
    finally:
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join(5)
        parent.close()
    row = analyse(writes, received, rate, count)
    row["handovers"] = lease.handovers(writes["measure_from"])
    return row


def _receive(conn: Connection, timeout: float) -> tuple[str, Any]:
    if not conn.poll(timeout):
        raise TimeoutError(f"no word from the subscribers in {timeout} s")
    message: tuple[str, Any] = conn.recv()
    return message


def run(settings: Settings | None = None) -> dict[str, Any]:
    """Every cell on one stack: subscriber counts outermost, so each count's cells share a
    machine state (the heaviest cell, most writes with most subscribers, comes last)."""
    from devstack import tokens

    settings = settings or Settings()
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with local_stack() as stack:
        ticks = publish_rate(stack)
        admin = tokens.mint(
            tokens.local_secret(stack.config.data_dir), "bench-admin", "leaderboard/admin"
        )
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as writers:
            for count in settings.subscribers:
                for rate in settings.rates:
                    progress(f"live: {count} subscribers, {rate:g} writes/s")
                    rows.append(_cell(stack, admin, writers, rate, count, settings))
    return {
        "settings": asdict(settings),
        "publish_rate": ticks,
        "seconds": round(time.perf_counter() - started, 1),
        "rows": rows,
    }


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per cell: the issue's p99 target, the measured value, met or not."""
    out = []
    for row in results["rows"]:
        rate = f"{row['writes_per_s']:g}"
        name = f"p99 write→message ≤ 1 s at {rate} writes/s, {row['subscribers']} subscribers"
        out.append(p99_target(name, row))
    return out


def p99_target(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """A latency row against the one-second p99, met only with nothing missed."""
    p99 = row["p99_ms"]
    met = not math.isnan(p99) and p99 <= TARGET_P99_MS and row["missed"] == 0
    return {"target": name, "value": p99, "goal": f"<= {TARGET_P99_MS:g} ms", "met": bool(met)}


def main() -> int:
    results = run()
    for row in results["rows"]:
        print(row)
    for line in targets(results):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
