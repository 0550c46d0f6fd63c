"""Redis CPU per submission, measured hot, beside the floor of the same run (issue 22).

What a busy node pays for one submission, without the client, the network or a cold cache:
  1. A board of the shape under test is loaded (PostgreSQL-rebuild path: sorted sets, reference
     counts, metadata) and copied into one database per measured script.
  2. The submissions are sent once through the service's own store (`RedisIndex.submit`, the
     call `make run` makes) against the loaded original, and every command it sends is recorded
     as sent on the socket (`execute_command`), with its reply.
  3. The recorded commands are replayed, pipelined, against an untouched copy: a warm-up
     batch, `CONFIG RESETSTAT`, then the measured batch; `INFO commandstats` gives the
     microseconds per call of the script command (its own commands included).
  4. In the same run and on copies of the same board: the floor (one script doing ZADD + ZCOUNT
     on each sorted set the submission touches, then one XADD of the same event record), an
     empty script call with the same keys and arguments, and the script this product shipped
     before issue 22 (`submit_baseline.lua`, with its own argument layout): today's figures
     beside the baseline's.
  5. Also in the same run: the guarantees' own floor (`_GUARANTEES`): the floor plus only the
     commands the product's guarantees oblige any submit script to send (rules check, version,
     metadata, idempotency record, the event's fields in the outbox), with no logic. Its ratio
     to the floor is the least any script keeping those guarantees could reach.

Targets (issue 22): at 2,000 players, within 1.25x of the floor for "1 period" and for
"4 periods x (global + region), metadata, idempotency key". Large boards are reported as the
same ratio: their skiplists no longer fit in cache, which the floor pays too.
"""

from __future__ import annotations

import json
import random
import statistics
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from benchmarks.progress import progress
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.clock import to_ms
from leaderboard.domain.events import new_event_id
from leaderboard.domain.periods import ALL_TIME, PERIOD_KINDS, current_periods
from leaderboard.domain.submissions import Submission
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex

NOW = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)  # a Wednesday: every period well inside
TARGET_RATIO = 1.25
_BASELINE = Path(__file__).with_name("submit_baseline.lua")
_FLOOR = """
local n = tonumber(ARGV[1])
for i = 1, n do
  redis.call('ZADD', KEYS[i], ARGV[3], ARGV[2])
  redis.call('ZCOUNT', KEYS[i], '(' .. ARGV[3], '+inf')
end
redis.call('XADD', KEYS[n + 1], '*', 'r', ARGV[4])
return 1
"""
_EMPTY = "return 1"
# The least a submit script keeping the product's guarantees sends, whatever its logic: the
# floor's ZADD + ZCOUNT per set, plus proving the caller's rules current (one read, with the
# idempotency record when a key is given), taking the board's next version (INCR), storing
# the metadata and the idempotency record when the submission has them, and an outbox entry
# that carries the event's own fields (player, score, region, metadata) beside the record.
# No branching, parsing or string building: what is left of the gap to it is the script's own.
_GUARANTEES = """
local n = tonumber(ARGV[1])
local got
if ARGV[7] ~= '' then got = redis.call('MGET', KEYS[n + 2], KEYS[n + 5])
else got = {redis.call('GET', KEYS[n + 2])} end
if got[1] ~= ARGV[5] then return 0 end
redis.call('INCR', KEYS[n + 3])
for i = 1, n do
  redis.call('ZADD', KEYS[i], ARGV[3], ARGV[2])
  redis.call('ZCOUNT', KEYS[i], '(' .. ARGV[3], '+inf')
end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[n + 4], ARGV[2], ARGV[6]) end
if ARGV[7] ~= '' then redis.call('SET', KEYS[n + 5], ARGV[7] .. '\\n' .. ARGV[4], 'EX', 90000) end
redis.call('XADD', KEYS[n + 1], '*', 'r', ARGV[4], 'p', ARGV[2], 's', ARGV[3], 'g', ARGV[8],
  'm', ARGV[6])
return 1
"""


@dataclass(frozen=True)
class Shape:
    name: str
    periods: tuple[str, ...]
    regions: tuple[str, ...] | None = None
    region: str | None = None
    metadata: bool = False
    idempotency: bool = False
    mode: str = "increment"
    ties: str = "shared"
    target: bool = False

    def sets(self) -> int:
        return len(self.periods) * (2 if self.region else 1)


SHAPES = (
    Shape("1 period", (ALL_TIME,), target=True),
    Shape("4 periods", PERIOD_KINDS),
    Shape(
        "4 periods x (global + region), metadata, idempotency key",
        PERIOD_KINDS,
        regions=("eu", "us"),
        region="eu",
        metadata=True,
        idempotency=True,
        target=True,
    ),
    Shape("1 period, best", (ALL_TIME,), mode="best"),
    Shape("1 period, set", (ALL_TIME,), mode="set"),
    Shape("1 period, ties first", (ALL_TIME,), ties="first"),
)


@dataclass
class Settings:
    sizes: tuple[int, ...] = (2_000,)
    submissions: int = 10_000
    warmup: int = 2_000
    rounds: int = 5
    shapes: tuple[Shape, ...] = SHAPES
    # Above this many players only the target shapes are measured (the ones the README and
    # docs/local-performance.md quote at 1,000,000): loading a board that size in every shape
    # took most of `make bench`'s budget.
    all_shapes_up_to: int = 100_000
    seed: int = 22
    extra: dict[str, Any] = field(default_factory=dict)


class _Recorder(redis.Redis):
    """A client that keeps every command it sends (and its reply) while `log` is a list."""

    log: list[tuple[tuple[Any, ...], Any]] | None = None

    def execute_command(self, *args: Any, **options: Any) -> Any:
        reply = super().execute_command(*args, **options)
        if self.log is not None:
            self.log.append((args, reply))
        return reply


def _board(shape: Shape, board_id: str) -> BoardConfig:
    return BoardConfig(
        board_id=board_id,
        mode=shape.mode,
        ties=shape.ties,
        periods=shape.periods,
        regions=shape.regions,
    )


def _metadata(rng: random.Random, player: int) -> dict[str, str | int | float | bool]:
    return {"name": f"player {player:07d}", "level": rng.randint(1, 99), "clan": "north"}


def _load(client: redis.Redis, shape: Shape, board: BoardConfig, players: int, seed: int) -> None:
    """The board as a rebuild from PostgreSQL leaves it: sets, reference counts, metadata."""
    rng = random.Random(seed)
    index = RedisIndex(client)
    index.publish_board(board)
    periods = current_periods(NOW)
    regions: list[str | None] = [None, shape.region] if shape.region else [None]
    sets = [(periods[kind].id, region) for kind in shape.periods for region in regions]
    # A plain board's sets are bare sorted sets: the first is loaded from here and the others
    # copied from it inside the server (the same size and score spread; loading a million
    # players into eight sets from Python took minutes). Other layouts are loaded set by set.
    plain = board.shards == 1 and board.ties != "first" and not board.tiebreakers
    loaded = sets[:1] if plain else sets
    chunk = 20_000
    for start in range(0, players, chunk):
        ids = range(start, min(players, start + chunk))
        for period_id, region in loaded:
            rows = [(f"p{i:07d}", float(rng.randint(0, 1_000_000)), i + 1, None) for i in ids]
            index.load_entries(board, period_id, region, rows)
        refs = {f"p{i:07d}": shape.sets() for i in ids}
        meta = (
            {f"p{i:07d}": json.dumps(_metadata(rng, i), separators=(",", ":")) for i in ids}
            if shape.metadata
            else {}
        )
        index.load_players(board.board_id, refs, meta)
    keys = BoardKeys(board.board_id)
    for period_id, region in sets[len(loaded) :]:
        client.copy(keys.zset(*sets[0]), keys.zset(period_id, region), replace=True)
    client.set(keys.seq, players)


def _submissions(shape: Shape, players: int, count: int, seed: int) -> Iterator[Submission]:
    rng = random.Random(seed)
    for _ in range(count):
        player = rng.randrange(players)
        score: int = rng.randint(1, 100) if shape.mode == "increment" else rng.randint(0, 10**6)
        yield Submission(
            player_id=f"p{player:07d}",
            score=score,
            region=shape.region,
            metadata=_metadata(rng, player) if shape.metadata else None,
        )


def _record(
    client: _Recorder, shape: Shape, board_id: str, submissions: list[Submission]
) -> list[tuple[tuple[Any, ...], Any]]:
    """Send each submission through the service's store once; keep what went on the socket."""
    index = RedisIndex(client)
    periods = current_periods(NOW)
    now_ms = to_ms(NOW)
    log: list[tuple[tuple[Any, ...], Any]] = []
    for n, submission in enumerate(submissions):
        client.log = []
        index.submit(
            board_id,
            submission,
            event_id=new_event_id(now_ms + n),
            now_ms=now_ms + n,
            periods=periods,
            idempotency=("bench", uuid.uuid4().hex) if shape.idempotency else None,
        )
        sent = [entry for entry in client.log if entry[0][0] in ("EVALSHA", "FCALL")]
        # The first call loads the script and the board's rules; every later one is one call.
        if not sent or (n > 0 and len(client.log) != 1):
            raise RuntimeError(f"a warm submission sent {len(client.log)} commands: {client.log}")
        log.append(sent[-1])
    client.log = None
    return log


def _baseline_commands(
    sha: str, shape: Shape, board_id: str, submissions: list[Submission]
) -> list[tuple[Any, ...]]:
    """The pre-issue-22 script's calls for the same submissions (its own argument layout)."""
    keys = BoardKeys(board_id)
    periods = current_periods(NOW)
    now_ms = to_ms(NOW)
    commands: list[tuple[Any, ...]] = []
    for n, s in enumerate(submissions):
        regions: list[str | None] = [None, s.region] if s.region else [None]
        script_keys = [
            keys.cfg,
            keys.idempotency("bench", uuid.uuid4().hex)
            if shape.idempotency
            else keys.prefix + "idem:-",
            keys.seq,
            keys.meta,
            keys.refs,
            keys.registry,
            keys.rate(s.player_id),
            keys.outbox,
        ]
        candidates: list[str] = []
        for region in regions:
            for kind, period in periods.items():
                script_keys += [keys.zset(period.id, region), keys.members(period.id, region)]
                candidates += [kind, period.id, region or "", keys.suffix(period.id, region)]
        args = [
            s.player_id,
            str(s.score),
            s.region or "",
            json.dumps(s.metadata, separators=(",", ":")) if s.metadata is not None else "",
            now_ms + n,
            new_event_id(now_ms + n),
            s.fingerprint() if shape.idempotency else "",
            90_000,
            len(candidates) // 4,
            *candidates,
        ]
        commands.append(("EVALSHA", sha, len(script_keys), *script_keys, *args))
    return commands


def _record_text(reply: Any) -> str:
    if isinstance(reply, (list, tuple)) and len(reply) > 1:
        value = reply[1]
        return value.decode() if isinstance(value, bytes) else str(value)
    return ""


def _floor_commands(
    sha: str, shape: Shape, board_id: str, submissions: list[Submission], records: list[str]
) -> list[tuple[Any, ...]]:
    keys = BoardKeys(board_id)
    periods = current_periods(NOW)
    regions: list[str | None] = [None, shape.region] if shape.region else [None]
    sets = [keys.zset(periods[k].id, r) for r in regions for k in shape.periods]
    return [
        ("EVALSHA", sha, len(sets) + 1, *sets, keys.outbox, len(sets), s.player_id, s.score, rec)
        for s, rec in zip(submissions, records, strict=True)
    ]


def _guarantee_commands(
    sha: str,
    shape: Shape,
    board_id: str,
    submissions: list[Submission],
    records: list[str],
    recorded: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    keys = BoardKeys(board_id)
    periods = current_periods(NOW)
    regions: list[str | None] = [None, shape.region] if shape.region else [None]
    sets = [keys.zset(periods[k].id, r) for r in regions for k in shape.periods]
    commands = []
    for s, rec, sent in zip(submissions, records, recorded, strict=True):
        rules = sent[3 + int(sent[2])]  # ARGV[1] of the service's call: the cached cfg text
        idem = keys.idempotency("bench", uuid.uuid4().hex)
        meta = json.dumps(s.metadata, separators=(",", ":")) if s.metadata is not None else ""
        fp = s.fingerprint() if shape.idempotency else ""
        script_keys = [*sets, keys.outbox, keys.cfg, keys.seq, keys.meta, idem]
        args = [len(sets), s.player_id, s.score, rec, rules, meta, fp, s.region or ""]
        commands.append(("EVALSHA", sha, len(script_keys), *script_keys, *args))
    return commands


def _send(client: redis.Redis, batch: list[tuple[Any, ...]]) -> None:
    for start in range(0, len(batch), 500):
        pipe = client.pipeline(transaction=False)
        for command in batch[start : start + 500]:
            pipe.execute_command(*command)
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise reply
            if isinstance(reply, list) and reply and reply[0] == "ERR":
                raise RuntimeError(f"a replayed submission was refused: {reply}")
            if reply == 0:  # the guarantees script did not find the rules it was sent
                raise RuntimeError("a replayed call measured nothing")


def _script_usec(client: redis.Redis, expected: int) -> float:
    stats = client.info("commandstats")
    calls = usec = 0.0
    for name in ("cmdstat_evalsha", "cmdstat_fcall"):
        if name in stats:
            calls += stats[name]["calls"]
            usec += stats[name]["usec"]
    if calls != expected:
        raise RuntimeError(f"expected {expected} script calls, Redis counted {calls}")
    return usec / calls


def _replay(
    systems: dict[str, tuple[redis.Redis, list[tuple[Any, ...]]]], warmup: int, rounds: int
) -> dict[str, list[float]]:
    """µs of Redis CPU per script call, per system and round: after a warm-up, the measured
    calls go in `rounds` chunks, each system's chunk right after the other's (the machine's
    noise then hits them alike; ratios are taken per round)."""
    for client, commands in systems.values():
        _send(client, commands[:warmup])
    measured = len(next(iter(systems.values()))[1]) - warmup
    size = measured // rounds
    out: dict[str, list[float]] = {name: [] for name in systems}
    for r in range(rounds):
        for name, (client, commands) in systems.items():
            end = len(commands) if r == rounds - 1 else warmup + (r + 1) * size
            chunk = commands[warmup + r * size : end]
            client.config_resetstat()
            _send(client, chunk)
            out[name].append(_script_usec(client, len(chunk)))
    return out


def _check_same_board(
    replayed: redis.Redis, recorded: redis.Redis, outbox: str, count: int
) -> None:
    """The replay must have done what the service did, or the figures measure something else
    (a replayed idempotency key, say, would measure the replay path)."""
    if replayed.xlen(outbox) != count or recorded.xlen(outbox) != count:
        raise RuntimeError(
            f"{count} submissions applied, yet the outboxes hold {replayed.xlen(outbox)}"
            f" (replay) and {recorded.xlen(outbox)} (recording)"
        )
    for key in recorded.scan_iter(match="*:z:*", count=1000):
        if replayed.zrange(key, 0, -1, withscores=True) != recorded.zrange(
            key, 0, -1, withscores=True
        ):
            raise RuntimeError(f"the replay left {key} unlike the recorded run")


def _copy_db(client: redis.Redis, target: int) -> None:
    for key in client.scan_iter(count=1000):
        client.copy(key, key, destination_db=str(target), replace=True)


def measure(url: str, shape: Shape, players: int, settings: Settings) -> dict[str, Any]:
    """One row: µs per submission (service, floor, empty call, pre-issue-22 baseline)."""
    server = redis.connection.parse_url(url)
    server.pop("db", None)  # a database in the URL would win over ours
    dbs: dict[str, _Recorder] = {
        name: _Recorder(connection_pool=redis.ConnectionPool(**server, db=n, decode_responses=True))
        for n, name in enumerate(("record", "service", "floor", "baseline", "guarantees"))
    }
    try:
        for client in dbs.values():
            client.flushdb()
        board_id = "bench-cpu"
        # Loaded once, then copied: the three measured boards are laid out in memory alike
        # (on large boards a freshly copied skiplist is measurably faster than a grown one).
        _load(dbs["record"], shape, _board(shape, board_id), players, settings.seed)
        for target in (1, 2, 3, 4):  # service, floor, baseline, guarantees
            _copy_db(dbs["record"], target)
        count = settings.warmup + settings.submissions
        submissions = list(_submissions(shape, players, count, settings.seed + 1))
        recorded = _record(dbs["record"], shape, board_id, submissions)
        records = [_record_text(reply) for _, reply in recorded]
        floor_sha = dbs["floor"].script_load(_FLOOR)
        empty_sha = dbs["record"].script_load(_EMPTY)
        base_sha = dbs["baseline"].script_load(_BASELINE.read_text())
        guarantees_sha = dbs["guarantees"].script_load(_GUARANTEES)
        sent = [cmd for cmd, _ in recorded]
        per_round = _replay(
            {
                "service": (dbs["service"], [cmd for cmd, _ in recorded]),
                "floor": (
                    dbs["floor"],
                    _floor_commands(floor_sha, shape, board_id, submissions, records),
                ),
                "empty": (dbs["record"], [("EVALSHA", empty_sha, *cmd[2:]) for cmd, _ in recorded]),
                "baseline": (
                    dbs["baseline"],
                    _baseline_commands(base_sha, shape, board_id, submissions),
                ),
                "guarantees": (
                    dbs["guarantees"],
                    _guarantee_commands(
                        guarantees_sha, shape, board_id, submissions, records, sent
                    ),
                ),
            },
            settings.warmup,
            settings.rounds,
        )
        _check_same_board(dbs["service"], dbs["record"], BoardKeys(board_id).outbox, count)
    finally:
        for client in dbs.values():
            client.flushdb()
            client.close()
    ratio = statistics.median(
        x / f for x, f in zip(per_round["service"], per_round["floor"], strict=True)
    )
    base_ratio = statistics.median(
        x / f for x, f in zip(per_round["baseline"], per_round["floor"], strict=True)
    )
    guarantees_ratio = statistics.median(
        x / f for x, f in zip(per_round["guarantees"], per_round["floor"], strict=True)
    )
    target = shape.target and players == 2_000
    return {
        "shape": shape.name,
        "players": players,
        "sets": shape.sets(),
        "service_us": round(statistics.median(per_round["service"]), 2),
        "floor_us": round(statistics.median(per_round["floor"]), 2),
        "ratio": round(ratio, 2),
        "target": f"<= {TARGET_RATIO}" if target else "",
        "met": ratio <= TARGET_RATIO if target else None,
        "baseline_us": round(statistics.median(per_round["baseline"]), 2),
        "baseline_ratio": round(base_ratio, 2),
        "empty_call_us": round(statistics.median(per_round["empty"]), 2),
        "guarantees_us": round(statistics.median(per_round["guarantees"]), 2),
        "guarantees_ratio": round(guarantees_ratio, 2),
    }


def run(url: str, settings: Settings) -> list[dict[str, Any]]:
    """Every shape at every size (only the target shapes above `all_shapes_up_to` players), on
    databases 0-4 of `url` (flushed: give it a Redis of its own, with nothing else to do)."""
    rows = []
    for players in settings.sizes:
        for shape in settings.shapes:
            if players > settings.all_shapes_up_to and not shape.target:
                continue
            progress(f"submit cpu: {shape.name}, {players:,} players")
            rows.append(measure(url, shape, players, settings))
    return rows
