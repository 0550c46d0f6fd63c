"""The soak: mixed load with no faults, sampling every process's memory and the queue's depth.

The bounds a soak is held to (docs/chaos.md): after the warm-up, no process of the stack grows
its resident memory by more than RSS_GROWTH_MB (plus, for the few whose memory follows the data
by design, PER_1000_REQUESTS_MB per 1,000 requests); the queue never holds more than
MAX_QUEUE_DEPTH messages; and once the load stops it drains within DRAIN_LIMIT seconds. The
checker's verdict at the end must be clean as well.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

from chaos.harness import Harness

RSS_GROWTH_MB = 40.0
MAX_QUEUE_DEPTH = 5000
DRAIN_LIMIT = 60.0
# Processes whose memory grows with the data by design get a bound per 1,000 requests served
# after the warm-up, on top of RSS_GROWTH_MB: (MB per 1,000 requests, why).
PER_1000_REQUESTS_MB = {
    "valkey": (1.0, "every write keeps its idempotency record for 24 h"),
    "postgres": (1.0, "the event log and standings grow, and the buffer cache fills (PSS)"),
    "sqs": (4.0, "moto, the local SQS stand-in, remembers every deleted message"),
    "gateway+clients": (1.5, "the clients' record of every request, kept for the checker"),
}


@dataclass(frozen=True)
class SoakPlan:
    seconds: float = 600.0
    interval: float = 10.0
    writers: int = 4
    readers: int = 4
    # ~40 writes/s and ~40 reads/s: steady, not saturating, so growth is the stack's and not
    # the idempotency records every write keeps for 24 h (about 300 bytes each in Valkey).
    pause: float = 0.1

    @property
    def warmup(self) -> float:
        """Samples before this are not held to the growth bound (caches and pools fill)."""
        return max(2 * self.interval, 0.2 * self.seconds)


def processes(harness: Harness) -> dict[str, list[int]]:
    """The stack's processes by role: this process serves the gateway (and runs the clients)."""
    stack = harness.stack
    assert stack is not None
    roles: dict[str, list[int]] = {"gateway+clients": [os.getpid()]}
    for name, pool in stack.pools.items():
        for n, worker in enumerate(sorted(pool._workers, key=lambda w: w.process.pid or 0)):
            if worker.process.pid is not None:
                roles[f"{name}#{n}"] = [worker.process.pid]
    roles["valkey"] = [harness.valkey.pid]
    with_children = psutil.Process(harness.postgres.pid)
    roles["postgres"] = [harness.postgres.pid] + [c.pid for c in with_children.children(True)]
    roles["sqs"] = [harness.sqs.pid]
    if stack.events is not None:
        roles["live-server"] = [stack.events.pid]
    return roles


def rss_mb(pids: list[int], proportional: bool = False) -> float | None:
    """Resident memory of `pids` together; `proportional`: PSS, so pages they share (the
    PostgreSQL buffer cache) count once, not once per backend."""
    total = 0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if proportional:
                total += getattr(process.memory_full_info(), "pss", 0)
            else:
                total += process.memory_info().rss
        except psutil.Error:
            continue
    return round(total / 2**20, 1) if total else None


def run_soak(harness: Harness, plan: SoakPlan) -> dict[str, Any]:
    """Sample every `interval` s for `seconds` s under mixed load; then drain and check."""
    queue = harness.queue_client()
    samples: list[dict[str, Any]] = []
    harness.start_load(plan.writers, plan.readers, plan.pause)
    began = time.monotonic()
    next_at = began
    while True:
        now = time.monotonic()
        if now >= began + plan.seconds:
            break
        if now >= next_at:
            roles = processes(harness)
            samples.append(
                {
                    "t": round(now - began, 1),
                    "queue": harness.queue_depth(queue),
                    "requests": len(harness.submissions) + sum(harness.reads.values()),
                    "rss_mb": {
                        role: rss_mb(pids, proportional=role == "postgres")
                        for role, pids in roles.items()
                    },
                    "pids": {role: pids[0] for role, pids in roles.items()},
                }
            )
            next_at += plan.interval
        time.sleep(min(0.5, max(0.0, next_at - time.monotonic())))
    writes = len(harness.submissions)
    harness.stop_load()
    drain = harness.settle(DRAIN_LIMIT)
    verdict = harness.check_until_consistent(30)
    return summarize(samples, plan, writes, sum(harness.reads.values()), drain) | {
        "checker": verdict.to_json()
    }


def summarize(
    samples: list[dict[str, Any]], plan: SoakPlan, writes: int, reads: int, drain: float
) -> dict[str, Any]:
    """Growth per process from its first sample after the warm-up to its last (same pid)."""
    warm = [s for s in samples if s["t"] >= plan.warmup] or samples[-1:]
    growth: dict[str, dict[str, Any]] = {}
    for role in warm[0]["rss_mb"]:
        mine = [s for s in warm if s["pids"].get(role) == warm[0]["pids"][role]]
        first, last = mine[0]["rss_mb"][role], mine[-1]["rss_mb"][role]
        peak = max(s["rss_mb"][role] or 0 for s in samples if role in s["rss_mb"])
        if first is None or last is None:
            continue
        served = (mine[-1]["requests"] - mine[0]["requests"]) / 1000
        per_1000 = PER_1000_REQUESTS_MB.get(role, (0.0, ""))[0]
        growth[role] = {
            "after_warmup_mb": first,
            "end_mb": last,
            "growth_mb": round(last - first, 1),
            "peak_mb": peak,
            "bound_mb": round(RSS_GROWTH_MB + per_1000 * served, 1),
        }
    depths = [s["queue"] for s in samples if s["queue"] is not None]
    failures = [
        f"{r} grew {g['growth_mb']} MB (bound {g['bound_mb']} MB)"
        for r, g in growth.items()
        if g["growth_mb"] > g["bound_mb"]
    ]
    if max(depths, default=0) > MAX_QUEUE_DEPTH:
        failures.append(f"queue depth {max(depths)} > {MAX_QUEUE_DEPTH}")
    if drain >= DRAIN_LIMIT:
        failures.append(f"the queue did not drain within {DRAIN_LIMIT:g} s")
    return {
        "seconds": plan.seconds,
        "interval_s": plan.interval,
        "warmup_s": plan.warmup,
        "writes": writes,
        "reads": reads,
        "bounds": {
            "rss_growth_mb": RSS_GROWTH_MB,
            "per_1000_requests_mb": {r: mb for r, (mb, _) in PER_1000_REQUESTS_MB.items()},
            "max_queue_depth": MAX_QUEUE_DEPTH,
            "drain_s": DRAIN_LIMIT,
        },
        "queue_depth_max": max(depths, default=0),
        "drain_s": round(drain, 1),
        "rss": growth,
        "samples": samples,
        "failures": failures,
    }


def soak_ok(result: dict[str, Any]) -> bool:
    return not result["failures"] and bool(result["checker"]["ok"])


def table(result: dict[str, Any]) -> str:
    lines = [
        f"soak: {result['seconds']:g} s, {result['writes']} writes, {result['reads']} reads,"
        f" sampled every {result['interval_s']:g} s (warm-up {result['warmup_s']:g} s)",
        f"  {'process':<28}{'after warm-up':>14}{'end':>9}{'growth':>9}{'bound':>9}{'peak':>9}",
    ]
    for role, g in result["rss"].items():
        lines.append(
            f"  {role:<28}{g['after_warmup_mb']:>11} MB{g['end_mb']:>6} MB"
            f"{g['growth_mb']:>6} MB{g['bound_mb']:>6} MB{g['peak_mb']:>6} MB"
        )
    check = result["checker"]
    lines += [
        f"  queue depth max {result['queue_depth_max']}, drained in {result['drain_s']} s",
        f"  bounds: growth <= {RSS_GROWTH_MB:g} MB per process (+ MB per 1,000 requests:"
        f" {', '.join(f'{r} {mb:g}' for r, (mb, _) in PER_1000_REQUESTS_MB.items())}),"
        f" queue <= {MAX_QUEUE_DEPTH},"
        f" drained within {DRAIN_LIMIT:g} s",
        f"  checker: lost {check['lost']}, duplicated {check['duplicated']},"
        f" verdict {'OK' if check['ok'] else 'FAILED'}",
        f"  soak: {'OK' if soak_ok(result) else 'FAILED: ' + '; '.join(result['failures'])}",
    ]
    return "\n".join(lines)
