"""Score tiers on the live channels (docs/API.md, "Score tiers", "Messages", "Messages on a
player channel"): the live publisher reads real Valkey and every top and changed entry of a
board channel's message names its tier among the channel's total (hidden players left out), as
does a player channel's message for the player and each player who passed them; a sharded
board's messages too; and a board without tiers sends its messages as before, with no `tier`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from leaderboard.domain.events import new_event_id
from leaderboard.domain.live import Channel, channel_name, player_channel
from leaderboard.domain.periods import current_period
from leaderboard.services.live import LivePublisher, LiveReport
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import publish
from tests.support.live import NOW, OnlyBoards, submit
from tests.support.live import RecordedMessages as Recorded
from tests.support.reference_model import ModelBoard

# 11 entries: top20 ends at ceil(2.2) = rank 3, top50 at ceil(5.5) = rank 6;
# 10 (one hidden): at ranks 2 and 5
PERCENT = {
    "by": "percentile",
    "tiers": [
        {"name": "top20", "top_percent": 20},
        {"name": "top50", "top_percent": 50},
        {"name": "rest"},
    ],
}
MEDALS = {"by": "score", "tiers": [{"name": "gold", "score": 90}, {"name": "silver", "score": 50}]}
ALL_TIME = Channel("all-time", current_period("all-time", NOW).id, None)


def _publisher(index: RedisIndex, board_id: str) -> tuple[LivePublisher, Recorded]:
    sent = Recorded()
    live = LivePublisher(
        OnlyBoards(index.client, board_id),
        sent,
        rate=4,
        namespace="leaderboards",
        clock=lambda: NOW,
    )
    return live, sent


def _tick(live: LivePublisher) -> None:
    report = LiveReport()
    live.tick(report)
    assert report.failed == 0 and report.board_errors == 0, report.errors


def test_board_and_player_channel_messages_name_each_standings_tier(
    index: RedisIndex, board_id: str
) -> None:
    model = ModelBoard(
        publish(index, board_id, periods=["all-time"], mode="best", live_top=5, score_tiers=PERCENT)
    )
    for n in range(11):  # p0 110, p1 100, ... p10 10
        submit(index, model, board_id, f"p{n}", 110 - 10 * n)
    index.watch(board_id, "p4", ALL_TIME, until_ms=2**52, top_n=3, friends=(), keep_seconds=3600)
    live, sent = _publisher(index, board_id)
    _tick(live)
    (first,) = sent.on(channel_name(board_id, "all-time", None))
    assert first["total"] == 11
    assert [(e["player_id"], e["rank"], e["tier"]) for e in first["top"]] == [
        ("p0", 1, "top20"),
        ("p1", 2, "top20"),
        ("p2", 3, "top20"),
        ("p3", 4, "top50"),
        ("p4", 5, "top50"),
    ]
    assert {e["player_id"]: e["tier"] for e in first["changed"]}["p10"] == "rest"

    # p9 jumps to second place (105, after the leader's 110): p1..p8 move one down, so p4
    # (watching) is passed
    sent.messages.clear()
    submit(index, model, board_id, "p9", 105)
    _tick(live)
    (board,) = sent.on(channel_name(board_id, "all-time", None))
    assert [(e["player_id"], e["tier"]) for e in board["top"]] == [
        ("p0", "top20"),
        ("p9", "top20"),
        ("p1", "top20"),
        ("p2", "top50"),
        ("p3", "top50"),
    ]
    assert [(e["player_id"], e["rank"], e["tier"]) for e in board["changed"]] == [
        ("p9", 2, "top20")
    ]
    (told,) = sent.on(player_channel("p4"))
    assert (told["rank"], told["previous_rank"], told["tier"]) == (6, 5, "top50")
    assert [(p["player_id"], p["rank"], p["tier"]) for p in told["passed_by"]] == [
        ("p9", 2, "top20")
    ]

    # hidden: left out of the total the tiers count (10 now: top20 ends at rank 2)
    sent.messages.clear()
    ms = int(NOW.timestamp() * 1000)
    index.set_hidden(board_id, "p0", True, event_id=new_event_id(ms), now_ms=ms)
    submit(index, model, board_id, "p10", 11)
    _tick(live)
    (board,) = sent.on(channel_name(board_id, "all-time", None))
    assert board["total"] == 10
    assert [(e["player_id"], e["rank"], e["tier"]) for e in board["top"]] == [
        ("p9", 1, "top20"),
        ("p1", 2, "top20"),
        ("p2", 3, "top50"),
        ("p3", 4, "top50"),
        ("p4", 5, "top50"),
    ]


@pytest.mark.parametrize("shards", [1, 3])
def test_score_tiers_and_their_changes_reach_the_messages(
    index: RedisIndex, board_id: str, shards: int
) -> None:
    """By score, on one shard or three; a change of the tiers (a PUT) applies from the next
    message on, and a board without tiers sends no `tier` at all."""
    board = publish(
        index, board_id, periods=["all-time"], mode="best", shards=shards, score_tiers=MEDALS
    )
    model = ModelBoard(board)
    for player, score in [("a", 95), ("b", 90), ("c", 60), ("d", 20)]:
        submit(index, model, board_id, player, score)
    live, sent = _publisher(index, board_id)
    _tick(live)
    (message,) = sent.on(channel_name(board_id, "all-time", None))
    assert [(e["player_id"], e["tier"]) for e in message["top"]] == [
        ("a", "gold"),
        ("b", "gold"),
        ("c", "silver"),
        ("d", None),  # below every tier: null
    ]
    sent.messages.clear()
    index.publish_board(replace(board, score_tiers=None, version=board.version + 1))
    submit(index, model, board_id, "d", 30)
    _tick(live)  # (a tick reads the catalog, where the board's tiers are gone)
    (message,) = sent.on(channel_name(board_id, "all-time", None))
    assert all("tier" not in e for e in message["top"] + message["changed"])
    assert message["top"][0] == {"rank": 1, "player_id": "a", "score": 95, "metadata": None}
