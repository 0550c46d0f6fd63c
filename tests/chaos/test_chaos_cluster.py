"""Issue 22, acceptance 4: the short cluster chaos run inside `make test`.

Under concurrent writes to sharded boards on a Valkey Cluster of three masters with a replica
each, the master serving most shards is SIGKILLed and its replica takes over; the killed node
comes back as a replica. Then the independent checker's verdict, as after the single-node run:
nothing acknowledged lost, nothing applied twice, no 5xx other than 503, and every board (each
shard of it) in the cluster equal to PostgreSQL and to the checker's model. `make chaos` runs
the long form (docs/chaos.md). No timing is asserted: the machine may be busy.
"""

from __future__ import annotations

import pytest

from chaos.cluster import CLUSTER_SMOKE, ClusterHarness, cluster_table, run_cluster_chaos
from tests.support.chaos import assert_nothing_lost_or_wrong

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.cluster]


def test_a_master_killed_under_writes_to_sharded_boards_loses_nothing(tmp_path):
    with ClusterHarness(tmp_path / "chaos", node_timeout_ms=CLUSTER_SMOKE.node_timeout_ms) as h:
        data = run_cluster_chaos(h, CLUSTER_SMOKE)
        print(cluster_table(data))
        check = data["checker"]
        assert_nothing_lost_or_wrong(check)

        # The run did what it claims: a master holding shards was killed under load, its
        # replica took over, writes went on on every board, and the old master came back.
        [fault] = data["faults"]
        assert fault["fault"] == "master-kill"
        assert fault["shards_on_killed"], fault
        assert fault["attempts"] > 0
        assert fault["recovery_s"] is not None and fault["drain_s"] is not None
        assert fault["rejoin_s"] is not None
        promoted = h.cluster.node_at(fault["promoted_port"])
        killed = h.cluster.node_at(fault["killed_port"])
        assert h.cluster.role(promoted) == "master"
        assert h.cluster.role(killed) == "slave"
        assert {b["shards"] for b in data["boards"]} == {1, 8}
        assert check["acknowledged"] > 100
        assert check["sets_checked"] >= 10

        # The checker reads every shard: one score changed on one shard is a difference.
        client = h.cluster.client()
        try:
            key = next(
                f"lb:{{{tag}}}:z:all-time"
                for tags in h.shard_masters().values()
                for tag in tags
                if tag.startswith("shard-inc-shared.") and client.zcard(f"lb:{{{tag}}}:z:all-time")
            )
            member, score = client.zrange(key, 0, 0, withscores=True)[0]
            client.zadd(key, {member: score + 1})
        finally:
            client.close()
        tampered = h.verdict()
        assert not tampered.ok
        assert any(member.decode() in d for d in tampered.redis_vs_postgres), tampered
