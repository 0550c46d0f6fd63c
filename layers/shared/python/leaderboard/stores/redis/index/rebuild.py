"""Taking a board out of service for a rebuild from the record: the lock, lost-data detection,
stopping writes and clearing the serving data."""

from __future__ import annotations

from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    BoardKeys,
    all_key_spaces,
)
from leaderboard.stores.redis.scripts import Script


class RebuildCommands(IndexBase):
    _hide_board = Script(__package__, "hide_board")

    @guarded
    def board_loaded(self, board_id: str, shards: int = 1) -> bool:
        """Whether the index serves this board (false: unknown, or its data was lost: on a
        sharded board, any shard's). One round trip to each node holding a part of it."""
        if shards <= 1:
            return bool(self.client.exists(BoardKeys(board_id).cfg))
        pipe = self.client.pipeline(transaction=False)
        for name in all_key_spaces(board_id, shards):
            pipe.exists(BoardKeys(name).cfg)
        return all(pipe.execute())

    @guarded
    def lost_since_ms(self, board_id: str, now_ms: int) -> int:
        """When this board was first seen lost (recorded on the first call)."""
        key = BoardKeys(board_id).prefix + "lost"
        previous = self.client.set(key, now_ms, nx=True, get=True, ex=86_400)
        return int(previous) if previous is not None else now_ms

    @guarded
    def lock_rebuild(self, board_id: str, seconds: int = 900) -> bool:
        """Take the board's rebuild lock (one rebuild at a time); False if someone has it."""
        return bool(
            self.client.set(BoardKeys(board_id).prefix + "rebuilding", 1, nx=True, ex=seconds)
        )

    @guarded
    def rebuild_in_progress(self, board_id: str) -> bool:
        return bool(self.client.exists(BoardKeys(board_id).prefix + "rebuilding"))

    @guarded
    def unlock_rebuild(self, board_id: str) -> None:
        self.client.delete(BoardKeys(board_id).prefix + "rebuilding")

    @guarded
    def stop_writes(self, board_id: str, shards: int = 1) -> None:
        """Refuse the board's writes, clearing nothing else: its rules (and its shards') go,
        so a submission answers 503 "being restored" as for a lost board, and reads come from
        the record. The first step of a rebuild; publish_board ends it."""
        # one key a call: on a cluster the shards' rules are on other slots
        for name in all_key_spaces(board_id, shards):
            self.client.delete(BoardKeys(name).cfg)
        self._rules.pop(board_id, None)

    @guarded
    def hide_board(self, board_id: str, shards: int = 1) -> int:
        """Take a board out of service and clear its serving data (the start of a rebuild);
        a sharded board's own keys first (its rules: writes are refused from then on), then
        every shard's."""
        cleared = 0
        for name in all_key_spaces(board_id, shards):
            keys = BoardKeys(name)
            cleared += int(
                self._hide_board(
                    keys=[
                        keys.cfg,
                        keys.registry,
                        keys.meta,
                        keys.refs,
                        keys.seq,
                        keys.range,
                        keys.hidden,
                    ],
                    args=[keys.prefix],
                )
            )
        self._rules.pop(board_id, None)
        return cleared
