"""Boards and writes for the live-update tests, straight on the index, mirrored on the
reference model."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from leaderboard.domain.periods import current_periods
from leaderboard.domain.submissions import Submission
from leaderboard.stores.redis.live.index import LiveIndex
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support.reference_model import ModelBoard

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def submit(
    index: RedisIndex,
    model: ModelBoard,
    board_id: str,
    player: str,
    score: float,
    region: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> int:
    return submit_on_both(index, model, board_id, player, score, region, metadata)[0]


def submit_on_both(
    index: RedisIndex,
    model: ModelBoard,
    board_id: str,
    player: str,
    score: float,
    region: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[int, list[tuple]]:
    """(the version Redis answered, the model's standings of this submission)."""
    periods = {k: p for k, p in current_periods(NOW).items() if k in model.cfg.periods}
    # Tie-breaker boards: values that follow from the write, few enough to tie often.
    tiebreakers = {
        c.name: (int(score) // (i + 2)) % 3 for i, c in enumerate(model.cfg.tiebreakers)
    } or None
    result = index.submit(
        board_id,
        Submission(
            player_id=player,
            score=score,
            region=region,
            metadata=metadata,
            tiebreakers=tiebreakers,
        ),
        event_id=str(uuid.uuid4()),
        now_ms=int(NOW.timestamp() * 1000),
        periods=periods,
        idempotency=None,
    )
    _, standings = model.submit(player, float(score), region, metadata, NOW, tiebreakers)
    return result.version, standings


def num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


class OnlyBoards(LiveIndex):
    """The index as one test's publisher should see it: only that test's boards, not every
    board earlier tests left in the shared Redis (whose changes would add messages and work)."""

    def __init__(self, client: Any, *board_ids: str, **options: Any) -> None:
        super().__init__(client, **options)
        self.board_ids = set(board_ids)

    def catalog(self) -> list[dict[str, Any]]:
        return [b for b in super().catalog() if b["board_id"] in self.board_ids]


class RecordedMessages:
    """An event API that keeps the messages it is sent, by channel."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def publish(self, channel: str, events: list[str]) -> None:
        self.messages.extend((channel, json.loads(e)) for e in events)

    def on(self, channel: str) -> list[dict[str, Any]]:
        return [m for c, m in self.messages if c == channel]
