"""Submitting a score: validate, apply in one Redis script, hand the event to the queue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from leaderboard.domain.auth import Caller
from leaderboard.domain.clock import Clock, system_clock, to_ms
from leaderboard.domain.errors import BoardMissing, Unavailable
from leaderboard.domain.events import ScoreEvent, new_event_id
from leaderboard.domain.periods import current_periods
from leaderboard.domain.submissions import Submission, parse_submission
from leaderboard.domain.validation import require_board_id, require_idempotency_key
from leaderboard.stores.redis_index import RedisIndex, SubmitResult


class EventSink(Protocol):
    def send(self, event: ScoreEvent) -> None: ...


@dataclass(frozen=True, slots=True)
class SubmitResponse:
    body: dict[str, Any]
    replayed: bool
    event: ScoreEvent


class ScoreService:
    """Submissions. `in_record(board_id)` tells a lost board (503 while it is restored) from
    an unknown one (404); it is consulted only when the index has no such board."""

    def __init__(
        self,
        index: RedisIndex,
        sink: EventSink,
        clock: Clock = system_clock,
        in_record: Callable[[str], bool] | None = None,
    ) -> None:
        self.index = index
        self.sink = sink
        self.clock = clock
        self.in_record = in_record

    def submit(
        self, board_id: str, body: dict[str, Any], caller: Caller, idempotency_key: str | None
    ) -> SubmitResponse:
        board_id = require_board_id(board_id)
        key = require_idempotency_key(idempotency_key)
        submission = parse_submission(body, caller)
        now = self.clock()
        try:
            result = self._apply(board_id, submission, now, key, caller)
        except BoardMissing:
            if self.in_record is not None and self.in_record(board_id):
                raise Unavailable(
                    f"board {board_id!r} is being restored from the system of record",
                    retry_after=15,
                ) from None
            raise
        event = build_event(board_id, submission, result)
        # A replay sends the event again: the first send may be what failed, and the
        # persister ignores an event id it has already stored.
        self.sink.send(event)
        return SubmitResponse(
            body=_response(board_id, submission, result), replayed=result.replayed, event=event
        )

    def _apply(
        self, board_id: str, submission: Submission, now: datetime, key: str | None, caller: Caller
    ) -> SubmitResult:
        return self.index.submit(
            board_id,
            submission,
            event_id=new_event_id(to_ms(now)),
            now_ms=to_ms(now),
            periods=current_periods(now),
            idempotency=(caller.subject, key) if key else None,
        )


def build_event(board_id: str, submission: Submission, result: SubmitResult) -> ScoreEvent:
    """The queue event of an applied submission (also rebuilt from the outbox)."""
    return ScoreEvent(
        event_id=result.event_id,
        board_id=board_id,
        player_id=submission.player_id,
        operation=result.operation,
        submitted_score=submission.score,
        region=submission.region,
        metadata=submission.metadata,
        version=result.version,
        applied=result.applied,
        occurred_at_ms=result.occurred_at_ms,
        standings=result.standings,
        evictions=result.evictions,
    )


def _response(board_id: str, submission: Submission, result: SubmitResult) -> dict[str, Any]:
    return {
        "board_id": board_id,
        "player_id": submission.player_id,
        "event_id": result.event_id,
        "applied": result.applied,
        "version": result.version,
        "standings": [s.to_json() for s in result.standings],
    }
