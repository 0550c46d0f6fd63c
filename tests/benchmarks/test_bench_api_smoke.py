"""The API latency benchmark runs end to end on a small board, so it cannot rot (no timing
asserted: timings belong to `make bench`)."""

from __future__ import annotations

from benchmarks import api_latency


def test_api_latency_benchmark_runs_end_to_end(redis_url):
    rows = api_latency.run(redis_url, [2000], samples=30)
    ops = [r["op"] for r in rows]
    assert ops == [*api_latency.READ_OPS, *api_latency.SUBMIT_OPS]
    for row in rows:
        assert row["size"] == 2000, row
        assert row["round_trips"] == 1, row
        assert row["redis_commands"] >= 2, row  # the EVALSHA and what the script ran
        for key in ("handler_p50_us", "handler_p99_us", "floor_p50_us", "floor_p99_us"):
            assert row[key] > 0, (key, row)
        assert row["ratio_p50"] > 0 and row["ratio_p99"] > 0, row
    summary = api_latency.summary(rows)
    assert set(summary["per_op"]) == set(ops)
    assert summary["targets"]["one_round_trip_per_call"] is True
