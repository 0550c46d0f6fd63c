"""Redis/Valkey connections, created once per execution environment.

redis-py reconnects a dropped connection on the next command; the retry policy below covers a
failover or an idle connection closed by the server, without hiding a real outage for long.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

RedisLike = Any  # redis.Redis | redis.cluster.RedisCluster (both expose the same commands)


def connect(
    url: str, *, cluster: bool = False, timeout: float = 2.0, client_name: str | None = None
) -> RedisLike:
    """A client for `url`; `cluster=True` for Redis Cluster / ElastiCache cluster mode;
    `client_name` names its connections (CLIENT LIST, SLOWLOG)."""
    retry = Retry(ExponentialBackoff(cap=0.5, base=0.02), retries=2)
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "health_check_interval": 30,
        "retry": retry,
    }
    if client_name:
        common["client_name"] = client_name
    if cluster:
        return RedisCluster.from_url(url, **common)
    return redis.Redis.from_url(url, **common)


def queue_script(pipe: Any, client: RedisLike, sha: str, keys: list[str], args: list[Any]) -> str:
    """Queue one EVALSHA on a pipeline; returns the name of the node it goes to ('' off a
    cluster). On a cluster the call names its node itself: redis-py would otherwise ask a node
    for the script's keys (COMMAND GETKEYS), one more round trip for every call in the
    pipeline."""
    if isinstance(client, RedisCluster):
        node = client.get_node_from_key(keys[0])
        pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args, target_nodes=node)
        return str(node.name)
    pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args)
    return ""


def queue_wait(pipe: Any, client: RedisLike, key: str, replicas: int, timeout_ms: int) -> None:
    """Queue a WAIT on the node that holds `key`, after the writes queued there: it answers how
    many replicas have every write this connection made so far."""
    if isinstance(client, RedisCluster):
        node = client.get_node_from_key(key)
        pipe.execute_command("WAIT", replicas, timeout_ms, target_nodes=node)
    else:
        pipe.execute_command("WAIT", replicas, timeout_ms)


def spublish(client: RedisLike, channel: str, message: str) -> None:
    """Publish on a shard channel, to the node of its slot on a cluster."""
    if isinstance(client, RedisCluster):
        node = client.get_node_from_key(channel)
        client.execute_command("SPUBLISH", channel, message, target_nodes=node)
    else:
        client.execute_command("SPUBLISH", channel, message)


def connected_replicas(client: RedisLike, key: str) -> int:
    """How many replicas the node that holds `key` has connected now (ROLE)."""
    if isinstance(client, RedisCluster):
        role = client.execute_command("ROLE", target_nodes=client.get_node_from_key(key))
    else:
        role = client.execute_command("ROLE")
    return len(role[2]) if role and role[0] == "master" else 0
