"""Who a board shows: hiding and showing a player again, the hidden players, and removing a
player's entries (each a script call on the player's shard, with the live publisher told)."""

from __future__ import annotations

import time
import uuid

from leaderboard.domain.errors import BoardMissing
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import BoardKeys, player_key_space
from leaderboard.stores.redis.scripts import Script


class VisibilityCommands(IndexBase):
    _visibility = Script(__package__, "visibility")
    _delete_player = Script(__package__, "delete_player")

    @guarded
    def delete_player(self, board_id: str, player_id: str) -> tuple[int, int]:
        """Remove a player everywhere on the board; returns (entries removed, version)."""
        keys = BoardKeys(player_key_space(board_id, player_id, self.shards_of(board_id)))
        removed, version = self._delete_player(
            keys=[keys.registry, keys.meta, keys.refs, keys.seq, keys.outbox],
            # the removal's outbox entry, for the live publisher (delete_player.lua)
            args=[player_id, keys.prefix, int(time.time() * 1000), str(uuid.uuid4())],
        )
        return int(removed), int(version)

    @guarded
    def hidden_players(self, board_id: str) -> list[str]:
        """The players the board hides (on every shard of a sharded board)."""
        found: list[str] = []
        for name in self.key_spaces(board_id):
            found += self.client.hkeys(BoardKeys(name).hidden)
        return sorted(found)

    @guarded
    def set_hidden(
        self, board_id: str, player_id: str, hidden: bool, *, event_id: str, now_ms: int
    ) -> tuple[bool, int]:
        """Hide a player on a board, or show them again (on their shard of a sharded board):
        (whether it changed anything, entries moved). BoardMissing if the board has no rules
        here (unknown, or its serving data was lost)."""
        keys = BoardKeys(player_key_space(board_id, player_id, self.shards_of(board_id)))
        reply = self._visibility(
            keys=[keys.cfg, keys.registry, keys.hidden, keys.seq, keys.outbox],
            args=[
                "hide" if hidden else "unhide",
                player_id,
                keys.prefix,
                now_ms,
                event_id,
                now_ms,
            ],
        )
        if reply[0] == "ERR":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        return bool(int(reply[1])), int(reply[3])
