"""API latency: the paths users pay for, through the real handlers, against a bare redis-py floor.

For each board size, boards are filled straight into Redis (outside the measurement), then every
operation is timed warm, in this process, through the real Lambda handlers of
functions/api_read and functions/api_write (template routes, payload-2.0 events with the JWT
authorizer's claims, Powertools resolver, logger, tracer and metrics decorators). Each handler call
is paired with the floor: the very Lua script the service runs, with the same keys and arguments,
called through redis-py on the same client and connection, with no framework around it. The
keys and arguments of the floor are checked against what the handler really sends.

The player-centred reads (issue 13) are here too: many players at once at 1, 10 and 100 ids
and one player on every period, each one script call like the others.

Per operation: p50/p99 of both, their ratio, the Redis round trips of one handler call (sends on
the socket) and the commands Redis executed for it (INFO commandstats deltas: the EVALSHA and
every command the script ran).

Not measured: API Gateway and the JWT check (outside the function), X-Ray (tracing is disabled:
the decorator runs, no segment is sent) and the SQS send: the write handler's queue sink is
replaced by one that only serializes the event (`event.to_message()`), so the submit numbers
include the serialization cost and no network call.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redis.connection import Connection, ConnectionPool

from benchmarks.progress import progress
from devstack import tokens
from devstack.gateway import build_event
from devstack.runtime import load_handler, make_context, module_name
from devstack.template import FunctionSpec, Template
from devstack.template import load as load_template
from leaderboard.domain.boards import parse_board_request
from leaderboard.domain.clock import to_ms
from leaderboard.domain.periods import ALL_TIME, WEEKLY, current_period, current_periods
from leaderboard.domain.submissions import Submission
from leaderboard.stores.redis.client import RedisLike, connect
from leaderboard.stores.redis.keys import CATALOG_KEY, BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex

READ_FUNCTION, WRITE_FUNCTION = "ApiReadFunction", "ApiWriteFunction"
MODES = ("increment", "best", "set")
READ_OPS = (
    "entries_limit10",
    "entries_limit100",
    "around_rank_limit100",
    "player",
    "around_count100",
    "periods",
    "players_ids1",
    "players_ids10",
    "players_ids100",
    "standings",
)
SUBMIT_OPS = tuple(f"submit_{mode}" for mode in MODES)
TARGET_P50_RATIO, TARGET_P99_RATIO, TARGET_FLATNESS = 3.0, 5.0, 1.5
QUEUE_NOTE = "queue send replaced by event.to_message() only (serialization, no SQS call)"
SECRET = "bench-secret-not-used-anywhere-else"
# Never contacted on the measured paths (only for a lost board / degraded reads).
ENVIRONMENT = {
    "REDIS_CLUSTER": "false",
    "DATABASE_URL": "postgresql://u@127.0.0.1:1/x",
    "SCORE_QUEUE_URL": "http://127.0.0.1:1/000000000000/bench-scores",
    "SQS_ENDPOINT_URL": "http://127.0.0.1:1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "JWT_SECRET": SECRET,
    "JWT_ISSUER": tokens.issuer(),
    "JWT_AUDIENCE": tokens.audience(),
}
# What API Gateway typically forwards besides the request's own headers.
HEADERS = {
    "accept": "application/json",
    "accept-encoding": "gzip, deflate, br",
    "host": "api.example.com",
    "user-agent": "bench/1.0",
    "x-amzn-trace-id": "Root=1-00000000-000000000000000000000000",
    "x-forwarded-for": "203.0.113.10",
    "x-forwarded-port": "443",
    "x-forwarded-proto": "https",
}
FILL_BATCH = 50_000
META = '{"name":"n"}'


class _CountingConnection(Connection):
    """Counts what is written to the socket: one send = one round trip."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        _CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


class _SerializeOnlySink:
    """The write path's queue, minus the network: the event is serialized and dropped."""

    def send(self, event: Any) -> None:
        event.to_message()

    def send_many(self, events: Any) -> set[int]:
        for event in events:
            event.to_message()
        return set()


@dataclass
class _Function:
    spec: FunctionSpec
    handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    module: Any
    index: RedisIndex


@dataclass
class _Api:
    template: Template
    read: _Function
    write: _Function
    claims: dict[str, Any]
    token: str


@dataclass
class _Call:
    """One request: the handler's event, and the floor's script with the same keys and args."""

    function: _Function
    event: dict[str, Any]
    script: Any
    keys: list[str]
    args: list[Any]
    volatile_args: tuple[int, ...] = ()  # per-call values (event id, clock) not compared


@dataclass
class _Op:
    name: str
    make: Callable[[random.Random], _Call]


@contextlib.contextmanager
def _handlers(redis_url: str) -> Iterator[_Api]:
    """The real read and write handlers, loaded fresh against `redis_url` (whatever this
    process loaded before is put back afterwards, and so is the environment)."""
    saved_env = dict(os.environ)
    template = load_template()
    specs = {name: template.functions[name] for name in (READ_FUNCTION, WRITE_FUNCTION)}
    saved_modules = {
        name: sys.modules.pop(name)
        for name in (module_name(spec) for spec in specs.values())
        if name in sys.modules
    }
    loaded: dict[str, _Function] = {}
    try:
        for name, spec in specs.items():
            os.environ.update(spec.resolved_environment({"REDIS_URL": redis_url, **ENVIRONMENT}))
            handler = load_handler(spec)
            module = sys.modules[module_name(spec)]
            service = module.reads if name == READ_FUNCTION else module.scores
            client = service.index.client
            # Connections that count their sends (round trips), for timings and floor alike.
            old = client.connection_pool
            client.connection_pool = ConnectionPool(
                connection_class=_CountingConnection, **old.connection_kwargs
            )
            old.disconnect()
            loaded[name] = _Function(spec, handler, module, service.index)
        loaded[WRITE_FUNCTION].module.scores.sink = _SerializeOnlySink()
        token = tokens.mint(SECRET, "game-server", "leaderboard/server")
        yield _Api(
            template,
            loaded[READ_FUNCTION],
            loaded[WRITE_FUNCTION],
            tokens.verify(SECRET, token),
            token,
        )
    finally:
        for function in loaded.values():
            function.index.client.connection_pool.disconnect()
            function.index.client.close()
        for spec in specs.values():
            sys.modules.pop(module_name(spec), None)
        sys.modules.update(saved_modules)
        os.environ.clear()
        os.environ.update(saved_env)


def _event(api: _Api, method: str, path: str, query: str = "", body: Any = None) -> dict[str, Any]:
    found = api.template.find_route(method, path)
    assert found is not None, (method, path)
    route, params = found
    headers = dict(HEADERS)
    raw = b""
    if body is not None:
        raw = json.dumps(body).encode()
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(raw))
    claims = None
    if route.authorizer is not None:
        headers["authorization"] = f"Bearer {api.token}"
        claims = api.claims
    return build_event(route, method, path, query, headers, raw, params, claims, "203.0.113.10")


# --- boards ---------------------------------------------------------------------------------


def _fill(client: RedisLike, board_id: str, size: int, week: str) -> None:
    """`size` players in all-time (a tenth of them also this week), with reference counts and
    metadata for a quarter, written in bulk with pipelines."""
    keys = BoardKeys(board_id)
    all_time, weekly = keys.zset(ALL_TIME), keys.zset(week)
    for start in range(0, size, FILL_BATCH):
        chunk = range(start, min(size, start + FILL_BATCH))
        pipe = client.pipeline(transaction=False)
        pipe.zadd(all_time, {f"p{i}": (i * 7919) % 1_000_003 for i in chunk})
        pipe.zadd(weekly, {f"p{i}": (i * 7919) % 1_000 for i in chunk if i % 10 == 0})
        pipe.hset(keys.refs, mapping={f"p{i}": 2 if i % 10 == 0 else 1 for i in chunk})
        pipe.hset(keys.meta, mapping={f"p{i}": META for i in chunk if i % 4 == 0})
        pipe.execute()
    client.sadd(keys.registry, ALL_TIME, week)


def _create_boards(client: RedisLike, size: int) -> dict[str, str]:
    """One board per submit mode, all holding the same `size` players; mode -> board id.
    The first is filled with pipelines, the others are server-side copies of its keys."""
    tag = uuid.uuid4().hex[:8]
    boards = {mode: f"bench-{tag}-{mode}" for mode in MODES}
    week = current_period(WEEKLY, datetime.now(UTC)).id
    source = BoardKeys(boards[MODES[0]])
    _fill(client, source.board_id, size, week)
    for mode in MODES[1:]:
        target = BoardKeys(boards[mode])
        for suffix in ("z:" + ALL_TIME, "z:" + week, "refs", "meta", "keys"):
            client.copy(source.prefix + suffix, target.prefix + suffix)
    index = RedisIndex(client)
    for mode, board_id in boards.items():
        index.publish_board(
            parse_board_request(
                board_id,
                {"mode": mode, "periods": [ALL_TIME, WEEKLY]},
                None,
                has_entries=False,
                now_iso="2026-01-01T00:00:00Z",
            )
        )
    return boards


def _drop_boards(client: RedisLike, boards: dict[str, str]) -> None:
    for board_id in boards.values():
        keys = list(client.scan_iter(match=BoardKeys(board_id).prefix + "*", count=1000))
        if keys:
            client.unlink(*keys)
        client.hdel(CATALOG_KEY, board_id)


# --- operations -----------------------------------------------------------------------------


def _read_call(
    api: _Api, board_id: str, path: str, query: str, args: list[Any], *, periods: bool = False
) -> _Call:
    """A read through the handler, and the script call RedisIndex.window (or period_sets)
    makes for it."""
    keys = BoardKeys(board_id)
    index = api.read.index
    event = _event(api, "GET", f"/boards/{board_id}{path}", query)
    if periods:
        return _Call(
            api.read, event, index._periods, [keys.registry, keys.archived, keys.cfg], [keys.prefix]
        )
    script_keys = [
        keys.cfg,
        keys.zset(ALL_TIME),
        keys.members(ALL_TIME),
        keys.meta,
        keys.archived,
    ]
    # RedisIndex.window: op, period kind, region, player, offset or rank, size, period id.
    return _Call(api.read, event, index._one_node._read, script_keys, [*args, ALL_TIME])


def _players_call(api: _Api, board_id: str, ids: list[str]) -> _Call:
    """Many players through the handler, and the script call RedisIndex.players makes."""
    keys = BoardKeys(board_id)
    event = _event(api, "GET", f"/boards/{board_id}/players", "ids=" + ",".join(ids))
    args = ["many", keys.prefix, "", ALL_TIME, ALL_TIME, "", "", *ids]
    return _Call(
        api.read,
        event,
        api.read.index._one_node._players,
        [keys.cfg, keys.meta, keys.archived],
        args,
    )


def _standings_call(api: _Api, board_id: str, player: str) -> _Call:
    """One player on every current period, and the script call RedisIndex.standings makes."""
    keys = BoardKeys(board_id)
    event = _event(api, "GET", f"/boards/{board_id}/players/{player}/standings")
    args = ["standings", keys.prefix, "", player, ""]
    for kind, period in current_periods(datetime.now(UTC)).items():
        args += [kind, period.id]
    return _Call(
        api.read,
        event,
        api.read.index._one_node._players,
        [keys.cfg, keys.meta, keys.archived],
        args,
    )


def _submit_call(api: _Api, board_id: str, player: str, score: int) -> _Call:
    """A submission through the handler, and the script call RedisIndex.submit makes for it
    (no Idempotency-Key, no region), built by the store itself from the board's rules."""
    body = {"player_id": player, "score": score, "metadata": {"name": player}}
    event = _event(api, "POST", f"/boards/{board_id}/scores", body=body)
    index = api.write.index
    now = datetime.now(UTC)
    script_keys, args = index.submit_call(
        board_id,
        Submission(player, score, None, {"name": player}),
        index.write_rules(board_id),
        event_id=str(uuid.uuid4()),
        now_ms=to_ms(now),
        periods=current_periods(now),
        idempotency=None,
    )
    return _Call(api.write, event, index._submit, script_keys, args, (3, 4))


def _operations(api: _Api, boards: dict[str, str], size: int) -> list[_Op]:
    """The reads (on the increment board) and one submission per mode, each on its board."""
    board = boards[MODES[0]]

    def player(rng: random.Random) -> str:
        return f"p{rng.randrange(size)}"

    def page(limit: int) -> Callable[[random.Random], _Call]:
        args = ["page", ALL_TIME, "", "", 0, limit]
        return lambda rng: _read_call(api, board, "/entries", f"limit={limit}", args)

    def around_rank(rng: random.Random) -> _Call:
        rank = rng.randint(1, size)
        query = f"around_rank={rank}&limit=100"
        return _read_call(
            api, board, "/entries", query, ["around_rank", ALL_TIME, "", "", rank, 100]
        )

    def one_player(rng: random.Random) -> _Call:
        pid = player(rng)
        return _read_call(api, board, f"/players/{pid}", "", ["player", ALL_TIME, "", pid, 0, 1])

    def around(rng: random.Random) -> _Call:
        pid = player(rng)
        args = ["around", ALL_TIME, "", pid, 0, 100]
        return _read_call(api, board, f"/players/{pid}/around", "count=100", args)

    def periods(rng: random.Random) -> _Call:
        return _read_call(api, board, "/periods", "", [], periods=True)

    def players(count: int) -> Callable[[random.Random], _Call]:
        # Distinct ids, a tenth of them without an entry (friends who never played this board).
        def make(rng: random.Random) -> _Call:
            ids = [f"p{i}" for i in rng.sample(range(size), count)]
            ids = [f"x{i}" if n % 10 == 9 else i for n, i in enumerate(ids)]
            return _players_call(api, board, ids)

        return make

    def standings(rng: random.Random) -> _Call:
        return _standings_call(api, board, f"p{rng.randrange(0, size, 10)}")  # also this week

    def submit(board_id: str) -> Callable[[random.Random], _Call]:
        return lambda rng: _submit_call(api, board_id, player(rng), rng.randint(1, 1_000_000))

    makers = [page(10), page(100), around_rank, one_player, around, periods]
    makers += [players(1), players(10), players(100), standings]
    makers += [submit(boards[mode]) for mode in MODES]
    return [_Op(name, make) for name, make in zip(READ_OPS + SUBMIT_OPS, makers, strict=True)]


# --- measurement ----------------------------------------------------------------------------


def _invoke(call: _Call) -> dict[str, Any]:
    return call.function.handler(call.event, make_context(call.function.spec))


def _check(call: _Call, response: dict[str, Any], floor: Any) -> None:
    if response.get("statusCode") != 200:
        raise RuntimeError(f"{call.event['routeKey']} answered {response!r}")
    if isinstance(floor, list) and floor and floor[0] == "ERR":
        raise RuntimeError(f"the floor's script answered {floor!r}")


@contextlib.contextmanager
def _recording(owner: Any, attribute: str) -> Iterator[list[tuple[list[Any], list[Any]]]]:
    """Record the keys and args the service passes to one of its scripts (`owner`'s)."""
    script = getattr(owner, attribute)
    calls: list[tuple[list[Any], list[Any]]] = []

    def record(keys: Any = None, args: Any = None, client: Any = None) -> Any:
        calls.append((list(keys or []), list(args or [])))
        return script(keys=keys, args=args, client=client)

    setattr(owner, attribute, record)
    try:
        yield calls
    finally:
        setattr(owner, attribute, script)


def _verify_floor(op: _Op, rng: random.Random) -> None:
    """The floor must do the handler's Redis work: same script, same keys, same args."""
    call = op.make(rng)
    index = call.function.index
    # the scripts are the index's own (writes, periods) or its one-node layout's (reads)
    owner, attribute = next(
        (owner, name)
        for owner in (index, index._one_node)
        for name in ("_read", "_periods", "_players", "_submit")
        if getattr(owner, name, None) is call.script
    )
    with _recording(owner, attribute) as calls:
        response = _invoke(call)
    _check(call, response, None)
    assert len(calls) == 1, (op.name, calls)
    keys, args = calls[0]

    def masked(values: list[Any]) -> list[Any]:
        return [None if i in call.volatile_args else v for i, v in enumerate(values)]

    if keys != call.keys or masked(args) != masked(call.args):
        raise AssertionError(
            f"{op.name}: the floor's script call differs from the handler's:\n"
            f"  handler keys={keys} args={args}\n  floor   keys={call.keys} args={call.args}"
        )


def _percentile(sorted_ns: list[int], q: float) -> float:
    """Nearest-rank percentile, in microseconds."""
    return sorted_ns[max(0, math.ceil(q * len(sorted_ns)) - 1)] / 1000


def _time(op: _Op, rng: random.Random, count: int) -> tuple[list[int], list[int]]:
    """`count` handler calls, each followed by its floor call; nanoseconds each."""
    clock = time.perf_counter_ns
    handler_ns, floor_ns = [], []
    for _ in range(count):
        call = op.make(rng)
        context = make_context(call.function.spec)
        handler, event, script = call.function.handler, call.event, call.script
        started = clock()
        response = handler(event, context)
        middle = clock()
        floor = script(keys=call.keys, args=call.args)
        ended = clock()
        _check(call, response, floor)
        handler_ns.append(middle - started)
        floor_ns.append(ended - middle)
    return handler_ns, floor_ns


def _executed(stats: RedisLike) -> int:
    """Commands the server has executed so far (INFO itself left out)."""
    info = stats.info("commandstats")
    return sum(int(v["calls"]) for k, v in info.items() if k != "cmdstat_info")


def _count(op: _Op, rng: random.Random, stats: RedisLike, calls: int = 20) -> dict[str, Any]:
    """Round trips of one handler call (the most seen), and commands per call, handler and
    floor."""
    prepared = [op.make(rng) for _ in range(calls)]
    trips = []
    before = _executed(stats)
    for call in prepared:
        sent = _CountingConnection.sends
        _check(call, _invoke(call), None)
        trips.append(_CountingConnection.sends - sent)
    handler_commands = (_executed(stats) - before) / calls
    prepared = [op.make(rng) for _ in range(calls)]
    before = _executed(stats)
    for call in prepared:
        call.script(keys=call.keys, args=call.args)
    floor_commands = (_executed(stats) - before) / calls
    return {
        "round_trips": max(trips),
        "redis_commands": round(handler_commands, 2),
        "floor_redis_commands": round(floor_commands, 2),
    }


def _measure(op: _Op, size: int, samples: int, stats: RedisLike, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    _verify_floor(op, rng)
    _time(op, rng, max(50, samples // 10))  # warm-up
    handler_ns, floor_ns = _time(op, rng, samples)
    counts = _count(op, rng, stats)
    handler_ns.sort()
    floor_ns.sort()
    h50, h99 = _percentile(handler_ns, 0.50), _percentile(handler_ns, 0.99)
    f50, f99 = _percentile(floor_ns, 0.50), _percentile(floor_ns, 0.99)
    row: dict[str, Any] = {
        "size": size,
        "op": op.name,
        "samples": samples,
        "handler_p50_us": round(h50, 1),
        "handler_p99_us": round(h99, 1),
        "floor_p50_us": round(f50, 1),
        "floor_p99_us": round(f99, 1),
        "ratio_p50": round(h50 / f50, 2),
        "ratio_p99": round(h99 / f99, 2),
        **counts,
    }
    if op.name.startswith("submit_"):
        row["note"] = QUEUE_NOTE
    return row


def run(redis_url: str, sizes: list[int], *, samples: int = 2000) -> list[dict[str, Any]]:
    """One row per (board size, operation): handler and floor p50/p99 in microseconds, their
    ratios, round trips and Redis commands per handler call."""
    rows: list[dict[str, Any]] = []
    admin = connect(redis_url, timeout=60)
    stats = connect(redis_url, timeout=10)
    # Metrics are flushed to stdout (EMF) after each submission: written, but not to a terminal.
    with (
        _handlers(redis_url) as api,
        Path(os.devnull).open("w", buffering=1) as devnull,
        contextlib.redirect_stdout(devnull),
    ):
        try:
            for size in sizes:
                progress(f"api: boards of {size:,} entries")
                boards = _create_boards(admin, size)
                try:
                    for n, op in enumerate(_operations(api, boards, size)):
                        rows.append(_measure(op, size, samples, stats, seed=size * 100 + n))
                finally:
                    _drop_boards(admin, boards)
        finally:
            admin.close()
            stats.close()
    return rows


# --- summary and report ---------------------------------------------------------------------


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Worst ratios (overall and per op), read flatness (p50 at the largest size / p50 at the
    smallest) and which targets hold."""
    ops = list(dict.fromkeys(r["op"] for r in rows))
    per_op = {
        op: {
            "max_ratio_p50": max(r["ratio_p50"] for r in rows if r["op"] == op),
            "max_ratio_p99": max(r["ratio_p99"] for r in rows if r["op"] == op),
        }
        for op in ops
    }
    sizes = sorted({r["size"] for r in rows})
    flatness: dict[str, float] = {}
    floor_flatness: dict[str, float] = {}
    if len(sizes) > 1:
        at = {(r["size"], r["op"]): r for r in rows}
        for op in ops:
            small, large = at.get((sizes[0], op)), at.get((sizes[-1], op))
            if op in SUBMIT_OPS or small is None or large is None:
                continue
            flatness[op] = round(large["handler_p50_us"] / small["handler_p50_us"], 2)
            floor_flatness[op] = round(large["floor_p50_us"] / small["floor_p50_us"], 2)
    max_p50 = max(r["ratio_p50"] for r in rows)
    max_p99 = max(r["ratio_p99"] for r in rows)
    return {
        "sizes": sizes,
        "max_ratio_p50": max_p50,
        "max_ratio_p99": max_p99,
        "per_op": per_op,
        "read_flatness": flatness,
        "floor_read_flatness": floor_flatness,
        "targets": {
            "one_round_trip_per_call": all(r["round_trips"] == 1 for r in rows),
            f"handler_p50_within_{TARGET_P50_RATIO:g}x_floor": max_p50 <= TARGET_P50_RATIO,
            f"handler_p99_within_{TARGET_P99_RATIO:g}x_floor": max_p99 <= TARGET_P99_RATIO,
            f"reads_flat_within_{TARGET_FLATNESS:g}x": (
                all(v <= TARGET_FLATNESS for v in flatness.values()) if flatness else None
            ),
        },
    }


def report(rows: list[dict[str, Any]]) -> str:
    """A table of the rows, then the summary and the targets."""
    head = (
        f"{'size':>9} {'op':<21} {'handler p50':>11} {'p99':>8} {'floor p50':>9} {'p99':>8} "
        f"{'x p50':>6} {'x p99':>6} {'trips':>5} {'cmds':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['size']:>9} {r['op']:<21} {r['handler_p50_us']:>11.1f} {r['handler_p99_us']:>8.1f}"
            f" {r['floor_p50_us']:>9.1f} {r['floor_p99_us']:>8.1f} {r['ratio_p50']:>6.2f}"
            f" {r['ratio_p99']:>6.2f} {r['round_trips']:>5} {r['redis_commands']:>6g}"
        )
    s = summary(rows)
    lines += [
        "",
        "times in microseconds; x = handler / floor (the same script on the same connection,"
        " through redis-py alone)",
        f"submit: {QUEUE_NOTE}; tracing disabled (decorator only)",
        f"max ratio p50 {s['max_ratio_p50']}, p99 {s['max_ratio_p99']}",
    ]
    for op, worst in s["per_op"].items():
        lines.append(
            f"  {op:<21} max x p50 {worst['max_ratio_p50']:>5}"
            f"  max x p99 {worst['max_ratio_p99']:>5}"
        )
    if s["read_flatness"]:
        lines.append(
            f"read flatness (p50 at {s['sizes'][-1]} / p50 at {s['sizes'][0]}; floor in brackets):"
        )
        for op, value in s["read_flatness"].items():
            lines.append(f"  {op:<21} {value:>5} ({s['floor_read_flatness'][op]})")
    lines.append("targets:")
    for name, held in s["targets"].items():
        verdict = "n/a" if held is None else ("holds" if held else "FAILS")
        lines.append(f"  {name:<34} {verdict}")
    return "\n".join(lines)


def main() -> int:
    from devstack.servers import EmbeddedValkey

    sizes = [int(x) for x in os.environ.get("BENCH_SIZES", "10000,100000,1000000").split(",")]
    samples = int(os.environ.get("BENCH_SAMPLES", "2000"))
    with EmbeddedValkey() as valkey:
        rows = run(valkey.url, sizes, samples=samples)
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
