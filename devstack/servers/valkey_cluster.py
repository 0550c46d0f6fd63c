"""A Redis Cluster of embedded Valkey servers on loopback, for cluster mode and its tests."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Self

import redis
from redis.cluster import ClusterNode, RedisCluster

from devstack.servers.process import LOOPBACK, ServerStartError
from devstack.servers.valkey import EmbeddedValkey

SLOTS = 16384


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    """``CLUSTER INFO`` as a dict, whatever response callback redis-py applies."""
    raw = client.execute_command("CLUSTER", "INFO")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def slot_ranges(masters: int) -> tuple[tuple[int, int], ...]:
    """The 16,384 slots in `masters` contiguous ranges, as even as they divide."""
    bounds = [SLOTS * i // masters for i in range(masters + 1)]
    return tuple((bounds[i], bounds[i + 1] - 1) for i in range(masters))


class EmbeddedValkeyCluster:
    """Valkey masters (three by default), each with `replicas` replicas, forming a Redis
    Cluster on loopback: what `REDIS_CLUSTER=true make run`, the cluster tests and the
    cluster chaos run use.

    Slots are split into one range per master so keys really land on different nodes; a
    replica takes over its master's slots when the master stops answering for
    `node_timeout_ms`. Nothing is kept on disk: `make run` rebuilds the boards from
    PostgreSQL into a new cluster on each start.
    """

    def __init__(
        self,
        *,
        masters: int = 3,
        replicas: int = 0,
        node_timeout_ms: int = 5000,
    ) -> None:
        if masters < 3 and replicas:
            raise ValueError("a failover needs a majority of at least 3 masters")
        self.slot_ranges = slot_ranges(masters)
        config = {"cluster-enabled": "yes", "cluster-node-timeout": str(node_timeout_ms)}
        count = masters * (1 + replicas)
        self.nodes = [EmbeddedValkey(extra_config=config) for _ in range(count)]
        self.masters_count = masters
        self.replicas_per_master = replicas

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        """(host, port) of every node, for ``RedisCluster(startup_nodes=...)``."""
        return [(LOOPBACK, node.port) for node in self.nodes]

    @property
    def url(self) -> str:
        """redis:// URL of the first node (cluster clients discover the rest)."""
        return f"redis://{LOOPBACK}:{self.nodes[0].port}"

    def client(self) -> RedisCluster:
        """A cluster-aware redis-py client (caller closes it)."""
        nodes = [ClusterNode(host, port) for host, port in self.startup_nodes]
        return RedisCluster(startup_nodes=nodes, socket_timeout=2)

    def start(self, timeout: float = 60) -> None:
        """Start the nodes, assign slots, join them, attach the replicas, then wait for a
        consistent, usable cluster.

        Takes a few seconds: a master only reports ``cluster_state:ok`` once it has been up
        for CLUSTER_WRITABLE_DELAY (2 s), and replicas must finish their first sync.
        """
        if all(node.is_running() for node in self.nodes):
            return
        deadline = time.monotonic() + timeout
        try:
            for node in self.nodes:
                node.start()
            clients = [node.client(socket_timeout=2) for node in self.nodes]
            try:
                self._form(clients)
                self._wait_consistent(clients, deadline)
            finally:
                for client in clients:
                    client.close()
            self._wait_usable(deadline)
        except BaseException:
            self.stop()
            raise

    def _form(self, clients: list[redis.Redis]) -> None:
        masters = clients[: self.masters_count]
        for client, (low, high) in zip(masters, self.slot_ranges, strict=True):
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
        for node in self.nodes[1:]:
            clients[0].execute_command(
                "CLUSTER", "MEET", LOOPBACK, node.port, node.cluster_bus_port
            )
        ids = [_text(c.execute_command("CLUSTER", "MYID")) for c in masters]
        replicas = clients[self.masters_count :]
        deadline = time.monotonic() + 20
        for n, client in enumerate(replicas):
            master = ids[n % self.masters_count]
            while True:  # the replica must have heard of its master through the bus first
                try:
                    client.execute_command("CLUSTER", "REPLICATE", master)
                    break
                except redis.ResponseError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)

    def _expected_slots(self) -> set[tuple[int, int]]:
        return set(self.slot_ranges)

    def _wait_consistent(self, clients: list[redis.Redis], deadline: float) -> None:
        expected = self._expected_slots()
        total = str(len(self.nodes))
        last = ""
        while time.monotonic() < deadline:
            ok = True
            for client in clients:
                info = _cluster_info(client)
                slots = client.execute_command("CLUSTER", "SLOTS")
                ranges = {(int(entry[0]), int(entry[1])) for entry in slots}
                copies = {len(entry) - 3 for entry in slots}
                if info.get("cluster_state") != "ok" or info.get("cluster_known_nodes") != total:
                    ok, last = False, str(info)
                elif ranges != expected or copies != {self.replicas_per_master}:
                    ok, last = False, f"slot map {slots}"
                elif _text(client.info("replication").get("role")) == "slave" and (
                    client.info("replication").get("master_link_status") != "up"
                ):
                    ok, last = False, "a replica is still syncing"
            if ok:
                return
            time.sleep(0.05)
        raise ServerStartError(f"valkey cluster did not converge: {last}")

    def _wait_usable(self, deadline: float) -> None:
        from redis.crc import key_slot

        probes: list[str] = []
        for low, high in self.slot_ranges:
            probes.append(
                next(
                    key
                    for key in (f"devstack:probe:{i}" for i in range(100_000))
                    if low <= key_slot(key.encode()) <= high
                )
            )
        error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                cluster = self.client()
                try:
                    for key in probes:
                        cluster.set(key, "1", ex=5)
                        if cluster.get(key) != b"1":
                            raise ServerStartError(f"read-back of {key} failed")
                        cluster.delete(key)
                    return
                finally:
                    cluster.close()
            except (redis.RedisError, ServerStartError) as exc:
                error = exc
                time.sleep(0.1)
        raise ServerStartError(f"valkey cluster is not usable: {error}")

    def node_at(self, port: int) -> EmbeddedValkey:
        """The node listening on `port`."""
        return next(node for node in self.nodes if node.port == port)

    def slot_owner(self, slot: int) -> tuple[EmbeddedValkey, list[EmbeddedValkey]]:
        """The master serving `slot` now and its replicas, as a live node sees the cluster."""
        for node in self.nodes:
            if not node.is_running():
                continue
            client = node.client(socket_timeout=1)
            try:
                slots = client.execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                continue
            finally:
                client.close()
            for entry in slots:
                if int(entry[0]) <= slot <= int(entry[1]):
                    master, *replicas = (self.node_at(int(copy[1])) for copy in entry[2:])
                    return master, replicas
        raise ServerStartError(f"no live node knows who serves slot {slot}")

    def role(self, node: EmbeddedValkey) -> str:
        """`master` or `slave`, as the node itself says (raises if it does not answer)."""
        client = node.client(socket_timeout=1)
        try:
            return _text(client.info("replication").get("role"))
        finally:
            client.close()

    def wait_role(self, node: EmbeddedValkey, role: str, timeout: float = 30) -> float:
        """Wait until `node` has `role` (a promoted replica: `master`; a returning master:
        `slave` with its link to the new master up) and sees the cluster whole; the
        monotonic time it did."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            client = node.client(socket_timeout=1)
            try:
                info = client.info("replication")
                state = _cluster_info(client).get("cluster_state")
                last = f"role {info.get('role')}, cluster {state}"
                linked = role != "slave" or info.get("master_link_status") == "up"
                if _text(info.get("role")) == role and linked and state == "ok":
                    return time.monotonic()
            except redis.RedisError as exc:
                last = str(exc)
            finally:
                client.close()
            time.sleep(0.02)
        raise ServerStartError(f"valkey node {node.port} did not become {role}: {last}")

    def stop(self) -> None:
        """Stop every node (each removes its temp dir)."""
        errors: list[BaseException] = []
        for node in self.nodes:
            try:
                node.stop()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
