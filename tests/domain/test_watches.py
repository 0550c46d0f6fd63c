"""What a watch request may hold (domain/watches.py): the defaults, and a 400 naming the field
for anything else, `null` included where the contract has no null."""

from __future__ import annotations

from typing import Any

import pytest

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.watches import WatchRequest, check_watchable, parse_watch


def test_an_empty_body_takes_every_default() -> None:
    assert (
        parse_watch({}, "ada")
        == parse_watch(None, "ada")
        == WatchRequest("all-time", None, 10, None, 3600)
    )


def test_every_field_as_given() -> None:
    body = {"period": "weekly", "region": "EU", "top_n": 3, "friends": ["bob"], "ttl_seconds": 60}
    assert parse_watch(body, "ada") == WatchRequest("weekly", "EU", 3, ("bob",), 60)
    assert parse_watch({"region": None, "friends": []}, "ada").friends == ()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"period": None}, "period"),
        ({"period": "hourly"}, "period"),
        ({"friends": None}, "friends"),
        ({"friends": "bob"}, "friends"),
        ({"friends": ["bob", "bob"]}, "friends"),
        ({"friends": [f"p{i}" for i in range(101)]}, "friends"),
        ({"friends": ["no spaces"]}, "friends"),  # issue 36, 6: the field sent, not player_id
        ({"top_n": 0}, "top_n"),
        ({"top_n": 1001}, "top_n"),
        ({"top_n": None}, "top_n"),
        ({"top_n": True}, "top_n"),
        ({"ttl_seconds": 59}, "ttl_seconds"),
        ({"ttl_seconds": 86_401}, "ttl_seconds"),
        ({"region": "eu"}, "region"),
        ({"region": ""}, "region"),  # in a body the global board is null
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_field_is_400_naming_it(body: dict[str, Any], field: str) -> None:
    with pytest.raises(BadRequest) as error:
        parse_watch(body, "ada")
    assert error.value.details.get("field") == field, error.value.body()


def test_friends_listing_the_player_itself_is_422_once_the_body_is_well_formed() -> None:
    """The path's player in the body's friends: no schema keyword says it (docs/API.md,
    "Errors"); a malformed field beside it is still the 400."""
    with pytest.raises(Unprocessable) as error:
        parse_watch({"friends": ["bob", "ada"]}, "ada")
    assert error.value.details.get("field") == "friends"
    with pytest.raises(BadRequest):
        parse_watch({"friends": ["ada"], "top_n": 0}, "ada")


def test_a_channel_the_board_lacks_is_422() -> None:
    board = BoardConfig(board_id="arena", periods=("all-time", "weekly"), regions=("EU",))
    check_watchable(board, "weekly", "EU")
    for kind, region in (("daily", None), ("all-time", "NA")):
        with pytest.raises(Unprocessable):
            check_watchable(board, kind, region)
    with pytest.raises(Unprocessable):
        check_watchable(BoardConfig(board_id="big", shards=4), "all-time", None)
