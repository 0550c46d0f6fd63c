"""A Redis Cluster of embedded Valkey servers on loopback, for cluster mode and its tests."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Self

import redis
from redis.cluster import ClusterNode, RedisCluster

from devstack.servers.process import LOOPBACK, ServerStartError

if TYPE_CHECKING:
    pass
from devstack.servers.valkey import EmbeddedValkey


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    """``CLUSTER INFO`` as a dict, whatever response callback redis-py applies."""
    raw = client.execute_command("CLUSTER", "INFO")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class EmbeddedValkeyCluster:
    """Three Valkey masters forming a Redis Cluster on loopback, for cluster-mode tests.

    Slots are split into three ranges so keys really land on different nodes.
    """

    SLOT_RANGES: tuple[tuple[int, int], ...] = ((0, 5460), (5461, 10922), (10923, 16383))

    def __init__(self, *, node_timeout_ms: int = 5000) -> None:
        config = {"cluster-enabled": "yes", "cluster-node-timeout": str(node_timeout_ms)}
        self.nodes = [EmbeddedValkey(extra_config=config) for _ in self.SLOT_RANGES]

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

    def start(self, timeout: float = 30) -> None:
        """Start the nodes, assign slots, join them and wait for a consistent, usable cluster.

        Takes about 2 s: a master only reports ``cluster_state:ok`` once it has been up for
        CLUSTER_WRITABLE_DELAY (2 s).
        """
        if all(node.is_running() for node in self.nodes):
            return
        deadline = time.monotonic() + timeout
        try:
            for node in self.nodes:
                node.start()
            clients = [node.client(socket_timeout=2) for node in self.nodes]
            try:
                for client, (low, high) in zip(clients, self.SLOT_RANGES, strict=True):
                    client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
                for node in self.nodes[1:]:
                    clients[0].execute_command(
                        "CLUSTER", "MEET", LOOPBACK, node.port, node.cluster_bus_port
                    )
                self._wait_consistent(clients, deadline)
            finally:
                for client in clients:
                    client.close()
            self._wait_usable(deadline)
        except BaseException:
            self.stop()
            raise

    def _expected_slots(self) -> set[tuple[int, int, int]]:
        return {
            (low, high, node.port)
            for (low, high), node in zip(self.SLOT_RANGES, self.nodes, strict=True)
        }

    def _wait_consistent(self, clients: list[redis.Redis], deadline: float) -> None:
        expected = self._expected_slots()
        last = ""
        while time.monotonic() < deadline:
            ok = True
            for client in clients:
                info = _cluster_info(client)
                slots = {
                    (int(entry[0]), int(entry[1]), int(entry[2][1]))
                    for entry in client.execute_command("CLUSTER", "SLOTS")
                }
                if info.get("cluster_state") != "ok" or info.get("cluster_known_nodes") != "3":
                    ok, last = False, str(info)
                elif slots != expected:
                    ok, last = False, f"slot map {sorted(slots)}"
            if ok:
                return
            time.sleep(0.05)
        raise ServerStartError(f"valkey cluster did not converge: {last}")

    def _wait_usable(self, deadline: float) -> None:
        from redis.crc import key_slot

        probes: list[str] = []
        for low, high in self.SLOT_RANGES:
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
