"""The hot-board benchmark (issue 22) runs small, so it cannot rot: every K answers, the CPU
per submission is read from the nodes, and the ratio to one shard is computed. No timing is
asserted: timings belong to `make bench`."""

from __future__ import annotations

import pytest

from benchmarks import hot_board

pytestmark = pytest.mark.cluster


def test_hot_board_benchmark_runs_for_every_shard_count():
    result = hot_board.run(
        hot_board.with_settings(
            shards=(1, 3), players=600, submissions=800, clients=2, reads=5, page_offset=500
        )
    )
    writes, reads = hot_board.tables(result)
    assert [w["shards"] for w in writes] == [1, 3]
    for row in writes:
        assert row["submissions"] == 800 and row["submissions_per_s"] > 0
        assert row["script_calls"] == 800  # every submission is one script call, on its shard
        assert row["cpu_us_per_submission"] > 0 and row["cpu_ratio_to_k1"] > 0
    assert [r["read"] for r in reads[:4]] == ["top 10", "player", "around 10", "page at 500"]
    assert all(r["p50_ms"] > 0 and r["cpu_us_per_read"] > 0 for r in reads)
