"""The player channels suite of `make bench` runs end to end, small, so it cannot rot: the stack
with its real publisher and event API, a board with watching players subscribed over WebSocket
with a server token, a writer passing them, every message matched to the write that caused it,
then the publisher script timed with and without watches on a Valkey of its own. No timing is
asserted (that is `make bench`); what is asserted holds on any machine: players are told, no
message goes missing, and only watches cost the script any watch checks."""

from __future__ import annotations

import pytest

from benchmarks import player_channels

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_player_channels_suite_runs_end_to_end_on_the_local_stack() -> None:
    settings = player_channels.Settings(
        players=2000,
        watchers=100,
        rate=100,
        seconds=2,
        warm_seconds=1,
        drain_seconds=1.5,
        connections=2,
        cost_boards=((2000, 100),),
        cost_ticks=3,
        backlog_writes=300,
        backlog_ticks=1,
    )
    results = player_channels.run(settings)
    (row,) = results["rows"]
    assert row["writes"] > 0 and row["watchers"] == 100, row
    # players were passed and told, each message matched to a write, none lost on the way
    assert row["messages"] > 0 and row["measured"] > 0 and row["events"].get("passed"), row
    assert row["missed"] == 0 and row["dropped"] == 0 and row["unmatched"] == 0, row
    assert row["due_at_end"] == 0, row  # 100 watches: far below the budget of checks
    assert row["p50_ms"] > 0 and row["max_ms"] >= row["p99_ms"] >= row["p50_ms"], row
    with_watches, without, backlog, backlog_without = results["script_cost"]
    assert backlog["writes_per_call"] == 300 and backlog_without["watchers"] == 0, backlog
    assert 0 < backlog["watch_checks_max"] <= 100, backlog
    assert with_watches["watchers"] == 100 and without["watchers"] == 0
    assert with_watches["calls"] == without["calls"] == 3
    assert 0 < with_watches["watch_checks_max"] <= 100, with_watches
    assert without["watch_checks_max"] == 0 and without["messages_per_call"] == 0, without
    (target,) = player_channels.targets(results)
    assert "p99 write→player message" in target["target"]
