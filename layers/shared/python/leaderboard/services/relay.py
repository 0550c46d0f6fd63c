"""The outbox relay: the safety net between the submit script and the queue.

The submit script appends every event to its board's outbox in the same atomic step that
applies it. Normally the write path sends the event and the persister stores it; the relay
(run on a schedule) then finds it in PostgreSQL and only trims the outbox. If the process died
after the script and before the send, or the send failed and the client never retried, the
relay finds the event missing from PostgreSQL and sends it. Sending twice is harmless: the
persister stores an event id once.

The outbox also carries what the live publisher alone needs: an admin hiding a player, showing
them again or removing them (operations `hide`/`unhide`/`remove`, recorded in PostgreSQL by the
admin route itself). The relay trims those without sending them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from leaderboard.domain.events import ScoreEvent
from leaderboard.domain.submissions import Submission
from leaderboard.services.scores import EventSink, build_event
from leaderboard.stores.redis.keys import LIVE_ONLY_OPERATIONS
from leaderboard.stores.redis.serving_index import RedisIndex


class EventRecord(Protocol):
    def stored_event_ids(self, event_ids: list[str]) -> set[str]: ...


@dataclass
class RelayReport:
    boards: int = 0
    scanned: int = 0
    sent: int = 0
    already_stored: int = 0


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() else value


class OutboxRelay:
    def __init__(
        self,
        index: RedisIndex,
        record: EventRecord,
        sink: EventSink,
        *,
        min_age_ms: int = 60_000,
        batch: int = 500,
    ) -> None:
        self.index = index
        self.record = record
        self.sink = sink
        self.min_age_ms = min_age_ms
        self.batch = batch

    def run(self, board_ids: list[str], min_age_ms: int | None = None) -> RelayReport:
        report = RelayReport()
        age = self.min_age_ms if min_age_ms is None else min_age_ms
        cutoff = self.index.server_time_ms() - age
        for board_id in board_ids:
            report.boards += 1
            for outbox in self.index.key_spaces(board_id):  # a sharded board: one per shard
                self._drain(board_id, outbox, cutoff, report)
        return report

    def _drain(self, board_id: str, outbox: str, cutoff: int, report: RelayReport) -> None:
        while True:
            entries = self.index.outbox_entries(outbox, older_than_ms=cutoff, count=self.batch)
            if not entries:
                break
            events: list[ScoreEvent] = []
            for _, result, fields in entries:
                if result.operation in LIVE_ONLY_OPERATIONS:
                    continue
                submission = Submission(
                    player_id=fields["p"],
                    score=_number(fields["s"]),
                    region=fields.get("g") or None,
                    metadata=_metadata(fields.get("m", "")),
                    team_id=fields.get("t") or None,
                )
                events.append(build_event(board_id, submission, result))
            stored = self.record.stored_event_ids([e.event_id for e in events])
            for event in events:
                if event.event_id not in stored:
                    self.sink.send(event)
                    report.sent += 1
            report.scanned += len(events)
            report.already_stored += len(stored)
            self.index.outbox_ack(outbox, [entry_id for entry_id, _, _ in entries])
            if len(entries) < self.batch:
                break


def _metadata(raw: str) -> dict[str, str | int | float | bool] | None:
    return json.loads(raw) if raw else None
