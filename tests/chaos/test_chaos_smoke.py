"""The short chaos run inside `make test`: every fault of `make chaos`, shortened, under
concurrent clients, then the independent checker's verdict; and a short soak on the same stack.

No timing is asserted (the machine may be busy); the verdict is: nothing acknowledged lost,
nothing applied twice, no 5xx other than 503, Redis == PostgreSQL == the checker's model.
"""

from __future__ import annotations

import pytest

from chaos.harness import Harness
from chaos.run import SMOKE, run_chaos, table
from chaos.soak import SoakPlan, run_soak
from chaos.soak import table as soak_table
from tests.support.chaos import assert_nothing_lost_or_wrong

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_faults_lose_nothing_and_a_short_soak_stays_bounded(tmp_path):
    with Harness(tmp_path / "chaos") as harness:
        data = run_chaos(harness, SMOKE)
        print(table(data))
        check = data["checker"]
        assert_nothing_lost_or_wrong(check)
        # The run did what it claims: every fault was injected, under load, and the clients
        # saw the service refuse (503) and recover.
        assert [f["fault"] for f in data["faults"]] == [
            "valkey-kill",
            "valkey-freeze",
            "postgres-restart",
            "sqs-unreachable",
            "worker-kill",
            "persister-batches",
        ]
        assert all(f["attempts"] > 0 for f in data["faults"])
        # Live updates came back after each Redis fault, and the run says how soon.
        live = {f["fault"]: f for f in data["faults"] if "live_s" in f}
        assert set(live) == {"valkey-kill", "valkey-freeze"}
        assert all(f["live_within_target"] for f in live.values()), live
        assert data["statuses"].get("503", 0) > 0
        assert check["acknowledged"] > 100
        assert check["sets_checked"] >= 20

        soak = run_soak(harness, SoakPlan(seconds=12, interval=3, writers=2, readers=2))
        print(soak_table(soak))
        assert len(soak["samples"]) >= 4
        assert {"valkey", "postgres", "sqs", "gateway+clients"} <= set(soak["rss"])
        assert any(role.startswith("ApiWriteFunction") for role in soak["rss"])
        assert soak["checker"]["ok"], soak["checker"]["examples"]
        assert soak["queue_depth_max"] <= 5000
        assert soak["failures"] == [], soak["failures"]
