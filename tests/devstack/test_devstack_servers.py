"""The embedded servers really start, keep data where promised and leave no process behind."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

import boto3
import psycopg
import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from devstack.servers import (
    PG_SYSTEM_USER,
    EmbeddedPostgres,
    EmbeddedValkey,
    EmbeddedValkeyCluster,
    LocalSQS,
    ServerStartError,
    free_port,
)

pytestmark = pytest.mark.server  # these tests start and stop the embedded servers themselves

LINUX = sys.platform.startswith("linux")


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, executable) for every visible process (Linux only; empty elsewhere)."""
    if not LINUX:
        return {}
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        table[int(entry.name)] = (int(stat[stat.rindex(")") + 2 :].split()[1]), exe)
    return table


def _children(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    return [child for child, (ppid, _exe) in _proc_table().items() if ppid == pid]


def _our_server_pids() -> set[int]:
    """valkey-server/postgres processes descending from this test process.

    Restricted to our descendants so servers of other sessions on the machine don't count,
    and to the servers themselves: a PostgreSQL server forks backends and autovacuum workers
    at any time, and one forked by the session's shared server during a test is no leak (a
    leaked server is caught by its own process).
    """
    table = _proc_table()
    servers = ("/valkey-server", "/postgres")
    ours = set()
    for pid, (ppid, exe) in table.items():
        if not exe.endswith(servers) or table.get(ppid, (0, ""))[1].endswith(servers):
            continue
        cursor = pid
        while cursor in table and cursor > 1:
            cursor = table[cursor][0]
            if cursor == os.getpid():
                ours.add(pid)
                break
    return ours


def _assert_gone(*pids: int) -> None:
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.fixture(autouse=True)
def _no_leaked_servers():
    before = _our_server_pids()  # the session's shared servers are not this test's
    yield
    assert _our_server_pids() - before == set()


@pytest.fixture
def pg_dir():
    """A PGDATA path outside pytest's basetemp.

    As root, postgres runs as an unprivileged user that cannot enter the 0700
    /tmp/pytest-of-root directory, so tmp_path cannot be used here.
    """
    base = Path(tempfile.mkdtemp(prefix="lb-pgtest-"))
    base.chmod(0o755)
    yield base / "pgdata"
    shutil.rmtree(base, ignore_errors=True)


def test_free_port_is_bindable():
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_valkey_persists_across_restart(tmp_path):
    data_dir = tmp_path / "valkey"
    server = EmbeddedValkey(data_dir, persist=True)
    with server:
        first_pid, port = server.pid, server.port
        assert server.url == f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        client.zadd("board", {"alice": 10, "bob": 7})
        client.close()

        server.restart()
        assert server.pid != first_pid
        assert server.port == port
        client = redis.Redis.from_url(server.url)
        assert client.zrange("board", 0, -1, withscores=True) == [(b"bob", 7.0), (b"alice", 10.0)]
        client.close()
        last_pid = server.pid
    _assert_gone(first_pid, last_pid)
    assert not server.is_running()
    assert (data_dir / "valkey.log").exists()

    # a fresh object on the same directory sees the data too
    with EmbeddedValkey(data_dir, persist=True) as again:
        client = redis.Redis.from_url(again.url)
        assert client.zscore("board", "alice") == 10.0
        client.close()


def test_valkey_ephemeral_kill_restart_and_cleanup():
    server = EmbeddedValkey()
    server.start()
    try:
        data_dir = server.data_dir
        assert data_dir is not None and data_dir.is_dir()
        client = redis.Redis.from_url(server.url, socket_timeout=2)
        client.set("k", "v")
        killed = server.pid
        server.kill()
        assert not server.is_running()
        _assert_gone(killed)

        server.restart()
        assert client.ping()
        assert client.get("k") is None  # persist=False keeps nothing
        client.close()
    finally:
        server.stop()
    _assert_gone(server.pid)
    assert not data_dir.exists()


def test_valkey_failed_start_reports_log_and_cleans_up():
    server = EmbeddedValkey(extra_config={"no-such-directive": "1"})
    with pytest.raises(ServerStartError, match="no-such-directive"):
        server.start()
    assert server.data_dir is None  # temp dir removed
    assert not server.is_running()


def test_valkey_cluster_spreads_keys_over_three_nodes():
    with EmbeddedValkeyCluster() as cluster:
        assert len(cluster.startup_nodes) == 3
        assert cluster.url == f"redis://127.0.0.1:{cluster.startup_nodes[0][1]}"
        pids = [node.pid for node in cluster.nodes]

        client = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.startup_nodes])
        try:
            for (low, high), node in zip(cluster.slot_ranges, cluster.nodes, strict=True):
                key = next(
                    k
                    for k in (f"player:{i}" for i in range(10_000))
                    if low <= key_slot(k.encode()) <= high
                )
                client.set(key, node.port)
                assert client.get(key) == str(node.port).encode()
                assert client.keyslot(key) in range(low, high + 1)
                # the key physically lives on the node owning its slot
                direct = redis.Redis(port=node.port)
                assert direct.execute_command("GET", key) == str(node.port).encode()
                info = direct.cluster("info")
                assert info["cluster_state"] == "ok"
                assert info["cluster_slots_assigned"] == "16384"
                direct.close()
        finally:
            client.close()
    _assert_gone(*pids)


def test_postgres_persists_restarts_and_recovers_from_kill(pg_dir):
    pg = EmbeddedPostgres(pg_dir, persist=True)
    pg.start()
    try:
        port = pg.port
        assert pg.url == f"postgresql://postgres@127.0.0.1:{port}/postgres"
        if os.geteuid() == 0:  # postgres refuses root: it must run as the system user
            assert os.stat(f"/proc/{pg.pid}").st_uid == pwd.getpwnam(PG_SYSTEM_USER).pw_uid
        with psycopg.connect(pg.url, autocommit=True) as conn:
            assert conn.execute("SHOW fsync").fetchone() == ("on",)
            assert conn.execute("SHOW max_connections").fetchone() == ("200",)
            conn.execute("CREATE TABLE scores (player text PRIMARY KEY, score int)")
            conn.execute("INSERT INTO scores VALUES ('alice', 42)")

        first_pid = pg.pid
        pg.restart()
        assert pg.port == port and pg.pid != first_pid
        with psycopg.connect(pg.url) as conn:
            assert conn.execute("SELECT score FROM scores").fetchone() == (42,)

        db_url = pg.create_database("leaderboard_test")
        assert db_url == f"postgresql://postgres@127.0.0.1:{port}/leaderboard_test"
        assert pg.create_database("leaderboard_test") == db_url  # idempotent
        with psycopg.connect(db_url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("leaderboard_test",)

        # crash: postmaster.pid stays behind and must not block the next start
        crashed = pg.pid
        pg.kill()
        _assert_gone(crashed)
        assert (pg_dir / "postmaster.pid").exists()
        pg.start()
        with psycopg.connect(pg.url) as conn:
            assert conn.execute("SELECT score FROM scores").fetchone() == (42,)
        children = _children(pg.pid)
        assert children  # checkpointer, walwriter, ...
        last_pid = pg.pid
    finally:
        pg.stop()
    _assert_gone(first_pid, last_pid, *children)
    assert (pg_dir / "PG_VERSION").exists()

    # a second server on the same directory reuses the cluster without initdb
    version_mtime = (pg_dir / "PG_VERSION").stat().st_mtime_ns
    with EmbeddedPostgres(pg_dir, persist=True) as again, psycopg.connect(again.url) as conn:
        assert conn.execute("SELECT score FROM scores").fetchone() == (42,)
    assert (pg_dir / "PG_VERSION").stat().st_mtime_ns == version_mtime


def test_postgres_ephemeral_uses_test_settings_and_cleans_up():
    with EmbeddedPostgres() as pg:
        data_dir = pg.data_dir
        assert data_dir is not None and (data_dir / "PG_VERSION").exists()
        with psycopg.connect(pg.url) as conn:
            assert conn.execute("SHOW fsync").fetchone() == ("off",)
        pid = pg.pid
        assert pg.is_running()
    _assert_gone(pid)
    assert not pg.is_running()
    assert not data_dir.exists()


def test_sqs_queue_with_dead_letter_queue():
    with LocalSQS() as sqs:
        url = sqs.create_queue("scores", dlq_name="scores-dlq", max_receive_count=1)
        client = boto3.client(
            "sqs",
            region_name="us-east-1",
            endpoint_url=sqs.endpoint_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        attrs = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert "scores-dlq" in attrs["RedrivePolicy"]
        assert attrs["VisibilityTimeout"] == "30"

        client.send_message(QueueUrl=url, MessageBody='{"player": "alice", "score": 42}')
        received = client.receive_message(QueueUrl=url, WaitTimeSeconds=1, VisibilityTimeout=0)
        assert [m["Body"] for m in received["Messages"]] == ['{"player": "alice", "score": 42}']

        # one failed receive is the limit: the next receive moves it to the DLQ
        assert "Messages" not in client.receive_message(QueueUrl=url, WaitTimeSeconds=0)
        dlq_url = client.get_queue_url(QueueName="scores-dlq")["QueueUrl"]
        dead = client.receive_message(QueueUrl=dlq_url, WaitTimeSeconds=1)
        assert [m["Body"] for m in dead["Messages"]] == ['{"player": "alice", "score": 42}']


def test_sqs_server_runs_in_a_process_of_its_own_and_stops_with_it():
    with LocalSQS() as sqs:
        pid = sqs.pid
        assert pid != os.getpid() and sqs.is_running()
        client = sqs.client()
        url = sqs.create_queue("depth")
        for n in range(30):
            client.send_message(QueueUrl=url, MessageBody=str(n))
        attrs = client.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        assert attrs["ApproximateNumberOfMessages"] == "30"
        got = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        assert len(got) == 10
    _assert_gone(pid)
    assert not sqs.is_running()


def test_make_run_records_repeated_stop_signals_without_locks():
    """A stack once hung on shutdown: its SIGTERM handler called Event.set, and a second signal
    arrived while the first handler held the Event's lock (py-spy showed the nested frames).
    The handler now only records; two signals in a row are both seen and nothing blocks."""
    import signal
    import time

    from devstack.__main__ import stop_on_signals

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        received = stop_on_signals()
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):
            if len(received) >= 2:
                break
            time.sleep(0.01)
        assert signal.SIGTERM in received and signal.SIGINT in received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_valkey_cluster_with_replicas_fails_over_when_a_master_dies():
    """The cluster `REDIS_CLUSTER=true make run` and the cluster chaos run start: three masters
    with a replica each; a killed master's replica takes its slots with its data."""
    with EmbeddedValkeyCluster(replicas=1, node_timeout_ms=1000) as cluster:
        assert len(cluster.nodes) == 6
        client = cluster.client()
        try:
            victim_range = cluster.slot_ranges[0]
            key = next(
                k
                for k in (f"player:{i}" for i in range(10_000))
                if victim_range[0] <= key_slot(k.encode()) <= victim_range[1]
            )
            client.set(key, "kept")
            master = cluster.nodes[0].client()
            assert master.execute_command("WAIT", 1, 2000) == 1  # the replica has it
            master.close()
            os.kill(cluster.nodes[0].pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while True:
                try:
                    fresh = cluster.client()
                    try:
                        if fresh.get(key) == b"kept":
                            break
                    finally:
                        fresh.close()
                except redis.RedisError:
                    pass
                assert time.monotonic() < deadline, "no replica took over"
                time.sleep(0.2)
            promoted = cluster.nodes[3].client()  # the replica of node 0
            assert promoted.info("replication")["role"] == "master"
            promoted.close()
        finally:
            client.close()
