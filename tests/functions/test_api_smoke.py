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


def test_a_sharded_board_through_the_api(api, admin_token, server_token, board_id):
    """Issue 22: `shards` is a rule of the board: validated, immutable once there are entries,
    refused with max_entries; reads rank across the shards, a submission answers no rank."""
    route = f"/boards/{board_id}"
    for bad in ({"shards": 0}, {"shards": 257}, {"shards": "4"}, {"shards": 2.5}):
        r = api.call("PUT", route, bad, token=admin_token)
        assert r.status == 400 and r.json()["field"] == "shards", (bad, r.body)
    r = api.call("PUT", route, {"shards": 4, "max_entries": 100}, token=admin_token)
    assert r.status == 422 and r.json()["field"] == "max_entries", r.body  # two fields' rule
    created = api.call("PUT", route, {"shards": 4, "regions": ["EU"]}, token=admin_token)
    assert created.status == 201 and created.json()["shards"] == 4
    assert api.call("GET", route).json()["shards"] == 4
    # still empty: the layout may change
    assert api.call("PUT", route, {"shards": 8}, token=admin_token).status == 200
    items = [{"player_id": f"p{n}", "score": n, "region": "EU"} for n in range(30)]
    batch = api.call(
        "POST", f"{route}/scores/batch", {"submissions": items}, token=server_token
    ).json()["results"]
    assert {r["status"] for r in batch} == {200}
    one = api.call("POST", f"{route}/scores", {"player_id": "p3", "score": 100}, token=server_token)
    assert one.status == 200 and {s["rank"] for s in one.json()["standings"]} == {None}
    top = api.call("GET", f"{route}/entries?limit=3").json()
    assert [(e["rank"], e["player_id"], e["score"]) for e in top["entries"]] == [
        (1, "p3", 103),
        (2, "p29", 29),
        (3, "p28", 28),
    ]
    me = api.call("GET", f"{route}/players/p10").json()
    assert (me["rank"], me["total"]) == (21, 30)  # p11..p29 and p3 (103) are better
    r = api.call("PUT", route, {"shards": 2}, token=admin_token)
    assert r.status == 409 and r.json()["fields"] == ["shards"]
    assert api.call("PUT", route, {"shards": 8, "title": "Big"}, token=admin_token).status == 200
