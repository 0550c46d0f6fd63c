"""Leagues on the player channels (issue 40: "Player channels report ranks within the player's
group"): a watching player told of a change on a league board's season channel is told their
rank in their group, its players, their zone and the lines, besides their rank on the board."""

from __future__ import annotations

from leaderboard.domain.auth import Caller
from leaderboard.domain.live import Channel, player_channel
from leaderboard.services.live import LivePublisher, LiveReport
from leaderboard.services.scores import ScoreService
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish
from tests.support.live import NOW, OnlyBoards
from tests.support.live import RecordedMessages as Recorded

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
SEASON = "2026-11-23T000000Z"  # NOW is inside it: seasons start on Mondays 00:00 UTC


def test_a_player_message_on_a_season_channel_names_the_group_rank(
    index: RedisIndex, board_id: str
) -> None:
    publish(
        index,
        board_id,
        periods=["all-time", "custom"],
        schedule={"cron": "0 0 * * MON", "timezone": "UTC"},
        league={"tiers": ["bronze", "silver"], "group_size": 3, "promote": 1, "relegate": 1},
    )
    scores = ScoreService(index, ListSink(), lambda: NOW)
    for player, score in (("a", 30), ("b", 20), ("c", 10), ("d", 50)):  # d: bronze-2
        scores.submit(board_id, {"player_id": player, "score": score}, SERVER, None)
    season = Channel("custom", SEASON, None)
    for channel in (season, Channel("all-time", "all-time", None)):
        index.watch(board_id, "c", channel, until_ms=2**52, top_n=3, friends=(), keep_seconds=60)
    sent = Recorded()
    live = LivePublisher(
        OnlyBoards(index.client, board_id), sent, rate=4, namespace="lb", clock=lambda: NOW
    )
    live.tick(LiveReport())
    sent.messages.clear()
    scores.submit(board_id, {"player_id": "c", "score": 25}, SERVER, None)  # passes a and b
    report = LiveReport()
    live.tick(report)
    assert report.failed == 0 and report.board_errors == 0, report.errors
    told = {m["period_kind"]: m for m in sent.on(player_channel("c"))}
    # on the board c is second (d leads with 50); in group bronze-1 c leads
    assert (told["custom"]["rank"], told["custom"]["previous_rank"]) == (2, 4)
    assert told["custom"]["league"] == {
        "tier": "bronze",
        "group_id": "bronze-1",
        "rank": 1,
        "players": 3,
        "zone": "promotion",
        "promotion_line": 1,
        "relegation_line": None,
    }
    assert "league" not in told["all-time"]  # only the season channel ranks groups
