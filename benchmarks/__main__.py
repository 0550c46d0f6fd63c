"""`make bench`: every benchmark on embedded real stores, in one run (ratios are quoted
within a run: these machines are shared and noisy). Writes bench-results/results.json and
bench-results/benchmarks.png, and prints a table per suite.

BENCH_SIZES (default 10000,100000,1000000) sets the board sizes of the API suite (the
many-players and standings reads included), BENCH_HISTORY_PERIODS (default 500) the longest
player history,
BENCH_ENTRIES the rollover/rebuild size, BENCH_EVENTS the persister workload, BENCH_HTTP_PLAYERS
(default 100000) and BENCH_HTTP_SUSTAINED_SECONDS (default 60) the `make run` HTTP suite.
BENCH_LIVE_RATES (writes/s, default 1,100,1000), BENCH_LIVE_SUBSCRIBERS (default 1,100,1000) and
BENCH_LIVE_SECONDS (measured seconds per cell, default 5; at least 10 writes a cell) set the
live updates suite. BENCH_PLAYER_CHANNEL_PLAYERS (default 10000), BENCH_PLAYER_CHANNEL_WATCHERS
(default 1000) and BENCH_PLAYER_CHANNEL_SECONDS (default 10) size the player channels suite at
1,000 writes/s (benchmarks/player_channels.py). BENCH_SUBMIT_SIZES (default 2000,1000000) sets
the board sizes of the Redis CPU per submission suite (benchmarks/submit_cpu.py).
BENCH_HOT_PLAYERS (default 20000) and BENCH_HOT_SUBMISSIONS (default 20000) size the hot board
on a local cluster for K = 1, 2, 4, 8 shards (benchmarks/hot_board.py). BENCH_MODEL_PLAYERS
(default 20000) sizes the score-model boards (benchmarks/score_model.py: 3 tie-breakers against
a plain board).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from devstack.servers import EmbeddedPostgres, EmbeddedValkey
from leaderboard.stores.postgres import apply_migrations

RESULTS = Path(__file__).resolve().parent.parent / "bench-results"


def _ints(name: str, default: str) -> list[int]:
    return [int(x) for x in os.environ.get(name, default).split(",") if x.strip()]


def _table(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n== {title}")
    if not rows:
        print("(no rows)")
        return
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in columns}
    print("  ".join(c.rjust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(_fmt(row.get(c)).rjust(widths[c]) for c in columns))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    RESULTS.mkdir(exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    from benchmarks import (
        api_latency,
        bulk,
        cold_start,
        hot_board,
        http_stack,
        live_latency,
        persister_throughput,
        player_channels,
        player_history,
        score_model,
        script_instructions,
        submit_cpu,
    )

    # `make run` under load first: it starts stores of its own, and the machine is quiet.
    results["http"] = http_stack.run(
        http_stack.Settings(
            players=_ints("BENCH_HTTP_PLAYERS", "100000")[0],
            sustained_seconds=_ints("BENCH_HTTP_SUSTAINED_SECONDS", "60")[0],
        )
    )
    results["http_targets"] = http_stack.targets(results["http"])
    # Live updates next, on a stack of their own, while the machine is still quiet.
    results["live"] = live_latency.run(
        live_latency.Settings(
            rates=tuple(_ints("BENCH_LIVE_RATES", "1,100,1000")),
            subscribers=tuple(_ints("BENCH_LIVE_SUBSCRIBERS", "1,100,1000")),
            seconds=_ints("BENCH_LIVE_SECONDS", "5")[0],
        )
    )
    results["live_targets"] = live_latency.targets(results["live"])
    # Player channels: a stack of their own again, then the publisher script on a quiet Valkey.
    results["player_channels"] = player_channels.run(
        player_channels.Settings(
            players=_ints("BENCH_PLAYER_CHANNEL_PLAYERS", "10000")[0],
            watchers=_ints("BENCH_PLAYER_CHANNEL_WATCHERS", "1000")[0],
            seconds=_ints("BENCH_PLAYER_CHANNEL_SECONDS", "10")[0],
        )
    )
    results["player_channels_targets"] = player_channels.targets(results["player_channels"])
    # Redis CPU per submission, hot, on a Valkey of its own with nothing else to do.
    with EmbeddedValkey() as idle:
        results["submit_cpu"] = submit_cpu.run(
            idle.url,
            submit_cpu.Settings(sizes=tuple(_ints("BENCH_SUBMIT_SIZES", "2000,1000000"))),
        )
    with EmbeddedValkey() as idle:
        results["score_model"] = score_model.run(
            idle.url, score_model.Settings(players=_ints("BENCH_MODEL_PLAYERS", "20000")[0])
        )
    # The same comparison in instructions, under callgrind: what the ratios are quoted from.
    results["score_model_instructions"] = script_instructions.run(script_instructions.Settings())

    with EmbeddedValkey() as valkey, EmbeddedPostgres() as postgres:
        database_url = postgres.create_database("bench")
        apply_migrations(database_url)
        results["api"] = api_latency.run(valkey.url, _ints("BENCH_SIZES", "10000,100000,1000000"))
        results["api_summary"] = api_latency.summary(results["api"])
        results["history"] = player_history.run(
            database_url, periods=_ints("BENCH_HISTORY_PERIODS", "500")[0]
        )
        results["history_summary"] = player_history.summary(results["history"])
        results["persister"] = persister_throughput.run(
            database_url, events=_ints("BENCH_EVENTS", "100000")[0]
        )
        results["persister_targets"] = persister_throughput.targets(results["persister"])
        results["bulk"] = bulk.as_rows(
            bulk.run_isolated(valkey.url, database_url, _ints("BENCH_ENTRIES", "1000000")[0])
        )
    # One hot board on a local cluster of its own, against its number of shards.
    results["hot_board"] = hot_board.run(
        hot_board.with_settings(
            players=_ints("BENCH_HOT_PLAYERS", "20000")[0],
            submissions=_ints("BENCH_HOT_SUBMISSIONS", "20000")[0],
        )
    )
    results["cold_start"] = cold_start.run()
    results["seconds"] = round(time.perf_counter() - started, 1)
    (RESULTS / "results.json").write_text(json.dumps(results, indent=2, default=str))
    _table(
        "make run over HTTP (keep-alive, closed loop) vs the handlers in process",
        results["http"]["rows"],
    )
    sustained = {k: v for k, v in results["http"]["sustained"].items() if k != "depth_samples"}
    _table("make run, sustained (open loop) and the persister keeping up", [sustained])
    _table("make run targets", results["http_targets"])
    _table(
        "Live updates: write acknowledged by the submit script (no HTTP) -> message at the"
        f" WebSocket clients ({results['live']['publish_rate']} publisher ticks/s)",
        results["live"]["rows"],
    )
    _table("Live updates targets", results["live_targets"])
    _table(
        "Player channels: write acknowledged by the submit script -> the passed player's message"
        " at its WebSocket client (one subscription per watching player)",
        [{k: v for k, v in r.items() if k != "events"} for r in results["player_channels"]["rows"]],
    )
    _table(
        "Player channels: the publisher script per call (one tick's writes), with and without"
        " watches, on a quiet Valkey (INFO commandstats; watch checks: watches ranked again)",
        results["player_channels"]["script_cost"],
    )
    _table("Player channels targets", results["player_channels_targets"])
    _table(
        "Redis CPU per submission, hot (INFO commandstats), vs the ZADD + ZCOUNT + XADD floor"
        " and the pre-issue-22 script (baseline); guarantees_*: the floor plus only the commands"
        " the guarantees oblige (no logic)",
        results["submit_cpu"],
    )
    _table(
        "Score model (issue 23): a board with 3 tie-breakers and teams vs a plain board, Redis CPU"
        f" per call (hot) and latency (target: within {score_model.TARGET_RATIO}x)",
        results["score_model"],
    )
    _table(
        "Score model (issue 23), instructions per script call inside evalShaCommand (callgrind:"
        " the same count whatever the machine's load)",
        results["score_model_instructions"],
    )
    hot_writes, hot_reads = hot_board.tables(results["hot_board"])
    _table(
        f"One hot board on a local cluster ({results['hot_board']['masters']} masters):"
        " submissions and Redis CPU per submission against shards (target: within"
        f" {hot_board.TARGET_CPU_RATIO}x of 1 shard)",
        hot_writes,
    )
    _table("Reads of the hot board against shards: latency and Redis CPU per read", hot_reads)
    _table("API operations through the real handlers vs the bare redis-py floor", results["api"])
    print("summary:", json.dumps(results["api_summary"], default=str))
    _table("Player history pages from the archive vs the bare psycopg floor", results["history"])
    print("summary:", json.dumps(results["history_summary"], default=str))
    _table("Persister vs a raw COPY of the same rows", results["persister"])
    for line in persister_throughput.target_lines(results["persister"]):
        print(line)
    _table("Rollover and rebuild", results["bulk"])
    _table("Cold start: function import vs its own dependencies", results["cold_start"])
    _plot(results, RESULTS / "benchmarks.png")
    print(f"\nresults in {RESULTS}/results.json and benchmarks.png ({results['seconds']} s)")
    return 0


def _plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(4, 2, figsize=(14, 17))
    _plot_http(results["http"], axes[2][0], axes[2][1])
    _plot_live(results["live"], axes[3][0], axes[3][1])
    api = results["api"]
    sizes = sorted({r["size"] for r in api})
    ops = sorted({r["op"] for r in api})
    ax = axes[0][0]
    width = 0.8 / max(1, len(sizes))
    for n, size in enumerate(sizes):
        rows = {r["op"]: r for r in api if r["size"] == size}
        ax.bar(
            [i + n * width for i in range(len(ops))],
            [rows[o]["handler_p50_us"] if o in rows else 0 for o in ops],
            width,
            label=f"handler p50, {size:,} entries",
        )
        ax.scatter(
            [i + n * width for i in range(len(ops))],
            [rows[o]["floor_p50_us"] if o in rows else 0 for o in ops],
            color="black",
            s=12,
            zorder=3,
        )
    ax.set_xticks(
        [i + width * (len(sizes) - 1) / 2 for i in range(len(ops))],
        ops,
        rotation=30,
        ha="right",
        fontsize=8,
    )
    ax.set_ylabel("µs (dots: bare redis-py floor)")
    ax.set_title("API operations, warm, p50")
    ax.legend(fontsize=8)

    ax = axes[0][1]
    persister = results["persister"]
    ax.bar(
        [r.get("name", str(i)) for i, r in enumerate(persister)],
        [r.get("events_per_second", 0) for r in persister],
    )
    ax.axhline(20_000, color="black", linewidth=1, linestyle="--")
    ax.text(0, 20_500, "target 20,000/s", fontsize=8)
    ax.set_title("Persister events/s vs raw COPY of the same rows (xN: workers)")
    ax.set_ylabel("events per second")

    ax = axes[1][0]
    bulk_rows = results["bulk"]
    ax.bar([r["name"] for r in bulk_rows], [r["entries_per_second"] for r in bulk_rows])
    for i, r in enumerate(bulk_rows):
        ax.annotate(
            f"{r['seconds']} s, +{r['peak_rss_growth_mb']} MB",
            (i, 0),
            textcoords="offset points",
            xytext=(0, 5),
            ha="center",
            fontsize=8,
        )
    ax.set_title(f"Rollover and rebuild of {bulk_rows[0]['entries']:,} entries")
    ax.set_ylabel("entries per second")

    ax = axes[1][1]
    cold = results["cold_start"]
    names = [r.get("function", str(i)) for i, r in enumerate(cold)]
    ax.bar(names, [r.get("import_ms", 0) for r in cold], label="function import")
    ax.bar(names, [r.get("dependencies_ms", 0) for r in cold], label="its dependencies", alpha=0.6)
    ax.tick_params(axis="x", rotation=30, labelsize=8)
    ax.set_ylabel("ms")
    ax.set_title("Cold start imports")
    ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _plot_http(http: dict[str, Any], throughput: Any, depth: Any) -> None:
    rows = http["rows"]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    levels = sorted({r["clients"] for r in rows})
    width = 0.8 / max(1, len(levels))
    for n, clients in enumerate(levels):
        by_op = {r["op"]: r for r in rows if r["clients"] == clients}
        throughput.bar(
            [i + n * width for i in range(len(ops))],
            [by_op[o]["per_s"] if o in by_op else 0 for o in ops],
            width,
            label=f"{clients} clients",
        )
    throughput.set_xticks([i + width * (len(levels) - 1) / 2 for i in range(len(ops))], ops)
    throughput.set_ylabel("requests per second")
    throughput.set_title("make run over HTTP, keep-alive, closed loop")
    throughput.legend(fontsize=8)
    sustained = http["sustained"]
    samples = sustained["depth_samples"]
    depth.plot([t for t, _ in samples], [d for _, d in samples])
    depth.axvline(sustained["load_ended_after_s"], color="black", linewidth=1, linestyle="--")
    depth.set_xlabel("seconds (dashed: the last request answered)")
    depth.set_ylabel("messages in the score queue")
    depth.set_title(
        f"Sustained {sustained['submit_rate']:g} submissions/s + {sustained['read_rate']:g}"
        f" reads/s: queue empty {sustained['drain_seconds']} s after"
    )


def _plot_live(live: dict[str, Any], latency: Any, messages: Any) -> None:
    rows = live["rows"]
    lowest = min((r["writes_per_s"] for r in rows), default=1)
    for count in sorted({r["subscribers"] for r in rows}):
        cells = sorted(
            (r for r in rows if r["subscribers"] == count), key=lambda r: r["writes_per_s"]
        )
        rates = [r["writes_per_s"] for r in cells]
        latency.plot(rates, [r["p99_ms"] for r in cells], marker="o", label=f"{count} subscribers")
        for r in cells:
            if r.get("handovers"):  # a publisher run handed over to the next during the cell
                latency.annotate("handover", (r["writes_per_s"], r["p99_ms"]), fontsize=7)
        messages.plot(
            rates, [r["msgs_per_sub_s"] for r in cells], marker="o", label=f"{count} subscribers"
        )
    latency.axhline(1000, color="black", linewidth=1, linestyle="--")
    latency.text(lowest, 1020, "target p99 1 s", fontsize=8)
    latency.set_xscale("log")
    latency.set_xlabel("writes per second (submit script, no HTTP)")
    latency.set_ylabel("ms")
    measured = [r["p99_ms"] * 1.1 for r in rows if not math.isnan(r["p99_ms"])]
    latency.set_ylim(0, max([1100.0, *measured]))
    latency.set_title("Live updates: p99 acknowledged write -> message at the client")
    latency.legend(fontsize=8)
    ticks = live["publish_rate"]
    messages.axhline(ticks, color="black", linewidth=1, linestyle="--")
    messages.text(lowest, ticks * 1.02, f"publisher ticks {ticks}/s", fontsize=8)
    messages.set_xscale("log")
    messages.set_xlabel("writes per second")
    messages.set_ylabel("messages per subscriber per second")
    messages.set_ylim(0, max([ticks * 1.3, *(r["msgs_per_sub_s"] * 1.1 for r in rows)]))
    messages.set_title("Live updates: writes coalesced into at most one message per tick")
    messages.legend(fontsize=8)


if __name__ == "__main__":
    raise SystemExit(main())
