"""One hot board on a local Redis Cluster, against its number of shards (issue 22).

For K = 1, 2, 4, 8 shards, on a cluster of embedded Valkey masters started here:
  * writes: a board of `players` per K is loaded, then `submissions` are sent to each through
    the service's own store (`RedisIndex.submit_many`, batches of 500, from `clients`
    threads), in `rounds` interleaved rounds (each K's chunk right after the others', so the
    machine's noise hits every K alike). Reported, as medians over the rounds: submissions/s,
    and Redis CPU per submission from `INFO commandstats` (the submit script's usec per call,
    summed over every node): what one shard pays for one submission, which must not grow with
    K (target: within 1.2x of K = 1, the ratio taken per round).
  * reads: top 10, one player, around a player (10), and a page at offset 10,000 (10), each
    `reads` times through `RedisIndex`: wall-clock latency p50 at the client and Redis CPU per
    read (every script and command of the read, summed over every node).

The machine's two cores are shared by the client and every node, so submissions/s here says
how the work spreads, not what K nodes of their own would sustain; the per-shard CPU is the
figure docs/scaling.md builds on.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from benchmarks.progress import progress
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.clock import to_ms
from leaderboard.domain.events import new_event_id
from leaderboard.domain.periods import current_periods
from leaderboard.domain.submissions import Submission
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.records import BatchWrite
from leaderboard.stores.redis.serving_index import RedisIndex

NOW = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)
TARGET_CPU_RATIO = 1.2


@dataclass(frozen=True)
class Settings:
    shards: tuple[int, ...] = (1, 2, 4, 8)
    players: int = 20_000
    submissions: int = 20_000
    clients: int = 4
    reads: int = 200
    masters: int = 3
    rounds: int = 5
    page_offset: int = 10_000


def _script_usec(client: Any) -> tuple[float, float]:
    """(calls, usec) of every script call on every primary."""
    calls = usec = 0.0
    for stats in client.info("commandstats", target_nodes="primaries").values():
        for name in ("cmdstat_evalsha", "cmdstat_eval"):
            if name in stats:
                calls += stats[name]["calls"]
                usec += stats[name]["usec"]
    return calls, usec


def _all_usec(client: Any) -> float:
    total = 0.0
    for stats in client.info("commandstats", target_nodes="primaries").values():
        for name, value in stats.items():
            if name.startswith("cmdstat_") and name not in ("cmdstat_info", "cmdstat_config"):
                total += value["usec"]
    return total


def _reset(client: Any) -> None:
    client.config_resetstat(target_nodes="primaries")


def _board(board_id: str, shards: int) -> BoardConfig:
    return BoardConfig(
        board_id=board_id, mode="best", periods=("all-time", "weekly"), shards=shards
    )


def _load(index: RedisIndex, board_id: str, players: int) -> None:
    periods = current_periods(NOW)
    now_ms = to_ms(NOW)
    for start in range(0, players, 500):
        writes = [
            BatchWrite(
                Submission(f"p{i:07d}", (i * 7919) % 1_000_003, None, None),
                new_event_id(now_ms),
                None,
            )
            for i in range(start, min(players, start + 500))
        ]
        index.submit_many(board_id, writes, now_ms=now_ms, periods=periods)


def _clients(url: str, board_id: str, count: int) -> list[RedisIndex]:
    """Each client has the board's rules before the clock starts, as a warm function has: the
    measured calls are all submissions, none a first call answered STALE."""
    indexes = [RedisIndex(connect(url, cluster=True, timeout=10)) for _ in range(count)]
    for own in indexes:
        own.write_rules(board_id)
    return indexes


def _send_round(
    indexes: list[RedisIndex], board_id: str, settings: Settings, first: int, count: int
) -> float:
    """`count` submissions from every client at once (batches of 500); seconds taken."""
    periods = current_periods(NOW)
    now_ms = to_ms(NOW)

    def work(n: int) -> None:
        for start in range(first, first + count, 500):
            writes = [
                BatchWrite(
                    Submission(f"p{(n * 7 + i) % settings.players:07d}", i * 3 + n, None, None),
                    new_event_id(now_ms),
                    None,
                )
                for i in range(start, min(first + count, start + 500))
            ]
            indexes[n].submit_many(board_id, writes, now_ms=now_ms, periods=periods)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(indexes))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def _write_rows(url: str, settings: Settings) -> list[dict[str, Any]]:
    """A board per K, loaded alike; then the submissions in interleaved rounds (each K's chunk
    right after the others', so the machine's noise hits every K alike; ratios per round)."""
    client = connect(url, cluster=True, timeout=10)
    index = RedisIndex(client)
    boards: dict[int, str] = {}
    for shards in settings.shards:
        boards[shards] = f"hot-{shards}-{uuid.uuid4().hex[:6]}"
        index.publish_board(_board(boards[shards], shards))
        _load(index, boards[shards], settings.players)
    clients = {k: _clients(url, board, settings.clients) for k, board in boards.items()}
    per_client = settings.submissions // settings.clients // settings.rounds
    cpu: dict[int, list[float]] = {k: [] for k in boards}
    rate: dict[int, list[float]] = {k: [] for k in boards}
    calls_total = dict.fromkeys(boards, 0)
    for r in range(settings.rounds):
        progress(f"hot board: round {r + 1} of {settings.rounds}")
        for shards, board_id in boards.items():
            _reset(client)
            seconds = _send_round(clients[shards], board_id, settings, r * per_client, per_client)
            calls, usec = _script_usec(client)
            cpu[shards].append(usec / calls)
            rate[shards].append(per_client * settings.clients / seconds)
            calls_total[shards] += int(calls)
    base = settings.shards[0]
    rows = []
    for shards, board_id in boards.items():
        ratio = statistics.median(x / b for x, b in zip(cpu[shards], cpu[base], strict=True))
        rows.append(
            {
                "shards": shards,
                "players": settings.players,
                "submissions": per_client * settings.clients * settings.rounds,
                "submissions_per_s": round(statistics.median(rate[shards])),
                "cpu_us_per_submission": round(statistics.median(cpu[shards]), 2),
                "cpu_ratio_to_k1": round(ratio, 2),
                "cpu_constant": ratio <= TARGET_CPU_RATIO,
                "script_calls": calls_total[shards],
                "reads": _reads(index, client, board_id, settings),
            }
        )
    for own in (c for group in clients.values() for c in group):
        own.client.close()
    client.close()
    return rows


def _reads(index: RedisIndex, client: Any, board_id: str, settings: Settings) -> list[dict]:
    period = current_periods(NOW)["all-time"]
    player = f"p{settings.players // 2:07d}"  # loaded by _load, mid-board
    kinds: dict[str, dict[str, Any]] = {
        "top 10": {"op": "page", "size": 10, "offset_or_rank": 0},
        "player": {"op": "player", "size": 1, "player_id": player},
        "around 10": {"op": "around", "size": 10, "player_id": player},
        f"page at {settings.page_offset:,}": {
            "op": "page",
            "size": 10,
            "offset_or_rank": settings.page_offset,
        },
    }
    rows = []
    for name, call in kinds.items():
        index.window(board_id, period, None, **call)  # warm: rules, scripts, connections
        _reset(client)
        latencies = []
        for _ in range(settings.reads):
            t0 = time.perf_counter()
            index.window(board_id, period, None, **call)
            latencies.append(time.perf_counter() - t0)
        rows.append(
            {
                "read": name,
                "p50_ms": round(statistics.median(latencies) * 1000, 3),
                "cpu_us_per_read": round(_all_usec(client) / settings.reads, 1),
            }
        )
    return rows


def run(settings: Settings = Settings()) -> dict[str, Any]:
    """The write and read tables on a cluster started for the run."""
    from devstack.servers import EmbeddedValkeyCluster

    with EmbeddedValkeyCluster(masters=settings.masters) as cluster:
        rows = _write_rows(cluster.url, settings)
    return {"masters": settings.masters, "rounds": settings.rounds, "rows": rows}


def tables(result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(writes per K, reads per K and kind) as flat rows for the printed tables."""
    writes = [{k: v for k, v in row.items() if k != "reads"} for row in result["rows"]]
    reads = [{"shards": row["shards"], **read} for row in result["rows"] for read in row["reads"]]
    return writes, reads


def with_settings(**overrides: Any) -> Settings:
    return replace(Settings(), **overrides)
