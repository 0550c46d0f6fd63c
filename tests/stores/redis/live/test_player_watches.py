"""Player channels on the serving index (lua/watch.lua, the watch part of lua/live.lua): who is
told they were passed, by whom, and when they entered or left the top N, checked case by case
and against a plain model of ranks over random writes."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.domain.live import Channel, PlayerUpdate
from leaderboard.domain.periods import current_period
from leaderboard.domain.submissions import Submission
from leaderboard.services.live import board_channels
from leaderboard.stores.redis.live.index import LiveIndex
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import publish
from tests.support.live import NOW, submit
from tests.support.reference_model import ModelBoard

ALL_TIME = Channel("all-time", current_period("all-time", NOW).id, None)


def _board(index: RedisIndex, board_id: str, **rules: Any) -> ModelBoard:
    rules.setdefault("periods", ["all-time"])
    rules.setdefault("mode", "best")
    return ModelBoard(publish(index, board_id, **rules))


def _watch(
    index: RedisIndex, board_id: str, player: str, top_n: int = 3, friends: tuple[str, ...] = ()
) -> int | None:
    standing = index.watch(
        board_id,
        player,
        ALL_TIME,
        until_ms=UTC_MS_NOW_PLUS,
        top_n=top_n,
        friends=friends,
        keep_seconds=3600,
    )
    return standing.rank


UTC_MS_NOW_PLUS = 2**52  # a watch that does not expire during a test


def _tick(live: LiveIndex, board_id: str) -> dict[str, PlayerUpdate]:
    (public,) = [b for b in live.catalog() if b["board_id"] == board_id]
    (result,) = live.changes([board_channels(public, NOW)])
    assert not isinstance(result, Exception), result
    found = {u.player_id: u for u in result.player_updates}
    assert len(found) == len(result.player_updates), "one message per watch per tick"
    return found


def test_a_player_passed_is_told_by_whom_with_the_old_and_new_rank(
    index: RedisIndex, board_id: str
) -> None:
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("ada", 50), ("bob", 40), ("cy", 30), ("dee", 20)):
        submit(index, model, board_id, player, score, metadata={"name": player.title()})
    _tick(live, board_id)
    assert _watch(index, board_id, "cy", top_n=10, friends=("dee",)) == 3
    submit(index, model, board_id, "dee", 45)  # from 4th to 2nd: passes cy and bob
    (update,) = _tick(live, board_id).values()
    message = update.to_message("t")
    assert message["player_id"] == "cy" and message["type"] == "player.standing_changed"
    assert (message["previous_rank"], message["rank"], message["score"]) == (3, 4, 30)
    assert message["events"] == ["passed", "friend_passed"]
    assert message["passed_by"] == [
        {"rank": 2, "player_id": "dee", "score": 45, "metadata": {"name": "Dee"}, "friend": True}
    ]
    assert update.name().startswith("/players/P")
    # nobody else moved: the next tick says nothing to cy
    submit(index, model, board_id, "ada", 60)
    assert _tick(live, board_id) == {}


def test_entering_and_leaving_the_top_n_and_own_writes_never_pass(
    index: RedisIndex, board_id: str
) -> None:
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("ada", 50), ("bob", 40), ("cy", 30), ("dee", 20)):
        submit(index, model, board_id, player, score)
    _tick(live, board_id)
    _watch(index, board_id, "cy", top_n=3)
    _watch(index, board_id, "dee", top_n=3)
    _watch(index, board_id, "eve", top_n=3)  # no entry yet
    submit(index, model, board_id, "dee", 35)  # dee 3rd: enters; cy 4th: passed, leaves
    updates = _tick(live, board_id)
    assert updates["dee"].events == ("entered_top",)
    assert (updates["dee"].previous_rank, updates["dee"].rank) == (4, 3)
    assert updates["cy"].events == ("passed", "left_top")
    assert [p.entry.player_id for p in updates["cy"].passed_by] == ["dee"]
    submit(index, model, board_id, "eve", 100)  # a first score at the top
    updates = _tick(live, board_id)
    assert updates["eve"].events == ("entered_top",)
    assert (updates["eve"].previous_rank, updates["eve"].rank) == (None, 1)
    assert updates["dee"].events == ("passed", "left_top")
    assert updates["cy"].events == ("passed",)  # was 4th, now 5th: passed by a newcomer
    assert updates["cy"].previous_rank == 4 and updates["cy"].rank == 5


def test_an_ended_or_expired_watch_is_told_nothing(index: RedisIndex, board_id: str) -> None:
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("ada", 50), ("bob", 40)):
        submit(index, model, board_id, player, score)
    _tick(live, board_id)
    index.watch(
        board_id, "bob", ALL_TIME, until_ms=1, top_n=1, friends=None, keep_seconds=3600
    )  # long expired
    _watch(index, board_id, "ada", top_n=1)
    index.unwatch(board_id, "ada", ALL_TIME)
    submit(index, model, board_id, "cy", 70)
    assert _tick(live, board_id) == {}


def test_friends_are_kept_when_a_renewal_leaves_them_out(index: RedisIndex, board_id: str) -> None:
    _board(index, board_id)
    first = index.watch(
        board_id,
        "ada",
        ALL_TIME,
        until_ms=UTC_MS_NOW_PLUS,
        top_n=5,
        friends=("bob", "cy"),
        keep_seconds=60,
    )
    renewed = index.watch(
        board_id,
        "ada",
        ALL_TIME,
        until_ms=UTC_MS_NOW_PLUS,
        top_n=5,
        friends=None,
        keep_seconds=60,
    )
    assert first.friends == renewed.friends == ("bob", "cy")
    assert first.rank is None and first.score is None


def test_a_tick_ranks_at_most_its_budget_and_the_rest_are_told_next(
    index: RedisIndex, board_id: str
) -> None:
    model = _board(index, board_id)
    live = LiveIndex(index.client, max_watch_checks=3)
    for i in range(8):
        submit(index, model, board_id, f"w{i}", 10 + i)
    _tick(live, board_id)
    for i in range(8):
        _watch(index, board_id, f"w{i}", top_n=1)
    submit(index, model, board_id, "top", 1000)  # passes all eight
    told = set(_tick(live, board_id))
    assert len(told) <= 3
    submit(index, model, board_id, "low", 1)  # any change: the rest are ranked again
    for _ in range(4):
        told |= set(_tick(live, board_id))
        submit(index, model, board_id, "low", 2 + len(told))
    assert told == {f"w{i}" for i in range(8)}


def test_passed_by_names_only_who_was_behind_before_the_tick(
    index: RedisIndex, board_id: str
) -> None:
    """A friend ahead all along who moves within the tick passed nobody (issue 36, 1): a2
    passes bob and ada, then bob, ahead of ada throughout, moves 760 -> 765."""
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("bob", 760), ("ada", 750), ("a2", 700)):
        submit(index, model, board_id, player, score)
    _tick(live, board_id)
    assert _watch(index, board_id, "ada", top_n=10, friends=("bob",)) == 2
    submit(index, model, board_id, "a2", 800)  # passes bob and ada
    submit(index, model, board_id, "bob", 765)  # was 3rd after a2's write: not a pass of ada's
    (update,) = _tick(live, board_id).values()
    assert (update.previous_rank, update.rank, update.events) == (2, 3, ("passed",))
    assert [p.entry.player_id for p in update.passed_by] == ["a2"]


def test_writes_before_a_watch_started_pass_nobody(index: RedisIndex, board_id: str) -> None:
    """On a board the publisher has not read yet, the writes made before the watch are no
    passes (issue 36, 2): a1 scores, ada scores, ada watches (2nd), then bob passes her."""
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    submit(index, model, board_id, "a1", 90)
    submit(index, model, board_id, "ada", 50)
    assert _watch(index, board_id, "ada", top_n=10) == 2
    submit(index, model, board_id, "bob", 60)
    (update,) = _tick(live, board_id).values()  # the first read of this board's outbox
    assert (update.previous_rank, update.rank, update.events) == (2, 3, ("passed",))
    assert [p.entry.player_id for p in update.passed_by] == ["bob"]


def test_an_admin_removal_is_told_on_the_next_tick(index: RedisIndex, board_id: str) -> None:
    """Removing a player is a change like a write (issue 36, 3): the removed watcher hears
    `left_top` with no rank and score, and the one behind moves up, on the very next tick."""
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("ada", 50), ("bob", 40)):
        submit(index, model, board_id, player, score)
    _tick(live, board_id)
    _watch(index, board_id, "ada", top_n=1)
    _watch(index, board_id, "bob", top_n=1)
    index.delete_player(board_id, "ada")
    updates = _tick(live, board_id)
    assert (updates["ada"].rank, updates["ada"].score, updates["ada"].events) == (
        None,
        None,
        ("left_top",),
    )
    assert (updates["bob"].previous_rank, updates["bob"].rank) == (2, 1)
    assert updates["bob"].events == ("entered_top",)


# One tick of operations: a write (player, score, tie-breaker), a watch made or renewed, an
# admin's removal of a player.
PLAYERS = ["p1", "p2", "p3", "p4", "p5", "p6", "p7"]
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"), st.sampled_from(PLAYERS), st.integers(0, 12), st.integers(0, 2)
        ),
        st.tuples(st.just("watch"), st.sampled_from(["p1", "p3", "p5", "p7"])),
        st.tuples(st.just("delete"), st.sampled_from(PLAYERS)),
    ),
    min_size=1,
    max_size=7,
)
WATCHERS = {"p1": 2, "p3": 3, "p5": 1, "p7": 4}  # player -> top N; each has friend p2
FRIEND = "p2"


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ticks=st.lists(OPS, min_size=1, max_size=6),
    ties=st.sampled_from(["shared", "first"]),
    tiebreaker=st.booleans(),
    watched_first=st.sets(st.sampled_from(sorted(WATCHERS))),
)
def test_messages_match_a_model_of_ranks_over_random_writes(
    index: RedisIndex,
    ticks: list[list[tuple[Any, ...]]],
    ties: str,
    tiebreaker: bool,
    watched_first: set[str],
) -> None:
    """Every player message, field by field, against a model: a message exactly when the
    standing changed in a way listed, with the model's ranks; `passed_by` exactly the players
    with a change since the watch started (or the tick began) who are ahead now and were not
    then, friends first, then nearest first. Watches start mid-tick (writes before them pass
    nobody), renewals keep their chain, and an admin's removal is told on the next tick."""
    import uuid

    board_id = f"w-{uuid.uuid4().hex[:10]}"
    rules: dict[str, Any] = {"ties": ties}
    if tiebreaker:  # equal scores then order by the lower time
        rules["tiebreakers"] = [{"name": "time", "sort": "asc"}]
    model = _board(index, board_id, **rules)
    live = LiveIndex(index.client)
    period = current_period("all-time", NOW).id
    known: dict[str, int | None] = {}  # the rank the publisher last knew, per watch
    told: dict[str, int | None] = {}  # the rank the last message said (or the watch's start)
    started: dict[str, int] = {}  # watch -> the operation of the tick it started at (-1: before)

    def row_of(player: str) -> tuple[Any, ...] | None:
        row = model.keys.get((period, None), {}).get(player)
        return None if row is None else (row.score, row.tb, row.stamp)

    def watch(player: str) -> None:
        rank = _watch(index, board_id, player, top_n=WATCHERS[player], friends=(FRIEND,))
        if player not in known:  # a renewal keeps the watch's chain
            known[player], told[player] = rank, rank
        assert rank == _ranks(model).get(player)

    for player in sorted(watched_first):
        watch(player)
        started[player] = -1
    for ops in ticks:
        snapshots: list[dict[str, int]] = []  # the model's ranks before each operation
        changes: list[set[str]] = []  # who each operation changed
        for at, op in enumerate(ops):
            snapshots.append(_ranks(model))
            before = {p: row_of(p) for p in PLAYERS}
            if op[0] == "write":
                _, player, score, time = op
                tbs = {"time": time} if tiebreaker else None
                index.submit(
                    board_id,
                    Submission(player, score, None, None, tiebreakers=tbs),
                    event_id=str(uuid.uuid4()),
                    now_ms=int(NOW.timestamp() * 1000),
                    periods={"all-time": current_period("all-time", NOW)},
                    idempotency=None,
                )
                model.submit(player, float(score), None, None, NOW, tbs)
            elif op[0] == "delete":
                index.delete_player(board_id, op[1])
                model.delete(op[1])
            else:
                if op[1] not in known:
                    started[op[1]] = at
                watch(op[1])
            changes.append({p for p in PLAYERS if row_of(p) != before[p]})
        updates = _tick(live, board_id)
        now = _ranks(model)
        for watcher in sorted(known):
            old, new = known[watcher], now.get(watcher)
            update = updates.get(watcher)
            if old == new:
                assert update is None, (watcher, old, update)
                continue
            known[watcher] = new
            since = max(started[watcher], 0)  # where this tick's changes count from
            then = snapshots[since]
            moved = set().union(*changes[since:])
            passers = {
                m
                for m in moved
                if m != watcher
                and m in now
                and new is not None
                and now[m] < new
                and not (m in then and watcher in then and then[m] < then[watcher])
            }
            top_n = WATCHERS[watcher]
            events = []
            if old is not None and new is not None and new > old:
                if passers or watcher not in moved:
                    events.append("passed")
                if FRIEND in passers:
                    events.append("friend_passed")
            if new is not None and new <= top_n and (old is None or old > top_n):
                events.append("entered_top")
            if old is not None and old <= top_n and (new is None or new > top_n):
                events.append("left_top")
            if not events:
                assert update is None, (watcher, old, new, update)
                continue
            assert update is not None, (watcher, old, new, events)
            assert list(update.events) == events, (watcher, update.events, events)
            assert (update.previous_rank, update.rank) == (told[watcher], new)
            score = None if new is None else model.keys[(period, None)][watcher].score
            assert update.score == score
            told[watcher] = new
            listed = [p.entry.player_id for p in update.passed_by]
            if "passed" not in events:
                assert listed == []
                continue
            assert set(listed) == passers and len(listed) == len(passers), (listed, passers)
            assert not update.passed_by_truncated
            friends = [p for p in update.passed_by if p.friend]
            assert [p.entry.player_id for p in friends] == [FRIEND] * (FRIEND in passers)
            others = [p.entry.rank for p in update.passed_by[len(friends) :]]
            assert others == sorted(others, key=lambda r: -(r or 0))  # nearest first
            for p in update.passed_by:
                assert p.entry.rank == now[p.entry.player_id]
        started = dict.fromkeys(started, -1)  # from the next tick on: its start


def _scores(model: ModelBoard) -> dict[str, float]:
    return {
        row.player: row.score for row in model.ordered(current_period("all-time", NOW).id, None)
    }


def _ranks(model: ModelBoard) -> dict[str, int]:
    """The model's ranks on the all-time board, as the reads give them."""
    period = current_period("all-time", NOW).id
    rows = model.ordered(period, None)
    return {row.player: model.rank_of(rows, i) for i, row in enumerate(rows)}


def test_a_hidden_watcher_is_told_nothing_and_the_others_see_the_public_board(
    index: RedisIndex, board_id: str
) -> None:
    """Hiding is a shadow ban: the hidden player's channel must not say `rank: null` (their
    reads never tell them), while the others move up as the public board shows."""
    import uuid

    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("ann", 50), ("bob", 40), ("cy", 30)):
        submit(index, model, board_id, player, score)
    _tick(live, board_id)
    _watch(index, board_id, "ann", top_n=1)
    _watch(index, board_id, "bob", top_n=1)
    index.set_hidden(board_id, "ann", True, event_id=str(uuid.uuid4()), now_ms=1)
    updates = _tick(live, board_id)
    assert set(updates) == {"bob"}
    assert (updates["bob"].previous_rank, updates["bob"].rank) == (2, 1)
    assert updates["bob"].events == ("entered_top",)
    submit(index, model, board_id, "cy", 100)  # passes everyone, ann included
    assert set(_tick(live, board_id)) == {"bob"}


def test_a_renewal_keeps_the_chain_and_a_pass_not_yet_told_is_still_told(
    index: RedisIndex, board_id: str
) -> None:
    """A watch renewed between a pass and the tick that tells it must not swallow it."""
    model = _board(index, board_id)
    live = LiveIndex(index.client)
    for player, score in (("ann", 50), ("bob", 40)):
        submit(index, model, board_id, player, score)
    _tick(live, board_id)
    assert _watch(index, board_id, "ann", top_n=1) == 1
    submit(index, model, board_id, "cy", 70)  # passes ann: not told yet
    assert _watch(index, board_id, "ann", top_n=1) == 2  # renewed: the standing now
    (update,) = _tick(live, board_id).values()
    assert (update.previous_rank, update.rank, update.events) == (1, 2, ("passed", "left_top"))
