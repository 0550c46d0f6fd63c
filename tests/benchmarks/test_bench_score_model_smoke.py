"""The score-model benchmark runs end to end on small boards, so it cannot rot (no timing
asserted: timings belong to `make bench`). What it does assert: every recorded warm call was
one script call, every replayed call was counted by Redis, and each row compares both boards."""

from __future__ import annotations

import pytest

from benchmarks import score_model
from devstack.servers import EmbeddedValkey

pytestmark = pytest.mark.server  # it starts a Valkey of its own


def test_score_model_benchmark_runs_end_to_end() -> None:
    settings = score_model.Settings(players=300, submissions=300, reads=100, warmup=50, rounds=2)
    with EmbeddedValkey() as valkey:
        rows = score_model.run(valkey.url, settings)
    assert [r["call"] for r in rows] == ["submit", "top 10", "player", "around"]
    for row in rows:
        for column in ("plain_us", "model_us", "plain_p50_us", "model_p50_us"):
            assert row[column] > 0, row
        assert row["cpu_ratio"] > 0 and row["latency_ratio"] > 0, row
