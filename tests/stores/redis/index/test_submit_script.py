"""The slimmer submit script (issue 22): rules cached by the caller and proven current by the
script, increments written blind only when the board's score range proves them in bounds, and
records of the previous script still understood."""

from __future__ import annotations

from dataclasses import replace

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import Unprocessable
from leaderboard.services.scores import ScoreService
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.records import parse_record as _parse_record
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
PERIODS = ["all-time", "daily", "weekly", "monthly"]


def _scores(index: RedisIndex, board_id: str) -> dict[str, dict[str, float]]:
    """Every sorted set of the board: suffix -> {member: score}."""
    keys = BoardKeys(board_id)
    out = {}
    for suffix in sorted(index.client.smembers(keys.registry)):
        out[suffix] = dict(index.client.zrange(f"{keys.prefix}z:{suffix}", 0, -1, withscores=True))
    return out


def test_a_rules_change_made_elsewhere_applies_to_the_very_next_submission(
    redis_client, board_id, clock
):
    """Two processes: one caches the board's rules, the other changes them; the first must
    not apply its stale copy (the script proves the rules current on every call)."""
    writer = RedisIndex(redis_client)
    admin = RedisIndex(redis_client)
    board = publish(admin, board_id, regions=["EU"], max_increment=100)
    scores = ScoreService(writer, ListSink(), clock)
    scores.submit(board_id, {"player_id": "ada", "score": 100, "region": "EU"}, SERVER, None)

    admin.publish_board(replace(board, max_increment=10, version=board.version + 1))
    with pytest.raises(Unprocessable, match="max_increment"):
        scores.submit(board_id, {"player_id": "ada", "score": 50}, SERVER, None)

    admin.publish_board(replace(board, regions=None, max_increment=None, version=board.version + 2))
    with pytest.raises(Unprocessable, match="region"):
        scores.submit(board_id, {"player_id": "ada", "score": 1, "region": "EU"}, SERVER, None)
    done = scores.submit(board_id, {"player_id": "ada", "score": 5000}, SERVER, None)
    assert [s["score"] for s in done.body["standings"]] == [5100, 5100]


@pytest.mark.parametrize("sort", ["desc", "asc"])
def test_an_increment_near_the_bounds_is_refused_whole_and_writes_nothing(
    redis_client, board_id, clock, sort
):
    index = RedisIndex(redis_client)
    publish(
        index,
        board_id,
        sort=sort,
        periods=PERIODS,
        regions=["EU"],
        min_score=-1000,
        max_score=1000,
    )
    scores = ScoreService(index, ListSink(), clock)
    for player, score in (("ada", 990), ("bob", -990), ("cy", 10)):
        scores.submit(board_id, {"player_id": player, "score": score, "region": "EU"}, SERVER, None)
    before = _scores(index, board_id)
    version = int(redis_client.get(BoardKeys(board_id).seq))

    for player, delta in (("ada", 11), ("bob", -11), ("cy", 991), ("new", 1001)):
        with pytest.raises(Unprocessable, match="bounds"):
            scores.submit(
                board_id, {"player_id": player, "score": delta, "region": "EU"}, SERVER, None
            )
    assert _scores(index, board_id) == before
    assert int(redis_client.get(BoardKeys(board_id).seq)) == version

    # Inside the bounds, right up to them: applied on every set.
    done = scores.submit(board_id, {"player_id": "ada", "score": 10, "region": "EU"}, SERVER, None)
    assert {s["score"] for s in done.body["standings"]} == {1000}
    done = scores.submit(board_id, {"player_id": "bob", "score": -10}, SERVER, None)
    assert {s["score"] for s in done.body["standings"]} == {-1000}


def test_increments_stay_exact_at_two_to_the_53(redis_client, board_id, clock):
    index = RedisIndex(redis_client)
    publish(index, board_id, periods=["all-time", "weekly"])
    scores = ScoreService(index, ListSink(), clock)
    safe = 2**53 - 1
    scores.submit(board_id, {"player_id": "ada", "score": safe - 1}, SERVER, None)
    before = _scores(index, board_id)
    with pytest.raises(Unprocessable, match="bounds"):
        scores.submit(board_id, {"player_id": "ada", "score": 2}, SERVER, None)
    assert _scores(index, board_id) == before
    done = scores.submit(board_id, {"player_id": "ada", "score": 1}, SERVER, None)
    assert {s["score"] for s in done.body["standings"]} == {safe}


def test_entries_loaded_by_a_rebuild_widen_the_range_the_script_trusts(
    redis_client, board_id, clock
):
    """A rebuild writes scores the script never saw: the range must not let a blind
    increment past the bounds afterwards."""
    index = RedisIndex(redis_client)
    board = publish(index, board_id, periods=["all-time"], max_score=1000)
    scores = ScoreService(index, ListSink(), clock)
    scores.submit(board_id, {"player_id": "ada", "score": 5}, SERVER, None)  # range: 0..5
    index.load_entries(board, "all-time", None, [("bob", 995.0, 7, None)])
    with pytest.raises(Unprocessable, match="bounds"):
        scores.submit(board_id, {"player_id": "bob", "score": 10}, SERVER, None)
    assert redis_client.zscore(BoardKeys(board_id).zset("all-time"), "bob") == 995
    done = scores.submit(board_id, {"player_id": "bob", "score": 5}, SERVER, None)
    standing = done.body["standings"][0]
    assert (standing["score"], standing["rank"]) == (1000, 1)


def test_records_of_the_previous_script_still_parse():
    """Outbox entries and idempotency records written before the upgrade carry period and
    region in two fields; the relay and replays must read them as before."""
    old = "e1\t1\t7\t1700000000000\tincrement\nall-time\t\t15\t2\t1\n2026-W47\tEU\t15\t1\t1"
    old += "\n-\tall-time\t\tzed\t1"
    new = "e1\t1\t7\t1700000000000\tincrement\nall-time\t15\t2\t1\n2026-W47:EU\t15\t1\t1"
    new += "\n-\tall-time\tzed\t1"
    assert _parse_record(old, replayed=False) == _parse_record(new, replayed=False)
    parsed = _parse_record(new, replayed=True)
    assert [(s.period, s.region, s.rank) for s in parsed.standings] == [
        ("all-time", None, 2),
        ("2026-W47", "EU", 1),
    ]
    assert [(e.period, e.region, e.player_id, e.gone) for e in parsed.evictions] == [
        ("all-time", None, "zed", True)
    ]


def test_league_lines_of_the_group_set_script_still_parse():
    """An idempotency record from before groups kept no standings carries the group's rank and
    size on its league line; a replay answers the group from it as a new record would."""
    head = "e1\t1\t7\t1700000000000\tincrement\n2026-11-30T000000Z\t15\t2\t1\t\t"
    old = _parse_record(head + "\n~\t2026-11-30T000000Z\t1.3\t2\t1\t30", replayed=True)
    new = _parse_record(head + "\n~\t2026-11-30T000000Z\t1.3\t1", replayed=True)
    assert old.league == new.league
    assert new.league is not None and (new.league.group, new.league.placed) == ("1.3", True)
    later = _parse_record(head + "\n~\t2026-11-30T000000Z\t1.3\t\t0\t30", replayed=True)
    assert later.league is not None and not later.league.placed
