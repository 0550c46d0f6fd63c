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


def test_above_its_threshold_only_the_target_shapes_are_measured() -> None:
    """A million-player board is loaded only for the shapes the docs quote at that size."""
    shapes = (submit_cpu.SHAPES[0], submit_cpu.SHAPES[-1])
    assert shapes[0].target and not shapes[1].target
    settings = submit_cpu.Settings(
        sizes=(50, 120), submissions=60, warmup=20, rounds=1, shapes=shapes, all_shapes_up_to=100
    )
    with EmbeddedValkey() as valkey:
        rows = submit_cpu.run(valkey.url, settings)
    assert [(r["players"], r["shape"]) for r in rows] == [
        (50, shapes[0].name),
        (50, shapes[1].name),
        (120, shapes[0].name),
    ]
