"""The live publisher's wake-ups (stores/redis/live/wakes.py, lua_shared/wake.lua): every
write the publisher must tell is heard on the board's channel in the write's own round trip,
nothing is heard from a board not listened to, and a lost connection is an error, never
silence."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from leaderboard.stores.redis.keys import (
    CATALOG_CHANGED,
    HAND_OVER,
    LIVE_CONTROL_CHANNEL,
    BoardKeys,
)
from leaderboard.stores.redis.live.channels import wake_channels
from leaderboard.stores.redis.live.index import LiveIndex
from leaderboard.stores.redis.live.wakes import PUBLISHER_CLIENT_NAME, WakeListener
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.boards import publish
from tests.support.live import submit
from tests.support.reference_model import ModelBoard


def _heard(listener: WakeListener, seconds: float = 2.0) -> list[tuple[str, str]]:
    """Everything heard until a quiet moment (the first message waited for up to `seconds`)."""
    heard = listener.wait(seconds)
    while more := listener.wait(0.05):
        heard += more
    return heard


@pytest.fixture
def listener(index: RedisIndex) -> Any:
    ears = LiveIndex(index.client).listener()
    yield ears
    ears.close()


def test_every_write_the_publisher_tells_wakes_it_on_the_boards_channel(
    index: RedisIndex, listener: WakeListener, board_id: str
) -> None:
    model = ModelBoard(publish(index, board_id, periods=["all-time"]))
    (channel,) = wake_channels(board_id, 1)
    assert channel == BoardKeys(board_id).wake
    listener.listen([channel])
    submit(index, model, board_id, "ann", 5)
    assert _heard(listener) == [(channel, "")]
    index.set_hidden(board_id, "ann", hidden=True, event_id="e-hide", now_ms=1)
    assert _heard(listener) == [(channel, "")]
    index.set_hidden(board_id, "ann", hidden=False, event_id="e-show", now_ms=2)
    assert _heard(listener) == [(channel, "")]
    index.delete_player(board_id, "ann")  # an admin removal
    assert _heard(listener) == [(channel, "")]
    index.delete_player(board_id, "nobody")  # nothing removed, nothing to tell
    assert _heard(listener, 0.3) == []


def test_a_board_not_listened_to_is_silent_and_others_are_told_apart(
    index: RedisIndex, listener: WakeListener, board_id: str
) -> None:
    quiet, loud = f"{board_id}-q", f"{board_id}-l"
    models = {b: ModelBoard(publish(index, b, periods=["all-time"])) for b in (quiet, loud)}
    listener.listen(wake_channels(quiet, 1) + wake_channels(loud, 1))
    listener.ignore(wake_channels(quiet, 1))  # inside its interval: need not wake anyone
    submit(index, models[quiet], quiet, "a", 1)
    submit(index, models[loud], loud, "a", 1)
    submit(index, models[loud], loud, "b", 2)
    assert _heard(listener) == [(BoardKeys(loud).wake, "")] * 2
    assert listener.listening == frozenset(wake_channels(loud, 1))


def test_a_sharded_board_wakes_on_each_shards_channel(index: RedisIndex, board_id: str) -> None:
    channels = wake_channels(board_id, 3)
    assert len(set(channels)) == 3
    assert all((c.endswith(":wake") and "~" in c) or c.startswith("lb:{") for c in channels)


def test_the_control_channel_tells_of_a_new_board_and_of_a_run_waiting_to_take_over(
    index: RedisIndex, listener: WakeListener, board_id: str
) -> None:
    listener.listen([LIVE_CONTROL_CHANNEL])
    publish(index, board_id, periods=["all-time"])  # PUT /boards/{id}
    LiveIndex(index.client).ask_to_hand_over("next-run", 1000)
    heard = [m for c, m in _heard(listener) if c == LIVE_CONTROL_CHANNEL]
    # other tests' boards may be published meanwhile: this test's two are there, in order
    assert CATALOG_CHANGED in heard and HAND_OVER in heard
    assert heard.index(CATALOG_CHANGED) < len(heard) - 1 - heard[::-1].index(HAND_OVER)


def test_a_lost_connection_is_an_error_and_listening_again_works(
    index: RedisIndex, listener: WakeListener, board_id: str
) -> None:
    model = ModelBoard(publish(index, board_id, periods=["all-time"]))
    listener.listen(wake_channels(board_id, 1))
    assert listener.connections == 1
    admin = redis.Redis(connection_pool=index.client.connection_pool)
    mine = [
        c
        for c in admin.client_list()
        if c["name"] == PUBLISHER_CLIENT_NAME and c.get("ssub") == "1"
    ]
    assert mine, "the listener's connection carries the publisher's name"
    for client in mine:
        admin.client_kill_filter(_id=client["id"])
    time.sleep(0.1)
    with pytest.raises(redis.ConnectionError):
        listener.wait(1.0)
    listener.reset()
    assert listener.connections == 0 and not listener.listening
    listener.listen(wake_channels(board_id, 1))
    submit(index, model, board_id, "ann", 5)
    assert _heard(listener) == [(BoardKeys(board_id).wake, "")]
