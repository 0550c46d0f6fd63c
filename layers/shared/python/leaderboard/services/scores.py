"""Submitting a score: validate, apply in one Redis script, hand the event to the queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from leaderboard.domain.auth import Caller, submission_player
from leaderboard.domain.clock import Clock, system_clock, to_ms
from leaderboard.domain.errors import (
    BadRequest,
    BoardMissing,
    DomainError,
    Forbidden,
    RateLimited,
    Unavailable,
)
from leaderboard.domain.events import ScoreEvent, new_event_id
from leaderboard.domain.hooks import HookConfig, HookFailure, Screening, screenings
from leaderboard.domain.leagues import League
from leaderboard.domain.periods import current_periods
from leaderboard.domain.submissions import Submission, parse_batch, parse_submission
from leaderboard.domain.validation import (
    known_fields,
    require_board_id,
    require_idempotency_key,
    require_player_id,
)
from leaderboard.stores.redis.index.writes import Screen
from leaderboard.stores.redis.records import BatchWrite, SubmitResult
from leaderboard.stores.redis.serving_index import RedisIndex


class HookJudge(Protocol):
    """Calls a board's validation hook (leaderboard.stores.aws.validation_hooks)."""

    def judge(
        self, hook: HookConfig, board_id: str, items: Sequence[tuple[Submission, str | None]]
    ) -> list[Screening]: ...


class EventSink(Protocol):
    def send(self, event: ScoreEvent) -> None: ...

    def send_many(self, events: Sequence[ScoreEvent]) -> set[int]:
        """Positions of the events that could not be sent."""
        ...


@dataclass(frozen=True, slots=True)
class SubmitResponse:
    body: dict[str, Any]
    replayed: bool
    event: ScoreEvent


class ScoreService:
    """Submissions. `in_record(board_id)` tells a lost board (503 while it is restored) from
    an unknown one (404); it is consulted only when the index has no such board. `hooks`
    calls boards' validation hooks; without it a board's hook counts as failed (its policy
    answers)."""

    def __init__(
        self,
        index: RedisIndex,
        sink: EventSink,
        clock: Clock = system_clock,
        in_record: Callable[[str], bool] | None = None,
        hooks: HookJudge | None = None,
    ) -> None:
        self.index = index
        self.sink = sink
        self.clock = clock
        self.in_record = in_record
        self.hooks = hooks

    def _screen(self, board_id: str, items: Sequence[tuple[Submission, str | None]]) -> Screen:
        """The index calls this only for a board with a hook, with the positions it may apply:
        one hook call for all of them."""

        def screen(hook: HookConfig, positions: Sequence[int]) -> Sequence[Screening]:
            chosen = [items[p] for p in positions]
            if self.hooks is None:
                failure = HookFailure("no validation hooks are configured here")
                return screenings(hook, failure, len(chosen))
            return self.hooks.judge(hook, board_id, chosen)

        return screen

    def submit(
        self, board_id: str, body: dict[str, Any], caller: Caller, idempotency_key: str | None
    ) -> SubmitResponse:
        board_id = require_board_id(board_id)
        key = require_idempotency_key(idempotency_key)
        submission = parse_submission(body, caller)
        now = self.clock()
        try:
            result = self._apply(
                board_id, submission, now, key, caller, self._screen(board_id, [(submission, key)])
            )
        except BoardMissing:
            if self.in_record is not None and self.in_record(board_id):
                raise Unavailable(
                    f"board {board_id!r} is being restored from the system of record",
                    retry_after=15,
                ) from None
            raise
        if not result.replicated:
            # Not on a replica yet: a failover now would lose it, so it is neither acknowledged
            # nor queued; if it survives, the board's outbox brings it to the record.
            raise _not_replicated()
        event = build_event(board_id, submission, result)
        # A replay sends the event again: the first send may be what failed, and the
        # persister ignores an event id it has already stored.
        self.sink.send(event)
        return SubmitResponse(
            body=_response(board_id, submission, result, self.index.league_of(board_id)),
            replayed=result.replayed,
            event=event,
        )

    def join(self, board_id: str, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Sign a player up for a tournament: a player token signs itself up, a server or
        admin token names `player_id` (as for submissions). `period`: the window joined (a
        recurring tournament's: the one open now, else the next one)."""
        board_id = require_board_id(board_id)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        known_fields(body, {"player_id"})
        requested = body.get("player_id")
        if requested is not None:
            requested = require_player_id(requested)
        player_id = require_player_id(submission_player(caller, requested))
        joined, participants, period = self.index.join(board_id, player_id, to_ms(self.clock()))
        return {
            "board_id": board_id,
            "player_id": player_id,
            "period": period,
            "joined": joined,
            "participants": participants,
        }

    def submit_batch(self, board_id: str, body: dict[str, Any], caller: Caller) -> BatchResponse:
        """Up to 500 submissions to one board: one Redis round trip, batched queue sends, one
        result per item in order; a bad item fails alone."""
        board_id = require_board_id(board_id)
        if not caller.is_server:
            raise Forbidden("batch submissions need the leaderboard/server scope")
        items = parse_batch(body, caller)
        now = self.clock()
        now_ms = to_ms(now)
        results: list[dict[str, Any] | None] = [None] * len(items)
        positions: list[int] = []  # the item each write came from
        writes: list[BatchWrite] = []
        for position, item in enumerate(items):
            if item.submission is None:
                results[position] = _item_error(item.error or BadRequest("invalid submission"))
                continue
            key = item.idempotency_key
            positions.append(position)
            writes.append(
                BatchWrite(
                    item.submission, new_event_id(now_ms), (caller.subject, key) if key else None
                )
            )
        try:
            if writes:
                screen = self._screen(
                    board_id,
                    [(w.submission, w.idempotency[1] if w.idempotency else None) for w in writes],
                )
                outcomes = self.index.submit_many(
                    board_id, writes, now_ms=now_ms, periods=current_periods(now), screen=screen
                )
            else:  # every item is bad: the board must still exist (404 before item errors)
                outcomes = []
                if self.index.write_rules(board_id) is None:
                    raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        except BoardMissing:
            if self.in_record is not None and self.in_record(board_id):
                raise Unavailable(
                    f"board {board_id!r} is being restored from the system of record",
                    retry_after=15,
                ) from None
            raise
        applied: list[tuple[int, Submission, SubmitResult]] = []
        for position, write, outcome in zip(positions, writes, outcomes, strict=True):
            if isinstance(outcome, SubmitResult) and outcome.replicated:
                applied.append((position, write.submission, outcome))
            elif isinstance(
                outcome, SubmitResult
            ):  # as a single submission: neither sent nor acked
                results[position] = _item_error(_not_replicated())
            else:
                results[position] = _item_error(outcome)
        # Replays are sent again, as single submissions are: the first send may have failed.
        events = [build_event(board_id, sub, result) for _, sub, result in applied]
        unsent = self.sink.send_many(events) if events else set()
        for n, (position, submission, result) in enumerate(applied):
            results[position] = (
                _item_error(_queue_down())
                if n in unsent
                else {
                    "status": 200,
                    "replayed": result.replayed,
                    "result": _response(
                        board_id, submission, result, self.index.league_of(board_id)
                    ),
                }
            )
        done = [r for r in results if r is not None]
        return BatchResponse(
            body={"board_id": board_id, "results": done},
            submitted=sum(1 for r in done if r["status"] == 200 and not r["replayed"]),
            replayed=sum(1 for r in done if r["status"] == 200 and r["replayed"]),
            failed=sum(1 for r in done if r["status"] != 200),
        )

    def _apply(
        self,
        board_id: str,
        submission: Submission,
        now: datetime,
        key: str | None,
        caller: Caller,
        screen: Screen | None = None,
    ) -> SubmitResult:
        return self.index.submit(
            board_id,
            submission,
            event_id=new_event_id(to_ms(now)),
            now_ms=to_ms(now),
            periods=current_periods(now),
            idempotency=(caller.subject, key) if key else None,
            screen=screen,
        )


@dataclass(frozen=True, slots=True)
class BatchResponse:
    body: dict[str, Any]
    submitted: int
    replayed: int
    failed: int


def _queue_down() -> Unavailable:
    return Unavailable(
        "the score queue is unavailable; this submission was applied: retry it with the same "
        "idempotency_key to get its result",
        retry_after=1,
    )


def _not_replicated() -> Unavailable:
    return Unavailable(
        "this submission was applied but no replica has confirmed it yet; retry it with the "
        "same idempotency key to get its result",
        retry_after=1,
    )


def _item_error(error: DomainError) -> dict[str, Any]:
    """A failed item: the status and error body a single submission would have answered."""
    body = error.body()
    if isinstance(error, (RateLimited, Unavailable)):
        body["retry_after"] = error.retry_after
    return {"status": error.status, "error": body}


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
        arrival=result.arrival,
        hook_verdict=result.hook_verdict,
        hook_reason=result.hook_reason,
        team_id=submission.team_id,
    )


def _response(
    board_id: str, submission: Submission, result: SubmitResult, league: League | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "board_id": board_id,
        "player_id": submission.player_id,
        "event_id": result.event_id,
        "applied": result.applied,
        "version": result.version,
        "standings": [s.to_json() for s in result.standings],
    }
    if result.league is not None and league is not None:
        body["league"] = league.placement(result.league.season, result.league.group)
        body["league"]["placed"] = result.league.placed
    return body
