"""Issue 22: `POST /boards/{id}/scores/batch`. Up to 500 submissions in one request, one result
per item in order (the single route's result or its error), a bad item failing alone; one Redis
round trip and batched queue sends."""

from __future__ import annotations

import json

import pytest
import redis

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import BadRequest, Forbidden, NotFound
from leaderboard.services.scores import ScoreService
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish
from tests.support.round_trips import CountingConnection, counted

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
PLAYER = Caller("ada", frozenset())


def _items() -> list[dict]:
    """A batch with every kind of item: applied, a player twice, a replay and a conflict of one
    key inside the batch, a bad field, an unknown region, a score out of bounds."""
    return [
        {"player_id": "ada", "score": 10, "region": "EU", "idempotency_key": "k-1"},
        {"player_id": "bob", "score": 30, "metadata": {"name": "Bob"}},
        {"player_id": "ada", "score": 5},
        {"player_id": "ada", "score": 10, "region": "EU", "idempotency_key": "k-1"},  # replay
        {"player_id": "ada", "score": 11, "region": "EU", "idempotency_key": "k-1"},  # 409
        {"player_id": "cy", "score": 1, "colour": "red"},  # unknown field: 400
        {"player_id": "cy", "score": 2, "region": "XX"},  # not one of the board's regions
        {"player_id": "cy", "score": 5000},  # beyond max_score
        {"player_id": "dee", "score": 7, "idempotency_key": "has space"},  # bad key: 400
        "not an object",
        {"player_id": "cy", "score": 3, "region": "EU"},
    ]


def _strip(body: dict) -> dict:
    """A result without what differs between two boards fed the same submissions."""
    return {k: v for k, v in body.items() if k not in ("event_id", "board_id")}


def test_a_batch_answers_what_the_same_submissions_sent_one_by_one_answer(
    api, admin_token, server_token, board_id
):
    singles = f"{board_id}-one"
    for board in (board_id, singles):
        body = {"regions": ["EU"], "mode": "increment", "max_score": 1000}
        assert api.call("PUT", f"/boards/{board}", body, token=admin_token).status == 201
    batch = api.call(
        "POST", f"/boards/{board_id}/scores/batch", {"submissions": _items()}, token=server_token
    )
    assert batch.status == 200, batch.body
    results = batch.json()["results"]
    assert batch.json()["board_id"] == board_id and len(results) == len(_items())

    for item, got in zip(_items(), results, strict=True):
        if not isinstance(item, dict):
            assert got["status"] == 400 and got["error"]["code"] == "bad_request"
            continue
        fields = {k: v for k, v in item.items() if k != "idempotency_key"}
        headers = {"Idempotency-Key": item["idempotency_key"]} if "idempotency_key" in item else {}
        one = api.call(
            "POST", f"/boards/{singles}/scores", fields, token=server_token, headers=headers
        )
        assert got["status"] == one.status, (item, got, one.body)
        if one.status == 200:
            assert _strip(got["result"]) == _strip(one.json()), item
            assert got["replayed"] == ("idempotent-replayed" in one.headers), item
        elif "Idempotency-Key" in headers and " " in headers["Idempotency-Key"]:
            assert got["error"]["field"] == "idempotency_key"
        else:
            assert got["error"]["code"] == one.json()["code"], item

    statuses = [r["status"] for r in results]
    assert statuses == [200, 200, 200, 200, 409, 400, 422, 422, 400, 400, 200]
    assert results[3]["replayed"] and results[3]["result"] == results[0]["result"]
    assert results[2]["result"]["standings"][0]["score"] == 15  # ada twice, in order
    for board in (board_id, singles):
        page = api.call("GET", f"/boards/{board}/entries?limit=10").json()
        assert [(e["player_id"], e["score"]) for e in page["entries"]] == [
            ("bob", 30),
            ("ada", 15),
            ("cy", 3),
        ]


def test_who_may_send_a_batch_and_what_the_whole_request_refuses(
    api, admin_token, server_token, board_id
):
    assert api.call("PUT", f"/boards/{board_id}", {}, token=admin_token).status == 201
    route = f"/boards/{board_id}/scores/batch"
    one = {"submissions": [{"player_id": "ada", "score": 1}]}
    player = api.token("ada")
    assert api.call("POST", route, one, token=player).status == 403
    assert api.call("POST", route, one).status == 401
    assert api.call("POST", route, one, token=admin_token).status == 200
    for body in (
        {},
        {"submissions": []},
        {"submissions": {"player_id": "ada", "score": 1}},
        {"submissions": [{"player_id": "ada", "score": 1}] * 501},
        {"submissions": [{"player_id": "ada", "score": 1}], "extra": 1},
    ):
        r = api.call("POST", route, body, token=server_token)
        assert r.status == 400 and r.json()["code"] == "bad_request", (body, r.body)
    missing = api.call("POST", "/boards/never-made/scores/batch", one, token=server_token)
    assert missing.status == 404

    # 500 items with metadata are far over the single route's 16 KiB and within 1 MiB.
    big = {
        "submissions": [
            {"player_id": f"p{i}", "score": i, "metadata": {"name": "x" * 200}} for i in range(500)
        ]
    }
    assert 16 * 1024 < len(json.dumps(big)) < 1024 * 1024
    r = api.call("POST", route, big, token=server_token)
    assert r.status == 200 and {x["status"] for x in r.json()["results"]} == {200}
    assert api.call("GET", f"/boards/{board_id}").status == 200
    assert api.call("GET", f"/boards/{board_id}/entries?limit=1").json()["total"] == 501  # + ada
    huge = {"submissions": [{"player_id": "p", "score": 1, "metadata": {"n": "x" * 250}}] * 5000}
    assert api.call("POST", route, huge, token=server_token).status == 413


def test_service_refuses_a_player_token_and_an_unknown_board(index, board_id, clock):
    service = ScoreService(index, ListSink(), clock)
    with pytest.raises(Forbidden):
        service.submit_batch(board_id, {"submissions": [{"score": 1}]}, PLAYER)
    with pytest.raises(NotFound):
        service.submit_batch(board_id, {"submissions": [{"player_id": "a", "score": 1}]}, SERVER)
    with pytest.raises(BadRequest):
        service.submit_batch(board_id, {"submissions": None}, SERVER)


def test_an_item_whose_queue_send_failed_says_so_and_its_event_waits_in_the_outbox(
    index, board_id, clock
):
    publish(index, board_id)
    sink = ListSink(refuse={"bob"})
    service = ScoreService(index, sink, clock)
    items = [{"player_id": p, "score": 1, "idempotency_key": f"k-{p}"} for p in ("ada", "bob")]
    results = service.submit_batch(board_id, {"submissions": items}, SERVER).body["results"]
    assert [r["status"] for r in results] == [200, 503]
    assert "was applied" in results[1]["error"]["message"] and results[1]["error"]["retry_after"]
    assert [e.player_id for e in sink.events] == ["ada"]
    outbox = index.client.xrange(f"lb:{{{board_id}}}:outbox")
    assert [fields["p"] for _, fields in outbox] == ["ada", "bob"]
    # The retry with the same key replays bob's result and sends his event.
    sink.refuse.clear()
    again = service.submit_batch(board_id, {"submissions": items[1:]}, SERVER).body["results"]
    assert again[0]["status"] == 200 and again[0]["replayed"] is True
    assert [e.player_id for e in sink.events] == ["ada", "bob"]


def test_rate_limited_items_fail_alone_with_retry_after(index, board_id, clock):
    publish(index, board_id, rate_limit_per_minute=2)
    service = ScoreService(index, ListSink(), clock)
    items = [{"player_id": "ada", "score": 1}] * 3 + [{"player_id": "bob", "score": 1}]
    results = service.submit_batch(board_id, {"submissions": items}, SERVER).body["results"]
    assert [r["status"] for r in results] == [200, 200, 429, 200]
    assert results[2]["error"]["code"] == "rate_limited" and results[2]["error"]["retry_after"] >= 1


def test_a_batch_is_one_round_trip_once_the_board_rules_are_known(redis_url, board_id, clock):
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    publish(index, board_id, regions=["EU"], periods=["all-time", "daily", "weekly"])
    sink = ListSink()
    service = ScoreService(index, sink, clock)
    body = {
        "submissions": [
            {"player_id": f"p{i}", "score": i, "region": "EU" if i % 2 else None}
            for i in range(500)
        ]
    }
    cold, _ = counted(lambda: service.submit_batch(board_id, body, SERVER))
    assert cold == 2  # the first batch learns the board's rules (STALE), then applies
    trips, batch = counted(lambda: service.submit_batch(board_id, body, SERVER))
    assert trips == 1
    assert {r["status"] for r in batch.body["results"]} == {200}
    assert sink.batches == [500, 500]  # each batch's events handed to the queue at once
    # After a Redis restart empties the script cache, the batch loads it and goes on.
    client.script_flush()
    trips, batch = counted(lambda: service.submit_batch(board_id, body, SERVER))
    assert {r["status"] for r in batch.body["results"]} == {200} and trips == 3
    client.close()
