"""The `make run` HTTP suite runs end to end, small, so it cannot rot: the stack started as
`make run` starts it, every operation at each concurrency, the sustained run with its queue
depth, and the PostgreSQL-equals-Redis check. No timing is asserted (that is `make bench`)."""

from __future__ import annotations

import pytest

from benchmarks import http_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_http_suite_runs_end_to_end_on_make_run():
    settings = http_stack.Settings(
        players=500,
        concurrency=(1, 4),
        phase_seconds=0.5,
        sustained_rate=40,
        sustained_read_rate=20,
        sustained_seconds=3,
        floor_samples=20,
        warm_seconds=0.5,
    )
    results = http_stack.run(settings)
    rows = results["rows"]
    assert [(r["op"], r["clients"]) for r in rows] == [
        (op, c) for op in http_stack.OPS for c in (1, 4)
    ]
    for row in rows:
        assert row["requests"] > 0 and row["failures"] == 0, row
        assert row["p50_ms"] > 0 and row["p99_ms"] >= row["p50_ms"], row
        assert row["handler_p50_ms"] > 0, row
    sustained = results["sustained"]
    assert sustained["failures"] == 0, sustained
    assert sustained["submits"] > 0 and sustained["reads"] > 0
    assert sustained["depth_samples"], "the queue depth was not sampled"
    assert sustained["depth_samples"][-1][1] == 0, "the queue did not empty"
    assert sustained["postgres_equals_redis"] is True, sustained["consistency"]
    names = [t["target"] for t in http_stack.targets(results)]
    assert any("PostgreSQL equals Redis" in n for n in names)
    assert any("reads/s at 4 clients" in n for n in names)
