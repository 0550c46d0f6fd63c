"""A board's rules published to the scripts and the catalog (GET /boards reads one key)."""

from __future__ import annotations

import json
from typing import Any

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.shards import shard_board_id
from leaderboard.stores.redis.client import spublish
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    CATALOG_CHANGED,
    CATALOG_KEY,
    LIVE_CONTROL_CHANNEL,
    BoardKeys,
)
from leaderboard.stores.redis.scripts import Script


class BoardCommands(IndexBase):
    _put_config = Script(__package__, "put_config")

    @guarded
    def publish_board(self, board: BoardConfig) -> bool:
        """Make a board's rules visible to the scripts and the catalog (newest version wins)."""
        keys = BoardKeys(board.board_id)
        text = json.dumps(board.to_script_config(), separators=(",", ":"))
        before = self.client.get(keys.cfg)
        written = self._put_config(keys=[keys.cfg, keys.hidden], args=[text, board.version])
        if written:
            # A sharded board's rules are on every shard too (its writes and reads prove them
            # there); a board that had other shards (only while it had no entries) loses them.
            old = int(json.loads(before).get("shards", 1)) if before else 1
            for shard in range(board.shards if board.shards > 1 else 0):
                shard_keys = BoardKeys(shard_board_id(board.board_id, shard, board.shards))
                self._put_config(
                    keys=[shard_keys.cfg, shard_keys.hidden], args=[text, board.version]
                )
            gone = range(board.shards if board.shards > 1 else 0, old if old > 1 else 0)
            for shard in gone:
                self.client.delete(BoardKeys(shard_board_id(board.board_id, shard, old)).cfg)
            self._rules.pop(board.board_id, None)
            public = board.to_public() | {"version": board.version}
            self.client.hset(CATALOG_KEY, board.board_id, json.dumps(public))
            # the live publisher reads the catalog again now: a new board's first write is
            # published at once, not after the publisher's next look at the catalog
            spublish(self.client, LIVE_CONTROL_CHANNEL, CATALOG_CHANGED)
        return bool(written)

    @guarded
    def get_board(self, board_id: str) -> dict[str, Any] | None:
        raw = self.client.hget(CATALOG_KEY, board_id)
        return None if raw is None else public_board(raw)

    @guarded
    def list_boards(self) -> list[dict[str, Any]]:
        boards = [public_board(raw) for raw in self.client.hvals(CATALOG_KEY)]
        return sorted(boards, key=lambda b: b["board_id"])


def public_board(raw: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(raw)
    data.pop("version", None)
    data.setdefault("shards", 1)  # boards published before shards existed
    data.setdefault("validation_hook", None)  # and before validation hooks
    data.setdefault("score_tiers", None)  # and before score tiers
    return data
