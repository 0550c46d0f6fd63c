"""`make bench`: every benchmark on embedded real stores, in one run (ratios are quoted
within a run: these machines are shared and noisy).

Each suite prints its tables and writes bench-results/<suite>.json the moment it finishes, and
bench-results/results.json holds every suite finished so far: a run cut off keeps what it
measured. A suite that fails is reported and the run goes on to the next (the exit status says
one failed). `BENCH_SUITES=api,bulk` runs a chosen few (`BENCH_SUITES=list` names them all).
bench-results/benchmarks.png is drawn at the end from the suites that ran.

BENCH_SIZES (default 10000,100000,1000000) sets the board sizes of the API suite (the
many-players and standings reads included), BENCH_HISTORY_PERIODS (default 500) the longest
player history,
BENCH_ENTRIES the rollover/rebuild size, BENCH_EVENTS the persister workload, BENCH_HTTP_PLAYERS
(default 100000) and BENCH_HTTP_SUSTAINED_SECONDS (default 60) the `make run` HTTP suite.
The live suite (benchmarks/live_latency.py, one table): BENCH_LIVE_RATES (the hot rows' writes/s,
default 100,1000), BENCH_LIVE_SUBSCRIBERS (board-channel subscribers, default 100,1000: the
first at every load, the others at the top rate), BENCH_LIVE_SECONDS (measured seconds per hot
row, default 5), BENCH_LIVE_QUIET_WRITES (measured writes per quiet row, 0.5-1 s apart, default
30), BENCH_PLAYER_CHANNEL_PLAYERS (default 10000) and BENCH_PLAYER_CHANNEL_WATCHERS (default
1000): the hot player-channel rows' board. The player_channels suite is the publisher script's
cost per call on a Valkey of its own (benchmarks/player_channels.py).
BENCH_SUBMIT_SIZES (default 2000,1000000) sets the board sizes of the Redis CPU per submission
suite (benchmarks/submit_cpu.py).
BENCH_HOT_PLAYERS (default 20000) and BENCH_HOT_SUBMISSIONS (default 20000) size the hot board
on a local cluster for K = 1, 2, 4, 8 shards (benchmarks/hot_board.py). BENCH_MODEL_PLAYERS
(default 20000) sizes the score-model boards (benchmarks/score_model.py: 3 tie-breakers against
a plain board).
The league suite (benchmarks/league.py, issue 40): BENCH_LEAGUE_PLAYERS (default 1000000) sizes
the league board (and the plain board beside it, and the season-end job), BENCH_LEAGUE_GROUP_SIZE
(default 30) its groups, BENCH_LEAGUE_SUBMISSIONS (default 10000) the measured writes of each kind
(first writes, later writes), BENCH_LEAGUE_IDLE_PERCENT (default 5) the league players beyond
BENCH_LEAGUE_PLAYERS who did not play the season that ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.progress import progress

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


@dataclass
class Context:
    """What suites share: one Valkey and one PostgreSQL for the in-process suites, started
    the first time a suite asks and stopped at the end of the run."""

    exits: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _stores: tuple[str, str] | None = None

    def stores(self) -> tuple[str, str]:
        if self._stores is None:
            from devstack.servers import EmbeddedPostgres, EmbeddedValkey
            from leaderboard.stores.postgres.database import apply_migrations

            progress("starting the shared Valkey and PostgreSQL")
            valkey = self.exits.enter_context(EmbeddedValkey())
            postgres = self.exits.enter_context(EmbeddedPostgres())
            database_url = postgres.create_database("bench")
            apply_migrations(database_url)
            self._stores = (valkey.url, database_url)
        return self._stores

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.exits.close()


@dataclass(frozen=True)
class Suite:
    name: str
    run: Callable[[Context], dict[str, Any]]  # its results, keyed as in results.json
    report: Callable[[dict[str, Any]], None]  # prints its tables from those results


# -- the suites, in the order a full run takes them ------------------------------------------


def _run_http(_: Context) -> dict[str, Any]:
    from benchmarks import http_stack

    http = http_stack.run(
        http_stack.Settings(
            players=_ints("BENCH_HTTP_PLAYERS", "100000")[0],
            sustained_seconds=_ints("BENCH_HTTP_SUSTAINED_SECONDS", "60")[0],
        )
    )
    return {"http": http, "http_targets": http_stack.targets(http)}


def _report_http(results: dict[str, Any]) -> None:
    _table(
        "make run over HTTP (keep-alive, closed loop) vs the handlers in process",
        results["http"]["rows"],
    )
    sustained = {k: v for k, v in results["http"]["sustained"].items() if k != "depth_samples"}
    _table("make run, sustained (open loop) and the persister keeping up", [sustained])
    _table("make run targets", results["http_targets"])


def _run_live(_: Context) -> dict[str, Any]:
    from benchmarks import live_latency
    from benchmarks.player_channels import Board

    live = live_latency.run(
        live_latency.Settings(
            rates=tuple(_ints("BENCH_LIVE_RATES", "100,1000")),
            subscribers=tuple(_ints("BENCH_LIVE_SUBSCRIBERS", "100,1000")),
            seconds=_ints("BENCH_LIVE_SECONDS", "5")[0],
            quiet_writes=_ints("BENCH_LIVE_QUIET_WRITES", "30")[0],
            player_board=Board(
                players=_ints("BENCH_PLAYER_CHANNEL_PLAYERS", "10000")[0],
                watchers=_ints("BENCH_PLAYER_CHANNEL_WATCHERS", "1000")[0],
            ),
        )
    )
    return {"live": live, "live_targets": live_latency.targets(live)}


# The live table's columns, in order (the rows hold more: bench-results/live.json).
LIVE_COLUMNS = {
    "channel": "channel",
    "load": "load",
    "subscribers": "subscribers",
    "players": "players",
    "writes": "writes",
    "p50_ms": "p50 ms",
    "p99_ms": "p99 ms",
    "max_ms": "max ms",
    "wait_p99_ms": "wait p99",
    "delivery_p99_ms": "delivery p99",
    "missed": "missed",
    "msgs_per_channel_s": "msgs/channel/s",
    "messages": "messages",
    "cpu_us_per_message": "publisher µs/msg",
    "writer_us_per_write": "submit µs/write",
    "handovers": "handovers",
    "load_1m": "load avg",
}


def live_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{title: row.get(key, "-") for key, title in LIVE_COLUMNS.items()} for row in rows]


def _report_live(results: dict[str, Any]) -> None:
    live = results["live"]
    _table(
        "Live updates: write acknowledged by the submit script (no HTTP) -> message at the"
        f" WebSocket clients, quiet and hot boards (publish rate {live['publish_rate']}/s;"
        " wait: ack -> published_at, delivery: published_at -> client; publisher µs/msg: its"
        " Redis commands' time (SLOWLOG) / messages published in the same window)",
        live_table(live["rows"]),
    )
    _table("Live updates targets", results["live_targets"])


def _run_player_channels(_: Context) -> dict[str, Any]:
    from benchmarks import player_channels

    return {"player_channels": player_channels.run(player_channels.Settings())}


def _report_player_channels(results: dict[str, Any]) -> None:
    _table(
        "Player channels: the publisher script per call (one publish interval's writes), with"
        " and without watches, on a quiet Valkey (INFO commandstats; watch checks: watches"
        " ranked again)",
        results["player_channels"]["script_cost"],
    )


def _run_submit_cpu(_: Context) -> dict[str, Any]:
    from benchmarks import submit_cpu
    from devstack.servers import EmbeddedValkey

    # Hot, on a Valkey of its own with nothing else to do.
    with EmbeddedValkey() as idle:
        rows = submit_cpu.run(
            idle.url,
            submit_cpu.Settings(sizes=tuple(_ints("BENCH_SUBMIT_SIZES", "2000,1000000"))),
        )
    return {"submit_cpu": rows}


def _report_submit_cpu(results: dict[str, Any]) -> None:
    _table(
        "Redis CPU per submission, hot (INFO commandstats), vs the ZADD + ZCOUNT + XADD floor"
        " and the pre-issue-22 script (baseline); guarantees_*: the floor plus only the commands"
        " the guarantees oblige (no logic)",
        results["submit_cpu"],
    )


def _run_score_model(_: Context) -> dict[str, Any]:
    from benchmarks import score_model, script_instructions
    from devstack.servers import EmbeddedValkey

    with EmbeddedValkey() as idle:
        rows = score_model.run(
            idle.url, score_model.Settings(players=_ints("BENCH_MODEL_PLAYERS", "20000")[0])
        )
    # The same comparison in instructions, under callgrind: what the ratios are quoted from.
    progress("score model: instructions under callgrind")
    counted = script_instructions.run(script_instructions.Settings())
    return {"score_model": rows, "score_model_instructions": counted}


def _report_score_model(results: dict[str, Any]) -> None:
    from benchmarks import score_model

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


def _run_league(context: Context) -> dict[str, Any]:
    from benchmarks import league
    from devstack.servers import EmbeddedValkey

    settings = league.Settings(
        players=_ints("BENCH_LEAGUE_PLAYERS", "1000000")[0],
        group_size=_ints("BENCH_LEAGUE_GROUP_SIZE", "30")[0],
        submissions=_ints("BENCH_LEAGUE_SUBMISSIONS", "10000")[0],
        idle_percent=_ints("BENCH_LEAGUE_IDLE_PERCENT", "5")[0],
    )
    # Redis CPU per call hot, on a Valkey of its own with nothing else to do; the season-end
    # job on the shared stores, in a fresh process (its memory is measured).
    with EmbeddedValkey() as idle:
        calls = league.measure_calls(idle.url, settings)
    redis_url, database_url = context.stores()
    end = league.season_end_isolated(redis_url, database_url, settings)
    return {
        "league": {"calls": calls, "season_end": end},
        "league_targets": league.targets(calls, end),
    }


def _report_league(results: dict[str, Any]) -> None:
    from benchmarks import league

    _table(
        "League board vs the same board without its league, Redis CPU per call (hot, INFO"
        f" commandstats) and latency (target: writes within {league.TARGET_WRITE_RATIO}x)",
        results["league"]["calls"],
    )
    _table(
        "League season-end job (the whole rollover: archive, settle, period.ended parts)",
        [results["league"]["season_end"]],
    )
    _table("League targets", results["league_targets"])


def _run_api(context: Context) -> dict[str, Any]:
    from benchmarks import api_latency

    redis_url, _ = context.stores()
    rows = api_latency.run(redis_url, _ints("BENCH_SIZES", "10000,100000,1000000"))
    return {"api": rows, "api_summary": api_latency.summary(rows)}


def _report_api(results: dict[str, Any]) -> None:
    _table("API operations through the real handlers vs the bare redis-py floor", results["api"])
    print("summary:", json.dumps(results["api_summary"], default=str))


def _run_history(context: Context) -> dict[str, Any]:
    from benchmarks import player_history

    _, database_url = context.stores()
    rows = player_history.run(database_url, periods=_ints("BENCH_HISTORY_PERIODS", "500")[0])
    return {"history": rows, "history_summary": player_history.summary(rows)}


def _report_history(results: dict[str, Any]) -> None:
    _table("Player history pages from the archive vs the bare psycopg floor", results["history"])
    print("summary:", json.dumps(results["history_summary"], default=str))


def _run_persister(context: Context) -> dict[str, Any]:
    from benchmarks import persister_throughput

    _, database_url = context.stores()
    rows = persister_throughput.run(database_url, events=_ints("BENCH_EVENTS", "100000")[0])
    return {"persister": rows, "persister_targets": persister_throughput.targets(rows)}


def _report_persister(results: dict[str, Any]) -> None:
    from benchmarks import persister_throughput

    _table("Persister vs a raw COPY of the same rows", results["persister"])
    for line in persister_throughput.target_lines(results["persister"]):
        print(line)


def _run_bulk(context: Context) -> dict[str, Any]:
    from benchmarks import bulk

    redis_url, database_url = context.stores()
    entries = _ints("BENCH_ENTRIES", "1000000")[0]
    return {"bulk": bulk.as_rows(bulk.run_isolated(redis_url, database_url, entries))}


def _report_bulk(results: dict[str, Any]) -> None:
    _table("Rollover and rebuild", results["bulk"])


def _run_hot_board(_: Context) -> dict[str, Any]:
    from benchmarks import hot_board

    # One hot board on a local cluster of its own, against its number of shards.
    result = hot_board.run(
        hot_board.with_settings(
            players=_ints("BENCH_HOT_PLAYERS", "20000")[0],
            submissions=_ints("BENCH_HOT_SUBMISSIONS", "20000")[0],
        )
    )
    return {"hot_board": result}


def _report_hot_board(results: dict[str, Any]) -> None:
    from benchmarks import hot_board

    hot_writes, hot_reads = hot_board.tables(results["hot_board"])
    _table(
        f"One hot board on a local cluster ({results['hot_board']['masters']} masters):"
        " submissions and Redis CPU per submission against shards (target: within"
        f" {hot_board.TARGET_CPU_RATIO}x of 1 shard)",
        hot_writes,
    )
    _table("Reads of the hot board against shards: latency and Redis CPU per read", hot_reads)


def _run_cold_start(_: Context) -> dict[str, Any]:
    from benchmarks import cold_start

    return {"cold_start": cold_start.run()}


def _report_cold_start(results: dict[str, Any]) -> None:
    _table("Cold start: function import vs its own dependencies", results["cold_start"])


SUITES: tuple[Suite, ...] = (
    # `make run` under load first: it starts stores of its own, and the machine is quiet.
    Suite("http", _run_http, _report_http),
    # Live updates next, on a stack of their own, while the machine is still quiet.
    Suite("live", _run_live, _report_live),
    Suite("player_channels", _run_player_channels, _report_player_channels),
    Suite("submit_cpu", _run_submit_cpu, _report_submit_cpu),
    Suite("score_model", _run_score_model, _report_score_model),
    Suite("api", _run_api, _report_api),
    Suite("history", _run_history, _report_history),
    Suite("persister", _run_persister, _report_persister),
    Suite("bulk", _run_bulk, _report_bulk),
    Suite("league", _run_league, _report_league),
    Suite("hot_board", _run_hot_board, _report_hot_board),
    Suite("cold_start", _run_cold_start, _report_cold_start),
)


def chosen(selection: str | None) -> list[Suite]:
    """The suites BENCH_SUITES names, in run order; all of them when it is unset or empty."""
    if not selection or not selection.strip():
        return list(SUITES)
    names = [n.strip() for n in selection.split(",") if n.strip()]
    known = {s.name for s in SUITES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(
            f"BENCH_SUITES: no suite named {', '.join(unknown)}; the suites are"
            f" {', '.join(s.name for s in SUITES)}"
        )
    return [s for s in SUITES if s.name in names]


def run_suites(
    suites: list[Suite], results_dir: Path = RESULTS
) -> tuple[dict[str, Any], list[str]]:
    """Runs each suite, printing its tables and saving its results as soon as it finishes."""
    results_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"suites": {}}
    failed: list[str] = []
    started = time.perf_counter()
    with Context() as context:
        for number, suite in enumerate(suites, 1):
            progress(f"suite {suite.name} ({number} of {len(suites)})")
            began = time.perf_counter()
            try:
                measured = suite.run(context)
            except Exception:  # a broken suite must not cost the others their results
                failed.append(suite.name)
                trace = traceback.format_exc()
                print(f"\n== suite {suite.name} FAILED\n{trace}", flush=True)
                results["suites"][suite.name] = {
                    "status": "failed",
                    "seconds": round(time.perf_counter() - began, 1),
                    "error": trace.strip().splitlines()[-1],
                }
            else:
                seconds = round(time.perf_counter() - began, 1)
                results.update(measured)
                results["suites"][suite.name] = {"status": "ok", "seconds": seconds}
                (results_dir / f"{suite.name}.json").write_text(
                    json.dumps(measured, indent=2, default=str)
                )
                suite.report(measured)
                progress(f"suite {suite.name} done in {seconds} s")
            results["seconds"] = round(time.perf_counter() - started, 1)
            (results_dir / "results.json").write_text(json.dumps(results, indent=2, default=str))
            sys.stdout.flush()
    return results, failed


def _stop_on_signals() -> None:
    """Ctrl-C, or a timeout's SIGTERM, ends the run through the same exits as an error: the
    embedded servers stop, and what finished is already on disk. (A shell starts a background
    job with SIGINT ignored; a run asked to stop should stop.)"""

    def terminate(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, terminate)


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    selection = os.environ.get("BENCH_SUITES")
    if selection and selection.strip() == "list":
        for suite in SUITES:
            print(suite.name)
        return 0
    _stop_on_signals()
    results, failed = run_suites(chosen(selection), RESULTS)
    _table(
        "Suites",
        [{"suite": name, **summary} for name, summary in results["suites"].items()],
    )
    try:
        _plot(results, RESULTS / "benchmarks.png")
    except Exception:  # the tables and JSON are the results; the picture is a convenience
        print("benchmarks.png not drawn:\n" + traceback.format_exc())
    print(f"\nresults in {RESULTS}/results.json and benchmarks.png ({results['seconds']} s)")
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


def _plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(4, 2, figsize=(14, 17))
    if "http" in results:
        _plot_http(results["http"], axes[2][0], axes[2][1])
    if "live" in results:
        _plot_live(results["live"], axes[3][0], axes[3][1])
    if "api" in results:
        _plot_api(results["api"], axes[0][0])
    if "persister" in results:
        _plot_persister(results["persister"], axes[0][1])
    if "bulk" in results:
        _plot_bulk(results["bulk"], axes[1][0])
    if "cold_start" in results:
        _plot_cold_start(results["cold_start"], axes[1][1])
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _plot_api(api: list[dict[str, Any]], ax: Any) -> None:
    sizes = sorted({r["size"] for r in api})
    ops = sorted({r["op"] for r in api})
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


def _plot_persister(persister: list[dict[str, Any]], ax: Any) -> None:
    ax.bar(
        [r.get("name", str(i)) for i, r in enumerate(persister)],
        [r.get("events_per_second", 0) for r in persister],
    )
    ax.axhline(20_000, color="black", linewidth=1, linestyle="--")
    ax.text(0, 20_500, "target 20,000/s", fontsize=8)
    ax.set_title("Persister events/s vs raw COPY of the same rows (xN: workers)")
    ax.set_ylabel("events per second")


def _plot_bulk(bulk_rows: list[dict[str, Any]], ax: Any) -> None:
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


def _plot_cold_start(cold: list[dict[str, Any]], ax: Any) -> None:
    names = [r.get("function", str(i)) for i, r in enumerate(cold)]
    ax.bar(names, [r.get("import_ms", 0) for r in cold], label="function import")
    ax.bar(names, [r.get("dependencies_ms", 0) for r in cold], label="its dependencies", alpha=0.6)
    ax.tick_params(axis="x", rotation=30, labelsize=8)
    ax.set_ylabel("ms")
    ax.set_title("Cold start imports")
    ax.legend(fontsize=8)


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


def _plot_live(live: dict[str, Any], latency: Any, cpu: Any) -> None:
    rows = live["rows"]
    labels = [f"{r['channel']}\n{r['load']}\n{r['subscribers']:,}" for r in rows]
    places = range(len(rows))
    p99 = [0.0 if math.isnan(r["p99_ms"]) else r["p99_ms"] for r in rows]
    latency.bar(places, p99, color=["C0" if r["channel"] == "board" else "C1" for r in rows])
    for i, r in enumerate(rows):
        if r.get("handovers"):  # a publisher run handed over to the next during the row
            latency.annotate("handover", (i, p99[i]), fontsize=7, ha="center")
    interval = 1000 / live["publish_rate"]
    latency.axhline(100, color="black", linewidth=1, linestyle="--")
    latency.axhline(interval + 50, color="grey", linewidth=1, linestyle="--")
    latency.text(-0.4, 104, "quiet target 100 ms", fontsize=8)
    latency.text(-0.4, interval + 54, f"hot target {interval + 50:g} ms", fontsize=8)
    latency.set_xticks(list(places), labels, fontsize=7)
    latency.set_ylabel("p99 ms, acknowledged write -> message at the client")
    latency.set_title("Live updates by row (channel, load, subscribers or watchers)")
    cost = [r.get("cpu_us_per_message") or 0 for r in rows]
    cpu.bar(places, cost, color=["C0" if r["channel"] == "board" else "C1" for r in rows])
    from benchmarks.live_latency import ROW_KEY, load_baseline

    baseline = load_baseline()
    if baseline:
        before = {tuple(b.get(k) for k in ROW_KEY): b for b in baseline["rows"]}
        marks = [
            before.get(tuple(r[k] for k in ROW_KEY), {}).get("cpu_us_per_message") for r in rows
        ]
        cpu.scatter(
            [i for i, m in zip(places, marks, strict=True) if m],
            [m for m in marks if m],
            color="black",
            zorder=3,
            label=f"tick publisher ({str(baseline['commit'])[:7]})",
        )
        cpu.legend(fontsize=8)
    cpu.set_xticks(list(places), labels, fontsize=7)
    cpu.set_ylabel("publisher's Redis µs per message")
    cpu.set_title("Live publisher's Redis CPU per message (SLOWLOG)")


if __name__ == "__main__":
    raise SystemExit(main())
