"""The persister-throughput and cold-start benchmarks run small, so they cannot rot (no timing
asserted: timings belong to the benchmark runs)."""

from __future__ import annotations

import pytest

from benchmarks import cold_start, persister_throughput
from devstack.template import load


def test_persister_benchmark_runs_end_to_end(database_url):
    # two concurrent workers get batches out of order: the run checks the rows are still exact
    results = persister_throughput.run(database_url, events=2000, batch=500, workers=(1, 2))
    assert [r["name"] for r in results] == [
        "persister x1",
        "copy-floor x1",
        "persister x2",
        "copy-floor x2",
    ]
    for r in results:
        assert r["events"] == 2000 and r["batch"] == 500
        assert r["rows"] > 2000  # the events, plus the standings and metadata they produce
        assert r["seconds"] > 0 and r["events_per_second"] > 0 and r["rows_per_second"] > 0
        assert r["batch_ms_p50"] > 0 and r["ratio"] > 0
    assert len({r["rows"] for r in results}) == 1  # the floor writes the same rows


def test_persister_workload_is_realistic():
    events = persister_throughput.make_events("bench-shape", 3000)
    assert [e.version for e in events] == list(range(1, 3001))
    assert all(2 <= len(e.standings) <= 6 for e in events)
    assert len({e.player_id for e in events}) > 1000
    assert 0.2 < sum(e.metadata is not None for e in events) / 3000 < 0.4
    assert any(e.evictions for e in events)
    assert len({s.period for e in events for s in e.standings}) == 5  # a new day and week
    assert {s.region for e in events for s in e.standings} == {None, "EU", "NA"}


@pytest.mark.slow
def test_cold_start_benchmark_covers_every_function():
    # from source (seconds an import, no bytecode) for one function: the path, not the figures
    results = cold_start.run(repeats=1, source_repeats=1, source_functions={"ApiReadFunction"})
    assert [r["function"] for r in results] == list(load().functions)
    for r in results:
        assert r["import_ms"] > 0 and r["dependencies_ms"] > 0 and r["ratio"] > 0
        assert "aws_lambda_powertools" in r["packages"]
        src = (r["import_src_ms"], r["dependencies_src_ms"], r["ratio_src"])
        if r["function"] == "ApiReadFunction":
            assert all(value is not None and value > 0 for value in src)
        else:
            assert src == (None, None, None)
    by_name = {r["function"]: r for r in results}
    read = by_name["ApiReadFunction"]
    assert not read["boto3"] and not read["psycopg"], "the read path stays lean"
    assert not read["jwt"], "PyJWT and cryptography come with the first token, not at start"
    assert by_name["PersisterFunction"]["psycopg"]
    assert by_name["ApiWriteFunction"]["boto3"]
