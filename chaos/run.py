"""The chaos run: load, the faults in turn with quiet gaps, recovery, the checker, the figures."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.harness import CONNECTION_ERROR, TIMEOUT, FaultWindow, Harness

log = logging.getLogger("chaos")
RESULTS = Path(__file__).resolve().parent.parent / "bench-results"
# A live board is back within this many seconds of Redis answering again (docs/API.md).
LIVE_TARGET_S = 2.0


@dataclass(frozen=True)
class Plan:
    """How long each fault lasts and how hard the clients push."""

    warmup: float = 15.0
    writers: int = 6
    readers: int = 2
    pause: float = 0.01  # mean think time between a client's requests, seconds
    valkey_freeze: float = 5.0
    sqs_pause: float = 8.0
    worker_kill: float = 10.0
    persister_fail: float = 15.0  # three persister batching windows and more
    quiet: float = 10.0
    recover_limit: float = 120.0


FULL = Plan()
SMOKE = Plan(
    warmup=3,
    writers=4,
    readers=1,
    valkey_freeze=2,
    sqs_pause=4,
    worker_kill=3,
    persister_fail=3,
    quiet=1,
    recover_limit=90,
)


def run_chaos(harness: Harness, plan: Plan) -> dict[str, Any]:
    """Inject every fault in turn under load; return the figures and the checker's verdict."""
    began = time.monotonic()
    harness.start_load(plan.writers, plan.readers, plan.pause)
    time.sleep(plan.warmup)
    steps = [
        harness.kill_valkey,
        lambda: harness.freeze_valkey(plan.valkey_freeze),
        harness.restart_postgres,
        lambda: harness.pause_sqs(plan.sqs_pause),
        lambda: harness.kill_workers(plan.worker_kill),
        lambda: harness.fail_persister_batches(plan.persister_fail),
    ]
    for step in steps:
        step()
        harness.recover(harness.windows[-1], plan.recover_limit, plan.quiet)
    load_ended = time.monotonic()
    harness.stop_load()
    stopped = time.monotonic()
    settle = harness.settle()
    verdict = harness.check_until_consistent()
    return figures(harness, began, load_ended, stopped, settle) | {"checker": verdict.to_json()}


def figures(
    harness: Harness, began: float, load_ended: float, stopped: float, settle: float
) -> dict[str, Any]:
    attempts = harness.attempts
    per_key = Counter(a.key for a in attempts)
    statuses = Counter(_status_name(a.status) for a in attempts)
    windows = harness.windows
    faults = []
    for i, w in enumerate(windows):
        until = windows[i + 1].started if i + 1 < len(windows) else load_ended
        inside = [a for a in attempts if w.started <= a.started < until]
        faults.append(
            {
                "fault": w.name,
                "what": w.description,
                "lasted_s": round(w.ended - w.started, 2),
                "attempts": len(inside),
                "503": sum(1 for a in inside if a.status == 503),
                "429": sum(1 for a in inside if a.status == 429),
                "connection_errors": sum(1 for a in inside if a.status == CONNECTION_ERROR),
                "timeouts": sum(1 for a in inside if a.status == TIMEOUT),
                "other_5xx": sum(1 for a in inside if a.status >= 500 and a.status != 503),
                "recovery_s": _round(w.recovered_at, w.ended),
                "drain_s": _round(w.drained_at, w.ended),
                **_live_recovery(harness, w),
                **w.details,
            }
        )
    depths = [d for _, d in harness.queue_samples if d is not None]
    acked = [s for s in harness.submissions if s.acked]
    latencies = sorted(a.ended - a.started for a in attempts if a.status == 200)
    return {
        "duration_s": round(stopped - began, 1),
        "submissions": len(harness.submissions),
        "attempts": len(attempts),
        "acknowledged": len(acked),
        "replayed_acks": sum(1 for a in attempts if a.status == 200 and a.replayed),
        "retried": sum(1 for n in per_key.values() if n > 1),
        "never_acknowledged": sum(
            1 for s in harness.submissions if not s.acked and s.rejected_status is None
        ),
        "rejected_as_expected": sum(
            1 for s in harness.submissions if s.expect_reject and s.rejected_status
        ),
        "statuses": dict(sorted(statuses.items())),
        "reads": {_status_name(k): v for k, v in sorted(harness.reads.items())},
        "ack_latency_ms": {
            "p50": _pct(latencies, 0.5),
            "p99": _pct(latencies, 0.99),
            "max": _pct(latencies, 1.0),
        },
        "faults": faults,
        "queue_depth_max": max(depths, default=0),
        "final_drain_s": round(settle, 1),
    }


def _live_recovery(harness: Harness, window: FaultWindow) -> dict[str, Any]:
    """For a Redis fault, seconds from Redis answering again to the first live message a
    subscriber received (`live_s`) and to the first acknowledged write (`first_ack_s`).

    A live message needs a write: after Valkey restarts empty the boards are lost and writes
    answer 503 until the maintenance rebuilds them, so there the target (LIVE_TARGET_S) counts
    from the first write the board took again; after a freeze, from Redis answering."""
    back = window.redis_back_at
    if back is None:
        return {}
    first_ack = harness.first_ack_on_any_board(back)
    first_live = harness.first_live_message(back)
    writable = max(back, first_ack) if first_ack is not None else None
    return {
        "live_s": _round(first_live, back),
        "first_ack_s": _round(first_ack, back),
        "live_within_target": (
            first_live is not None
            and writable is not None
            and first_live - writable <= LIVE_TARGET_S
        ),
    }


def _status_name(status: int) -> str:
    return {CONNECTION_ERROR: "connection-error", TIMEOUT: "timeout"}.get(status, str(status))


def _round(at: float | None, since: float) -> float | None:
    return None if at is None else round(at - since, 1)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(len(values) * q))] * 1000, 1)


def save(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def table(data: dict[str, Any]) -> str:
    """The chaos figures, readable."""
    check = data["checker"]
    lines = [
        f"chaos run: {data['duration_s']} s of load, {data['submissions']} submissions,"
        f" {data['attempts']} attempts",
        f"  acknowledged {data['acknowledged']}  retried {data['retried']}"
        f"  replayed acks {data['replayed_acks']}  never acknowledged"
        f" {data['never_acknowledged']}  refused as expected {data['rejected_as_expected']}",
        f"  statuses {data['statuses']}  reads {data['reads']}",
        f"  ack latency p50 {data['ack_latency_ms']['p50']} ms,"
        f" p99 {data['ack_latency_ms']['p99']} ms, max {data['ack_latency_ms']['max']} ms",
        "",
        f"  {'fault':<18}{'lasted':>8}{'attempts':>10}{'503':>6}{'conn':>6}{'other5xx':>9}"
        f"{'recovery':>10}{'drain':>8}{'live':>8}",
    ]
    for f in data["faults"]:
        lines.append(
            f"  {f['fault']:<18}{f['lasted_s']:>7}s{f['attempts']:>10}{f['503']:>6}"
            f"{f['connection_errors'] + f['timeouts']:>6}{f['other_5xx']:>9}"
            f"{_s(f['recovery_s']):>10}{_s(f['drain_s']):>8}{_s(f.get('live_s')):>8}"
        )
    lines += [
        "",
        f"  queue depth max {data['queue_depth_max']}, final drain {data['final_drain_s']} s",
    ]
    if any("live_s" in f for f in data["faults"]):
        lines.append(
            f"  live: first message after Redis answered again (target: {LIVE_TARGET_S:g} s"
            " after the board takes writes again): "
            + ", ".join(
                f"{f['fault']} {_s(f['live_s'])} (first ack {_s(f['first_ack_s'])},"
                f" {'within' if f['live_within_target'] else 'MISSED'})"
                for f in data["faults"]
                if "live_s" in f
            )
        )
    lines += [
        f"  checker: lost {check['lost']}, duplicated {check['duplicated']},"
        f" 5xx other than 503 {check['bad_statuses'] or 0},"
        f" events in the log {check['events_in_log']}"
        f" (of which unacknowledged but applied once: {check['unacknowledged_applied']}),"
        f" {check['sets_checked']} sorted sets / {check['entries_checked']} entries:"
        f" Redis == PostgreSQL == model: {_same(check)}",
        f"  verdict: {'OK' if check['ok'] else 'FAILED'}",
    ]
    if not check["ok"]:
        lines += ["  " + e for e in check["examples"][:10]]
        for name in ("redis_vs_postgres", "redis_vs_model", "postgres_vs_model"):
            lines += [f"  {name}: {e}" for e in check[name][:5]]
    return "\n".join(lines)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value}s"


def _same(check: dict[str, Any]) -> str:
    bad = check["redis_vs_postgres"] or check["redis_vs_model"] or check["postgres_vs_model"]
    return "no" if bad or check["metadata_mismatches"] else "yes"
