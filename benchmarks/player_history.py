"""Player history: one page of a player's past results, for a player with one archived period
and for one with hundreds, on an archive of many players.

The archive is written straight into PostgreSQL, as the rollover leaves it (`archive_entries`
with kinds, `archived_totals`). Each read goes through the read service (validation, the
archive store, the response body), paired with its floor: the same SQL statement with the same
parameters on the same connection through psycopg alone. Reported per case: p50/p99 of both,
their ratio, and the archive rows the page's index scan read (from EXPLAIN ANALYZE), which is
what keeps a long history as fast as a short one.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from leaderboard.domain.periods import current_period
from leaderboard.services.reads import ReadService
from leaderboard.stores.postgres import archive_reads
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database

LIMIT = 10


def _weeks(count: int) -> list[str]:
    """`count` consecutive ISO weeks ending last week, oldest first."""
    now = datetime.now(UTC)
    return [current_period("weekly", now - timedelta(days=7 * n)).id for n in range(count, 0, -1)]


def _fill(database_url: str, board_id: str, weeks: list[str], players: int) -> None:
    """`players` players in every week; `veteran` in all of them, `rookie` in the middle one."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        with conn.cursor().copy(
            "COPY archive_entries (board_id, period, kind, region, position, rank, player_id,"
            " score) FROM STDIN"
        ) as copy:
            for w, week in enumerate(weeks):
                names = [f"p{(w * 7 + n) % (players * 3)}" for n in range(players - 2)]
                names.insert((w * 37) % len(names), "veteran")
                if w == len(weeks) // 2:
                    names.insert(len(names) // 3, "rookie")
                for position, name in enumerate(dict.fromkeys(names)):
                    copy.write_row(
                        (
                            board_id,
                            week,
                            "weekly",
                            "",
                            position,
                            position + 1,
                            name,
                            10**6 - position,
                        )
                    )
        conn.execute(
            "INSERT INTO archived_totals (board_id, period, region, entries)"
            " SELECT board_id, period, region, count(*) FROM archive_entries WHERE board_id = %s"
            " GROUP BY board_id, period, region",
            (board_id,),
        )
        conn.execute("ANALYZE archive_entries")
        conn.execute("ANALYZE archived_totals")


def _percentile(sorted_ns: list[int], q: float) -> float:
    return sorted_ns[max(0, math.ceil(q * len(sorted_ns)) - 1)] / 1000


def _rows_read(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> int:
    plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()
    assert plan is not None
    tree = plan[0] if isinstance(plan[0], list) else json.loads(plan[0])
    stack, read = [tree[0]["Plan"]], 0
    while stack:
        node = stack.pop()
        if node.get("Relation Name") == "archive_entries":
            read += int(node["Actual Rows"]) * int(node.get("Actual Loops", 1))
        stack.extend(node.get("Plans", []))
    return read


def run(
    database_url: str, *, periods: int = 500, players: int = 2000, samples: int = 1000
) -> list[dict[str, Any]]:
    """One row per case: a one-period history, and the first and a deep page of a history of
    `periods` weeks, on an archive of `periods` x `players` entries."""
    board_id = f"bench-history-{uuid.uuid4().hex[:8]}"
    weeks = _weeks(periods)
    _fill(database_url, board_id, weeks, players)
    database = Database(database_url)
    store = ArchiveStore(database)
    reads = ReadService(None, archive=lambda: store)  # type: ignore[arg-type]  # history only
    cases = [
        ("history_1_period", "rookie", None),
        (f"history_{periods}_periods", "veteran", None),
        (f"history_{periods}_periods_deep", "veteran", weeks[len(weeks) // 2]),
    ]
    rows: list[dict[str, Any]] = []
    try:
        for name, player, before in cases:
            query = {"kind": "weekly", "limit": str(LIMIT)} | ({"before": before} if before else {})
            sql = archive_reads._HISTORY_BEFORE if before else archive_reads._HISTORY_LATEST
            params: dict[str, Any] = {"b": board_id, "player": player, "k": "weekly", "r": ""}
            params |= {"before": before, "n": LIMIT + 1}
            page = reads.history(board_id, player, query)
            expected = 1 if player == "rookie" else LIMIT
            if len(page["results"]) != expected:
                raise RuntimeError(f"{name}: {len(page['results'])} results, not {expected}")
            for _ in range(max(20, samples // 10)):  # warm-up: plans cached, pages in memory
                reads.history(board_id, player, query)
            service_ns, floor_ns = [], []
            with database.session() as conn:
                for _ in range(samples):
                    started = time.perf_counter_ns()
                    reads.history(board_id, player, query)
                    middle = time.perf_counter_ns()
                    conn.execute(sql, params).fetchall()
                    service_ns.append(middle - started)
                    floor_ns.append(time.perf_counter_ns() - middle)
                scanned = _rows_read(conn, sql, params)
            service_ns.sort()
            floor_ns.sort()
            p50, p99 = _percentile(service_ns, 0.5), _percentile(service_ns, 0.99)
            f50, f99 = _percentile(floor_ns, 0.5), _percentile(floor_ns, 0.99)
            rows.append(
                {
                    "op": name,
                    "archived_periods": 1 if player == "rookie" else periods,
                    "archive_entries": periods * players,
                    "samples": samples,
                    "service_p50_us": round(p50, 1),
                    "service_p99_us": round(p99, 1),
                    "floor_p50_us": round(f50, 1),
                    "floor_p99_us": round(f99, 1),
                    "ratio_p50": round(p50 / f50, 2),
                    "archive_rows_read": scanned,
                }
            )
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("DELETE FROM archive_entries WHERE board_id = %s", (board_id,))
            conn.execute("DELETE FROM archived_totals WHERE board_id = %s", (board_id,))
        database.close()
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Long history vs one period (p50 ratio) and the rows each page read."""
    by_op = {r["op"]: r for r in rows}
    short = next(r for r in rows if r["archived_periods"] == 1)
    long = [r for r in rows if r["archived_periods"] > 1]
    return {
        "long_vs_one_period_p50": {
            r["op"]: round(r["service_p50_us"] / short["service_p50_us"], 2) for r in long
        },
        "rows_read_per_page": {op: r["archive_rows_read"] for op, r in by_op.items()},
        "one_page_reads_at_most_limit_plus_one_rows": all(
            r["archive_rows_read"] <= LIMIT + 1 for r in rows
        ),
    }
