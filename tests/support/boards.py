"""Test doubles for the domain's collaborators, and a board published in one call."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from leaderboard.domain.boards import parse_board_request
from leaderboard.stores.redis.serving_index import RedisIndex


class MovableClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class ListSink:
    """Collects events instead of sending them (for tests of the Redis side only)."""

    def __init__(self, refuse: set[str] | None = None) -> None:
        self.events: list[Any] = []
        self.refuse = refuse or set()  # player ids whose events a batch send fails
        self.batches: list[int] = []

    def send(self, event: Any) -> None:
        self.events.append(event)

    def send_many(self, events: Any) -> set[int]:
        self.batches.append(len(events))
        failed = {n for n, e in enumerate(events) if e.player_id in self.refuse}
        self.events.extend(e for n, e in enumerate(events) if n not in failed)
        return failed


def publish(index: RedisIndex, board_id: str, **rules: Any) -> Any:
    hook = rules.get("validation_hook")
    board = parse_board_request(
        board_id,
        rules,
        None,
        has_entries=False,
        now_iso="2026-11-22T00:00:00Z",
        # the hook a test names is taken as configured
        hook_targets={hook["target"]} if isinstance(hook, dict) else frozenset(),
    )
    index.publish_board(board)
    return board
