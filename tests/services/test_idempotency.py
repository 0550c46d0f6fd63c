"""Acceptance 4: a retry with the same Idempotency-Key and body returns the first response
with `Idempotent-Replayed: true` and counts once; the same key with another body is 409."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import Conflict
from leaderboard.services.scores import ScoreService
from tests.support.boards import ListSink, publish

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


def test_replay_returns_the_first_response_and_counts_once(
    api, admin_token, server_token, board_id
):
    assert api.call("PUT", f"/boards/{board_id}", {}, token=admin_token).status == 201
    body = {"player_id": "p-1", "score": 7, "metadata": {"name": "Ada"}}
    headers = {"Idempotency-Key": "order-123"}
    first = api.call(
        "POST", f"/boards/{board_id}/scores", body, token=server_token, headers=headers
    )
    assert first.status == 200 and "idempotent-replayed" not in first.headers
    again = api.call(
        "POST", f"/boards/{board_id}/scores", body, token=server_token, headers=headers
    )
    assert again.status == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    player = api.call("GET", f"/boards/{board_id}/players/p-1").json()
    assert player["score"] == 7  # counted once

    other = api.call(
        "POST",
        f"/boards/{board_id}/scores",
        body | {"score": 8},
        token=server_token,
        headers=headers,
    )
    assert other.status == 409 and other.json()["message"]
    assert api.call("GET", f"/boards/{board_id}/players/p-1").json()["score"] == 7

    fresh = api.call(
        "POST",
        f"/boards/{board_id}/scores",
        body,
        token=server_token,
        headers={"Idempotency-Key": "order-124"},
    )
    assert fresh.status == 200 and fresh.json()["event_id"] != first.json()["event_id"]
    assert api.call("GET", f"/boards/{board_id}/players/p-1").json()["score"] == 14


def test_keys_are_scoped_to_the_caller(index, board_id, clock):
    publish(index, board_id)
    service = ScoreService(index, ListSink(), clock)
    one = Caller("server-a", frozenset({"leaderboard/server"}))
    two = Caller("server-b", frozenset({"leaderboard/server"}))
    a = service.submit(board_id, {"player_id": "p", "score": 1}, one, "same-key")
    b = service.submit(board_id, {"player_id": "p", "score": 1}, two, "same-key")
    assert not a.replayed and not b.replayed
    assert a.body["event_id"] != b.body["event_id"]
    assert b.body["standings"][0]["score"] == 2


def test_concurrent_retries_apply_once_and_resend_the_same_event(index, board_id, clock):
    publish(index, board_id)
    sink = ListSink()
    service = ScoreService(index, sink, clock)

    def job(_: int):
        return service.submit(board_id, {"player_id": "p", "score": 5}, SERVER, "retry-storm")

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(job, range(12)))
    assert sum(not r.replayed for r in results) == 1
    assert len({r.body["event_id"] for r in results}) == 1
    assert all(r.body == results[0].body for r in results)
    assert index.client.zscore(f"lb:{{{board_id}}}:z:all-time", "p") == 5
    # Every reply handed the event to the queue again; the persister dedupes by event id.
    assert len(sink.events) == 12 and len({e.event_id for e in sink.events}) == 1
    with pytest.raises(Conflict):
        service.submit(board_id, {"player_id": "p", "score": 6}, SERVER, "retry-storm")


def test_records_expire_after_the_configured_ttl(index, board_id, clock):
    publish(index, board_id)
    service = ScoreService(index, ListSink(), clock)
    service.submit(board_id, {"player_id": "p", "score": 1}, SERVER, "ttl-key")
    keys = list(index.client.scan_iter(match=f"lb:\\{{{board_id}\\}}:idem:*"))
    assert len(keys) == 1
    assert 24 * 3600 <= index.client.ttl(keys[0]) <= 25 * 3600
