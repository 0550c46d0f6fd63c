"""Issue 23 through the template's routes and the real handlers: hiding players (the admin
routes, and who sees what with which token) and team boards (the board option, team_id on a
submission, the by=team and team=<id> reads), each answer as docs/API.md says."""

from __future__ import annotations

import uuid


def _board(api, admin_token, **rules) -> str:
    board_id = f"t-{uuid.uuid4().hex[:16]}"
    put = api.call("PUT", f"/boards/{board_id}", rules, token=admin_token)
    assert put.status == 201, put.body
    return board_id


def _submit(api, board_id, token, **body):
    r = api.call("POST", f"/boards/{board_id}/scores", body, token=token)
    assert r.status == 200, r.body
    return r.json()


def test_hiding_a_player_over_the_api(api, admin_token, server_token):
    board = _board(api, admin_token)
    for n, player in enumerate(["ann", "bob", "cheat"]):
        _submit(api, board, server_token, player_id=player, score=10 * (n + 1))
    cheat = api.token("cheat")

    path = f"/boards/{board}/hidden/cheat"
    assert api.call("PUT", path, token=server_token).status == 403
    assert api.call("PUT", path).status == 401
    hidden = api.call("PUT", path, {"reason": "aimbot"}, token=admin_token)
    assert hidden.status == 201, hidden.body
    assert hidden.json() | {"hidden_at": "t"} == {
        "board_id": board,
        "player_id": "cheat",
        "hidden": True,
        "hidden_at": "t",
        "reason": "aimbot",
    }
    assert api.call("PUT", path, token=admin_token).status == 200  # already hidden
    assert api.call("PUT", path, {"why": 1}, token=admin_token).status == 400
    listed = api.call("GET", f"/boards/{board}/hidden", token=admin_token).json()
    assert [p["player_id"] for p in listed["players"]] == ["cheat"] and listed["next"] is None

    # everyone else: left out, ranks closed up
    public = api.call("GET", f"/boards/{board}/entries").json()
    assert [(e["rank"], e["player_id"]) for e in public["entries"]] == [(1, "bob"), (2, "ann")]
    assert api.call("GET", f"/boards/{board}/players/cheat").status == 404
    assert api.call("GET", f"/boards/{board}/entries", token=api.token("ann")).json() == public
    # the hidden player, with their own token: unchanged, and not told
    own = api.call("GET", f"/boards/{board}/entries", token=cheat).json()
    assert [(e["rank"], e["player_id"]) for e in own["entries"]] == [
        (1, "cheat"),
        (2, "bob"),
        (3, "ann"),
    ]
    assert not any("hidden" in e for e in own["entries"]) and own["total"] == 3
    mine = api.call("GET", f"/boards/{board}/players/cheat", token=cheat).json()
    assert (mine["rank"], mine["total"], "hidden" in mine) == (1, 3, False)
    # they keep submitting; their response answers the rank they would hold
    answer = _submit(api, board, cheat, score=40)
    assert answer["standings"][0]["rank"] == 1
    # a server reading for them, or an admin: told
    seen = api.call("GET", f"/boards/{board}/players/cheat", token=server_token).json()
    assert seen["hidden"] is True and seen["rank"] == 1
    viewed = api.call("GET", f"/boards/{board}/entries?viewer=cheat", token=server_token).json()
    assert viewed["entries"][0] == {
        "rank": 1,
        "player_id": "cheat",
        "score": 70,
        "metadata": None,
        "hidden": True,
    }
    # who may name a viewer
    assert api.call("GET", f"/boards/{board}/entries?viewer=cheat").status == 401
    assert (
        api.call("GET", f"/boards/{board}/entries?viewer=cheat", token=api.token("ann")).status
        == 403
    )
    assert (
        api.call("GET", f"/boards/{board}/entries?viewer=a%20b", token=server_token).status == 400
    )

    assert api.call("DELETE", path, token=admin_token).status == 204
    assert api.call("DELETE", path, token=admin_token).status == 404
    back = api.call("GET", f"/boards/{board}/entries").json()
    assert [e["player_id"] for e in back["entries"]] == ["cheat", "bob", "ann"]


def test_a_team_board_over_the_api(api, admin_token, server_token):
    plain = _board(api, admin_token)
    refused = api.call(
        "POST",
        f"/boards/{plain}/scores",
        {"player_id": "a", "score": 1, "team_id": "red"},
        token=server_token,
    )
    assert refused.status == 422 and refused.json()["field"] == "team_id"
    assert api.call("GET", f"/boards/{plain}/entries?by=team").status == 404

    board = _board(api, admin_token, teams="sum", mode="best")
    assert api.call("GET", f"/boards/{board}").json()["teams"] == "sum"
    _submit(api, board, server_token, player_id="ann", score=50, team_id="red")
    _submit(api, board, server_token, player_id="bob", score=30, team_id="red")
    _submit(api, board, server_token, player_id="cy", score=60, team_id="blue")
    _submit(api, board, server_token, player_id="ann", score=70, team_id="red")  # +20 for red
    _submit(api, board, server_token, player_id="bob", score=10, team_id="red")  # not better

    teams = api.call("GET", f"/boards/{board}/entries?by=team").json()
    assert teams["by"] == "team" and teams["total"] == 2
    assert teams["entries"] == [
        {"rank": 1, "team_id": "red", "score": 100},
        {"rank": 2, "team_id": "blue", "score": 60},
    ]
    one = api.call("GET", f"/boards/{board}/players/blue?by=team").json()
    assert (one["team_id"], one["rank"], one["total"], one["top_percent"]) == ("blue", 2, 2, 100.0)
    around = api.call("GET", f"/boards/{board}/players/red/around?by=team&count=1").json()
    assert around["team"]["team_id"] == "red"
    members = api.call("GET", f"/boards/{board}/entries?team=red").json()
    assert members["team_id"] == "red"
    assert [(e["player_id"], e["score"]) for e in members["entries"]] == [("ann", 70), ("bob", 30)]
    me = api.call("GET", f"/boards/{board}/players/bob?team=red").json()
    assert (me["rank"], me["total"]) == (2, 2)
    chosen = api.call("GET", f"/boards/{board}/players?ids=blue,green&by=team").json()
    assert [e["team_id"] for e in chosen["entries"]] == ["blue"] and chosen["missing"] == ["green"]
    assert api.call("GET", f"/boards/{board}/entries?by=team&team=red").status == 422
    assert api.call("GET", f"/boards/{board}/entries?team=a%20b").status == 400
    # the players' own board is as before
    players = api.call("GET", f"/boards/{board}/entries").json()
    assert [e["player_id"] for e in players["entries"]] == ["ann", "cy", "bob"]
    changed = api.call("PUT", f"/boards/{board}", {"teams": "best"}, token=admin_token)
    assert changed.status == 409
