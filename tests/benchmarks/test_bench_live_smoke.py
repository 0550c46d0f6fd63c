"""The live updates suite of `make bench` runs end to end, small, so it cannot rot: the stack
with its real publisher and event API, subscribers over WebSocket in one child process, a writer
in another, and the latencies matched write by write. No timing is asserted (that is
`make bench`); what is asserted holds on any machine: every write reaches every subscriber, and
the publisher sends no more messages per channel than it ticks."""

from __future__ import annotations

import pytest

from benchmarks import live_latency

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_live_suite_runs_end_to_end_on_the_local_stack() -> None:
    settings = live_latency.Settings(
        rates=(1, 50),
        subscribers=(1, 20),
        # 3 writes at least: at 1 write/s, 2 gave a window of one second, which the first
        # write's message could miss on a loaded machine (no message counted, seen once)
        seconds=2,
        min_writes=3,
        warm_seconds=1,
        drain_seconds=1.5,
    )
    results = live_latency.run(settings)
    rows = results["rows"]
    assert [(r["writes_per_s"], r["subscribers"]) for r in rows] == [
        (1, 1),
        (50, 1),
        (1, 20),
        (50, 20),
    ]
    ticks = results["publish_rate"]
    for row in rows:
        assert row["writes"] > 0, row
        assert row["missed"] == 0 and row["dropped"] == 0, row
        assert row["p50_ms"] > 0 and row["max_ms"] >= row["p99_ms"] >= row["p50_ms"], row
        # coalesced: at most one message a tick, give or take a tick at the window's edges
        assert 0 < row["msgs_per_sub_s"] <= ticks + 1, row
    targets = live_latency.targets(results)
    assert len(targets) == len(rows)
    assert all("p99 write→message" in t["target"] for t in targets)
