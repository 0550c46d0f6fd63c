"""The benchmarks run in `make test` on a small board, so they cannot rot (no timing asserted:
timings belong to `make bench`)."""

from __future__ import annotations

from benchmarks import bulk


def test_bulk_benchmark_runs_end_to_end(redis_url, database_url):
    results = bulk.run(redis_url, database_url, 3000, chunk_size=500)
    assert [r.name for r in results] == ["rollover", "rebuild"]
    assert all(r.entries == 3300 and r.entries_per_second > 0 for r in results)
