"""The cluster chaos run: masters of a Valkey Cluster killed under writes to sharded boards.

`python -m chaos cluster` (and `cluster-smoke`) starts the harness on an embedded Valkey
Cluster of three masters with a replica each (devstack.servers.EmbeddedValkeyCluster) instead
of one Valkey, creates sharded boards whose shards land on every master, and runs the same
writers and readers as `python -m chaos run`. Then, in each round, it SIGKILLs the master that
holds most of the sharded boards' shards and measures:

- `failover`: from the kill until the master's replica has taken over its slots (Valkey's own
  automatic failover, after `cluster-node-timeout`);
- `recovery` and `drain`, as for every fault: the first acknowledged write on every board after
  the takeover, and every write acknowledged so far being in PostgreSQL;
- `rejoin`: the killed node is started again (empty, as a crashed node comes back) and must
  rejoin as a replica of the node that replaced it and finish its sync, so the next round again
  has a replica to fail over to.

At the end the independent checker compares every board, sharded or not, in the cluster with
PostgreSQL and its own model, exactly as after the single-node run (docs/chaos.md).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis.crc import key_slot

from chaos.checker import Board
from chaos.harness import Harness
from chaos.run import figures, table
from devstack.servers import EmbeddedValkey, EmbeddedValkeyCluster

log = logging.getLogger("chaos")

SHARDS = 8
CLUSTER_BOARDS = [
    # Two sharded boards (both tie policies, best and increment, regions and periods) and an
    # unsharded one, whose whole board lives on one node of the cluster.
    Board("shard-best-first", "best", "desc", "first", ("all-time", "daily"), ("EU", "NA"),
          shards=SHARDS),
    Board("shard-inc-shared", "increment", "desc", "shared", ("all-time", "weekly"),
          shards=SHARDS),
    Board("plain-set-asc-first", "set", "asc", "first", ("all-time", "monthly")),
]  # fmt: skip


@dataclass(frozen=True)
class ClusterPlan:
    """How the cluster run loads and hurts the cluster."""

    warmup: float = 15.0
    writers: int = 6
    readers: int = 2
    players: int = 16  # per writer: 96 players over each sharded board's 8 shards
    pause: float = 0.01
    rounds: int = 2  # masters killed, one after another (the second is the first's replacement)
    node_timeout_ms: int = 5000  # what `REDIS_CLUSTER=true make run` uses
    quiet: float = 10.0
    recover_limit: float = 120.0


CLUSTER = ClusterPlan()
CLUSTER_SMOKE = ClusterPlan(
    warmup=3, writers=4, readers=1, players=12, rounds=1, node_timeout_ms=1000, quiet=1
)


class ClusterHarness(Harness):
    """The chaos harness on a Valkey Cluster of three masters, each with a replica."""

    def __init__(
        self,
        workdir: Path | None = None,
        seed: int = 12,
        *,
        node_timeout_ms: int = CLUSTER.node_timeout_ms,
    ) -> None:
        super().__init__(workdir, seed, boards=CLUSTER_BOARDS)
        self.cluster = EmbeddedValkeyCluster(masters=3, replicas=1, node_timeout_ms=node_timeout_ms)
        self.redis_cluster = True
        self._killed: EmbeddedValkey | None = None

    def _start_redis(self) -> str:
        self.cluster.start()
        return self.cluster.url

    def _stop_redis(self) -> None:
        self.cluster.stop()

    def shard_masters(self) -> dict[int, list[str]]:
        """Port of each master -> the shards (`board.s`) of the sharded boards it serves."""
        owners: dict[int, list[str]] = {}
        for board in self.boards:
            if board.shards <= 1:
                continue
            for tag in board.tags:
                master, _ = self.cluster.slot_owner(key_slot(f"lb:{{{tag}}}:cfg".encode()))
                owners.setdefault(master.port, []).append(tag)
        return owners

    def _victim(self) -> tuple[EmbeddedValkey, EmbeddedValkey, list[str]]:
        """The master serving most shards, and its replica. The node the stack's REDIS_URL
        names is spared when another master holds shards: locally it is the one address new
        clients start from (on AWS the configuration endpoint resolves to a live node)."""
        owners = self.shard_masters()
        entry = self.cluster.nodes[0].port
        candidates = [port for port in owners if port != entry] or list(owners)
        port = max(candidates, key=lambda p: len(owners[p]))
        victim = self.cluster.node_at(port)
        slot = key_slot(f"lb:{{{owners[port][0]}}}:cfg".encode())
        _, replicas = self.cluster.slot_owner(slot)
        if not replicas:
            raise RuntimeError(f"master {port} has no replica to fail over to")
        return victim, replicas[0], sorted(owners[port])

    def kill_master(self) -> None:
        """SIGKILL the master holding most shards; the fault lasts until its replica has
        taken over (cluster state ok, the replica a master)."""
        victim, replica, shards = self._victim()
        with self.fault(
            "master-kill",
            f"Valkey master :{victim.port} ({len(shards)} shards) SIGKILLed;"
            f" replica :{replica.port} takes over",
        ) as window:
            victim.kill()
            promoted = self.cluster.wait_role(replica, "master", timeout=60)
            window.details.update(
                killed_port=victim.port,
                promoted_port=replica.port,
                shards_on_killed=shards,
                failover_s=round(promoted - window.started, 2),
            )
        self._killed = victim

    def rejoin(self) -> None:
        """Start the killed node again, empty (no persistence): it must come back as a replica
        of the node that took its place and finish its first sync."""
        assert self._killed is not None
        window = self.windows[-1]
        started = time.monotonic()
        self._killed.start()
        synced = self.cluster.wait_role(self._killed, "slave", timeout=60)
        window.details["rejoin_s"] = round(synced - started, 2)
        log.info("node :%s is back as a replica in %.1f s", self._killed.port, synced - started)


def run_cluster_chaos(harness: ClusterHarness, plan: ClusterPlan) -> dict[str, Any]:
    """Kill masters in turn under load; return the figures and the checker's verdict."""
    began = time.monotonic()
    harness.start_load(plan.writers, plan.readers, plan.pause, players=plan.players)
    time.sleep(plan.warmup)
    for _ in range(plan.rounds):
        harness.kill_master()
        harness.recover(harness.windows[-1], plan.recover_limit, quiet=0)
        harness.rejoin()
        time.sleep(plan.quiet)
    load_ended = time.monotonic()
    harness.stop_load()
    stopped = time.monotonic()
    settle = harness.settle()
    verdict = harness.check_until_consistent()
    data = figures(harness, began, load_ended, stopped, settle)
    data["boards"] = [
        {"board_id": b.board_id, "mode": b.mode, "ties": b.ties, "shards": b.shards}
        for b in harness.boards
    ]
    return data | {"checker": verdict.to_json()}


def cluster_table(data: dict[str, Any]) -> str:
    """The figures of the single-node run's table, and what each failover took."""
    lines = [table(data).replace("chaos run:", "cluster chaos run:", 1), ""]
    boards = ", ".join(f"{b['board_id']} (shards {b['shards']})" for b in data["boards"])
    lines.append(f"  boards: {boards}")
    for f in data["faults"]:
        lines.append(
            f"  {f['fault']}: :{f['killed_port']} held {len(f['shards_on_killed'])} shards;"
            f" :{f['promoted_port']} took over in {f['failover_s']} s; writes on every board"
            f" {f['recovery_s']} s later; old master back as a replica in {f.get('rejoin_s')} s"
        )
    return "\n".join(lines)
