"""The live suite of `make bench` runs end to end, small, so it cannot rot: the stack with its
real publisher and event API, subscribers over WebSocket in one child process, a writer in
another, the latencies matched write by write, and the publisher's Redis CPU told apart from
the writer's in SLOWLOG. The board-channel rows here; the player-channel rows are in
test_bench_player_channels_smoke.py. No timing is asserted (that is `make bench`); what is
asserted holds on any machine: every write reaches every subscriber, no channel gets more
messages in a second than the publish rate (give or take one at millisecond stamps), and the
publisher's commands are found and cost something."""

from __future__ import annotations

import pytest

from benchmarks import live_latency

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_live_suite_board_rows_run_end_to_end_on_the_local_stack() -> None:
    settings = live_latency.Settings(
        channels=("board",),
        rates=(50,),
        subscribers=(5, 20),
        seconds=2,
        quiet_writes=3,
        warm_seconds=1,
        drain_seconds=1.5,
    )
    results = live_latency.run(settings)
    rows = results["rows"]
    assert [(r["channel"], r["load"], r["subscribers"]) for r in rows] == [
        ("board", "quiet", 5),
        ("board", "50/s", 5),
        ("board", "50/s", 20),
    ]
    rate = results["publish_rate"]
    for row in rows:
        assert row["writes"] > 0, row
        assert row["missed"] == 0 and row["dropped"] == 0, row
        assert row["p50_ms"] > 0 and row["max_ms"] >= row["p99_ms"] >= row["p50_ms"], row
        assert 0 < row["msgs_per_channel_s"] <= rate + 1, row
        # the publisher's commands were found in the log, apart from the writer's
        assert row["publisher_commands"] > 0 and row["publisher_scripts"] > 0, row
        assert row["messages"] > 0 and row["cpu_us_per_message"] > 0, row
        assert row["writer_us_per_write"] > 0 and row["boards"] == 1, row
    assert results["machine"]["cores"] > 0 and results["commit"]
    targets = live_latency.targets(results, baseline=None)
    assert len(targets) == 3 * len(rows)
    assert [t["target"].split(",")[0] for t in targets[:3]] == [
        "p99 write→message",
        "messages per channel per second",
        "publisher's Redis CPU per message (µs)",
    ]
    assert targets[2]["goal"] == "no baseline for this row"
    baseline = live_latency.baseline_from([results, results])
    compared = live_latency.targets(results, baseline=baseline)
    assert "tick publisher" in compared[2]["goal"] and "this machine" in compared[2]["goal"]
    assert (
        baseline["runs"] == 2
        and baseline["rows"][0]["cpu_us_per_message_runs"] == [rows[0]["cpu_us_per_message"]] * 2
    )
