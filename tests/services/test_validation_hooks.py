"""Issue 23, validation hooks, on a real Valkey: accept, reject (422, nothing written, nothing
queued), flag (applied, the event and the outbox carry the verdict), a timeout and a failure
under both policies, single submissions and batches; one hook call per request, none for a
board without a hook, and still one Redis round trip per submission."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
import redis

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import HookUnavailable, RejectedByHook
from leaderboard.domain.periods import ALL_TIME, current_periods
from leaderboard.services.relay import OutboxRelay
from leaderboard.services.scores import ScoreService
from leaderboard.stores.aws.validation_hooks import ValidationHooks
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import ListSink, publish
from tests.support.round_trips import CountingConnection, counted

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


class Referee:
    """A hook that rejects negative scores, flags 1000 and more, accepts the rest, and keeps
    every request it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(request)
        verdicts = []
        for item in request["submissions"]:
            if item["score"] < 0:
                verdicts.append({"verdict": "reject", "reason": "negative scores are not allowed"})
            elif item["score"] >= 1000:
                verdicts.append({"verdict": "flag", "reason": f"{item['score']} is high"})
            else:
                verdicts.append({"verdict": "accept"})
        return {"verdicts": verdicts}


def _slow(request: dict[str, Any]) -> dict[str, Any]:
    time.sleep(0.5)
    return {"verdicts": [{"verdict": "accept"} for _ in request["submissions"]]}


def _broken(request: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("bug in the hook")


def _wrong(request: dict[str, Any]) -> dict[str, Any]:
    return {"verdicts": []}


@pytest.fixture
def referee() -> Referee:
    return Referee()


@pytest.fixture
def hooks(referee: Referee) -> ValidationHooks:
    return ValidationHooks({"referee": referee, "slow": _slow, "broken": _broken, "wrong": _wrong})


@pytest.fixture
def service(index: RedisIndex, sink: ListSink, clock, hooks: ValidationHooks) -> ScoreService:
    return ScoreService(index, sink, clock, hooks=hooks)


def _hooked(index: RedisIndex, board_id: str, target: str = "referee", **hook: Any) -> None:
    publish(
        index,
        board_id,
        regions=["EU"],
        mode="best",
        max_score=10_000,
        validation_hook={"target": target, **hook},
    )


def _nothing_written(client: Any, board_id: str) -> None:
    keys = BoardKeys(board_id)
    assert client.xlen(keys.outbox) == 0, "nothing reaches the outbox"
    assert client.get(keys.seq) is None, "no version was taken"
    assert not client.smembers(keys.registry), "no sorted set was written"
    assert not client.hgetall(keys.meta)


def test_accept_applies_and_the_record_shows_the_hook_ran(
    service, index, redis_client, sink, referee, board_id
):
    _hooked(index, board_id)
    body = {"player_id": "ada", "score": 10, "region": "EU", "metadata": {"name": "Ada"}}
    done = service.submit(board_id, body, SERVER, "k-1")
    assert done.body["standings"][0]["score"] == 10
    assert referee.requests == [
        {
            "board_id": board_id,
            "submissions": [
                {
                    "player_id": "ada",
                    "score": 10,
                    "region": "EU",
                    "metadata": {"name": "Ada"},
                    "idempotency_key": "k-1",
                }
            ],
        }
    ]
    event = sink.events[-1]
    assert (event.hook_verdict, event.hook_reason) == ("accept", None)
    assert event.to_json()["hook_verdict"] == "accept"
    outbox = redis_client.xrange(BoardKeys(board_id).outbox)
    assert [fields["h"] for _, fields in outbox] == ["accept"]


def test_reject_is_422_with_the_reason_and_nothing_is_written_or_queued(
    service, index, redis_client, sink, referee, board_id
):
    _hooked(index, board_id)
    with pytest.raises(RejectedByHook) as caught:
        service.submit(board_id, {"player_id": "ada", "score": -5}, SERVER, "k-1")
    assert caught.value.status == 422
    assert caught.value.body() == {
        "message": "negative scores are not allowed",
        "code": "rejected_by_hook",
    }
    assert sink.events == []
    _nothing_written(redis_client, board_id)
    # Only the submissions that succeed are remembered: the same key can be used again.
    assert service.submit(board_id, {"player_id": "ada", "score": 5}, SERVER, "k-1").body


def test_flag_applies_and_the_event_and_outbox_carry_the_verdict(
    service, index, redis_client, sink, board_id
):
    _hooked(index, board_id)
    done = service.submit(board_id, {"player_id": "ada", "score": 2500}, SERVER, None)
    assert "hook_verdict" not in done.body, "a flag does not tip the submitter off"
    standing = done.body["standings"][0]
    assert (standing["period"], standing["region"], standing["score"], standing["rank"]) == (
        "all-time",
        None,
        2500,
        1,
    )
    event = sink.events[-1]
    assert (event.hook_verdict, event.hook_reason) == ("flag", "2500 is high")
    message = event.to_json()
    assert (message["hook_verdict"], message["hook_reason"]) == ("flag", "2500 is high")
    # The relay re-sends from the outbox (its process died before the send): same verdict.
    relayed = ListSink()

    class NothingStored:
        def stored_event_ids(self, event_ids):
            return set()

    OutboxRelay(index, NothingStored(), relayed).run([board_id], min_age_ms=-60_000)
    assert [(e.event_id, e.hook_verdict, e.hook_reason) for e in relayed.events] == [
        (event.event_id, "flag", "2500 is high")
    ]
    assert relayed.events[0].to_json() == message


@pytest.mark.parametrize("target", ["slow", "broken", "wrong"])
def test_a_failure_on_a_board_that_fails_closed_is_503_and_nothing_is_written(
    service, index, redis_client, sink, board_id, target
):
    _hooked(index, board_id, target, timeout_ms=100, on_failure="closed")
    started = time.monotonic()
    with pytest.raises(HookUnavailable) as caught:
        service.submit(board_id, {"player_id": "ada", "score": 5}, SERVER, "k-1")
    assert time.monotonic() - started < 0.45, "the budget bounds the wait"
    assert caught.value.status == 503 and caught.value.code == "hook_unavailable"
    assert caught.value.retry_after >= 1
    assert sink.events == []
    _nothing_written(redis_client, board_id)


@pytest.mark.parametrize(
    ("target", "why"),
    [("slow", "longer than 100 ms"), ("broken", "RuntimeError"), ("wrong", "verdict")],
)
def test_a_failure_on_a_board_that_fails_open_applies_and_records_it(
    service, index, redis_client, sink, board_id, target, why
):
    _hooked(index, board_id, target, timeout_ms=100, on_failure="open")
    done = service.submit(board_id, {"player_id": "ada", "score": 5}, SERVER, None)
    assert done.body["standings"][0]["score"] == 5
    event = sink.events[-1]
    assert event.hook_verdict == "failed_open" and why in event.hook_reason
    outbox = redis_client.xrange(BoardKeys(board_id).outbox)
    assert outbox[0][1]["h"].startswith("failed_open\t")


def test_a_batch_calls_the_hook_once_with_its_valid_items_and_each_item_gets_its_verdict(
    service, index, redis_client, sink, referee, board_id
):
    _hooked(index, board_id)
    items = [
        {"player_id": "ada", "score": 10, "idempotency_key": "a"},
        {"player_id": "bob", "score": -1, "idempotency_key": "b"},  # rejected
        {"player_id": "cy", "score": 5000, "region": "EU"},  # flagged
        {"player_id": "dee", "score": 3, "region": "XX"},  # not a region: 422, never sent
        {"player_id": "eve", "score": 20_000},  # beyond max_score: 422, never sent
        {"player_id": "fay", "colour": "red", "score": 1},  # unknown field: 400, never sent
    ]
    batch = service.submit_batch(board_id, {"submissions": items}, SERVER)
    results = batch.body["results"]
    assert [r["status"] for r in results] == [200, 422, 200, 422, 422, 400]
    assert results[1]["error"] == {
        "message": "negative scores are not allowed",
        "code": "rejected_by_hook",
    }
    assert results[3]["error"]["code"] == results[4]["error"]["code"] == "unprocessable"
    assert len(referee.requests) == 1, "one hook call per request"
    sent = referee.requests[0]["submissions"]
    assert [(s["player_id"], s["idempotency_key"]) for s in sent] == [
        ("ada", "a"),
        ("bob", "b"),
        ("cy", None),
    ]
    assert [(e.player_id, e.hook_verdict, e.hook_reason) for e in sink.events] == [
        ("ada", "accept", None),
        ("cy", "flag", "5000 is high"),
    ]
    assert redis_client.xlen(BoardKeys(board_id).outbox) == 2
    assert redis_client.hget(BoardKeys(board_id).refs, "bob") is None, "bob was never written"


@pytest.mark.parametrize("policy", ["closed", "open"])
def test_a_batch_whose_hook_times_out_follows_the_policy_for_every_item(
    service, index, redis_client, sink, board_id, policy
):
    _hooked(index, board_id, "slow", timeout_ms=50, on_failure=policy)
    items = [{"player_id": f"p{n}", "score": n} for n in range(3)]
    batch = service.submit_batch(board_id, {"submissions": items}, SERVER)
    results = batch.body["results"]
    if policy == "closed":
        assert [r["status"] for r in results] == [503] * 3
        assert {r["error"]["code"] for r in results} == {"hook_unavailable"}
        assert all(r["error"]["retry_after"] >= 1 for r in results)
        assert sink.events == []
        _nothing_written(redis_client, board_id)
    else:
        assert [r["status"] for r in results] == [200] * 3
        assert {e.hook_verdict for e in sink.events} == {"failed_open"}


def test_a_board_without_a_hook_makes_no_call_and_sends_what_it_always_sent(
    service, hooks, index, redis_client, sink, board_id
):
    publish(index, board_id, regions=["EU"])
    service.submit(board_id, {"player_id": "ada", "score": 1}, SERVER, None)
    service.submit_batch(board_id, {"submissions": [{"player_id": "bob", "score": 2}]}, SERVER)
    assert hooks.calls == 0
    assert hooks.lambdas._clients == {}, "no Lambda client is made"
    message = sink.events[0].to_json()
    assert "hook_verdict" not in message and "hook_reason" not in message
    outbox = redis_client.xrange(BoardKeys(board_id).outbox)
    assert len(outbox) == 2 and all("h" not in fields for _, fields in outbox)  # not a byte more


def test_a_replay_answers_as_before_whatever_the_hook_says_now(
    service, index, sink, referee, board_id
):
    _hooked(index, board_id)
    first = service.submit(board_id, {"player_id": "ada", "score": 10}, SERVER, "k-1")
    # The hook now rejects everything (new rules): the stored result still answers the retry.
    referee_rejects = {"verdicts": [{"verdict": "reject", "reason": "changed my mind"}]}
    service.hooks.local._resolved["referee"] = lambda request: referee_rejects
    again = service.submit(board_id, {"player_id": "ada", "score": 10}, SERVER, "k-1")
    assert again.replayed and again.body == first.body
    with pytest.raises(RejectedByHook):  # a new submission is judged as usual
        service.submit(board_id, {"player_id": "ada", "score": 11}, SERVER, "k-2")


def test_a_hook_added_after_the_rules_were_cached_is_called_all_the_same(
    service, index, redis_url, redis_client, sink, referee, board_id
):
    publish(index, board_id, regions=["EU"], mode="best")
    service.submit(board_id, {"player_id": "ada", "score": 1}, SERVER, None)  # rules cached
    other = RedisIndex(redis.Redis.from_url(redis_url, decode_responses=True))
    _hooked(other, board_id)  # another function instance publishes the hook
    with pytest.raises(RejectedByHook):
        service.submit(board_id, {"player_id": "ada", "score": -3}, SERVER, None)
    batch = service.submit_batch(
        board_id, {"submissions": [{"player_id": "bob", "score": 2000}]}, SERVER
    )
    assert batch.body["results"][0]["status"] == 200
    assert sink.events[-1].hook_verdict == "flag"
    assert len(referee.requests) == 2
    other.client.close()


def test_a_hook_costs_no_redis_round_trip(redis_url, clock, hooks, board_id):
    client = redis.Redis.from_url(
        redis_url, decode_responses=True, connection_class=CountingConnection
    )
    index = RedisIndex(client)
    _hooked(index, board_id)
    service = ScoreService(index, ListSink(), clock, hooks=hooks)
    body = {"player_id": "ada", "score": 5}
    cold, _ = counted(lambda: service.submit(board_id, body, SERVER, None))
    assert cold == 2  # as on any board: the first write learns the rules (STALE)
    for score in (6, 2000, -1):  # accept, flag, reject: each one round trip
        trips, _ = counted(lambda s=score: _try(service, board_id, s))
        assert trips == 1, score
    batch = {"submissions": [{"player_id": f"p{n}", "score": n} for n in range(20)]}
    trips, _ = counted(lambda: service.submit_batch(board_id, batch, SERVER))
    assert trips == 1
    client.close()


def _try(service: ScoreService, board_id: str, score: int) -> None:
    with contextlib.suppress(RejectedByHook):
        service.submit(board_id, {"player_id": "ada", "score": score}, SERVER, None)


@pytest.mark.parametrize("ties", ["shared", "first"])
def test_a_sharded_boards_outbox_keeps_the_verdict_beside_its_arrival(
    service, index, sink, clock, board_id, ties
):
    """On a shard the script gets ARGV 19 (and 20-21 on ties=first boards) before the verdict:
    padding them must change nothing about the ranks, the tie order or the record."""
    publish(
        index,
        board_id,
        shards=2,
        ties=ties,
        mode="best",
        validation_hook={"target": "referee"},
    )
    for player, score in (("ada", 5), ("bob", 1500), ("cy", 5)):
        service.submit(board_id, {"player_id": player, "score": score}, SERVER, None)
    assert [(e.player_id, e.hook_verdict) for e in sink.events] == [
        ("ada", "accept"),
        ("bob", "flag"),
        ("cy", "accept"),
    ]
    assert all(s.unranked for e in sink.events for s in e.standings)
    assert all((e.arrival is not None) == (ties == "first") for e in sink.events)
    verdicts = {}
    for name in index.key_spaces(board_id):
        for _, result, fields in index.outbox_entries(
            name, older_than_ms=index.server_time_ms() + 1, count=10
        ):
            verdicts[fields["p"]] = (result.hook_verdict, result.arrival is not None)
    assert verdicts == {
        "ada": ("accept", ties == "first"),
        "bob": ("flag", ties == "first"),
        "cy": ("accept", ties == "first"),
    }
    page = index.window(board_id, current_periods(clock())[ALL_TIME], None, op="page", size=3)
    order = [e.player_id for e in page.entries]
    assert order == (["bob", "ada", "cy"] if ties == "first" else ["bob", "cy", "ada"])
