"""No acknowledged write is lost between Redis and SQS (acceptance 3 of the persistence work):
a failed send answers 503 and the retry completes it once; a process killed between the
script and the send is covered by the outbox relay."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import boto3
import psycopg
from botocore.config import Config

from leaderboard.services.relay import OutboxRelay
from leaderboard.stores.aws.score_queue import SqsScoreQueue
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.redis.keys import BoardKeys
from tests.support.api import drain_queue

ROOT = Path(__file__).resolve().parents[2]


def _events_in_postgres(database_url, board_id):
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT event_id::text, player_id FROM score_events WHERE board_id = %s", (board_id,)
        ).fetchall()


def _score(database_url, board_id, player):
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT score FROM standings WHERE board_id = %s AND player_id = %s"
            " AND period = 'all-time' AND region = ''",
            (board_id, player),
        ).fetchone()
    return None if row is None else row[0]


def _persist(api, sqs, queue_url):
    return drain_queue(sqs, queue_url, lambda e: api.api.invoke("PersisterFunction", e))


def test_failed_send_is_503_and_the_retry_counts_once(
    api, sqs, queue_url, admin_token, server_token, database_url, board_id
):
    api.call("PUT", f"/boards/{board_id}", {}, token=admin_token)
    write = vars(sys.modules["lambda_ApiWriteFunction_app"])["scores"]
    working = write.sink.client
    write.sink.client = boto3.client(  # nothing listens there: every send fails
        "sqs",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(connect_timeout=0.2, retries={"max_attempts": 1}),
    )
    body = {"player_id": "p", "score": 10}
    key = {"Idempotency-Key": "send-fails-once"}
    try:
        failed = api.call(
            "POST", f"/boards/{board_id}/scores", body, token=server_token, headers=key
        )
    finally:
        write.sink.client = working
    assert failed.status == 503 and failed.headers["retry-after"]
    assert "Idempotency-Key" in failed.json()["message"]

    retried = api.call("POST", f"/boards/{board_id}/scores", body, token=server_token, headers=key)
    assert retried.status == 200 and retried.headers["idempotent-replayed"] == "true"
    _persist(api, sqs, queue_url)
    events = _events_in_postgres(database_url, board_id)
    assert [e[0] for e in events] == [retried.json()["event_id"]]
    assert _score(database_url, board_id, "p") == 10  # counted once

    relay = OutboxRelay(
        write.index,
        StandingsStore(Database(database_url)),
        SqsScoreQueue(sqs.client(), queue_url),
        min_age_ms=0,
    )
    report = relay.run([board_id])
    assert (report.scanned, report.sent, report.already_stored) == (1, 0, 1)
    assert write.index.client.xlen(f"lb:{{{board_id}}}:outbox") == 0


def test_a_process_killed_after_the_script_is_covered_by_the_relay(
    api, sqs, queue_url, admin_token, redis_url, database_url, board_id
):
    api.call("PUT", f"/boards/{board_id}", {}, token=admin_token)
    # A real process runs the real write path and is SIGKILLed when it reaches the send.
    script = textwrap.dedent(f"""
        import os, signal
        from leaderboard.domain.auth import Caller
        from leaderboard.services.scores import ScoreService
        from leaderboard.stores.redis.client import connect
        from leaderboard.stores.redis.serving_index import RedisIndex

        class DiesBeforeSending:
            def send(self, event):
                os.kill(os.getpid(), signal.SIGKILL)

        service = ScoreService(RedisIndex(connect({redis_url!r})), DiesBeforeSending())
        service.submit({board_id!r}, {{"player_id": "crash", "score": 42}},
                       Caller("s", frozenset({{"leaderboard/server"}})), None)
    """)
    env = {"PYTHONPATH": f"{ROOT / 'layers/shared/python'}", "PATH": "/usr/bin:/bin"}
    died = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert died.returncode == -9, died.stderr.decode()
    _persist(api, sqs, queue_url)
    assert _events_in_postgres(database_url, board_id) == []  # it never reached the queue

    index = vars(sys.modules["lambda_ApiWriteFunction_app"])["scores"].index
    relay = OutboxRelay(
        index,
        StandingsStore(Database(database_url)),
        SqsScoreQueue(sqs.client(), queue_url),
        min_age_ms=0,
    )
    assert relay.run([board_id]).sent == 1
    _persist(api, sqs, queue_url)
    assert [e[1] for e in _events_in_postgres(database_url, board_id)] == ["crash"]
    assert _score(database_url, board_id, "crash") == 42
    assert relay.run([board_id]).scanned == 0  # the outbox was trimmed


def test_relay_function_runs_on_its_schedule_event(api, admin_token, board_id):
    api.call("PUT", f"/boards/{board_id}", {}, token=admin_token)
    report = api.api.invoke("OutboxRelayFunction", {})
    assert report["boards"] >= 1 and report["sent"] >= 0


def test_relay_function_rebuilds_a_board_redis_lost_and_says_so(
    api, sqs, queue_url, admin_token, server_token, redis_client, board_id
):
    api.call("PUT", f"/boards/{board_id}", {}, token=admin_token)
    body = {"player_id": "p", "score": 7}
    assert api.call("POST", f"/boards/{board_id}/scores", body, token=server_token).status == 200
    _persist(api, sqs, queue_url)
    keys = BoardKeys(board_id)
    lost = list(redis_client.scan_iter(match=keys.prefix + "*"))
    assert lost and redis_client.delete(*lost) == len(lost)
    # Lost for longer than the relay waits for in-flight events (which other tests' deliberately
    # failed messages may keep above zero): rebuilt on this run whatever the queue holds.
    redis_client.set(keys.prefix + "lost", int(time.time() * 1000) - 3_600_000)
    assert api.call("GET", f"/boards/{board_id}/entries").status == 200  # from the record
    report = api.api.invoke("OutboxRelayFunction", {})
    assert board_id in report["rebuilt"]
    entries = api.call("GET", f"/boards/{board_id}/entries").json()["entries"]
    assert [(e["player_id"], e["score"]) for e in entries] == [("p", 7)]


def test_an_admin_removal_is_for_the_live_publisher_alone(
    api, sqs, queue_url, admin_token, server_token, database_url, board_id
):
    """A removal goes into the outbox so live channels hear of it at once; the relay trims it
    without sending it on (the admin route removed the player from PostgreSQL itself)."""
    api.call("PUT", f"/boards/{board_id}", {}, token=admin_token)
    body = {"player_id": "gone", "score": 10}
    assert api.call("POST", f"/boards/{board_id}/scores", body, token=server_token).status == 200
    _persist(api, sqs, queue_url)
    assert api.call("DELETE", f"/boards/{board_id}/players/gone", token=admin_token).status == 204
    index = vars(sys.modules["lambda_ApiWriteFunction_app"])["scores"].index
    entries = index.outbox_entries(board_id, older_than_ms=2**62, count=10)
    assert [result.operation for _, result, _ in entries][-1] == "remove"
    relay = OutboxRelay(
        index,
        StandingsStore(Database(database_url)),
        SqsScoreQueue(sqs.client(), queue_url),
        min_age_ms=0,
    )
    report = relay.run([board_id])
    assert (report.scanned, report.sent) == (1, 0)  # the write, stored; the removal: not an event
    assert index.client.xlen(BoardKeys(board_id).outbox) == 0
    assert _score(database_url, board_id, "gone") is None
