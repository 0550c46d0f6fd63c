"""What the richer score model costs (issue 23): a board with 3 tie-breakers and teams beside a
plain board, in the same run, measured hot.

For each board (the same periods, mode and players; only the score model differs):
  1. The board is loaded as a rebuild leaves it, then copied into a database of its own.
  2. Submissions and reads (top 10, one player, 10 around a player) are sent once through the
     service's own store (`RedisIndex`), every command recorded as sent on the socket, and the
     client-side latency of each call taken (one round trip each, on a local socket).
  3. The recorded script calls are replayed, pipelined, against the untouched copy: a warm-up,
     `CONFIG RESETSTAT`, then the measured calls in rounds, the two boards' rounds interleaved;
     `INFO commandstats` gives the µs of Redis CPU per call.

Target (the issue's): the score-model board within 1.3x of the plain board for the latency of
submissions and reads and for Redis CPU per submission (ratios of one run, medians over the
rounds). Redis CPU per read is reported beside them. Each submission to the score-model board
names one of `teams` teams, whose ranking (and members) it updates in the same script.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from benchmarks.submit_cpu import NOW, _copy_db, _Recorder, _replay
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.clock import to_ms
from leaderboard.domain.events import new_event_id
from leaderboard.domain.periods import ALL_TIME, WEEKLY, current_periods
from leaderboard.domain.submissions import Submission
from leaderboard.domain.tiebreakers import TieBreaker, tie_key
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex

TARGET_RATIO = 1.3
COLUMNS = (TieBreaker("time_ms", "asc"), TieBreaker("deaths", "asc"), TieBreaker("level", "desc"))


@dataclass(frozen=True)
class Settings:
    players: int = 20_000
    submissions: int = 10_000
    reads: int = 3_000
    warmup: int = 2_000
    rounds: int = 5
    seed: int = 23
    teams: int = 200  # the clans the score-model board's players belong to


def _boards() -> dict[str, BoardConfig]:
    common: dict[str, Any] = {"mode": "best", "periods": (ALL_TIME, WEEKLY)}
    return {
        "plain": BoardConfig(board_id="bench-plain", **common),
        "score model": BoardConfig(
            board_id="bench-model", tiebreakers=COLUMNS, teams="sum", **common
        ),
    }


def _values(rng: random.Random, board: BoardConfig) -> dict[str, int] | None:
    if not board.tiebreakers:
        return None
    # Narrow ranges: equal scores meet equal times, so every column matters.
    return {"time_ms": rng.randint(0, 99), "deaths": rng.randint(0, 3), "level": rng.randint(1, 5)}


def _team(player: int, settings: Settings) -> str:
    return f"clan{player % settings.teams:04d}"


def _load(client: redis.Redis, board: BoardConfig, settings: Settings) -> None:
    players, seed = settings.players, settings.seed
    rng = random.Random(seed)
    index = RedisIndex(client)
    index.publish_board(board)
    periods = current_periods(NOW)
    for kind in board.periods:
        rows = []
        members: dict[str, list[tuple[str, float, bool]]] = {}
        for i in range(players):
            values = _values(rng, board)
            key = tie_key(values, board.tiebreakers, board.sort) if values else None
            score = float(rng.randint(0, 1_000))
            rows.append((f"p{i:07d}", score, i + 1, key))
            members.setdefault(_team(i, settings), []).append((f"p{i:07d}", score, False))
        for start in range(0, players, 20_000):
            index.load_entries(board, periods[kind].id, None, rows[start : start + 20_000])
        if board.teams:  # every player in a clan, each clan's sum ranked
            scores = {team: sum(v for _, v, _ in rows) for team, rows in members.items()}
            index.load_teams(board.board_id, periods[kind].id, None, members, scores)
    refs = {f"p{i:07d}": len(board.periods) for i in range(players)}
    index.load_players(board.board_id, refs, {})
    if board.teams:
        index.load_player_teams(
            board.board_id, {f"p{i:07d}": [_team(i, settings)] for i in range(players)}
        )
    client.set(BoardKeys(board.board_id).seq, players)


def _timed(client: _Recorder, call: Callable[[], Any]) -> tuple[tuple[Any, ...], float]:
    """Make one call; (the script call it sent, its latency in µs)."""
    client.log = []
    started = time.perf_counter()
    call()
    elapsed = (time.perf_counter() - started) * 1e6
    sent = [args for args, _ in client.log if args[0] == "EVALSHA"]
    if len(client.log) != 1 or not sent:
        raise RuntimeError(f"a warm call sent {len(client.log)} commands: {client.log}")
    client.log = None
    return sent[0], elapsed


def _record(
    clients: dict[str, _Recorder], boards: dict[str, BoardConfig], settings: Settings
) -> dict[str, dict[str, tuple[list[tuple[Any, ...]], list[float]]]]:
    """Per board and kind of call: (the script calls sent, their latencies). The boards take
    turns call by call, so the machine's noise hits both alike."""
    periods = current_periods(NOW)
    weekly = periods[WEEKLY]
    now_ms = to_ms(NOW)
    calls: dict[str, dict[str, Callable[[int], Any]]] = {}
    for name, board in boards.items():
        rng = random.Random(settings.seed + 1)  # the same players and scores on both boards
        index = RedisIndex(clients[name])
        # The first call of each kind loads the script and the board's rules: not recorded.
        index.submit(
            board.board_id,
            Submission("warm", 1, None, None, _values(rng, board)),
            event_id=new_event_id(now_ms),
            now_ms=now_ms,
            periods=periods,
            idempotency=None,
        )
        for op in ("page", "player", "around"):
            index.window(board.board_id, weekly, None, op=op, size=10, player_id="p0000001")
        calls[name] = _calls(index, board, rng, settings, periods, now_ms)
    out: dict[str, dict[str, tuple[list[tuple[Any, ...]], list[float]]]] = {
        name: {} for name in boards
    }
    for kind in ("submit", "top 10", "player", "around"):
        total = settings.warmup + (settings.submissions if kind == "submit" else settings.reads)
        sent: dict[str, list[tuple[Any, ...]]] = {name: [] for name in boards}
        latency: dict[str, list[float]] = {name: [] for name in boards}
        for n in range(total):
            for name in boards:
                command, micros = _timed(clients[name], _bound(calls[name][kind], n))
                sent[name].append(command)
                latency[name].append(micros)
        for name in boards:
            out[name][kind] = (sent[name], latency[name][settings.warmup :])
    return out


def _calls(
    index: RedisIndex,
    board: BoardConfig,
    rng: random.Random,
    settings: Settings,
    periods: dict[str, Any],
    now_ms: int,
) -> dict[str, Callable[[int], Any]]:
    weekly = periods[WEEKLY]

    def submit(n: int) -> None:
        number = rng.randrange(settings.players)
        player = f"p{number:07d}"
        team = _team(number, settings) if board.teams else None
        index.submit(
            board.board_id,
            Submission(player, rng.randint(0, 1_000), None, None, _values(rng, board), team),
            event_id=new_event_id(now_ms + n),
            now_ms=now_ms + n,
            periods=periods,
            idempotency=("bench", uuid.uuid4().hex),
        )

    def player_id(n: int) -> str:
        return f"p{n % settings.players:07d}"

    return {
        "submit": submit,
        "top 10": lambda n: index.window(board.board_id, weekly, None, op="page", size=10),
        "player": lambda n: index.window(
            board.board_id, weekly, None, op="player", size=1, player_id=player_id(n)
        ),
        "around": lambda n: index.window(
            board.board_id, weekly, None, op="around", size=10, player_id=player_id(n)
        ),
    }


def _bound(call: Callable[[int], Any], n: int) -> Callable[[], Any]:
    return lambda: call(n)


def run(url: str, settings: Settings) -> list[dict[str, Any]]:
    """One row per kind of call: Redis CPU and latency on both boards, and their ratios.
    Uses databases 0-3 of `url` (flushed: give it a Redis of its own)."""
    server = redis.connection.parse_url(url)
    server.pop("db", None)
    boards = _boards()
    names = list(boards)
    clients = {
        (name, role): _Recorder(
            connection_pool=redis.ConnectionPool(**server, db=2 * i + j, decode_responses=True)
        )
        for i, name in enumerate(names)
        for j, role in enumerate(("record", "replay"))
    }
    try:
        for client in clients.values():
            client.flushdb()
        for i, name in enumerate(names):
            record = clients[(name, "record")]
            _load(record, boards[name], settings)
            _copy_db(record, 2 * i + 1)  # the untouched copy the replay runs on
        recorded = _record({name: clients[(name, "record")] for name in names}, boards, settings)
        rows = []
        for kind in recorded[names[0]]:
            cpu = _replay(
                {name: (clients[(name, "replay")], recorded[name][kind][0]) for name in names},
                settings.warmup,
                settings.rounds,
            )
            plain, model = (statistics.median(cpu[name]) for name in names)
            ratio = statistics.median(
                m / p for p, m in zip(cpu[names[0]], cpu[names[1]], strict=True)
            )
            lat = {name: statistics.median(recorded[name][kind][1]) for name in names}
            rows.append(
                {
                    "call": kind,
                    "plain_us": round(plain, 2),
                    "model_us": round(model, 2),
                    "cpu_ratio": round(ratio, 2),
                    "plain_p50_us": round(lat[names[0]], 1),
                    "model_p50_us": round(lat[names[1]], 1),
                    "latency_ratio": round(lat[names[1]] / lat[names[0]], 2),
                    "target": f"<= {TARGET_RATIO}"
                    + (" (CPU and latency)" if kind == "submit" else " (latency)"),
                    "met": lat[names[1]] / lat[names[0]] <= TARGET_RATIO
                    and (kind != "submit" or ratio <= TARGET_RATIO),
                }
            )
        return rows
    finally:
        for client in clients.values():
            client.flushdb()
            client.close()
