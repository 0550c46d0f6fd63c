"""The rollover's bookkeeping: which boards are due, the periods a board holds, which are
archived."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from leaderboard.domain.shards import shard_board_ids
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    ROLLOVER_DUE_KEY,
    BoardKeys,
)
from leaderboard.stores.redis.scripts import Script


class RolloverCommands(IndexBase):
    _periods = Script(__package__, "periods")

    @guarded
    def rollover_due_at(self, board_id: str, at: datetime | None) -> None:
        """When the rollover next has work on this board (None: never, until told again)."""
        if at is None:
            self.client.zrem(ROLLOVER_DUE_KEY, board_id)
        else:
            self.client.zadd(ROLLOVER_DUE_KEY, {board_id: int(at.timestamp() * 1000)})

    @guarded
    def rollover_due(self, now: datetime, limit: int = 1000) -> list[str]:
        """The boards the rollover has work on at `now`, the longest waiting first."""
        due = self.client.zrangebyscore(
            ROLLOVER_DUE_KEY, "-inf", int(now.timestamp() * 1000), start=0, num=limit
        )
        return [b.decode() if isinstance(b, bytes) else b for b in due]

    @guarded
    def period_sets(
        self, board_id: str
    ) -> tuple[dict[str, Any] | None, dict[str, int], dict[str, int]]:
        """(rules, {sorted-set suffix: entries}, {archived period: entries}), one round trip
        (one per shard of a sharded board: its sets summed, a period archived once every
        shard says so)."""
        rules: dict[str, Any] | None = None
        sets: dict[str, int] = {}
        archived: dict[str, int] | None = None
        names = [board_id]  # its own keys answer for an unsharded board: one round trip
        for name in names:
            keys = BoardKeys(name)
            reply = self._periods(keys=[keys.registry, keys.archived, keys.cfg], args=[keys.prefix])
            if name == board_id:
                rules = json.loads(reply[0]) if reply[0] else None
                shards = int((rules or {}).get("shards", 1))
                if shards > 1:  # its rules here, its entries in its shards
                    names += shard_board_ids(board_id, shards)
                    continue
            count = int(reply[1])
            for i in range(count):
                suffix = reply[2 + 2 * i]
                sets[suffix] = sets.get(suffix, 0) + int(reply[3 + 2 * i])
            rest = reply[2 + 2 * count :]
            marked = {rest[i]: int(rest[i + 1]) for i in range(0, len(rest), 2)}
            archived = (
                marked if archived is None else {p: n for p, n in archived.items() if p in marked}
            )
        return rules, sets, archived or {}

    @guarded
    def mark_archived(self, board_id: str, period_id: str, entries: int) -> None:
        for name in self.key_spaces(board_id):
            self.client.hset(BoardKeys(name).archived, period_id, entries)
