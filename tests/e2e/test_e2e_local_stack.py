"""Acceptance 8: start the local stack exactly as `make run` does, drive it over real HTTP,
stop it with SIGTERM, and find nothing left running; start it again and find the data."""

from __future__ import annotations

import json
import random
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
import redis

from devstack.consistency import assert_redis_equals_postgres
from tests.support.local_stack import ROOT, Stack, stack_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def wait_for_events(database_url: str, board_id: str, count: int, timeout: float = 30):
    """The persister drains the queue on its own; wait until the board's events are stored."""
    deadline = time.monotonic() + timeout
    while True:
        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT player_id, payload FROM score_events WHERE board_id = %s", (board_id,)
            ).fetchall()
        if len(rows) >= count or time.monotonic() > deadline:
            assert len(rows) == count, f"{len(rows)} of {count} events reached PostgreSQL"
            return rows
        time.sleep(0.2)


def concurrent_workload_reaches_postgres(stack, server: str, admin: str, state: dict) -> None:
    """A random concurrent workload over HTTP; once the queue drains, PostgreSQL's standings
    equal Redis's everywhere (every period, region, player, score and order)."""
    board = "storm"
    assert (
        stack.request(
            "PUT",
            f"/boards/{board}",
            {
                "regions": ["EU", "NA"],
                "ties": "first",
                "max_entries": 25,
                "periods": ["all-time", "daily", "weekly", "monthly"],
            },
            token=admin,
        )[0]
        == 201
    )

    def player(n: int) -> int:
        rng = random.Random(n)
        for i in range(40):
            body = {
                "player_id": f"u{rng.randrange(60)}",
                "score": rng.randrange(-5, 50),
                "region": rng.choice(["EU", "NA", None]),
                "metadata": {"name": f"n{n}-{i}"},
            }
            status, _, reply = stack.request("POST", f"/boards/{board}/scores", body, token=server)
            assert status == 200, reply

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(player, range(8)))
    wait_for_events(state["DATABASE_URL"], board, 8 * 40, timeout=60)

    client = redis.Redis.from_url(state["REDIS_URL"], decode_responses=True)
    assert assert_redis_equals_postgres(client, state["DATABASE_URL"], board) == 12
    client.close()


def batches_reach_postgres(stack, server: str, admin: str, state: dict) -> None:
    """Batches over HTTP from 4 clients at once, each batch sent twice (the second replays):
    every item reaches PostgreSQL once, and the record equals Redis."""
    board = "imported"
    body = {"regions": ["EU"], "periods": ["all-time", "daily", "weekly", "monthly"]}
    assert stack.request("PUT", f"/boards/{board}", body, token=admin)[0] == 201

    def client(n: int) -> None:
        rng = random.Random(1000 + n)
        for b in range(3):
            items = [
                {
                    "player_id": f"i{rng.randrange(300)}",
                    "score": rng.randrange(0, 1000),
                    "region": rng.choice(["EU", None]),
                    "idempotency_key": f"c{n}-b{b}-{i}",
                }
                for i in range(100)
            ]
            for attempt in range(2):
                status, _, reply = stack.request(
                    "POST", f"/boards/{board}/scores/batch", {"submissions": items}, token=server
                )
                assert status == 200, reply
                results = json.loads(reply)["results"]
                assert [r["status"] for r in results] == [200] * 100
                assert {r["replayed"] for r in results} == {attempt == 1}

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(client, range(4)))
    wait_for_events(state["DATABASE_URL"], board, 4 * 3 * 100, timeout=60)
    redis_client = redis.Redis.from_url(state["REDIS_URL"], decode_responses=True)
    assert assert_redis_equals_postgres(redis_client, state["DATABASE_URL"], board) == 8
    redis_client.close()


# The sample events, in an order that makes each one meaningful, and what each must answer.
SAMPLE_EVENTS = [
    ("api_admin", "api_admin_put_board", lambda r: r["statusCode"] == 201),
    ("api_write", "api_write_submit_score", lambda r: r["statusCode"] == 200),
    ("api_read", "api_read_entries", lambda r: r["statusCode"] == 200),
    ("api_read", "api_read_player", lambda r: r["statusCode"] == 200),
    ("api_read", "api_read_around", lambda r: r["statusCode"] == 200),
    ("api_read", "api_read_list_boards", lambda r: r["statusCode"] == 200),
    (
        "api_read",
        "api_read_players",
        lambda r: (
            r["statusCode"] == 200
            and [e["player_id"] for e in json.loads(r["body"])["entries"]] == ["ada"]
            and json.loads(r["body"])["missing"] == ["bob", "cy"]
        ),
    ),
    (  # all-time, day, week and month, globally and in EU
        "api_read",
        "api_read_standings",
        lambda r: r["statusCode"] == 200 and len(json.loads(r["body"])["standings"]) == 8,
    ),
    (
        "api_read",
        "api_read_periods",
        lambda r: (
            r["statusCode"] == 200
            and any(p["kind"] == "weekly" for p in json.loads(r["body"])["periods"])
        ),
    ),
    (  # after the players read, which expects bob and cy to be missing
        "api_write",
        "api_write_submit_batch",
        lambda r: (
            r["statusCode"] == 200
            and [x["status"] for x in json.loads(r["body"])["results"]] == [200, 200, 200]
        ),
    ),
    ("api_admin", "api_admin_health", lambda r: r["statusCode"] == 200),
    ("rollover", "rollover_weekly", lambda r: r["complete"] is True and r["boards"] >= 1),
    (  # the demo board has no closed week yet: an empty first page
        "api_read",
        "api_read_history",
        lambda r: (
            r["statusCode"] == 200
            and json.loads(r["body"])["results"] == []
            and json.loads(r["body"])["next"] is None
        ),
    ),
    ("outbox_relay", "outbox_relay_scheduled", lambda r: r["boards"] >= 1),
    # a short run: it takes over from the stack's own publisher, ticks and hands back nothing
    ("live_publisher", "live_publisher_scheduled", lambda r: r["ticks"] >= 1 and r["failed"] == 0),
    ("persister", "persister_sqs_batch", lambda r: r == {"batchItemFailures": []}),
    # a subscribe to player-1's channel with a token no key of the stack's signed: refused
    (
        "live_authorizer",
        "live_authorizer_subscribe",
        lambda r: r == {"isAuthorized": False, "ttlOverride": 0},
    ),
    # a period.ended delivered, signed, to the stack's own receiver (POST /local/webhook)
    ("webhook_delivery", "webhook_delivery", lambda r: r == {"batchItemFailures": []}),
    # Without a ResponseURL (CloudFormation's pre-signed URL) the result is only returned.
    ("migrations", "migrations_create", lambda r: r["Status"] == "SUCCESS"),
    ("api_admin", "api_admin_delete_player", lambda r: r["statusCode"] == 204),
]


def invoke_every_sample_event(stack: Stack) -> None:
    """`make invoke` (the local `sam local invoke`) on every events/*.json file."""
    names = sorted(p.stem for p in (ROOT / "events").glob("*.json"))
    assert names == sorted(name for _, name, _ in SAMPLE_EVENTS), "an event without a check"
    for function, name, check in SAMPLE_EVENTS:
        out = subprocess.run(
            ["make", "-s", "invoke", f"FN={function}", f"EVENT=events/{name}.json"],
            cwd=ROOT,
            env=stack_env(stack.data_dir, stack.port),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        result = json.loads(out)
        assert check(result), (name, result)
    status, _, body = stack.request("GET", "/boards/demo-arena/entries")
    entries = json.loads(body)["entries"]  # the last event deleted ada; the batch added two
    assert status == 200 and [e["player_id"] for e in entries] == ["bob", "cy"]


@pytest.fixture
def data_dir():
    base = Path(tempfile.mkdtemp(prefix="lb-e2e-"))
    base.chmod(0o755)  # the embedded PostgreSQL user must reach it when running as root
    yield base / "data"
    subprocess.run(["rm", "-rf", str(base)], check=False)


def test_make_run_serves_the_api_and_stops_cleanly(data_dir):
    stack = Stack(data_dir)
    try:
        tokens = stack.tokens()
        admin, server, player = (
            tokens["ADMIN_TOKEN"],
            tokens["SERVER_TOKEN"],
            tokens["PLAYER_TOKEN"],
        )
        status, _, body = stack.request(
            "PUT",
            "/boards/arena",
            {"title": "Arena", "regions": ["EU", "NA"], "periods": ["all-time", "weekly"]},
            token=admin,
        )
        assert status == 201, body
        for n, (player_id, score) in enumerate([("p-1", 10), ("p-2", 30), ("p-3", 20)]):
            status, _, body = stack.request(
                "POST",
                "/boards/arena/scores",
                {
                    "player_id": player_id,
                    "score": score,
                    "region": "EU",
                    "metadata": {"name": player_id.upper()},
                },
                token=server,
                headers={"Idempotency-Key": f"e2e-{n}"},
            )
            assert status == 200, body
        status, headers, body = stack.request(
            "POST",
            "/boards/arena/scores",
            {"player_id": "p-3", "score": 20, "region": "EU", "metadata": {"name": "P-3"}},
            token=server,
            headers={"Idempotency-Key": "e2e-2"},
        )
        assert status == 200 and headers.get("idempotent-replayed") == "true"
        status, _, body = stack.request("POST", "/boards/arena/scores", {"score": 5}, token=player)
        assert status == 200 and json.loads(body)["player_id"] == "player-1"
        assert stack.request("POST", "/boards/arena/scores", {"score": 5})[0] == 401
        assert stack.request("PUT", "/boards/x", {}, token=player)[0] == 403

        status, _, body = stack.request("GET", "/boards/arena/entries?region=EU&period=weekly")
        page = json.loads(body)
        assert status == 200 and re.fullmatch(r"\d{4}-W\d{2}", page["period"])
        assert [(e["rank"], e["player_id"], e["score"]) for e in page["entries"]] == [
            (1, "p-2", 30),
            (2, "p-3", 20),
            (3, "p-1", 10),
        ]
        status, _, body = stack.request("GET", "/boards/arena/players/p-3/around?count=3")
        assert status == 200 and json.loads(body)["player"]["rank"] == 2
        status, _, body = stack.request("GET", "/health")
        assert status == 200 and json.loads(body)["status"] == "ok"
        status, headers, body = stack.request("GET", "/")
        assert status == 200 and "text/html" in headers["content-type"]

        # Every submission reached PostgreSQL through the queue and the local persister.
        state = json.loads((data_dir / "stack.json").read_text())["env"]
        rows = wait_for_events(state["DATABASE_URL"], "arena", 4)
        first = next(payload for player, payload in rows if player == "p-1")
        assert first["operation"] == "increment" and first["submitted_score"] == 10
        assert first["metadata"] == {"name": "P-1"} and first["version"] >= 1
        assert {(s["period"] == "all-time", s["region"]) for s in first["scores"]} == {
            (True, None),
            (False, None),
            (True, "EU"),
            (False, "EU"),
        }

        concurrent_workload_reaches_postgres(stack, server, admin, state)
        batches_reach_postgres(stack, server, admin, state)
        invoke_every_sample_event(stack)
    finally:
        seconds = stack.stop()
    assert seconds < 10

    again = Stack(data_dir)  # same data folder: boards and scores survive a restart
    try:
        status, _, body = again.request("GET", "/boards/arena/entries")
        assert status == 200 and json.loads(body)["total"] == 4
        assert again.request("GET", "/boards/arena")[0] == 200
    finally:
        again.stop()
