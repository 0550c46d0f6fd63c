"""The player-centred routes through the template's routes and the real read handler (issue 13):
how `ids` arrives (comma lists, repeated parameters, duplicates), what `region` selects on
`standings`, and the empty first page of a history. The rules themselves are checked against
the reference model in tests/services/test_reference_model.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def board(api, admin_token, server_token, board_id) -> str:
    rules = {"regions": ["EU", "NA"], "periods": ["all-time", "weekly"], "ties": "shared"}
    assert api.call("PUT", f"/boards/{board_id}", rules, token=admin_token).status == 201
    for player, score, region in [
        ("ada", 50, "EU"),
        ("bob", 70, "NA"),
        ("cy", 50, None),
        ("dee", 90, "EU"),
        ("eve", 10, None),
    ]:
        body = {"player_id": player, "score": score} | ({"region": region} if region else {})
        assert (
            api.call("POST", f"/boards/{board_id}/scores", body, token=server_token).status == 200
        )
    return board_id


def test_ids_arrive_as_a_list_repeated_or_both_and_count_once(api, board):
    expected = {
        "board_id": board,
        "period": "all-time",
        "region": None,
        "total": 5,
        "entries": [  # board order; ranks on the whole board (ada and cy share 3rd)
            {"rank": 2, "player_id": "bob", "score": 70, "metadata": None},
            {"rank": 3, "player_id": "cy", "score": 50, "metadata": None},
            {"rank": 3, "player_id": "ada", "score": 50, "metadata": None},
        ],
        "missing": ["zed", "yan"],
    }
    for query in (
        "ids=ada,zed,bob,cy,yan",
        "ids=ada&ids=zed&ids=bob&ids=cy&ids=yan",
        "ids=ada,zed&ids=bob,cy,ada&ids=yan,zed",
    ):
        reply = api.call("GET", f"/boards/{board}/players?{query}")
        assert reply.status == 200, reply.body
        assert reply.json() == expected, query


def test_a_regional_many_players_read_ranks_on_the_regional_board(api, board):
    reply = api.call("GET", f"/boards/{board}/players?ids=ada,bob,dee&region=EU&period=weekly")
    body = reply.json()
    assert [(e["player_id"], e["rank"]) for e in body["entries"]] == [("dee", 1), ("ada", 2)]
    assert body["missing"] == ["bob"] and body["total"] == 2 and body["region"] == "EU"


def test_standings_region_selects_which_regional_boards_are_listed(api, board):
    def listed(query: str) -> list[tuple]:
        reply = api.call("GET", f"/boards/{board}/players/ada/standings{query}")
        assert reply.status == 200, reply.body
        return [(s["kind"], s["region"], s["rank"], s["total"]) for s in reply.json()["standings"]]

    everywhere = [
        ("all-time", None, 3, 5),
        ("weekly", None, 3, 5),
        ("all-time", "EU", 2, 2),
        ("weekly", "EU", 2, 2),
    ]
    assert listed("") == everywhere
    assert listed("?region=EU") == everywhere
    assert listed("?region=NA") == everywhere[:2]  # ada has no NA entry: global only
    assert api.call("GET", f"/boards/{board}/players/zed/standings").status == 404


def test_a_history_without_archived_periods_is_an_empty_first_page(api, board):
    reply = api.call("GET", f"/boards/{board}/players/ada/history?kind=daily&limit=5")
    assert reply.status == 200, reply.body
    assert reply.json() == {
        "board_id": board,
        "player_id": "ada",
        "kind": "daily",
        "region": None,
        "results": [],
        "next": None,
    }
