"""The persister: redelivery and disorder change nothing (acceptance 1 of the persistence
work), a poison record fails alone (acceptance 2), and PostgreSQL ends equal to Redis."""

from __future__ import annotations

import dataclasses
import json
import random
import uuid

import psycopg
import pytest

from devstack.consistency import assert_redis_equals_postgres
from leaderboard.domain.auth import Caller
from leaderboard.domain.events import new_event_id
from leaderboard.domain.queue_messages import InvalidEvent, parse_event
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from tests.support.boards import ListSink
from tests.support.workloads import workload

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


def _snapshot(database_url, board_id):
    with psycopg.connect(database_url) as conn:
        standings = conn.execute(
            "SELECT period, region, player_id, score, version, reached_version, present"
            " FROM standings WHERE board_id = %s ORDER BY 1, 2, 3",
            (board_id,),
        ).fetchall()
        metadata = conn.execute(
            "SELECT player_id, metadata, version FROM player_metadata WHERE board_id = %s"
            " ORDER BY 1",
            (board_id,),
        ).fetchall()
        events = conn.execute(
            "SELECT event_id, version FROM score_events WHERE board_id = %s ORDER BY 1", (board_id,)
        ).fetchall()
    return standings, metadata, [(str(e), v) for e, v in events]


def _as_board(events, board_id):
    """The same events for another board id, so each delivery has rows of its own."""
    return [
        dataclasses.replace(
            e,
            board_id=board_id,
            event_id=str(uuid.uuid5(uuid.NAMESPACE_URL, board_id + e.event_id)),
        )
        for e in events
    ]


MODES = [("increment", "first"), ("best", "first"), ("best", "shared"), ("set", "first")]


@pytest.mark.parametrize(("mode", "ties"), MODES)
def test_duplicates_and_disorder_leave_the_same_rows(
    index, database_url, board_id, clock, mode, ties
):
    events = workload(index, board_id, clock, mode=mode, ties=ties)
    if mode != "increment":  # the persister skips these rows: they must not matter
        assert sum(not s.changed for e in events for s in e.standings) > 100
    store = StandingsStore(Database(database_url))
    rng = random.Random(5)

    in_order = _as_board(events, f"{board_id}-a")
    for start in range(0, len(in_order), 50):
        store.write(in_order[start : start + 50])

    twice = _as_board(events, f"{board_id}-b")
    for start in range(0, len(twice), 50):
        batch = twice[start : start + 50]
        assert store.write(batch) == len(batch)
        assert store.write(batch) == 0  # the same batch again changes nothing

    shuffled = _as_board(events, f"{board_id}-c")
    messy = shuffled + rng.sample(shuffled, len(shuffled) // 3)
    rng.shuffle(messy)
    for start in range(0, len(messy), 37):
        store.write(messy[start : start + 37])

    reference = _snapshot(database_url, f"{board_id}-a")
    assert reference[0] and reference[1] and len(reference[2]) == len(events)
    for other in ("b", "c"):
        got = _snapshot(database_url, f"{board_id}-{other}")
        assert got[0] == reference[0], f"standings differ for delivery {other}"
        assert got[1] == reference[1], f"metadata differ for delivery {other}"
        assert [v for _, v in got[2]] == [v for _, v in reference[2]] or sorted(
            v for _, v in got[2]
        ) == sorted(v for _, v in reference[2])


@pytest.mark.parametrize(("mode", "ties"), MODES)
def test_postgres_standings_equal_redis(index, database_url, board_id, clock, mode, ties):
    events = workload(index, board_id, clock, n=300, seed=9, mode=mode, ties=ties)
    store = StandingsStore(Database(database_url))
    shuffled = events[:]
    random.Random(3).shuffle(shuffled)
    store.write(shuffled)
    assert assert_redis_equals_postgres(index.client, database_url, board_id) >= 9


def _sqs_event(bodies):
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": "r",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:scores",
                "awsRegion": "us-east-1",
            }
            for body in bodies
        ]
    }


@pytest.mark.parametrize(
    "poison",
    [
        "not json",
        "{}",
        '{"schema": 2}',
        json.dumps({"schema": 1, "type": "score_submitted"}),
    ],
)
def test_a_poison_record_fails_alone(api, index, database_url, board_id, clock, poison):
    events = workload(index, board_id, clock, n=6)
    bodies = [e.to_message() for e in events]
    bodies.insert(3, poison)
    event = _sqs_event(bodies)
    response = api.api.invoke("PersisterFunction", event)
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][3]["messageId"]}]}
    assert len(_snapshot(database_url, board_id)[2]) == 6


def test_parse_event_refuses_what_it_does_not_understand(index, board_id, clock):
    good = json.loads(workload(index, board_id, clock, n=1)[0].to_message())
    assert parse_event(json.dumps(good)).event_id == good["event_id"]
    # a newer writer may add a field: an older persister still reads the event
    assert parse_event(json.dumps({**good, "added_later": [1]})).version == good["version"]
    standing = good["scores"][0]
    for broken in (
        {**good, "event_id": "x"},
        {**good, "version": 0},
        {**good, "version": True},
        {**good, "version": 1.5},
        {**good, "scores": [{"period": 1}]},
        {**good, "scores": [{**standing, "score": "10"}]},
        {**good, "scores": [{**standing, "score": True}]},
        {**good, "scores": [{**standing, "region": 5}]},
        {**good, "scores": [{**standing, "changed": 1}]},
        {**good, "scores": "all"},
        {**{k: v for k, v in good.items() if k != "scores"}},
        {**good, "evicted": [{"period": "all-time", "region": None, "player_id": 7}]},
        {**good, "evicted": {}},
        {**good, "metadata": [1]},
        {**good, "region": ["EU"]},
        {**good, "type": "other"},
        {**good, "schema": 2},
        [good],
    ):
        with pytest.raises(InvalidEvent):
            parse_event(json.dumps(broken))
    not_a_number = json.dumps({**good, "scores": [{**standing, "score": float("nan")}]})
    assert "NaN" in not_a_number  # what Python's json would write, and accept back
    for body in (not_a_number, not_a_number.replace("NaN", "Infinity"), "", "{", b"\xff"):
        with pytest.raises(InvalidEvent):
            parse_event(body)


def test_the_event_log_keeps_each_message_as_delivered(api, index, database_url, board_id, clock):
    bodies = [e.to_message() for e in workload(index, board_id, clock, n=5)]
    extra = '{ "note": "spacing and extra fields kept", "schema"'
    bodies[2] = bodies[2].replace('{"schema"', extra)
    assert api.api.invoke("PersisterFunction", _sqs_event(bodies)) == {"batchItemFailures": []}
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            "SELECT payload::text FROM score_events WHERE board_id = %s ORDER BY version",
            (board_id,),
        ).fetchall()
    assert [row[0] for row in stored] == bodies


def test_admin_delete_reaches_postgres_and_late_events_do_not_revive(
    api, index, admin_token, database_url, board_id, clock
):

    api.call("PUT", f"/boards/{board_id}", {"regions": ["EU"]}, token=admin_token)
    before = ListSink()
    service = ScoreService(index, before, clock)
    for score in (5, 7):
        service.submit(
            board_id,
            {"player_id": "gone", "score": score, "region": "EU", "metadata": {"n": score}},
            SERVER,
            None,
        )
    store = StandingsStore(Database(database_url))
    store.write(before.events)
    assert {row[2] for row in _snapshot(database_url, board_id)[0]} == {"gone"}

    assert api.call("DELETE", f"/boards/{board_id}/players/gone", token=admin_token).status == 204
    store.write(before.events)  # redelivered after the delete: duplicates, ignored
    store.write([dataclasses.replace(e, event_id=str(uuid.uuid4())) for e in before.events])
    standings, metadata, _ = _snapshot(database_url, board_id)
    assert standings == [] and metadata == []  # nothing from before the delete came back

    after = ListSink()
    ScoreService(index, after, clock).submit(
        board_id, {"player_id": "gone", "score": 2}, SERVER, None
    )
    store.write(after.events)  # a submission after the delete counts again
    standings, _, _ = _snapshot(database_url, board_id)
    assert {(row[0], row[2], row[3]) for row in standings} == {
        ("all-time", "gone", 2.0),
        ("2026-W47", "gone", 2.0),
    }


def test_database_down_fails_the_whole_batch(api, index, board_id, clock, monkeypatch):
    import sys

    module = sys.modules["lambda_PersisterFunction_app"]
    monkeypatch.setattr(
        module,
        "store",
        StandingsStore(Database("postgresql://postgres@127.0.0.1:9/none", connect_timeout=1)),
    )
    event = _sqs_event([e.to_message() for e in workload(index, board_id, clock, n=4)])
    response = api.api.invoke("PersisterFunction", event)
    assert sorted(f["itemIdentifier"] for f in response["batchItemFailures"]) == sorted(
        r["messageId"] for r in event["Records"]
    )


def test_poison_reaches_the_dead_letter_queue_and_the_rest_is_stored(
    api, sqs, index, database_url, board_id, clock
):
    """Through the local event source: the bad record is retried, then redriven to the DLQ."""
    import time

    from devstack.queue_consumer import QueueConsumer

    name = f"poison-{uuid.uuid4().hex[:8]}"
    queue = sqs.create_queue(
        name, dlq_name=f"{name}-dlq", max_receive_count=2, visibility_timeout=1
    )
    client = sqs.client()
    dlq = client.get_queue_url(QueueName=f"{name}-dlq")["QueueUrl"]
    events = workload(index, board_id, clock, n=5)
    for body in [e.to_message() for e in events] + ["{not an event"]:
        client.send_message(QueueUrl=queue, MessageBody=body)
    consumer = QueueConsumer(
        client,
        queue,
        lambda e: api.api.invoke("PersisterFunction", e),
        batch_size=10,
        window_seconds=0.2,
        name="test-persister",
    )
    consumer.start()
    try:
        deadline = time.monotonic() + 20
        dead: list = []
        while time.monotonic() < deadline and not dead:
            dead = client.receive_message(QueueUrl=dlq, WaitTimeSeconds=1).get("Messages", [])
    finally:
        consumer.stop()
    assert [m["Body"] for m in dead] == ["{not an event"]
    assert len(_snapshot(database_url, board_id)[2]) == 5


def test_event_ids_are_time_ordered_uuid7(index, board_id, clock):
    events = workload(index, board_id, clock, n=60)
    ids = [uuid.UUID(e.event_id) for e in events]
    assert {i.version for i in ids} == {7} and {i.variant for i in ids} == {uuid.RFC_4122}
    assert len(set(ids)) == len(ids)
    # the first 48 bits are the event's own millisecond: the log's key grows with time
    assert [i.int >> 80 for i in ids] == [e.occurred_at_ms for e in events]
    many = {new_event_id(1_795_000_000_000) for _ in range(20_000)}
    assert len(many) == 20_000  # the same millisecond: the random bits keep them apart


def test_a_batch_racing_an_admin_delete_does_not_revive_the_player(database_url, board_id):
    """A persister statement that starts while the delete is open must not write back a row
    the delete removed: it would not see the uncommitted tombstone."""
    import threading
    import time

    from leaderboard.domain.events import ScoreEvent, Standing

    def event(version):
        return ScoreEvent(
            event_id=new_event_id(1_795_000_000_000 + version),
            board_id=board_id,
            player_id="racer",
            operation="set",
            submitted_score=version,
            region=None,
            metadata={"v": version},
            version=version,
            applied=True,
            occurred_at_ms=1_795_000_000_000 + version,
            standings=(Standing("all-time", None, version, 1, True),),
        )

    StandingsStore(Database(database_url)).write([event(1)])
    deleter, persister = Database(database_url), Database(database_url)
    waiting = "SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted"
    pids = {db: db.connection().info.backend_pid for db in (deleter, persister)}

    def blocked(db):
        pid = pids[db]
        with psycopg.connect(database_url, autocommit=True) as watcher:
            for _ in range(500):
                if watcher.execute(waiting, (pid,)).fetchone()[0]:
                    return True
                time.sleep(0.01)
        return False

    errors = []

    def run(work):
        try:
            work()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with psycopg.connect(database_url) as holder:
        # hold the metadata row: the delete stops there, its tombstone written but not committed
        holder.execute(
            "SELECT 1 FROM player_metadata WHERE board_id = %s AND player_id = 'racer' FOR UPDATE",
            (board_id,),
        )
        delete = threading.Thread(
            target=run, args=(lambda: StandingsStore(deleter).delete_player(board_id, "racer", 10),)
        )
        delete.start()
        assert blocked(deleter)
        late = threading.Thread(
            target=run, args=(lambda: StandingsStore(persister).write([event(5)]),)
        )
        late.start()  # an event from before the delete, delivered late
        assert blocked(persister)
        holder.rollback()
    delete.join(10)
    late.join(10)
    assert not errors, errors
    standings, metadata, _ = _snapshot(database_url, board_id)
    assert standings == [] and metadata == []
