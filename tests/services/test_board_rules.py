"""Board rules a user relies on: rate limits, trimming, bounds, updates, admin delete."""

from __future__ import annotations

import uuid

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import RateLimited, Unprocessable
from leaderboard.services.reads import ReadService
from leaderboard.services.scores import ScoreService
from tests.support.boards import ListSink, publish

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


def test_rate_limit_per_player_refills_over_the_minute(index, board_id, clock):
    publish(index, board_id, rate_limit_per_minute=3)
    service = ScoreService(index, ListSink(), clock)
    for _ in range(3):
        service.submit(board_id, {"player_id": "p", "score": 1}, SERVER, None)
    with pytest.raises(RateLimited) as refused:
        service.submit(board_id, {"player_id": "p", "score": 1}, SERVER, None)
    assert refused.value.retry_after == 20  # one token every 20 s at 3/min
    service.submit(board_id, {"player_id": "other", "score": 1}, SERVER, None)  # per player
    clock.advance(seconds=20)
    service.submit(board_id, {"player_id": "p", "score": 1}, SERVER, None)
    with pytest.raises(RateLimited):
        service.submit(board_id, {"player_id": "p", "score": 1}, SERVER, None)
    assert index.client.zscore(f"lb:{{{board_id}}}:z:all-time", "p") == 4  # refused: no effect


def test_rate_limited_over_http_has_retry_after(api, admin_token, server_token, board_id):
    api.call("PUT", f"/boards/{board_id}", {"rate_limit_per_minute": 1}, token=admin_token)
    body = {"player_id": "p", "score": 1}
    assert api.call("POST", f"/boards/{board_id}/scores", body, token=server_token).status == 200
    refused = api.call("POST", f"/boards/{board_id}/scores", body, token=server_token)
    assert refused.status == 429 and refused.json()["message"]
    assert 1 <= int(refused.headers["retry-after"]) <= 60


def test_trimmed_submission_reports_no_rank(index, board_id, clock):
    publish(index, board_id, mode="best", max_entries=2)
    service = ScoreService(index, ListSink(), clock)
    for player, score in (("a", 30), ("b", 20)):
        service.submit(board_id, {"player_id": player, "score": score}, SERVER, None)
    low = service.submit(
        board_id, {"player_id": "c", "score": 10, "metadata": {"x": 1}}, SERVER, None
    ).body
    assert [s["rank"] for s in low["standings"]] == [None, None]
    assert index.client.hget(f"lb:{{{board_id}}}:meta", "c") is None
    high = service.submit(board_id, {"player_id": "c", "score": 25}, SERVER, None).body
    assert [s["rank"] for s in high["standings"]] == [2, 2]
    assert ReadService(index, clock).entries(board_id, {})["total"] == 2


def test_increment_bounds_apply_to_the_stored_score(index, board_id, clock):
    publish(index, board_id, max_score=100, min_score=0, max_increment=60)
    service = ScoreService(index, ListSink(), clock)
    service.submit(board_id, {"player_id": "p", "score": 60}, SERVER, None)
    with pytest.raises(Unprocessable):
        service.submit(board_id, {"player_id": "p", "score": 41}, SERVER, None)  # 101 > max
    with pytest.raises(Unprocessable):
        service.submit(board_id, {"player_id": "p", "score": 61}, SERVER, None)  # > increment
    with pytest.raises(Unprocessable):
        service.submit(board_id, {"player_id": "q", "score": -1}, SERVER, None)  # < min
    assert (
        service.submit(board_id, {"player_id": "p", "score": 40}, SERVER, None).body["standings"][
            0
        ]["score"]
        == 100
    )


def test_put_board_merges_and_protects_rules_once_there_are_entries(
    api, admin_token, server_token, board_id
):
    path = f"/boards/{board_id}"
    created = api.call(
        "PUT", path, {"title": "One", "sort": "asc", "max_entries": 5}, token=admin_token
    ).json()
    assert created["sort"] == "asc" and created["created_at"]
    updated = api.call("PUT", path, {"title": "Two"}, token=admin_token).json()
    assert (updated["sort"], updated["max_entries"], updated["title"]) == ("asc", 5, "Two")
    assert updated["created_at"] == created["created_at"]
    cleared = api.call("PUT", path, {"max_entries": None}, token=admin_token).json()
    assert cleared["max_entries"] is None
    assert api.call("PUT", path, {"mode": "best"}, token=admin_token).status == 200  # no entries
    api.call("POST", f"{path}/scores", {"player_id": "p", "score": 1}, token=server_token)
    for change in ({"mode": "set"}, {"sort": "desc"}, {"ties": "first"}, {"periods": ["all-time"]}):
        refused = api.call("PUT", path, change, token=admin_token)
        assert refused.status == 409 and refused.json()["message"], change
    assert (
        api.call("PUT", path, {"title": "Three", "max_entries": 100}, token=admin_token).status
        == 200
    )
    assert api.call("GET", path).json()["mode"] == "best"


def test_live_top_defaults_to_ten_changes_freely_and_the_board_names_its_channel(
    api, admin_token, server_token
):
    board_id = f"live_{uuid.uuid4().hex[:8]}"
    path = f"/boards/{board_id}"
    created = api.call("PUT", path, {}, token=admin_token).json()
    assert created["live_top"] == 10
    assert created["live_channel"] == f"/leaderboards/{board_id.replace('_', 'U')}"
    api.call("POST", f"{path}/scores", {"player_id": "p", "score": 1}, token=server_token)
    changed = api.call("PUT", path, {"live_top": 100}, token=admin_token)  # not a ranking rule
    assert changed.status == 200 and changed.json()["live_top"] == 100
    listed = [b for b in api.call("GET", "/boards").json()["boards"] if b["board_id"] == board_id]
    assert listed[0]["live_top"] == 100 and listed[0]["live_channel"] == created["live_channel"]


def test_admin_delete_removes_the_player_everywhere(
    api, admin_token, server_token, board_id, redis_client
):
    api.call(
        "PUT",
        f"/boards/{board_id}",
        {"regions": ["EU"], "ties": "first", "periods": ["all-time", "daily", "monthly"]},
        token=admin_token,
    )
    for player in ("p", "q"):
        api.call(
            "POST",
            f"/boards/{board_id}/scores",
            {"player_id": player, "score": 5, "region": "EU", "metadata": {"n": 1}},
            token=server_token,
        )
    assert api.call("DELETE", f"/boards/{board_id}/players/p", token=admin_token).status == 204
    prefix = f"lb:{{{board_id}}}:"
    for suffix in redis_client.smembers(prefix + "keys"):
        assert redis_client.hget(prefix + "m:" + suffix, "p") is None
        assert [m.split("|")[1] for m in redis_client.zrange(prefix + "z:" + suffix, 0, -1)] == [
            "q"
        ]
    assert redis_client.hget(prefix + "meta", "p") is None
    assert redis_client.hget(prefix + "refs", "p") is None
    assert api.call("DELETE", f"/boards/{board_id}/players/p", token=admin_token).status == 204
    assert api.call("DELETE", "/boards/no-such-board/players/p", token=admin_token).status == 404
