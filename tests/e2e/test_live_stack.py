"""Live updates end to end on the local stack: HTTP writes in, WebSocket messages out, the
publisher running on its schedule as `make run` runs it; then the live side taken away, to show
that writes and persistence never depend on it."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from devstack import tokens
from devstack.consistency import assert_redis_equals_postgres
from devstack.live_client import LiveClient
from devstack.stack import LocalStack
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.live import player_channel
from leaderboard.stores.redis.client import connect
from tests.support.reference_model import ModelBoard

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack(local_stack: LocalStack) -> LocalStack:
    """The worker's stack (tests/e2e/conftest.py): each test on boards of its own."""
    return local_stack


class Http:
    def __init__(self, stack: LocalStack) -> None:
        self.url = stack.url
        secret = tokens.local_secret(stack.config.data_dir)
        self.admin = tokens.mint(secret, "admin", "leaderboard/admin")
        self.server = tokens.mint(secret, "game-server", "leaderboard/server")

    def __call__(
        self, method: str, path: str, body: Any = None, token: str = ""
    ) -> tuple[int, Any]:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


def _client(stack: LocalStack) -> LiveClient:
    live = stack.live_config()
    assert live is not None
    return LiveClient(live["realtime_url"], live["http_host"], live["api_key"])


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def test_a_subscriber_sees_each_submission_and_a_reconnect_converges(stack: LocalStack) -> None:
    http = Http(stack)
    status, board = http("PUT", "/boards/live_e2e", {"regions": ["EU"], "live_top": 3}, http.admin)
    assert status == 201
    model = ModelBoard(BoardConfig.from_public(board))
    channel = board["live_channel"] + "/weekly"
    versions: list[int] = []
    with _client(stack) as client:
        client.subscribe(channel)
        for player, score, region in [("ann", 50, None), ("bob", 70, "EU"), ("cy", 60, None)]:
            body = {"player_id": player, "score": score, "metadata": {"name": player.title()}}
            if region:
                body["region"] = region
            status, ack = http("POST", "/boards/live_e2e/scores", body, http.server)
            assert status == 200
            model.submit(player, score, region, body["metadata"], datetime.now(UTC))
            # the stack's own publisher, on its schedule, sends it within its tick
            (message,) = client.events_until(lambda m, v=ack["version"]: m["version"] >= v, 3)[-1:]
            period = message["period"]
            total, top = model.page(period, None, 0, 3)
            assert (message["version"], message["total"]) == (ack["version"], total)
            assert message["top"] == [dict(e, score=_num(e["score"])) for e in top]
            assert message["changed"][0]["player_id"] == player
            assert message["changed"][0]["rank"] == next(
                s["rank"] for s in ack["standings"] if s["region"] is None and s["period"] == period
            )
            assert message["previous_version"] == (versions[-1] if versions else None)
            versions.append(message["version"])
    assert versions == sorted(set(versions))  # versions only grow

    # Away: two more writes are published to nobody. Back: one read converges, and the next
    # message chains from a version the client never saw.
    for player, score in [("dee", 80), ("ann", 90)]:
        assert (
            http(
                "POST",
                "/boards/live_e2e/scores",
                {"player_id": player, "score": score},
                http.server,
            )[0]
            == 200
        )
        model.submit(player, score, None, None, datetime.now(UTC))
    time.sleep(1.0)
    with _client(stack) as client:
        client.subscribe(channel)
        status, page = http("GET", "/boards/live_e2e/entries?period=weekly&limit=3")
        total, top = model.page(page["period"], None, 0, 3)
        assert page["total"] == total
        assert page["entries"] == [dict(e, score=_num(e["score"])) for e in top]
        status, ack = http(
            "POST", "/boards/live_e2e/scores", {"player_id": "eve", "score": 85}, http.server
        )
        model.submit("eve", 85, None, None, datetime.now(UTC))
        message = client.events_until(lambda m: m["version"] >= ack["version"], 3)[-1]
    assert message["previous_version"] not in versions  # the gap shows
    total, top = model.page(message["period"], None, 0, 3)
    assert message["top"] == [dict(e, score=_num(e["score"])) for e in top]


def test_player_channels_tell_a_player_who_passed_them_and_only_them(stack: LocalStack) -> None:
    """Issue 25: passed (by whom, old and new rank), a friend passed, entered and left the top
    N, each within a second of the write; another player's channel refused, a server's not."""
    http = Http(stack)
    secret = tokens.local_secret(stack.config.data_dir)
    token = {p: tokens.mint(secret, p) for p in ("ann", "bob", "cy", "dee")}
    status, board = http("PUT", "/boards/live_players", {"mode": "best"}, http.admin)
    assert status == 201
    with _client(stack) as watcher:  # until the publisher has seen these writes
        watcher.subscribe(board["live_channel"] + "/all-time")
        for player, score in (("ann", 50), ("bob", 40), ("cy", 30), ("dee", 20)):
            status, ack = http(
                "POST", "/boards/live_players/scores", {"score": score}, token[player]
            )
            assert status == 200
        watcher.events_until(lambda m: m["version"] >= ack["version"], 5)
    status, watch = http(
        "PUT",
        "/boards/live_players/players/cy/watch",
        {"top_n": 3, "friends": ["dee"]},
        token["cy"],
    )
    assert status == 200, watch
    assert (watch["rank"], watch["score"], watch["friends"]) == (3, 30, ["dee"])
    assert watch["channel"] == player_channel("cy")
    status, dee_watch = http(
        "PUT", "/boards/live_players/players/dee/watch", {"top_n": 3}, http.server
    )
    assert status == 200 and dee_watch["rank"] == 4
    # who may watch and what
    assert http("PUT", "/boards/live_players/players/cy/watch", {}, token["bob"])[0] == 403
    assert http("PUT", "/boards/live_players/players/cy/watch", {}, "")[0] == 401
    assert (
        http("PUT", "/boards/live_players/players/cy/watch", {"period": "custom"}, token["cy"])[0]
        == 422
    )
    assert http("PUT", "/boards/live_players/players/cy/watch", {"top_n": 0}, token["cy"])[0] == 400
    assert http("PUT", "/boards/nope_board/players/cy/watch", {}, token["cy"])[0] == 404

    with _client(stack) as client, _client(stack) as server:
        # only cy (or a server) may subscribe to cy's channel
        for bearer in (token["bob"], "not-a-token"):
            with pytest.raises(ConnectionError, match="Unauthorized"):
                client.subscribe(watch["channel"], bearer=bearer)
        with pytest.raises(ConnectionError, match="Unauthorized"):
            client.subscribe(watch["channel"])  # the API key alone
        with pytest.raises(ConnectionError, match="Unauthorized"):
            client.subscribe("/players/*", bearer=token["cy"])
        client.subscribe(watch["channel"], bearer=token["cy"])
        server.subscribe("/players/*", bearer=http.server)

        sent = time.monotonic()
        status, _ = http("POST", "/boards/live_players/scores", {"score": 45}, token["dee"])
        assert status == 200
        message = client.next_event(3)
        latency = time.monotonic() - sent
        assert message["type"] == "player.standing_changed" and message["player_id"] == "cy"
        assert (message["previous_rank"], message["rank"], message["score"]) == (3, 4, 30)
        assert message["events"] == ["passed", "friend_passed", "left_top"]
        assert [(p["player_id"], p["rank"], p["friend"]) for p in message["passed_by"]] == [
            ("dee", 2, True)
        ]
        assert latency < 1.0, f"told {latency:.2f} s after the write"
        # the server sees both players' messages: dee entered the top 3
        seen = {}
        while len(seen) < 2:
            event = server.next_event(3)
            seen[event["player_id"]] = event
        assert seen["dee"]["events"] == ["entered_top"]
        assert (seen["dee"]["previous_rank"], seen["dee"]["rank"]) == (4, 2)

        # an ended watch is told nothing more; dee passing cy again says nothing to cy
        status, _ = http("DELETE", "/boards/live_players/players/cy/watch", None, token["cy"])
        assert status == 204
        http("POST", "/boards/live_players/scores", {"player_id": "bob", "score": 10}, http.server)
        http("POST", "/boards/live_players/scores", {"score": 60}, token["cy"])  # cy passes ann
        http("POST", "/boards/live_players/scores", {"score": 70}, token["ann"])
        with pytest.raises(TimeoutError):
            client.next_event(1.5)


def test_writes_and_persistence_go_on_without_the_live_side(stack: LocalStack) -> None:
    http = Http(stack)
    status, board = http("PUT", "/boards/live_down", {}, http.admin)
    assert status == 201
    assert stack.events is not None
    stack.events.stop()  # the WebSocket server and the publish endpoint: both gone
    try:
        for i in range(40):
            status, _ = http(
                "POST", "/boards/live_down/scores", {"player_id": f"p{i}", "score": i}, http.server
            )
            assert status == 200
        database_url = stack.env["DATABASE_URL"]
        deadline = time.monotonic() + 30
        stored = 0
        while time.monotonic() < deadline:
            with psycopg.connect(database_url) as conn:
                stored = conn.execute(
                    "SELECT count(*) FROM score_events WHERE board_id = 'live_down'"
                ).fetchone()[0]
            if stored == 40:
                break
            time.sleep(0.5)
        assert stored == 40
        client = connect(stack.env["REDIS_URL"])
        assert assert_redis_equals_postgres(client, database_url, "live_down") >= 1
        client.close()
    finally:
        stack.events.start()
    # and the live side comes back by itself
    with _client(stack) as subscriber:
        subscriber.subscribe(board["live_channel"] + "/all-time")
        status, ack = http(
            "POST", "/boards/live_down/scores", {"player_id": "back", "score": 99}, http.server
        )
        message = subscriber.events_until(lambda m: m["version"] >= ack["version"], 5)[-1]
    assert message["top"][0]["player_id"] == "back"


class _Seen(Exception):
    """Raised from the example's print once it showed what the test waits for."""


def test_the_python_client_example_in_the_api_docs_works(stack: LocalStack) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "API.md").read_text()
    section = doc.split("### Client example: Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown: list[Any] = []

    def capture(*args: Any) -> None:
        shown.append(args)
        if args and isinstance(args[-1], list) and (1, "docs", 42) in args[-1]:
            raise _Seen

    namespace: dict[str, Any] = {"print": capture}
    exec(compile(code, "docs/API.md", "exec"), namespace)  # our own docs, run as written
    http = Http(stack)
    status, _ = http("PUT", "/boards/docs-example", {}, http.admin)
    assert status == 201
    live = stack.live_config()
    assert live is not None
    errors: list[BaseException] = []

    def follow() -> None:
        try:
            namespace["follow"](
                stack.url,
                live["realtime_url"],
                live["http_host"],
                live["api_key"],
                "docs-example",
            )
        except BaseException as exc:  # _Seen ends it; anything else fails the test
            errors.append(exc)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    time.sleep(1.0)  # connected and subscribed
    assert (
        http(
            "POST", "/boards/docs-example/scores", {"player_id": "docs", "score": 42}, http.server
        )[0]
        == 200
    )
    thread.join(5)
    assert not thread.is_alive(), f"the example showed nothing: {shown}"
    assert len(errors) == 1 and isinstance(errors[0], _Seen), errors
