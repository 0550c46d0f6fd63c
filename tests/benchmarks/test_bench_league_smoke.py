"""The league benchmark runs end to end on a small league, so it cannot rot (no timing asserted:
timings belong to `make bench`). What it does assert: the bulk loader matched real submissions
(measure_calls checks it first), every recorded warm call was one script call and every replayed
one was counted by Redis, the season-end job archived the season, settled every league player
and emitted every move, and each target of the issue is evaluated."""

from __future__ import annotations

import pytest
import redis

from benchmarks import league
from benchmarks.__main__ import _report_league
from devstack.servers import EmbeddedValkey

pytestmark = pytest.mark.server  # it starts a Valkey of its own


def test_league_benchmark_runs_end_to_end(redis_url, database_url, capsys) -> None:
    settings = league.Settings(
        players=2_000, submissions=300, reads=100, warmup=100, rounds=2, chunk_size=500
    )
    with EmbeddedValkey() as valkey:
        calls = league.measure_calls(valkey.url, settings)
    assert [r["call"] for r in calls] == [title for title, *_ in league.PAIRS]
    for row in calls:
        for column in ("league_us", "plain_us", "league_p50_us", "plain_p50_us"):
            assert row[column] > 0, row
        assert row["cpu_ratio"] > 0, row
    writes = [r for r in calls if r["target"]]
    assert len(writes) == 2 and all(isinstance(r["met"], bool) for r in writes)
    assert all(r["target"] == f"<= {league.TARGET_WRITE_RATIO}" for r in writes)

    end = league.season_end_isolated(redis_url, database_url, settings)
    assert (end["players"], end["idle_players"]) == (2_000, 100)
    assert end["event_parts"] == 3 and end["groups"] >= 2_000 // 30
    for part in ("archive_s", "settle_s", "events_build_s", "events_emit_s"):
        assert end[part] >= 0, end
    assert end["seconds"] >= end["archive_s"] + end["settle_s"]
    assert end["redis_used_mb_peak"] >= end["redis_used_mb_before"] > 0
    assert isinstance(end["met"], bool)

    rows = league.targets(calls, end)
    assert len(rows) == 3 and all(isinstance(r["met"], bool) for r in rows)
    _report_league({"league": {"calls": calls, "season_end": end}, "league_targets": rows})
    assert "League targets" in capsys.readouterr().out


def test_the_loader_is_checked_against_real_submissions() -> None:
    """A loader that left one key unlike the service's writes fails the suite."""
    with EmbeddedValkey() as valkey:
        server = redis.connection.parse_url(valkey.url)
        server.pop("db", None)  # a database in the URL would win over ours
        bulk, served = (
            redis.Redis(connection_pool=redis.ConnectionPool(**server, db=n, decode_responses=True))
            for n in (0, 1)
        )
        league.check_loader(bulk, served, seed=1)  # equal: passes
        original = league.load_league

        def off_by_one(client, board_id, *args, **kwargs):
            groups = original(client, board_id, *args, **kwargs)
            if client is bulk:  # the loader's own board: one version too many
                client.incr(f"lb:{{{board_id}}}:seq")
            return groups

        league.load_league = off_by_one
        try:
            with pytest.raises(RuntimeError, match="differs from real submissions"):
                league.check_loader(bulk, served, seed=1)
        finally:
            league.load_league = original
        bulk.close()
        served.close()
