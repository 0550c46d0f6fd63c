"""A small HTTP/1.1 load generator: keep-alive connections, closed or open loop, per-request
latency. It runs in a process of its own (`run_in_child`) so that its work never shares an
interpreter lock with what it measures; on uvloop when installed.

Closed loop: `clients` connections each send the next request as soon as the previous answer
arrived (throughput at a concurrency). Open loop: requests start on a fixed schedule, whatever
the answers do (a sustained rate; latency counts from the scheduled start, so queueing shows).
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# One request: (operation name, raw request bytes).
Request = tuple[str, bytes]
MakeRequest = Callable[[random.Random, int], Request]


@dataclass
class LoadResult:
    seconds: float
    latencies: dict[str, list[float]] = field(default_factory=dict)  # op -> seconds, sorted
    statuses: dict[str, dict[int, int]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    missed_starts: int = 0  # open loop: requests that started late because no client was free

    def count(self, op: str | None = None) -> int:
        ops = [op] if op else list(self.latencies)
        return sum(len(self.latencies.get(o, [])) for o in ops)

    def rate(self, op: str | None = None) -> float:
        return self.count(op) / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float, op: str | None = None) -> float:
        values = (
            self.latencies.get(op, [])
            if op
            else sorted(itertools.chain.from_iterable(self.latencies.values()))
        )
        if not values:
            return float("nan")
        return values[min(len(values) - 1, max(0, round(q * len(values)) - 1))] * 1000

    def failures(self) -> int:
        """Answers other than 2xx, plus connection errors."""
        bad = sum(n for s in self.statuses.values() for code, n in s.items() if code >= 300)
        return bad + sum(self.errors.values())


def request_bytes(
    method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class _Connection:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, raw: bytes) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length, close = 0, False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        if length:
            await self.reader.readexactly(length)
        if close:
            self.close()
        return status

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class _Recorder:
    def __init__(self) -> None:
        self.result = LoadResult(0.0)

    def ok(self, op: str, status: int, seconds: float) -> None:
        self.result.latencies.setdefault(op, []).append(seconds)
        by_status = self.result.statuses.setdefault(op, {})
        by_status[status] = by_status.get(status, 0) + 1

    def error(self, op: str) -> None:
        self.result.errors[op] = self.result.errors.get(op, 0) + 1


async def _send(conn: _Connection, recorder: _Recorder, request: Request, started: float) -> None:
    op, raw = request
    try:
        status = await conn.request(raw)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        conn.close()
        recorder.error(op)
        return
    recorder.ok(op, status, time.perf_counter() - started)


async def closed_loop(
    host: str, port: int, make: MakeRequest, clients: int, seconds: float, seed: int = 1
) -> LoadResult:
    recorder = _Recorder()
    deadline = time.perf_counter() + seconds
    counter = itertools.count()

    async def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        conn = _Connection(host, port)
        while time.perf_counter() < deadline:
            request = make(rng, next(counter))
            await _send(conn, recorder, request, time.perf_counter())
        conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    recorder.result.seconds = time.perf_counter() - started
    return recorder.result


async def open_loop(
    host: str,
    port: int,
    make: MakeRequest,
    rate: float,
    seconds: float,
    *,
    connections: int = 64,
    seed: int = 1,
) -> LoadResult:
    """`rate` requests a second for `seconds`, on up to `connections` keep-alive connections."""
    recorder = _Recorder()
    rng = random.Random(seed)
    idle: asyncio.Queue[_Connection] = asyncio.Queue()
    for _ in range(connections):
        idle.put_nowait(_Connection(host, port))
    tasks: set[asyncio.Task[None]] = set()
    total = int(rate * seconds)
    start = time.perf_counter()

    async def one(request: Request, scheduled: float) -> None:
        conn = await idle.get()
        try:
            await _send(conn, recorder, request, scheduled)
        finally:
            idle.put_nowait(conn)

    for n in range(total):
        scheduled = start + n / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if idle.empty():
            recorder.result.missed_starts += 1
        task = asyncio.get_running_loop().create_task(one(make(rng, n), scheduled))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    recorder.result.seconds = time.perf_counter() - start
    while not idle.empty():
        idle.get_nowait().close()
    return recorder.result


def _run(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> LoadResult:
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    coroutine = closed_loop(*args, **kwargs) if kind == "closed" else open_loop(*args, **kwargs)
    result: LoadResult = runner(coroutine)
    for values in result.latencies.values():
        values.sort()
    return result


def run_in_child(kind: str, *args: Any, **kwargs: Any) -> LoadResult:
    """`closed_loop` or `open_loop` in a fresh process; `make` must be a module-level
    function or a picklable callable."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        result: LoadResult = pool.apply(_run, (kind, args, kwargs))
    return result
