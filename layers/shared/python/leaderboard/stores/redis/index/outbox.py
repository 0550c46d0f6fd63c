"""The outbox: score events kept on the board until the relay finds them in PostgreSQL."""

from __future__ import annotations

from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    LIVE_ONLY_OPERATIONS,
    BoardKeys,
    all_key_spaces,
)
from leaderboard.stores.redis.records import SubmitResult, parse_record, with_verdict


class OutboxCommands(IndexBase):
    @guarded
    def outbox_event_ids(self, board_id: str, shards: int = 1, *, chunk: int = 1000) -> list[str]:
        """The score events still in the board's outboxes: each stays until the relay finds
        it in PostgreSQL, so these are the ones the record may lack (live-only entries, a
        hiding or a removal, are no score events)."""
        found: list[str] = []
        for name in all_key_spaces(board_id, shards):
            key, start = BoardKeys(name).outbox, "-"
            while True:
                rows = self.client.xrange(key, start, "+", count=chunk)
                for _, fields in rows:
                    head = fields.get("r", "").split("\n", 1)[0].split("\t")
                    if len(head) >= 5 and head[4] not in LIVE_ONLY_OPERATIONS:
                        found.append(head[0])
                if len(rows) < chunk:
                    break
                start = "(" + rows[-1][0]
        return found

    @guarded
    def outbox_entries(
        self, board_id: str, *, older_than_ms: int, count: int
    ) -> list[tuple[str, SubmitResult, dict[str, str]]]:
        """Outbox entries written before `older_than_ms` (Redis clock): (id, result, request)."""
        key = BoardKeys(board_id).outbox
        rows = self.client.xrange(key, "-", str(older_than_ms), count=count)
        return [
            (
                entry_id,
                with_verdict(parse_record(fields["r"], False, self._rules_of(board_id)), fields),
                fields,
            )
            for entry_id, fields in rows
        ]

    @guarded
    def outbox_ack(self, board_id: str, entry_ids: list[str]) -> None:
        if entry_ids:
            self.client.xdel(BoardKeys(board_id).outbox, *entry_ids)
