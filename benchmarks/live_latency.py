"""Live updates: an acknowledged write to the message at the client, on a quiet board and a hot
one, for board channels and player channels, with the publisher's Redis CPU per message.

The issue's targets: a quiet board (writes slower than the publish rate) p99 ≤ 100 ms on both
channel kinds; a hot board p99 ≤ 1/rate + 50 ms (player channels at 1,000 writes/s with 1,000
watching players: + 100 ms); at most `rate` messages per channel in any second; the publisher's
Redis CPU per message within 1.2x of the tick publisher's (benchmarks/baselines/).

1. The local stack in this process on free ports with throwaway data and embedded stores (as
   `make run` does on a fresh machine): the real live publisher runs in its worker on its own
   schedule (runs of a minute handing over to the next) and the real local event API fans out.
2. The rows, one after the other on that stack (`cells`): board channels, quiet and at each
   rate, with the first subscriber count, then the top rate with each other count; player
   channels, quiet on a small board (every write passes a watcher) and at each rate on a large
   one (benchmarks/player_channels.py has those boards). Each row has a new all-time board,
   made over HTTP, and it is the only board in the publisher's catalog while its row runs (the
   row takes it out of the catalog when it ends: the tick publisher reads every board of the
   catalog on every tick, so more boards would only add to its cost).
3. Subscribers: a child process opens the WebSocket connections (board rows: one subscription
   to the board's all-time channel each; player rows: player_channels) and says when all are
   subscribed. Then a writer in another child process makes the row's writes: quiet, a gap
   uniformly random in 0.5-1 s before each; hot, open loop at the rate, the n-th write at a
   random moment of its slot [n, n+1)/rate (evenly spaced writes would all land at the same
   point of the publisher's cycle). A warm-up first (not measured), then the measured writes;
   a late write goes at once, and the writes still due at the end are not made.
4. The writes call the submit script directly (`RedisIndex.submit`): the write path's one Redis
   round trip, the step that makes a write visible to the live path. The HTTP layer in front of
   it is the HTTP suite's (this 2-core machine cannot push 1,000 writes/s through HTTP). The
   writer records each write's version and the monotonic and wall clocks right after the script
   returned (CLOCK_MONOTONIC is system-wide on Linux, so comparable across processes).
5. Latency. Board rows: write v at subscriber s is the first message on s with a version >= v,
   minus v's acknowledgement; p50, p99 and max over every (write, subscriber) pair; writes a
   subscriber never saw (after a short drain) are missed. Player rows: each player message
   matched to the write that caused it (player_channels.analyse). A message's `published_at`
   (when the publisher built it) splits the latency into the wait for the publisher
   (`wait_p99_ms`: acknowledgement -> published_at) and the publishing and fan-out after it
   (`delivery_*`).
6. Messages per channel per second: for each channel, the most messages whose `published_at`
   falls in any window [t, t + 1 s), over everything the subscribers received in the row; the
   row shows the busiest channel (published_at has millisecond resolution).
7. The publisher's Redis CPU per message (benchmarks/publisher_cpu.py): every command is logged
   (SLOWLOG) while the row writes; between two marks, from halfway between the last warm-up
   write and the first measured one to one publish interval + 50 ms after the last write, the
   publisher's top-level commands' execution time is summed and divided by the messages the
   local event API published on the row's channels in the same window (its `/stats` counts
   before and after; board rows: the board's channel; player rows: that and the watchers' player
   channels). The writer's own commands in that window give the submit script's time per write.
8. `handovers`: how often the publisher lease changed hands during the row. A run publishes for
   about a minute and the next is started every minute; a handover can pause the messages (on a
   fresh stack the first successor starts a new worker), and the row it falls in shows it.

The subscribers share one process and one event loop, so at 1,000 of them "received" includes
that loop's queueing behind the other 999 copies of the same message (real clients would each
have their own machine); board rows' frames are not JSON-decoded there, only the version and
published_at are picked out. Writes that bypass HTTP also bypass its SQS send: the outbox relay
sends them to the persister on its schedule (once a minute), which is background load in some
rows.
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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.player_channels import Board
from benchmarks.progress import progress
from benchmarks.publisher_cpu import named

if TYPE_CHECKING:  # the child processes import this module: keep its imports light
    import numpy as np

    from devstack.stack import LocalStack

TARGET_QUIET_P99_MS = 100.0
TARGET_HOT_MARGIN_MS = 50.0  # over one publish interval
TARGET_HOT_PLAYERS_MARGIN_MS = 100.0  # player channels at 1,000 writes/s, 1,000 watching
TARGET_CPU_RATIO = 1.2
BASELINE = Path(__file__).resolve().parent / "baselines" / "live_tick_publisher.json"
PLAYERS = 5000  # board rows write to this many players in turn
QUIET = "quiet"
WRITER = "bench-writer"  # the writer's connection name (publisher_cpu sums its commands apart)
# The event is an escaped JSON string inside the data frame: `...\"version\":123,...`.
_VERSION = re.compile(rb'\\"version\\":(\d+)')
_PUBLISHED_AT = re.compile(rb'\\"published_at\\":\\"([^\\"]+)\\"')
_DATA = b'{"type":"data"'


@dataclass(frozen=True)
class Cell:
    """One row: a channel kind, a load (None: quiet) and who listens."""

    channel: str  # "board" or "player"
    rate: float | None  # writes a second; None: quiet
    subscribers: int  # board: WebSocket subscribers; player: watching players
    players: int | None = None  # player rows: players on the board

    @property
    def load(self) -> str:
        return QUIET if self.rate is None else f"{self.rate:g}/s"

    @property
    def who(self) -> str:
        if self.channel == "board":
            return f"{self.subscribers:,} subscribers"
        return f"{self.subscribers:,} of {self.players or 0:,} players watching"


@dataclass
class Settings:
    """The rows and how long each is measured."""

    rates: tuple[float, ...] = (100, 1000)  # the hot rows' writes a second
    # board rows: the first count at every load, each other one at the top rate only
    subscribers: tuple[int, ...] = (100, 1000)
    player_board: Board = field(default_factory=Board)  # the hot player rows' board
    quiet_player_board: Board = field(default_factory=lambda: Board(players=1000, watchers=100))
    channels: tuple[str, ...] = ("board", "player")
    seconds: float = 5.0  # measured, per hot row
    quiet_writes: int = 30  # measured, per quiet row
    quiet_gaps: tuple[float, float] = (0.5, 1.0)  # seconds before each quiet write
    warm_seconds: float = 2.0  # hot writes not measured
    quiet_warm_writes: int = 2  # quiet writes not measured
    drain_seconds: float = 2.0  # after the last write, for its messages to arrive
    connect_concurrency: int = 50  # WebSocket handshakes in flight at once (board rows)


def cells(settings: Settings) -> list[Cell]:
    """The rows in run order: the heaviest of each kind last."""
    out: list[Cell] = []
    loads: list[float | None] = [None, *settings.rates]
    top = max(settings.rates) if settings.rates else None
    if "board" in settings.channels:
        first, *more = settings.subscribers
        out += [Cell("board", rate, first) for rate in loads]
        out += [Cell("board", top, count) for count in more if top is not None]
    if "player" in settings.channels:
        quiet, hot = settings.quiet_player_board, settings.player_board
        out.append(Cell("player", None, quiet.watchers, quiet.players))
        out += [Cell("player", rate, hot.watchers, hot.players) for rate in settings.rates]
    return out


# --- the stack ------------------------------------------------------------------------------


@contextlib.contextmanager
def _environment(updates: Mapping[str, str | None]) -> Iterator[None]:
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


def publish_rate(env: Mapping[str, str]) -> int:
    """The publisher's messages per channel per second at most, as its worker sees them
    (template, then `env`: the stack's)."""
    from devstack.template import load
    from leaderboard.settings import LiveSettings

    spec = load().functions["LivePublisherFunction"]
    resolved: dict[str, str | None] = dict(spec.resolved_environment(dict(env)))
    # required to read the settings, and no stack to give one: never used here
    resolved.setdefault("LIVE_EVENTS_URL", "http://127.0.0.1/event")
    with _environment(resolved):
        return LiveSettings.from_env().publish_rate


def create_board(stack: LocalStack, admin: str, **rules: Any) -> dict[str, Any]:
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


def _published(stack: LocalStack) -> dict[str, int]:
    """The local event API's count of events published, per channel, since it started."""
    live = stack.live_config()
    assert live is not None, "the stack has no event API"
    with urllib.request.urlopen(f"http://{live['http_host']}/stats", timeout=30) as response:
        published: dict[str, int] = json.loads(response.read())["published"]
    return published


# --- the writer (a child process) -------------------------------------------------------------


def schedule(cell: Cell, settings: Settings, seed: str) -> tuple[list[float], int, float]:
    """The writes' moments (seconds from the start), how many are warm-up, and when a late
    writer gives up (seconds from the start)."""
    jitter = random.Random(seed)
    if cell.rate is None:
        low, high = settings.quiet_gaps
        count = settings.quiet_warm_writes + settings.quiet_writes
        times = list(itertools.accumulate(jitter.uniform(low, high) for _ in range(count)))
        return times, settings.quiet_warm_writes, times[-1] + low / 2
    warm = round(cell.rate * settings.warm_seconds)
    planned = warm + max(1, round(cell.rate * settings.seconds))
    return [(n + jitter.random()) / cell.rate for n in range(planned)], warm, planned / cell.rate


def _warm_up_imports() -> None:
    """Run once in the writer's process before the first row: its imports are not a row's."""
    from leaderboard.stores.redis.serving_index import RedisIndex  # noqa: F401


def _write(
    redis_url: str,
    board_id: str,
    times: list[float],
    warm: int,
    give_up: float,
    moves: tuple[Any, ...] | None,
    start: float,
) -> dict[str, Any]:
    """The writes at `start + times[n]` (monotonic), warm-up first. Board rows (`moves` None):
    player n mod PLAYERS, score n + 1; player rows: player_channels.moves(moves)."""
    from benchmarks.player_channels import moves as player_moves
    from benchmarks.player_channels import player_id
    from leaderboard.domain.clock import to_ms
    from leaderboard.domain.events import new_event_id
    from leaderboard.domain.periods import current_periods
    from leaderboard.domain.submissions import Submission
    from leaderboard.stores.redis.client import connect
    from leaderboard.stores.redis.serving_index import RedisIndex

    client = connect(named(redis_url, WRITER))
    index = RedisIndex(client)
    mover = player_moves(moves) if moves is not None else None
    acks: list[tuple[int, int, float, float]] = []  # version, player, monotonic, wall clock
    for n, at in enumerate(times):
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif time.monotonic() > start + give_up:
            break
        if mover is not None:
            i, score = mover.next()
        else:
            i, score = n % PLAYERS, n + 1
        now = datetime.now(UTC)
        result = index.submit(
            board_id,
            Submission(player_id=player_id(i), score=score, region=None, metadata=None),
            event_id=new_event_id(to_ms(now)),
            now_ms=to_ms(now),
            periods=current_periods(now),
            idempotency=None,
        )
        acks.append((result.version, i, time.monotonic(), time.time()))
    client.close()
    first, last = _window(times, warm, start)
    return {
        "measure_from": first,
        "last_planned": last,
        "warm_writes": warm,
        "planned": len(times) - warm,
        "acks": acks,
    }


def _window(times: list[float], warm: int, start: float) -> tuple[float, float]:
    """From halfway between the last warm-up write and the first measured one, to the last
    write (monotonic)."""
    first = (times[warm - 1] + times[warm]) / 2 if warm else times[0] - 1e-3
    return start + first, start + times[-1]


# --- the subscribers of a board channel (a child process) -------------------------------------


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


async def expect(ws: Any, kind: str) -> None:
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
            await expect(ws, "connection_ack")
            await ws.send(subscribe)
            await expect(ws, "subscribe_success")
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


@contextlib.contextmanager
def _subscribers(target: Callable[..., None], *args: Any) -> Iterator[Connection]:
    """A child process running `target(conn, *args)`, once it says it is ready."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=target, args=(child, *args), daemon=True)
    process.start()
    try:
        kind, value = _receive(parent, 180)
        if kind != "ready":
            raise RuntimeError(f"the subscribers did not start: {value}")
        yield parent
    finally:
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join(5)
        parent.close()


def _receive(conn: Connection, timeout: float) -> tuple[str, Any]:
    if not conn.poll(timeout):
        raise TimeoutError(f"no word from the subscribers in {timeout} s")
    message: tuple[str, Any] = conn.recv()
    return message


def _stop(conn: Connection) -> Any:
    conn.send("stop")
    kind, received = _receive(conn, 180)
    if kind != "done":
        raise RuntimeError(f"the subscribers failed: {received}")
    return received


# --- the publisher's runs ------------------------------------------------------------------


class LeaseWatch:
    """Samples which publisher run holds the lease, so a row can say that a run handed over to
    the next one (started every minute) during it: a handover may pause the messages."""

    def __init__(self, redis_url: str, every: float = 0.025) -> None:
        from leaderboard.stores.redis.client import connect

        self.client = connect(named(redis_url, "bench-lease-watch"))
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


# --- measures shared by both kinds of row ----------------------------------------------------


def quantile_ms(values: np.ndarray, q: float) -> float:
    import numpy as np

    if not len(values):
        return float("nan")
    return round(float(np.quantile(values, q, method="inverted_cdf")) * 1000, 1)


def wall(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def per_channel_second(stamps: Mapping[str, list[float]]) -> int:
    """The most messages any one channel got in a window [t, t + 1 s) (by published_at)."""
    most = 0
    for moments in stamps.values():
        ordered = sorted(moments)
        first = 0
        for last, moment in enumerate(ordered):
            while ordered[first] <= moment - 1.0:
                first += 1
            most = max(most, last - first + 1)
    return most


def analyse(writes: dict[str, Any], received: dict[str, Any], subscribers: int) -> dict[str, Any]:
    """A board row's latencies over every (write, subscriber) pair, and where they went."""
    import numpy as np

    measured = writes["acks"][writes["warm_writes"] :]
    acks = np.array([a[2] for a in measured])
    acks_wall = np.array([a[3] for a in measured])
    wanted = np.array([a[0] for a in measured], dtype=np.int64)
    start, end = writes["measure_from"], writes["last_planned"]
    offset = time.time() - time.monotonic()  # monotonic -> wall clock, same machine
    stamped = {v: wall(s) for v, s in received["published"].items() if s}
    latencies: list[np.ndarray] = []
    delivery: list[np.ndarray] = []
    missed = 0
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
        stamp = np.array([stamped.get(v, np.nan) for v in seen_list])
        keep = (at >= start) & ~np.isnan(stamp)
        delivery.append(at[keep] + offset - stamp[keep])
    every = np.concatenate(latencies) if latencies else np.array([])
    spread = np.concatenate(delivery) if delivery else np.array([])
    # The wait for the publisher: from a write's ack to when it built the message that carried
    # the write (the first version published at or after the write's).
    versions = np.array(sorted(stamped), dtype=np.int64)
    built = np.array([stamped[v] for v in versions])
    index = np.searchsorted(versions, wanted, side="left")
    covered = index < len(versions)
    wait = built[index[covered]] - acks_wall[covered]
    return {
        "writes": len(measured),
        "achieved_per_s": round(len(measured) / max(end - start, 1e-9), 1),
        "p50_ms": quantile_ms(every, 0.5),
        "p99_ms": quantile_ms(every, 0.99),
        "max_ms": quantile_ms(every, 1.0),
        "wait_p99_ms": quantile_ms(wait, 0.99),
        "delivery_p50_ms": quantile_ms(spread, 0.5),
        "delivery_p99_ms": quantile_ms(spread, 0.99),
        "missed": missed,
        "dropped": received["dropped"],
        "msgs_per_channel_s": per_channel_second({"board": list(stamped.values())}),
        "subscribers_measured": subscribers,
    }


# --- one row --------------------------------------------------------------------------------


@dataclass
class _Run:
    stack: LocalStack
    writers: Any  # the writer's process pool
    admin: str
    server: str
    client: Any  # the benchmark's own connection (named, never counted)
    interval: float  # 1 / publish rate
    settings: Settings


def _drive(
    run: _Run,
    cell: Cell,
    board_id: str,
    channels: list[str],
    moves: tuple[Any, ...] | None,
    subscribers: Connection,
) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """The row's writes with the publisher metered; then the drain and what the subscribers
    got. Returns the writes, the subscribers' record and the row's publisher columns."""
    from benchmarks.publisher_cpu import SlowlogMeter
    from leaderboard.stores.redis.keys import CATALOG_KEY

    redis_url = run.stack.env["REDIS_URL"]
    times, warm, give_up = schedule(cell, run.settings, board_id)
    wanted = set(channels)
    with SlowlogMeter(redis_url, writer=WRITER) as meter, LeaseWatch(redis_url) as lease:
        start = time.monotonic() + 0.5
        pending = run.writers.apply_async(
            _write, (redis_url, board_id, times, warm, give_up, moves, start)
        )
        first, last = _window(times, warm, start)
        last += run.interval + 0.05  # the last write's message, at the latest publishing
        _sleep_until(first)
        after, before = meter.mark(), _published(run.stack)
        boards = int(run.client.hlen(CATALOG_KEY))
        _sleep_until(last)
        until, then = meter.mark(), _published(run.stack)
        writes = pending.get(timeout=give_up + 120)
        time.sleep(run.settings.drain_seconds)
        received = _stop(subscribers)
        used = meter.usage(after, until)
    messages = sum(n - before.get(ch, 0) for ch, n in then.items() if ch in wanted)
    columns = {
        "messages": messages,
        "cpu_us_per_message": round(used.publisher_us / messages, 1) if messages else None,
        "publisher_us": used.publisher_us,
        "publisher_commands": used.publisher_commands,
        "publisher_scripts": used.publisher_scripts,
        # the spread of its script calls' times: a preempted Valkey stretches a few of them
        "script_us_p50": _percentile(used.script_us, 0.5),
        "script_us_p90": _percentile(used.script_us, 0.9),
        "script_us_max": max(used.script_us, default=None),
        "writer_us_per_write": (
            round(used.writer_us / used.writer_commands, 1) if used.writer_commands else None
        ),
        "cpu_window_s": round(last - first, 2),
        "slowlog_entries": used.entries,
        "handovers": lease.handovers(writes["measure_from"]),
        "boards": boards,
        # the machine's load average (1 minute) at the row's end: other work on a shared one
        "load_1m": round(os.getloadavg()[0], 2),
    }
    return writes, received, columns


def _percentile(values: list[int], q: float) -> int | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _retire(run: _Run, board_id: str) -> None:
    """Out of the publisher's catalog: the next row's board is the only one it reads."""
    from leaderboard.stores.redis.keys import CATALOG_KEY

    run.client.hdel(CATALOG_KEY, board_id)


def _board_row(run: _Run, cell: Cell) -> dict[str, Any]:
    board = create_board(run.stack, run.admin)
    live = run.stack.live_config()
    assert live is not None, "the stack has no event API"
    channel = board["live_channel"] + "/all-time"
    try:
        with _subscribers(
            _subscribers_main,
            live["realtime_url"],
            live["http_host"],
            live["api_key"],
            channel,
            cell.subscribers,
            run.settings.connect_concurrency,
        ) as subscribers:
            writes, received, columns = _drive(
                run, cell, board["board_id"], [channel], None, subscribers
            )
    finally:
        _retire(run, board["board_id"])
    return _row(cell, analyse(writes, received, cell.subscribers), columns)


def _player_row(run: _Run, cell: Cell) -> dict[str, Any]:
    from benchmarks import player_channels
    from leaderboard.domain.live import player_channel

    shape = run.settings.player_board if cell.rate else run.settings.quiet_player_board
    board = create_board(run.stack, run.admin, mode="best")
    board_id = board["board_id"]
    try:
        told = player_channels.prepare(run.client, board_id, shape)
        live = run.stack.live_config()
        assert live is not None, "the stack has no event API"
        board_channel = board["live_channel"] + "/all-time"
        channels = [player_channel(p) for p in told]
        watched = player_channels.watcher_indexes(shape.players, len(told))
        moves: tuple[Any, ...] = (
            ("hot", shape.players, shape.max_move, f"writes-{board_id}")
            if cell.rate
            else ("quiet", shape.players, tuple(watched), f"writes-{board_id}")
        )
        with _subscribers(
            player_channels.subscribers_main,
            live["realtime_url"],
            live["http_host"],
            live["api_key"],
            run.server,
            board_id,
            board_channel,
            channels,
            shape.connections,
        ) as subscribers:
            writes, received, columns = _drive(
                run, cell, board_id, [board_channel, *channels], moves, subscribers
            )
        ranks = player_channels.ranks_now(run.client, board_id, list(told))
        due = player_channels.due_at_end(run.client, board_id)
    finally:
        _retire(run, board_id)
    measured = player_channels.analyse(writes, received, told, ranks)
    return _row(cell, measured, {**columns, "due_at_end": due})


def _row(cell: Cell, measured: dict[str, Any], columns: dict[str, Any]) -> dict[str, Any]:
    return {
        "channel": cell.channel,
        "load": cell.load,
        "writes_per_s": cell.rate,
        "subscribers": cell.subscribers,
        "players": cell.players,
        **measured,
        **columns,
    }


SERVICE_PATHS = ("layers", "functions", "devstack", "template.yaml")


def source_commit() -> str:
    """The newest commit that changed the service's code (SERVICE_PATHS), with `+changes` when
    the working tree's differs from it: what a run measured, whatever benchmark commits follow."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        commit = git("log", "-1", "--format=%H", "--", *SERVICE_PATHS)
        changed = git("status", "--porcelain", "--", *SERVICE_PATHS)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return (commit or "unknown") + ("+changes" if changed else "")


def machine() -> dict[str, Any]:
    """The CPU model and the number of logical cores (/proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {"cpu": "unknown", "cores": os.cpu_count()}
    lines = text.splitlines()
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cores = sum(1 for line in lines if line.startswith("processor"))
    return {"cpu": names[0] if names else "unknown", "cores": cores}


def run(settings: Settings | None = None) -> dict[str, Any]:
    """Every row on one stack, one after the other (`cells`)."""
    from devstack import tokens
    from leaderboard.stores.redis.client import connect

    settings = settings or Settings()
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with local_stack() as stack:
        rate = publish_rate(stack.env)
        secret = tokens.local_secret(stack.config.data_dir)
        client = connect(named(stack.env["REDIS_URL"], "bench-setup"))
        context = multiprocessing.get_context("spawn")
        try:
            with context.Pool(1) as writers:
                writers.apply(_warm_up_imports)
                shared = _Run(
                    stack=stack,
                    writers=writers,
                    admin=tokens.mint(secret, "bench-admin", "leaderboard/admin"),
                    server=tokens.mint(secret, "bench-server", "leaderboard/server"),
                    client=client,
                    interval=1.0 / rate,
                    settings=settings,
                )
                for cell in cells(settings):
                    progress(f"live: {cell.channel} channels, {cell.load}, {cell.who}")
                    if cell.channel == "board":
                        rows.append(_board_row(shared, cell))
                    else:
                        rows.append(_player_row(shared, cell))
        finally:
            client.close()
    return {
        "settings": asdict(settings),
        "publish_rate": rate,
        "commit": source_commit(),
        "date": datetime.now(UTC).date().isoformat(),
        "machine": machine(),
        "seconds": round(time.perf_counter() - started, 1),
        "load_1m": round(os.getloadavg()[0], 2),
        "rows": rows,
    }


# --- the targets, against the tick publisher's numbers ------------------------------------


ROW_KEY = ("channel", "load", "subscribers", "players")
BASELINE_COLUMNS = (
    "writes",
    "max_ms",
    "p50_ms",
    "p99_ms",
    "wait_p99_ms",
    "delivery_p99_ms",
    "msgs_per_channel_s",
    "messages",
    "cpu_us_per_message",
    "writer_us_per_write",
    "handovers",
    "load_1m",
)


def baseline_from(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a baseline file keeps of one or more runs of this suite on the same code and machine:
    each row's columns, the median over the runs (a shared machine's noise: the hot rows' Redis
    CPU per message moved by up to a third between runs), and each run's CPU per message."""
    first = runs[0]
    for other in runs[1:]:
        for name in ("commit", "machine", "publish_rate"):
            if other[name] != first[name]:
                raise ValueError(f"runs of different {name}: {first[name]} and {other[name]}")
    rows = []
    for row in first["rows"]:
        key = tuple(row[k] for k in ROW_KEY)
        same = [r for run in runs for r in run["rows"] if tuple(r[k] for k in ROW_KEY) == key]
        kept: dict[str, Any] = {k: row[k] for k in ROW_KEY}
        for column in BASELINE_COLUMNS:
            values = [r.get(column) for r in same if r.get(column) is not None]
            kept[column] = statistics.median(values) if values else None
        kept["cpu_us_per_message_runs"] = [r.get("cpu_us_per_message") for r in same]
        rows.append(kept)
    return {
        "publisher": "tick: every board's changes read 1/rate s apart (services/live.py)",
        "commit": first["commit"],
        "date": max(run["date"] for run in runs),
        "machine": first["machine"],
        "publish_rate": first["publish_rate"],
        "runs": len(runs),
        "settings": first["settings"],
        "rows": rows,
    }


def load_baseline(path: Path = BASELINE) -> dict[str, Any] | None:
    if not path.exists():
        return None
    baseline: dict[str, Any] = json.loads(path.read_text())
    return baseline


def _label(row: dict[str, Any]) -> str:
    return (
        f"{row['channel']} channels, {row['load']}, "
        + Cell(row["channel"], row["writes_per_s"], row["subscribers"], row["players"]).who
    )


def targets(
    results: dict[str, Any], baseline: dict[str, Any] | bool | None = True
) -> list[dict[str, Any]]:
    """Three rows per row: its p99, its messages per channel per second, and its Redis CPU per
    message against the same row of the baseline (`baseline`: True reads BASELINE)."""
    rate = results["publish_rate"]
    interval_ms = 1000.0 / rate
    base = load_baseline() if baseline is True else (baseline or None)
    here = results.get("machine")
    out = []
    for row in results["rows"]:
        label = _label(row)
        if row["writes_per_s"] is None:
            goal = TARGET_QUIET_P99_MS
        elif (
            row["channel"] == "player"
            and row["writes_per_s"] >= 1000
            and row["subscribers"] >= 1000
        ):
            goal = interval_ms + TARGET_HOT_PLAYERS_MARGIN_MS
        else:
            goal = interval_ms + TARGET_HOT_MARGIN_MS
        p99 = row["p99_ms"]
        out.append(
            {
                "target": f"p99 write→message, {label}",
                "value": p99,
                "goal": f"<= {goal:g} ms, nothing missed",
                "met": bool(not math.isnan(p99) and p99 <= goal and row["missed"] == 0),
            }
        )
        most = row["msgs_per_channel_s"]
        out.append(
            {
                "target": f"messages per channel per second, {label}",
                "value": most,
                "goal": f"<= {rate} (the publish rate)",
                "met": most <= rate,
            }
        )
        out.append(_cpu_target(row, label, base, here))
    return out


def _cpu_target(
    row: dict[str, Any], label: str, base: dict[str, Any] | None, here: Any
) -> dict[str, Any]:
    value = row["cpu_us_per_message"]
    name = f"publisher's Redis CPU per message (µs), {label}"
    key = tuple(row[k] for k in ROW_KEY)
    found = next(
        (r for r in (base or {}).get("rows", []) if tuple(r.get(k) for k in ROW_KEY) == key), None
    )
    if base is None or found is None or not found.get("cpu_us_per_message"):
        return {"target": name, "value": value, "goal": "no baseline for this row", "met": False}
    before = found["cpu_us_per_message"]
    where = "this machine" if base.get("machine") == here else _machine_label(base["machine"])
    limit = TARGET_CPU_RATIO * before
    return {
        "target": name,
        "value": value,
        "goal": (
            f"<= {TARGET_CPU_RATIO:g} x today's {before:g} = {limit:.1f}"
            f" (tick publisher, {str(base['commit'])[:7]}, {where})"
        ),
        "met": value is not None and value <= limit,
    }


def _machine_label(found: dict[str, Any]) -> str:
    return f"{found.get('cpu')}, {found.get('cores')} cores"


def main(argv: list[str]) -> int:
    """`python -m benchmarks.live_latency`: the suite alone. `--write-baseline [live.json ...]`
    writes BASELINE from results files of this suite (bench-results/live.json of a few runs:
    each row's median), or from a new run when none is given."""
    if argv[:1] == ["--write-baseline"]:
        files = argv[1:]
        runs = [json.loads(Path(f).read_text())["live"] for f in files] if files else [run()]
        BASELINE.parent.mkdir(parents=True, exist_ok=True)
        BASELINE.write_text(json.dumps(baseline_from(runs), indent=2) + "\n")
        print(f"wrote {BASELINE.name}: {len(runs)} run(s) of {runs[0]['commit']}")
        return 0
    results = run()
    for row in results["rows"]:
        print(row)
    for line in targets(results):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
