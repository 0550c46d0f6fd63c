"""The Redis-CPU-per-submission benchmark runs end to end on small boards, so it cannot rot (no
timing asserted: timings belong to `make bench`). What it does assert: every recorded warm
submission was one script call, every replayed call of the service, the floor, the empty call,
the baseline and the guarantees' floor was counted by Redis, and the replay changed the board
exactly as the recording did."""

from __future__ import annotations

import pytest

from benchmarks import submit_cpu
from devstack.servers import EmbeddedValkey

pytestmark = pytest.mark.server  # it starts a Valkey of its own


def test_submit_cpu_benchmark_runs_end_to_end() -> None:
    shapes = (*(s for s in submit_cpu.SHAPES if s.target), submit_cpu.SHAPES[-1])
    settings = submit_cpu.Settings(
        sizes=(300,), submissions=400, warmup=100, rounds=2, shapes=shapes
    )
    with EmbeddedValkey() as valkey:
        rows = submit_cpu.run(valkey.url, settings)
    assert [r["shape"] for r in rows] == [s.name for s in shapes]
    assert [r["sets"] for r in rows] == [1, 8, 1]
    for row in rows:
        for column in ("service_us", "floor_us", "baseline_us", "empty_call_us", "guarantees_us"):
            assert row[column] > 0, row
        assert row["ratio"] > 0 and row["baseline_ratio"] > 0 and row["guarantees_ratio"] > 0, row
    assert [r["target"] for r in rows] == ["", "", ""]  # targets are stated at 2,000 players
