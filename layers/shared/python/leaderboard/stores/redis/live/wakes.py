"""The live publisher's wake-ups: sharded pub/sub messages the writes already send.

Every script that appends to a board's outbox also publishes an empty message on the board's
shard channel `lb:{board}:wake` (lua_shared/wake.lua), in the same round trip. The publisher
listens on the channels of the boards it may publish at once and blocks until one of them
speaks, instead of polling: a quiet board's write is read the moment it lands. A board inside
its interval (it published less than 1/rate ago) is not listened to, so a hot board's writes
send nothing; the publisher listens again just before it reads the board at the interval's
end, so a write after that read always wakes it.

A shard channel lives on the node of its slot: on a cluster this keeps one connection per
node that holds a listened board (one on a single node). The connections are plain redis-py
connections read with `select`, so one thread waits on every node at once; any error
(a restart, a failover, a moved slot: the node then drops the channel's subscription itself)
closes them all and the caller starts over, reading every board once, as nothing it was told
since can be trusted.

The control channel (`keys.LIVE_CONTROL_CHANNEL`) carries the rest: a board published or changed
(the catalog) and a newer run asking to take over.
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from redis.cluster import RedisCluster
from redis.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError

from leaderboard.stores.redis.client import RedisLike

# The name the publisher's connections carry (CLIENT LIST, SLOWLOG): its Redis work is told
# apart from the writes' that way.
PUBLISHER_CLIENT_NAME = "live-publisher"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class _Node:
    connection: AbstractConnection
    channels: set[str] = field(default_factory=set)


class WakeListener:
    """Blocks until a listened channel gets a message; see the module's docstring."""

    def __init__(self, client: RedisLike, *, confirm_seconds: float = 2.0) -> None:
        self.client = client
        self.confirm_seconds = confirm_seconds
        self._nodes: dict[str, _Node] = {}
        self._node_of: dict[str, str] = {}  # channel -> node name
        self._heard: list[tuple[str, str]] = []  # (channel, message) read while confirming

    @property
    def listening(self) -> frozenset[str]:
        return frozenset(self._node_of)

    @property
    def connections(self) -> int:
        """Open connections: one per node that holds a listened channel."""
        return len(self._nodes)

    # --- subscriptions ------------------------------------------------------------------------
    def listen(self, channels: Iterable[str]) -> None:
        """Subscribe to `channels`, returning once every node confirmed: a message published
        after this returns is heard."""
        waiting: set[str] = set()
        for channel in channels:
            if channel in self._node_of or channel in waiting:
                continue
            name, node = self._node_for(channel)
            node.connection.send_command("SSUBSCRIBE", channel, check_health=False)
            node.channels.add(channel)
            self._node_of[channel] = name
            waiting.add(channel)
        deadline = time.monotonic() + self.confirm_seconds
        while waiting:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(waiting)} subscriptions not confirmed")
            for node_name in {self._node_of[c] for c in waiting}:
                connection = self._nodes[node_name].connection
                if not connection.can_read(0.05):
                    continue
                kind, channel, payload = self._read(connection)
                if kind == "ssubscribe":
                    waiting.discard(channel)
                elif kind == "smessage":
                    self._heard.append((channel, payload))

    def ignore(self, channels: Iterable[str]) -> None:
        """Unsubscribe from `channels`, without waiting: a message already on its way may still
        be heard."""
        for channel in channels:
            name = self._node_of.pop(channel, None)
            if name is None:
                continue
            node = self._nodes[name]
            node.channels.discard(channel)
            node.connection.send_command("SUNSUBSCRIBE", channel, check_health=False)

    # --- waiting ------------------------------------------------------------------------------
    def wait(self, timeout: float) -> list[tuple[str, str]]:
        """The (channel, message) pairs heard, waiting up to `timeout` seconds for the first."""
        heard = self._drain()
        if heard or timeout <= 0:
            return heard
        sockets = {}
        for node in self._nodes.values():
            sock = getattr(node.connection, "_sock", None)  # redis-py keeps it there
            if sock is not None:
                sockets[sock] = node
        if not sockets:
            time.sleep(timeout)
            return []
        select.select(list(sockets), [], [], timeout)
        return self._drain()

    def _drain(self) -> list[tuple[str, str]]:
        heard, self._heard = self._heard, []
        for node in self._nodes.values():
            while node.connection.can_read(0):
                kind, channel, payload = self._read(node.connection)
                if kind == "smessage":
                    heard.append((channel, payload))
        return heard

    def _read(self, connection: AbstractConnection) -> tuple[str, str, str]:
        kind, channel, payload = self._reply(connection)
        if kind == "sunsubscribe" and channel in self._node_of:
            # not asked for: the node gave the channel's slot away (a resharding, a failover)
            raise RedisConnectionError(f"the server dropped the subscription to {channel}")
        return kind, channel, payload

    @staticmethod
    def _reply(connection: AbstractConnection) -> tuple[str, str, str]:
        reply = connection.read_response(push_request=True)  # RESP3 sends pushes
        if isinstance(reply, list) and len(reply) == 2:  # a pong
            return _text(reply[0]).lower(), "", _text(reply[1])
        if not isinstance(reply, list) or len(reply) < 3:
            raise RedisConnectionError(f"unexpected reply on a pub/sub connection: {reply!r}")
        return _text(reply[0]).lower(), _text(reply[1]), _text(reply[2])

    # --- connections --------------------------------------------------------------------------
    def _node_for(self, channel: str) -> tuple[str, _Node]:
        if isinstance(self.client, RedisCluster):
            target = self.client.get_node_from_key(channel)
            name = str(target.name)
            pool = self.client.get_redis_connection(target).connection_pool
        else:
            name, pool = "", self.client.connection_pool
        node = self._nodes.get(name)
        if node is None:
            connection = cast(AbstractConnection, pool.make_connection())
            connection.connect()
            # a subscribed connection answers nothing but pub/sub: no health-check PINGs on it
            connection.send_command("CLIENT", "SETNAME", PUBLISHER_CLIENT_NAME, check_health=False)
            connection.read_response()
            node = self._nodes[name] = _Node(connection)
        return name, node

    def reset(self) -> None:
        """Close every connection and forget every subscription (after any error)."""
        for node in self._nodes.values():
            with contextlib.suppress(Exception):  # it is being thrown away
                node.connection.disconnect()
        self._nodes.clear()
        self._node_of.clear()
        self._heard.clear()

    close = reset
