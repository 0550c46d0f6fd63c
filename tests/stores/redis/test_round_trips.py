"""Acceptance 2: round trips are counted, not assumed. Every submission and every read is one
round trip to Redis, whatever the board size or the window, through the service and through
the real handlers."""

from __future__ import annotations

import pytest
import redis
from redis.connection import ConnectionPool

from leaderboard.domain.auth import Caller
from leaderboard.services.reads import ReadService
from leaderboard.services.scores import ScoreService
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish
from tests.support.round_trips import CountingConnection, counted

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


def test_one_round_trip_per_submission_and_read(redis_url, board_id, clock):
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    publish(
        index,
        board_id,
        regions=["EU", "NA"],
        periods=["all-time", "daily", "weekly", "monthly"],
        ties="first",
        max_entries=5000,
        rate_limit_per_minute=100000,
    )
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    # A board of 2,000 players, written in bulk outside the measurement.
    pipe = client.pipeline(transaction=False)
    for i in range(2000):
        pipe.zadd(f"lb:{{{board_id}}}:z:all-time", {f"{i:015d}|p{i}": i})
        pipe.hset(f"lb:{{{board_id}}}:m:all-time", f"p{i}", f"{i:015d}|p{i}")
    pipe.execute()

    # Warm the script cache: the very first call of a script may need SCRIPT LOAD.
    scores.submit(board_id, {"player_id": "warm", "score": 1}, SERVER, None)
    reads.entries(board_id, {})

    submissions = [
        ({"player_id": "p-1", "score": 10}, None),
        ({"player_id": "p-1", "score": 5, "region": "EU", "metadata": {"name": "Ada"}}, "k-1"),
        ({"player_id": "p-1", "score": 5, "region": "EU", "metadata": {"name": "Ada"}}, "k-1"),
    ]
    for body, key in submissions:
        trips, _ = counted(lambda body=body, key=key: scores.submit(board_id, body, SERVER, key))
        assert trips == 1, (body, key)

    read_calls = {
        "entries top 1": lambda: reads.entries(board_id, {"limit": "1"}),
        "entries top 100": lambda: reads.entries(board_id, {"limit": "100"}),
        "entries deep page": lambda: reads.entries(board_id, {"offset": "1500", "limit": "100"}),
        "around_rank": lambda: reads.entries(board_id, {"around_rank": "1000", "limit": "100"}),
        "player": lambda: reads.player(board_id, "p-1", {}),
        "player in region": lambda: reads.player(board_id, "p-1", {"region": "EU"}),
        "around 100": lambda: reads.around(board_id, "p-1", {"count": "100"}),
        "weekly page": lambda: reads.entries(board_id, {"period": "weekly", "limit": "100"}),
    }
    for name, call in read_calls.items():
        trips, result = counted(call)
        assert trips == 1, name
        assert result["total"] >= 1, name

    # Issue 13: many players and one player's every period, one round trip whatever the count.
    friends = ",".join(["p-1", *(f"p{i}" for i in range(0, 1960, 20)), "nobody"])  # 100 ids
    player_reads = {
        "players 1 id": lambda: reads.players(board_id, {"ids": "p-1"}),
        "players 100 ids": lambda: reads.players(board_id, {"ids": friends}),
        "players 100 ids in region": lambda: reads.players(
            board_id, {"ids": friends, "region": "EU"}
        ),
        "standings, every region": lambda: reads.standings(board_id, "p-1", {}),
        "standings, one region": lambda: reads.standings(board_id, "p-1", {"region": "EU"}),
    }
    reads.players(board_id, {"ids": "warm"})  # the script's first call loads it
    for name, call in player_reads.items():
        trips, result = counted(call)
        assert trips == 1, name
        assert result.get("entries") or result.get("standings"), name
    chosen = reads.players(board_id, {"ids": friends})
    assert (len(chosen["entries"]), chosen["missing"]) == (99, ["nobody"])
    # p-1 is on all-time, daily, weekly, monthly, globally and in EU: eight standings.
    assert len(reads.standings(board_id, "p-1", {})["standings"]) == 8
    client.close()


@pytest.mark.parametrize("ties", ["shared", "first"])
def test_one_round_trip_on_a_board_with_every_score_model_option(redis_url, board_id, clock, ties):
    """Issue 23: 3 tie-breaker columns, teams and hidden players change no round trip: a
    submission (its rank movement and its team's update), a batch, and every read kind (of
    players, of teams, of a team's members) are still one each, for a hidden player's own
    submissions and reads too."""
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    columns = [
        {"name": "time_ms", "sort": "asc"},
        {"name": "deaths", "sort": "asc"},
        {"name": "level", "sort": "desc"},
    ]
    publish(
        index, board_id, regions=["EU"], ties=ties, mode="best", tiebreakers=columns, teams="sum"
    )
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)

    def body(player: str, score: int, time_ms: int, **extra: object) -> dict:
        values = {"time_ms": time_ms, "deaths": 1, "level": 3}
        team = ("red", "blue", "gold")[len(player) % 3]
        return {
            "player_id": player,
            "score": score,
            "tiebreakers": values,
            "team_id": team,
            **extra,
        }

    scores.submit(board_id, body("warm", 1, 5), SERVER, None)  # loads scripts and rules
    reads.entries(board_id, {})
    reads.players(board_id, {"ids": "warm"})
    for i in range(50):
        scores.submit(board_id, body(f"p{i}", i % 5, i % 7, region="EU"), SERVER, None)

    for payload, key in [
        (body("p-1", 3, 900), None),
        (body("p-1", 3, 100, region="EU"), "k-1"),  # the same score, a better time: moves up
        (body("p-1", 3, 100, region="EU"), "k-1"),  # a replay
    ]:
        trips, response = counted(
            lambda payload=payload, key=key: scores.submit(board_id, payload, SERVER, key)
        )
        assert trips == 1, (payload, key)
    assert response.body["standings"][0]["tiebreakers"] == {"time_ms": 100, "deaths": 1, "level": 3}
    batch = {"submissions": [body(f"b{i}", i, i) for i in range(20)]}
    trips, _ = counted(lambda: scores.submit_batch(board_id, batch, SERVER))
    assert trips == 1
    for name, call in {
        "top 10": lambda: reads.entries(board_id, {"limit": "10"}),
        "deep page": lambda: reads.entries(board_id, {"offset": "30", "limit": "10"}),
        "around_rank": lambda: reads.entries(board_id, {"around_rank": "20", "limit": "5"}),
        "player": lambda: reads.player(board_id, "p-1", {}),
        "around": lambda: reads.around(board_id, "p-1", {"count": "5", "region": "EU"}),
        "players": lambda: reads.players(board_id, {"ids": "p-1,p3,b4,nobody"}),
        "standings": lambda: reads.standings(board_id, "p-1", {}),
    }.items():
        trips, result = counted(call)
        assert trips == 1, name
        entries = result.get("entries") or result.get("standings") or [result]
        assert all("tiebreakers" in e for e in entries), name
    for name, call in {  # the team rankings, and a team's members
        "teams": lambda: reads.entries(board_id, {"by": "team"}),
        "team around_rank": lambda: reads.entries(board_id, {"by": "team", "around_rank": "2"}),
        "one team": lambda: reads.player(board_id, "red", {"by": "team"}),
        "around a team": lambda: reads.around(board_id, "red", {"by": "team"}),
        "teams chosen": lambda: reads.players(board_id, {"ids": "red,gold", "by": "team"}),
        "members": lambda: reads.entries(board_id, {"team": "red", "limit": "20"}),
        "a member": lambda: reads.player(board_id, "p10", {"team": "red"}),
        "around a member": lambda: reads.around(board_id, "p10", {"team": "red"}),
        "members chosen": lambda: reads.players(board_id, {"ids": "p10,p-1", "team": "red"}),
    }.items():
        trips, result = counted(call)
        assert trips == 1, name
        assert result.get("entries") or result.get("rank"), name

    # Hidden players: a hidden player's submissions and every read, by them and by others
    index.set_hidden(board_id, "p3", True, event_id="e-hide", now_ms=1)
    trips, response = counted(lambda: scores.submit(board_id, body("p3", 4, 1), SERVER, "k-3"))
    assert trips == 1 and response.body["standings"][0]["rank"] >= 1
    batch = {"submissions": [body("p3", 5, 1), body("b1", 9, 9), body("p3", 60, 0)]}
    trips, _ = counted(lambda: scores.submit_batch(board_id, batch, SERVER))
    assert trips == 1
    hidden_self = Caller("p3", frozenset())
    for who in (None, hidden_self, Caller("p4", frozenset())):
        for name, call in {
            "top 10": lambda who=who: reads.entries(board_id, {"limit": "10"}, caller=who),
            "around_rank": lambda who=who: reads.entries(
                board_id, {"around_rank": "3", "limit": "5"}, caller=who
            ),
            "player": lambda who=who: reads.player(board_id, "p-1", {}, caller=who),
            "around": lambda who=who: reads.around(board_id, "p-1", {"count": "5"}, caller=who),
            "players": lambda who=who: reads.players(board_id, {"ids": "p-1,p3"}, caller=who),
            "standings": lambda who=who: reads.standings(board_id, "p-1", {}, caller=who),
        }.items():
            trips, result = counted(call)
            assert trips == 1, (name, who)
    top = reads.entries(board_id, {"limit": "3"}, caller=hidden_self)["entries"]
    assert top[0]["player_id"] == "p3"  # the hidden player's own view, in that one trip
    client.close()


def test_one_round_trip_per_submission_and_join_on_a_recurring_tournament(redis_url, board_id):
    """A recurring tournament's window is placed by the caller from the rules it caches: a
    submission, a batch and a sign-up are each one round trip, in a window, between windows
    (a sign-up for the next one, a refused submission) and across a daylight-saving change."""
    from datetime import UTC, datetime

    from leaderboard.domain.errors import TournamentRefused
    from tests.support.boards import MovableClock

    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    recurrence = {"cron": "0 18 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}
    tournament = {
        "recurrence": recurrence,
        "starts_at": "2026-03-01T00:00:00Z",
        "max_participants": 50,
        "max_attempts": 5,
    }
    publish(index, board_id, tournament=tournament, mode="best")
    clock = MovableClock(datetime(2026, 3, 28, 17, 10, tzinfo=UTC))  # 18:10 CET, open
    scores = ScoreService(index, ListSink(), clock)
    scores.submit(board_id, {"player_id": "warm", "score": 1}, SERVER, None)  # rules, scripts
    scores.join(board_id, {"player_id": "warm"}, SERVER)

    def submit(player: str) -> object:
        try:
            return scores.submit(board_id, {"player_id": player, "score": 5}, SERVER, None)
        except TournamentRefused as refused:
            return refused.details["reason"]

    batch = {"submissions": [{"player_id": f"b{i}", "score": i} for i in range(10)]}
    for at, outcome in [
        (datetime(2026, 3, 28, 17, 30, tzinfo=UTC), "open"),
        (datetime(2026, 3, 28, 20, 0, tzinfo=UTC), "between"),
        (datetime(2026, 3, 29, 16, 30, tzinfo=UTC), "open after the change"),
    ]:
        clock.now = at
        trips, joined = counted(lambda: scores.join(board_id, {"player_id": "ada"}, SERVER))
        assert trips == 1, outcome
        # between the windows ada signed up for the next one: then already in
        assert joined["joined"] == (outcome != "open after the change"), outcome
        trips, result = counted(lambda: submit("ada"))
        assert trips == 1, outcome
        assert (result == "not_started") == (outcome == "between"), outcome
        trips, _ = counted(lambda: scores.submit_batch(board_id, batch, SERVER))
        assert trips == 1, outcome
    client.close()


def test_handlers_use_one_round_trip(api, admin_token, server_token, board_id):
    """Through the template routes and the real handlers, counting on their own clients."""
    assert (
        api.call("PUT", f"/boards/{board_id}", {"regions": ["EU"]}, token=admin_token).status == 201
    )
    import sys

    for module in ("lambda_ApiWriteFunction_app", "lambda_ApiReadFunction_app"):
        names = vars(sys.modules[module])
        client = (names.get("scores") or names["reads"]).index.client
        # A fresh pool whose connections count their sends (existing ones would not).
        client.connection_pool = ConnectionPool(
            connection_class=CountingConnection, **client.connection_pool.connection_kwargs
        )
    body = {"player_id": "p-9", "score": 3, "region": "EU"}
    api.call("POST", f"/boards/{board_id}/scores", body, token=server_token)  # warm
    trips, reply = counted(
        lambda: api.call("POST", f"/boards/{board_id}/scores", body, token=server_token)
    )
    assert reply.status == 200 and trips == 1
    for path in (
        f"/boards/{board_id}/entries?limit=100",
        f"/boards/{board_id}/players/p-9",
        f"/boards/{board_id}/players/p-9/around?count=50&region=EU",
        f"/boards/{board_id}/entries?around_rank=1&limit=7",
        f"/boards/{board_id}/players?ids=p-9,p-8,p-7&region=EU",
        f"/boards/{board_id}/players/p-9/standings",
    ):
        api.call("GET", path)  # warm the connection
        trips, reply = counted(lambda path=path: api.call("GET", path))
        assert reply.status == 200 and trips == 1, path


# Issue 22: rounds per read kind on a sharded board (each round one pipeline: one round trip
# to each node touched), and one round trip per submission and per batch, for K = 1, 2, 3, 8.
SHARDED_ROUNDS = {
    "submission": 1,
    "batch of 100": 1,
    "top 10": 1,
    "page at offset 1,500": 2,
    "around rank 1,000": 2,
    "player": 2,
    "around player": 2,
    "100 players": 2,
    "standings": 2,
}


def _sharded_board(client, clock, board_id: str, shards: int, **rules):
    from dataclasses import replace

    index = RedisIndex(client)
    board = publish(index, board_id, regions=["EU"], ties="first", **rules)
    if shards > 1:
        index.publish_board(replace(board, shards=shards, version=2))
    scores = ScoreService(index, ListSink(), clock)
    for start in range(0, 2000, 500):
        items = [
            {"player_id": f"p{i}", "score": i % 300, "region": "EU"}
            for i in range(start, start + 500)
        ]
        scores.submit_batch(board_id, {"submissions": items}, SERVER)
    return scores, ReadService(index, clock)


def _calls(scores, reads, board_id: str) -> dict:
    friends = ",".join(f"p{i}" for i in range(0, 2000, 20))
    batch = {"submissions": [{"player_id": f"p{i}", "score": 7} for i in range(100)]}
    return {
        "submission": lambda: scores.submit(
            board_id, {"player_id": "p1", "score": 3}, SERVER, None
        ),
        "batch of 100": lambda: scores.submit_batch(board_id, batch, SERVER),
        "top 10": lambda: reads.entries(board_id, {"limit": "10"}),
        "page at offset 1,500": lambda: reads.entries(board_id, {"offset": "1500", "limit": "10"}),
        "around rank 1,000": lambda: reads.entries(board_id, {"around_rank": "1000"}),
        "player": lambda: reads.player(board_id, "p77", {}),
        "around player": lambda: reads.around(board_id, "p77", {"count": "10"}),
        "100 players": lambda: reads.players(board_id, {"ids": friends}),
        "standings": lambda: reads.standings(board_id, "p77", {}),
    }


import pytest  # noqa: E402


@pytest.mark.parametrize("shards", [1, 2, 3, 8])
def test_round_trips_per_read_kind_on_sharded_boards(redis_url, board_id, clock, shards):
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    scores, reads = _sharded_board(client, clock, board_id, shards)
    calls = _calls(scores, reads, board_id)
    for call in calls.values():
        call()  # warm: the rules of the board and the scripts
    for name, call in calls.items():
        trips, _ = counted(call)
        assert trips == (1 if shards == 1 else SHARDED_ROUNDS[name]), (shards, name)
    client.close()


PERCENT_TIERS = {
    "by": "percentile",
    "tiers": [{"name": "top1", "top_percent": 1}, {"name": "top10", "top_percent": 10}],
}


@pytest.mark.parametrize("shards", [1, 3])
def test_reads_of_a_percentile_tier_board_take_no_extra_round_trip(
    redis_url, board_id, clock, shards
):
    """Score tiers by percentile need each read's total: every read already counts it, in its
    one round trip (or its rounds on a sharded board), and every standing names its tier."""
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    scores, reads = _sharded_board(client, clock, board_id, shards, score_tiers=PERCENT_TIERS)
    calls = _calls(scores, reads, board_id)
    for call in calls.values():
        call()
    for name, call in calls.items():
        trips, result = counted(call)
        assert trips == (1 if shards == 1 else SHARDED_ROUNDS[name]), (shards, name)
        if name in ("submission", "batch of 100"):
            continue
        found = [result] if "rank" in result else result.get("entries") or result["standings"]
        assert found and all("tier" in e for e in found), name
    top = reads.entries(board_id, {"limit": "25"})
    assert top["total"] == 2000  # top1: ranks 1-20; top10: to 200; beyond: none
    assert {e["tier"] for e in top["entries"] if e["rank"] <= 20} == {"top1"}
    assert {e["tier"] for e in top["entries"] if e["rank"] > 20} == {"top10"}
    assert reads.player(board_id, "p0", {})["tier"] is None
    client.close()


def test_every_read_of_a_percentile_tier_team_board_is_one_round_trip(redis_url, board_id, clock):
    """Teams and hidden players beside percentile tiers: the team rankings, a team's members
    and a hidden player's own view are one round trip each, each standing with its tier."""
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    publish(index, board_id, regions=["EU"], teams="sum", score_tiers=PERCENT_TIERS)
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    items = [
        {
            "player_id": f"p{i}",
            "score": i,
            "team_id": ("red", "blue", "gold")[i % 3],
            "region": "EU",
        }
        for i in range(60)
    ]
    scores.submit_batch(board_id, {"submissions": items}, SERVER)
    index.set_hidden(board_id, "p7", True, event_id="e-hide", now_ms=1)
    reads.entries(board_id, {})
    reads.players(board_id, {"ids": "p1"})  # the scripts' first calls load them
    hidden_self = Caller("p7", frozenset())
    for name, call in {
        "top": lambda: reads.entries(board_id, {"limit": "20"}),
        "deep page": lambda: reads.entries(board_id, {"offset": "40", "limit": "10"}),
        "around_rank": lambda: reads.entries(board_id, {"around_rank": "30", "limit": "5"}),
        "player": lambda: reads.player(board_id, "p3", {"region": "EU"}),
        "around": lambda: reads.around(board_id, "p3", {"count": "5"}),
        "players": lambda: reads.players(board_id, {"ids": "p3,p59,nobody"}),
        "standings": lambda: reads.standings(board_id, "p3", {}),
        "teams": lambda: reads.entries(board_id, {"by": "team"}),
        "one team": lambda: reads.player(board_id, "red", {"by": "team"}),
        "around a team": lambda: reads.around(board_id, "red", {"by": "team"}),
        "teams chosen": lambda: reads.players(board_id, {"ids": "red,gold", "by": "team"}),
        "members": lambda: reads.entries(board_id, {"team": "red"}),
        "own view": lambda: reads.entries(board_id, {"limit": "3"}, caller=hidden_self),
        "own standings": lambda: reads.standings(board_id, "p7", {}, caller=hidden_self),
    }.items():
        trips, result = counted(call)
        assert trips == 1, name
        found = [result] if "rank" in result else result.get("entries") or result["standings"]
        assert found and all("tier" in e for e in found), name
    client.close()


@pytest.mark.cluster
def test_sharded_reads_touch_each_node_once_a_round_on_a_cluster(clock, board_id):
    """On a cluster a round is one pipeline per node holding a shard of the board."""
    from redis.cluster import RedisCluster

    from devstack.servers import EmbeddedValkeyCluster
    from leaderboard.domain.shards import shard_board_id

    with EmbeddedValkeyCluster() as nodes:
        client = RedisCluster.from_url(
            nodes.url, decode_responses=True, connection_class=CountingConnection
        )
        scores, reads = _sharded_board(client, clock, board_id, 8)
        holders = {
            client.get_node_from_key(f"lb:{{{shard_board_id(board_id, s, 8)}}}:cfg").name
            for s in range(8)
        }
        assert len(holders) == 3, "8 shards spread over all 3 nodes"
        calls = _calls(scores, reads, board_id)
        for call in calls.values():
            call()
        for name, call in calls.items():
            trips, _ = counted(call)
            rounds = SHARDED_ROUNDS[name]
            if name == "submission":
                assert trips == 1
            elif name in ("player", "around player", "standings"):
                assert trips <= 1 + len(holders), name  # its own shard, then every node
            else:
                assert trips <= rounds * len(holders), (name, trips)
        client.close()


@pytest.mark.parametrize("ties", ["shared", "first"])
def test_one_round_trip_per_league_write_and_read(redis_url, board_id, clock, ties):
    """Issue 40, acceptance 2: on a league board a submission (placing the player in a group on
    their first write, and after it), the tiers, a player's group and a group by id are one
    round trip each, for a hidden player's own reads too."""
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    publish(
        index,
        board_id,
        periods=["all-time", "custom"],
        ties=ties,
        schedule={"cron": "0 0 * * MON", "timezone": "UTC"},
        league={"tiers": ["bronze", "silver"], "group_size": 30, "promote": 5, "relegate": 5},
    )
    scores = ScoreService(index, ListSink(), clock)
    reads = ReadService(index, clock)
    scores.submit(board_id, {"player_id": "warm", "score": 1}, SERVER, None)
    reads.league(board_id, {})  # loads the league's scripts and caches the league
    reads.league_player(board_id, "warm", {})
    for n in range(40):
        trips, answer = counted(
            lambda n=n: scores.submit(board_id, {"player_id": f"p{n}", "score": n}, SERVER, None)
        )
        assert trips == 1 and answer.body["league"]["placed"], n
    trips, answer = counted(
        lambda: scores.submit(board_id, {"player_id": "p3", "score": 99}, SERVER, None)
    )
    assert trips == 1 and not answer.body["league"]["placed"]
    index.set_hidden(board_id, "p5", True, event_id="e-hide", now_ms=1)
    for name, call in {
        "tiers": lambda: reads.league(board_id, {}),
        "a player's group": lambda: reads.league_player(board_id, "p3", {}),
        "a hidden player's own group": lambda: reads.league_player(
            board_id, "p5", {"viewer": "p5"}, caller=SERVER
        ),
        "a group by id": lambda: reads.league_group(board_id, "bronze-2", {}),
    }.items():
        trips, result = counted(call)
        assert trips == 1, name
        assert result["tiers"] if name == "tiers" else result["entries"], name
    client.close()
