"""The HTTP contract through the template's routes and the real handlers."""

from __future__ import annotations


def test_board_lifecycle_and_reads(api, admin_token, server_token, board_id):
    created = api.call(
        "PUT", f"/boards/{board_id}", {"title": "Arena", "regions": ["EU"]}, token=admin_token
    )
    assert created.status == 201, created.body
    board = created.json()
    assert board["board_id"] == board_id and board["periods"] == ["all-time", "weekly"]
    assert (
        api.call("PUT", f"/boards/{board_id}", {"title": "Arena 2"}, token=admin_token).status
        == 200
    )

    r = api.call(
        "POST",
        f"/boards/{board_id}/scores",
        {"player_id": "p-1", "score": 120, "region": "EU", "metadata": {"name": "Ada"}},
        token=server_token,
    )
    assert r.status == 200, r.body
    body = r.json()
    assert body["applied"] is True
    first = body["standings"][0]
    assert (first["period"], first["region"], first["score"], first["rank"]) == (
        "all-time",
        None,
        120,
        1,
    )

    page = api.call("GET", f"/boards/{board_id}/entries?limit=5").json()
    assert page["total"] == 1
    assert page["entries"] == [
        {"rank": 1, "player_id": "p-1", "score": 120, "metadata": {"name": "Ada"}}
    ]
    me = api.call("GET", f"/boards/{board_id}/players/p-1?region=EU").json()
    assert me["rank"] == 1 and me["top_percent"] == 100.0 and me["region"] == "EU"
    around = api.call("GET", f"/boards/{board_id}/players/p-1/around?count=3").json()
    assert around["player"]["player_id"] == "p-1"
    assert api.call("GET", f"/boards/{board_id}").json()["title"] == "Arena 2"
    assert board_id in [b["board_id"] for b in api.call("GET", "/boards").json()["boards"]]

    assert api.call("DELETE", f"/boards/{board_id}/players/p-1", token=admin_token).status == 204
    assert api.call("GET", f"/boards/{board_id}/players/p-1").status == 404


def test_health_reports_every_store(api):
    r = api.call("GET", "/health")
    assert r.status == 200, r.body
    assert r.json()["status"] == "ok"
    assert set(r.json()["checks"]) == {"redis", "postgres", "queue"}


def test_a_score_for_a_board_that_never_existed_is_404_every_time(api, server_token, board_id):
    """The write function asks the record whether an unknown board was lost (503) or never
    existed (404); it connects to PostgreSQL for that on first need and keeps the connection."""
    for player in ("p-1", "p-2"):
        reply = api.call(
            "POST",
            f"/boards/{board_id}/scores",
            {"player_id": player, "score": 1},
            token=server_token,
        )
        assert reply.status == 404, reply.body
