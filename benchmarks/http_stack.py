"""`make run` under load: the local stack started as a newcomer starts it, driven over HTTP by a
load generator on keep-alive connections (benchmarks/http_load.py, in a process of its own).

1. Start `make run` on a fresh data folder (embedded Valkey and PostgreSQL, moto's SQS, the
   persister and the schedules running), create a `best` board with all four periods, load
   PLAYERS standings per period into PostgreSQL and publish them with the admin rebuild.
2. The floor: the same requests through the read and write handlers loaded in this process,
   against the same stores (the SQS send included), one at a time. Then a warm-up that starts
   every worker the pools may start.
3. Closed loop: top 10, one player, the window around a player, and submissions, at 1, 8 and 32
   clients: requests a second, p50 and p99.
4. Sustained: an open loop of SUSTAINED_RATE submissions a second, with reads mixed in, for
   SUSTAINED_SECONDS, sampling the score queue's depth; then the time the persister takes to
   empty the queue, and whether PostgreSQL then equals Redis for the board.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.http_load import LoadResult, Request, request_bytes, run_in_child
from benchmarks.progress import progress
from devstack import tokens
from devstack.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
READ_OPS = ("top10", "player", "around")
OPS = (*READ_OPS, "submit")
# The targets (docs/local-performance.md explains each).
TARGET_READS_PER_S_AT_32 = 2000
TARGET_READ_P50_OVER_HANDLER_MS = 1.0
TARGET_P99_OVER_P50_AT_8 = 5.0
TARGET_SUBMITS_PER_S_AT_32 = 500
TARGET_SUBMIT_P99_MS_AT_8 = 50.0
TARGET_DRAIN_SECONDS = 10.0


@dataclass
class Settings:
    players: int = 100_000
    concurrency: tuple[int, ...] = (1, 8, 32)
    phase_seconds: float = 5.0
    sustained_rate: float = 300.0
    sustained_read_rate: float = 300.0
    sustained_seconds: float = 60.0
    floor_samples: int = 300
    warm_seconds: float = 3.0


# --- requests -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requests:
    """Picklable request maker for the load generator: `op` is one of OPS, or "mixed"
    (submissions and reads in the proportion `submit_share`)."""

    op: str
    board: str
    players: int
    server_token: str
    run_id: str
    submit_share: float = 0.5

    def __call__(self, rng: random.Random, n: int) -> Request:
        op = self.op
        if op == "mixed":
            op = "submit" if rng.random() < self.submit_share else READ_OPS[n % len(READ_OPS)]
        player = f"p{rng.randrange(self.players)}"
        base = f"/boards/{self.board}"
        if op == "top10":
            return op, request_bytes("GET", f"{base}/entries?limit=10")
        if op == "player":
            return op, request_bytes("GET", f"{base}/players/{player}")
        if op == "around":
            return op, request_bytes("GET", f"{base}/players/{player}/around?count=5")
        body = json.dumps({"player_id": player, "score": rng.randrange(1_200_000)}).encode()
        headers = {
            "Authorization": f"Bearer {self.server_token}",
            "Content-Type": "application/json",
            "Idempotency-Key": f"{self.run_id}-{n}-{rng.randrange(1 << 30)}",
        }
        return "submit", request_bytes("POST", f"{base}/scores", headers, body)


# --- the stack ------------------------------------------------------------------------------


class Stack:
    """`make run` in a process group of its own, on a fresh data folder and a free port."""

    def __init__(self, data_dir: Path, extra_env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir / "make-run.log"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("REDIS_URL", "DATABASE_URL", "SQS_ENDPOINT_URL", "JWT_SECRET")
        }
        env.update(PORT=str(self.port), LOCAL_DATA_DIR=str(data_dir), **(extra_env or {}))
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        data_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                ["make", "--no-print-directory", "run"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if f"ready at {self.url}" in self.log.read_text(errors="replace"):
                break
            if self.process.poll() is not None:
                deadline = 0
            time.sleep(0.2)
        else:
            deadline = 0
        if not deadline:
            self.stop()
            raise RuntimeError(f"the stack did not start:\n{self.log.read_text()[-4000:]}")
        self.env: dict[str, str] = json.loads((data_dir / "stack.json").read_text())["env"]
        secret = tokens.local_secret(data_dir)
        self.admin = tokens.mint(secret, "bench-admin", "leaderboard/admin")
        self.server = tokens.mint(secret, "bench-server", "leaderboard/server")

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        if token:
            request.add_header("authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=300) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@contextlib.contextmanager
def running_stack(extra_env: dict[str, str] | None = None) -> Iterator[Stack]:
    with tempfile.TemporaryDirectory(prefix="bench-http-") as folder:
        stack = Stack(Path(folder) / "data", extra_env)
        try:
            yield stack
        finally:
            stack.stop()


def create_board(stack: Stack, players: int) -> str:
    """A `best` board with every period, PLAYERS standings in each, loaded into PostgreSQL
    and published to Redis by the admin rebuild (the designed recovery path)."""
    import psycopg

    from leaderboard.domain.periods import current_periods

    board = f"bench-{uuid.uuid4().hex[:8]}"
    stack.call(
        "PUT",
        f"/boards/{board}",
        {"title": "Bench", "mode": "best", "periods": ["all-time", "daily", "weekly", "monthly"]},
        stack.admin,
    )
    periods = ["all-time", *(p.id for p in current_periods(datetime.now(UTC)).values())]
    with (
        psycopg.connect(stack.env["DATABASE_URL"], autocommit=True) as conn,
        conn.cursor().copy(
            "COPY standings (board_id, period, region, player_id, score, version,"
            " reached_version, present) FROM STDIN"
        ) as copy,
    ):
        for period in dict.fromkeys(periods):
            for i in range(players):
                score = float((i * 7919) % 1_000_003)
                copy.write_row((board, period, "", f"p{i}", score, i + 1, i + 1, True))
    stack.call("POST", f"/boards/{board}/rebuild", {}, stack.admin)
    return board


# --- the floor: the handlers in this process --------------------------------------------------


def floor(stack: Stack, board: str, players: int, samples: int) -> dict[str, dict[str, float]]:
    """p50/p99 (ms) of each operation through the real handlers in this process, one at a time,
    with the stack's environment: the handler's own time (the event built and the token checked
    beforehand), without HTTP, the gateway or the worker hop."""
    from devstack.runtime import load_handler, module_name
    from devstack.template import load

    template = load()
    specs = [template.functions[name] for name in ("ApiReadFunction", "ApiWriteFunction")]
    # Fresh modules: one this process loaded before holds clients for other stores.
    names = [module_name(spec) for spec in specs]
    saved_modules = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    saved_env = dict(os.environ)
    handlers = {}
    try:
        for spec in specs:
            os.environ.update(spec.resolved_environment(stack.env))
            handlers[spec.name] = (load_handler(spec), spec)
        os.environ.clear()
        os.environ.update(saved_env)
        with Path(os.devnull).open("w") as quiet, contextlib.redirect_stdout(quiet):  # EMF
            return _time_handlers(stack, board, players, samples, template, handlers)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved_modules)


def _time_handlers(
    stack: Stack, board: str, players: int, samples: int, template: Any, handlers: dict
) -> dict[str, dict[str, float]]:
    from devstack.gateway import Call, LocalApi
    from devstack.runtime import make_context

    def invoke(function: str, event: dict[str, Any]) -> Any:
        handler, spec = handlers[function]
        return handler(event, make_context(spec))

    api = LocalApi(template, invoke, tokens.local_secret(stack.data_dir))
    maker = Requests("top10", board, players, stack.server, f"floor-{uuid.uuid4().hex[:6]}")
    results: dict[str, dict[str, float]] = {}
    rng = random.Random(7)
    for op in OPS:
        durations: list[float] = []
        for n in range(samples + 20):
            _, raw = Requests(op, maker.board, players, maker.server_token, maker.run_id)(rng, n)
            head, _, body = raw.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            method, target, _ = lines[0].split(" ")
            headers = dict(line.split(": ", 1) for line in lines[1:])
            call = api.prepare(method, target, headers, body)  # the gateway's part: not timed
            assert isinstance(call, Call), (op, call)
            started = time.perf_counter()
            reply = api.reply(invoke(call.function, call.event))
            elapsed = time.perf_counter() - started
            assert reply.status < 300, (op, reply.status, reply.body[:200])
            if n >= 20:  # warm-up
                durations.append(elapsed)
        durations.sort()
        results[op] = {
            "p50_ms": _percentile_ms(durations, 0.50),
            "p99_ms": _percentile_ms(durations, 0.99),
        }
    return results


def _percentile_ms(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))] * 1000


# --- the queue ------------------------------------------------------------------------------


class QueueDepth:
    """Samples the score queue's depth (waiting + in flight + delayed) in a thread."""

    NAMES = (
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    )

    def __init__(self, stack: Stack, every: float = 0.5) -> None:
        import boto3

        self.client: Any = boto3.client(
            "sqs",
            endpoint_url=stack.env["SQS_ENDPOINT_URL"],
            region_name=stack.env["AWS_DEFAULT_REGION"],
            aws_access_key_id=stack.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=stack.env["AWS_SECRET_ACCESS_KEY"],
        )
        self.url = stack.env["SCORE_QUEUE_URL"]
        self.every = every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = time.perf_counter()

    def depth(self) -> int:
        attributes: dict[str, str] = self.client.get_queue_attributes(
            QueueUrl=self.url, AttributeNames=list(self.NAMES)
        )["Attributes"]
        return sum(int(attributes.get(name, 0)) for name in self.NAMES)

    def start(self) -> None:
        self._start = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((round(time.perf_counter() - self._start, 2), self.depth()))
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def wait_empty(self, timeout: float = 120) -> float:
        """Seconds until the queue is empty (samples go on being recorded)."""
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            depth = self.depth()
            self.samples.append((round(time.perf_counter() - self._start, 2), depth))
            if depth == 0:
                return round(time.perf_counter() - started, 2)
            time.sleep(0.25)
        return float("inf")


# --- the suite ------------------------------------------------------------------------------


def _row(phase: str, op: str, clients: int, result: LoadResult, name: str | None = None) -> dict:
    key = name or op
    return {
        "phase": phase,
        "op": op,
        "clients": clients,
        "requests": result.count(key),
        "per_s": round(result.rate(key), 1),
        "p50_ms": round(result.percentile_ms(0.50, key), 2),
        "p99_ms": round(result.percentile_ms(0.99, key), 2),
        "failures": result.failures(),
    }


def run(settings: Settings | None = None, extra_env: dict[str, str] | None = None) -> dict:
    settings = settings or Settings()
    with running_stack(extra_env) as stack:
        started = time.perf_counter()
        progress(f"http: loading a board of {settings.players:,} players into make run")
        board = create_board(stack, settings.players)
        loaded_s = round(time.perf_counter() - started, 1)
        handler = floor(stack, board, settings.players, settings.floor_samples)
        run_id = uuid.uuid4().hex[:8]
        # Warm-up, not recorded: every worker the pools may start is started (a cold start
        # costs a second of CPU, which would land in whichever phase first needs the worker).
        warm = Requests("mixed", board, settings.players, stack.server, f"{run_id}-warm")
        top = max(settings.concurrency)
        run_in_child("closed", "127.0.0.1", stack.port, warm, top, settings.warm_seconds)
        rows = []
        for op in OPS:
            for clients in settings.concurrency:
                progress(f"http: {op}, {clients} clients, {settings.phase_seconds:g} s")
                maker = Requests(op, board, settings.players, stack.server, f"{run_id}-{clients}")
                result = run_in_child(
                    "closed", "127.0.0.1", stack.port, maker, clients, settings.phase_seconds
                )
                row = _row("closed", op, clients, result)
                row["handler_p50_ms"] = round(handler[op]["p50_ms"], 2)
                rows.append(row)
        progress(f"http: sustained load for {settings.sustained_seconds:g} s, then the drain")
        sustained = _sustained(stack, board, settings, run_id)
    return {
        "settings": settings.__dict__,
        "board_load_seconds": loaded_s,
        "handler": handler,
        "rows": rows,
        "sustained": sustained,
    }


def _sustained(stack: Stack, board: str, settings: Settings, run_id: str) -> dict:
    import redis

    from devstack.consistency import assert_redis_equals_postgres

    rate = settings.sustained_rate + settings.sustained_read_rate
    maker = Requests(
        "mixed",
        board,
        settings.players,
        stack.server,
        f"{run_id}-sustained",
        submit_share=settings.sustained_rate / rate,
    )
    depth = QueueDepth(stack)
    depth.start()
    result = run_in_child(
        "open", "127.0.0.1", stack.port, maker, rate, settings.sustained_seconds, connections=64
    )
    load_end = depth.samples[-1][0] if depth.samples else 0.0
    drain = depth.wait_empty()
    depth.stop()
    client = redis.Redis.from_url(stack.env["REDIS_URL"], decode_responses=True)
    try:
        compared = assert_redis_equals_postgres(client, stack.env["DATABASE_URL"], board)
        equal, detail = True, f"{compared} sorted sets equal"
    except AssertionError as exc:
        equal, detail = False, str(exc)[:300]
    finally:
        client.close()
    reads = [op for op in READ_OPS if op in result.latencies]
    read_latencies = sorted(v for op in reads for v in result.latencies[op])
    during = [d for t, d in depth.samples if t <= load_end]
    return {
        "submit_rate": settings.sustained_rate,
        "read_rate": settings.sustained_read_rate,
        "seconds": settings.sustained_seconds,
        "submits": result.count("submit"),
        "submit_per_s": round(result.rate("submit"), 1),
        "submit_p50_ms": round(result.percentile_ms(0.5, "submit"), 2),
        "submit_p99_ms": round(result.percentile_ms(0.99, "submit"), 2),
        "reads": len(read_latencies),
        "read_p50_ms": round(_percentile_ms(read_latencies, 0.5), 2) if read_latencies else None,
        "read_p99_ms": round(_percentile_ms(read_latencies, 0.99), 2) if read_latencies else None,
        "failures": result.failures(),
        "late_starts": result.missed_starts,
        "load_ended_after_s": load_end,  # later than `seconds` when the stack fell behind
        "max_depth": max(during, default=0),
        "depth_last_third_max": max(during[len(during) * 2 // 3 :], default=0),
        "drain_seconds": drain,
        "postgres_equals_redis": equal,
        "consistency": detail,
        "depth_samples": depth.samples,
    }


def _find(rows: list[dict], op: str, clients: int) -> dict | None:
    return next((r for r in rows if r["op"] == op and r["clients"] == clients), None)


def targets(results: dict) -> list[dict[str, Any]]:
    """Each target of the issue with the measured value and whether it is met."""
    rows, out = results["rows"], []
    top = max(results["settings"]["concurrency"])
    eight = 8 if 8 in results["settings"]["concurrency"] else top
    for op in READ_OPS:
        at_top, at_one, at_eight = _find(rows, op, top), _find(rows, op, 1), _find(rows, op, eight)
        if at_top:
            out.append(_target(f"{op}: reads/s at {top} clients", at_top["per_s"], ">=", 2000))
        if at_one:
            gap = round(at_one["p50_ms"] - at_one["handler_p50_ms"], 2)
            out.append(_target(f"{op}: p50 at 1 client minus handler p50 (ms)", gap, "<=", 1.0))
        if at_eight:
            ratio = round(at_eight["p99_ms"] / at_eight["p50_ms"], 2)
            out.append(_target(f"{op}: p99/p50 at {eight} clients", ratio, "<=", 5.0))
    at_top, at_eight = _find(rows, "submit", top), _find(rows, "submit", eight)
    if at_top:
        out.append(_target(f"submit: per s at {top} clients", at_top["per_s"], ">=", 500))
    if at_eight:
        ratio = round(at_eight["p99_ms"] / at_eight["p50_ms"], 2)
        out.append(_target(f"submit: p99/p50 at {eight} clients", ratio, "<=", 5.0))
        out.append(_target(f"submit: p99 at {eight} clients (ms)", at_eight["p99_ms"], "<=", 50))
    sustained = results["sustained"]
    rate = sustained["submit_rate"]
    out.append(
        _target(
            f"sustained: submissions/s (offered {rate:g})",
            sustained["submit_per_s"],
            ">=",
            rate * 0.98,
        )
    )
    out.append(_target("sustained: failed requests", sustained["failures"], "<=", 0))
    bound = max(1000, rate * 10)
    out.append(_target("sustained: max queue depth", sustained["max_depth"], "<=", bound))
    out.append(_target("sustained: queue empty after (s)", sustained["drain_seconds"], "<=", 10))
    out.append(
        _target(
            "sustained: PostgreSQL equals Redis", sustained["postgres_equals_redis"], "==", True
        )
    )
    return out


def _target(name: str, value: Any, op: str, goal: Any) -> dict[str, Any]:
    met = {
        ">=": lambda: value >= goal,
        "<=": lambda: value <= goal,
        "==": lambda: value == goal,
    }[op]()
    return {"target": name, "value": value, "goal": f"{op} {goal}", "met": bool(met)}


def main() -> int:
    results = run()
    print(json.dumps({k: v for k, v in results.items() if k != "sustained"}, indent=1))
    for line in targets(results):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
