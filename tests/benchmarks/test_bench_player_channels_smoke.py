"""The live suite's player-channel rows and the player_channels suite run end to end, small, so
they cannot rot: boards with watching players subscribed over WebSocket with a server token, a
writer passing them (quiet: every write passes a watcher), every message matched to the write
that caused it, the publisher's Redis CPU per message; then the publisher script timed with and
without watches on a Valkey of its own. No timing is asserted (that is `make bench`); what is
asserted holds on any machine: players are told, no message goes missing, no channel gets more
messages in a second than the publish rate (give or take one at millisecond stamps), and only
watches cost the script any watch checks."""

from __future__ import annotations

import pytest

from benchmarks import live_latency, player_channels
from benchmarks.player_channels import Board

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_live_suite_player_rows_run_end_to_end_on_the_local_stack() -> None:
    settings = live_latency.Settings(
        channels=("player",),
        rates=(100,),
        player_board=Board(players=2000, watchers=100, connections=2),
        quiet_player_board=Board(players=300, watchers=20, connections=1),
        seconds=2,
        quiet_writes=3,
        warm_seconds=1,
        drain_seconds=1.5,
    )
    results = live_latency.run(settings)
    quiet, hot = results["rows"]
    assert (quiet["load"], quiet["subscribers"], quiet["players"]) == ("quiet", 20, 300)
    assert (hot["load"], hot["subscribers"], hot["players"]) == ("100/s", 100, 2000)
    # each quiet write passes a watcher: a player message for every write
    assert quiet["measured"] >= quiet["writes"] > 0, quiet
    rate = results["publish_rate"]
    for row in (quiet, hot):
        # players were passed and told, each message matched to a write, none lost on the way
        assert row["measured"] > 0 and row["events"].get("passed"), row
        assert row["missed"] == 0 and row["dropped"] == 0 and row["unmatched"] == 0, row
        assert row["foreign"] == 0 and row["due_at_end"] == 0, row
        assert row["p50_ms"] > 0 and row["max_ms"] >= row["p99_ms"] >= row["p50_ms"], row
        assert 0 < row["msgs_per_channel_s"] <= rate + 1, row
        assert row["publisher_commands"] > 0 and row["publisher_scripts"] > 0, row
        assert row["messages"] > 0 and row["cpu_us_per_message"] > 0, row
    targets = live_latency.targets(results, baseline=None)
    assert len(targets) == 6 and "player channels, quiet" in targets[0]["target"]


def test_player_channels_suite_times_the_publisher_script_with_and_without_watches() -> None:
    settings = player_channels.Settings(
        rate=100, cost_boards=((2000, 100),), cost_ticks=3, backlog_writes=300, backlog_ticks=1
    )
    results = player_channels.run(settings)
    with_watches, without, backlog, backlog_without = results["script_cost"]
    assert backlog["writes_per_call"] == 300 and backlog_without["watchers"] == 0, backlog
    assert 0 < backlog["watch_checks_max"] <= 100, backlog
    assert with_watches["watchers"] == 100 and without["watchers"] == 0
    assert with_watches["calls"] == without["calls"] == 3
    assert 0 < with_watches["watch_checks_max"] <= 100, with_watches
    assert without["watch_checks_max"] == 0 and without["messages_per_call"] == 0, without
