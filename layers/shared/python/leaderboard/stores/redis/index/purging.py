"""Purging archived periods' sets a chunk at a time, and counting a board's entries."""

from __future__ import annotations

from leaderboard.domain.boards import BoardConfig
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    BoardKeys,
)
from leaderboard.stores.redis.scripts import Script


class PurgeCommands(IndexBase):
    _purge_set = Script(__package__, "purge_set")
    _board_entries = Script(__package__, "board_entries")

    @guarded
    def purge_chunk(self, board: BoardConfig, suffix: str, count: int) -> int:
        """Remove up to `count` entries of an archived sorted set (on each shard of a sharded
        board); returns how many are left."""
        left = 0
        for name in self.key_spaces(board.board_id):
            keys = BoardKeys(name)
            left += int(
                self._purge_set(
                    keys=[
                        f"{keys.prefix}z:{suffix}",
                        f"{keys.prefix}m:{suffix}",
                        keys.refs,
                        keys.meta,
                        keys.registry,
                        f"{keys.prefix}zh:{suffix}",
                    ],
                    args=[
                        suffix,
                        count,
                        "1" if board.ties == "first" or board.tiebreakers else "0",
                    ],
                )
            )
        return left

    @guarded
    def board_entry_count(self, board_id: str) -> int:
        """Entries on every sorted set of the board (of every shard of a sharded board)."""
        total = 0
        for name in self.key_spaces(board_id):
            keys = BoardKeys(name)
            total += int(self._board_entries(keys=[keys.registry], args=[keys.prefix]))
        return total
