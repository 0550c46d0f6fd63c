"""Real score events from the real write path, for the tests of what consumes them."""

from __future__ import annotations

import random

from leaderboard.domain.auth import Caller
from leaderboard.services.scores import ScoreService
from tests.support.boards import ListSink, publish

SERVER = Caller("game-server", frozenset({"leaderboard/server"}))


def workload(index, board_id, clock, *, n=400, seed=1, mode="increment", ties="first"):
    """Real events from the real write path: a trimmed board over several periods."""
    publish(
        index,
        board_id,
        mode=mode,
        ties=ties,
        max_entries=8,
        periods=["all-time", "daily", "weekly"],
        regions=["EU", "NA"],
    )
    sink = ListSink()
    service = ScoreService(index, sink, clock)
    rng = random.Random(seed)
    for i in range(n):
        if i % 97 == 0:
            clock.advance(hours=rng.choice([5, 30]))
        body = {
            "player_id": f"p{rng.randrange(20)}",
            # best and set boards see repeats: standings the event leaves unchanged
            "score": rng.choice([1, 2, 3, 5, -1] if mode == "increment" else [10, 20, 30, 40]),
            "region": rng.choice(["EU", "NA", None]),
        }
        if rng.random() < 0.3:
            body["metadata"] = {"name": f"n{i}"}
        service.submit(board_id, body, SERVER, None)
    return sink.events
