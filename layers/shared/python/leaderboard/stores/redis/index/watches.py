"""Player watches (player channels): started, renewed and ended by watch.lua, one round trip."""

from __future__ import annotations

import time

from leaderboard.domain.errors import BoardMissing
from leaderboard.domain.live import Channel
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    BoardKeys,
)
from leaderboard.stores.redis.records import WatchStanding
from leaderboard.stores.redis.scripts import Script


class WatchCommands(IndexBase):
    _watch = Script(__package__, "watch")

    @guarded
    def watch(
        self,
        board_id: str,
        player_id: str,
        channel: Channel,
        *,
        until_ms: int,
        top_n: int,
        friends: tuple[str, ...] | None,
        keep_seconds: int,
        now_ms: int | None = None,
    ) -> WatchStanding:
        """Start or renew a player's watch of one channel (friends None: keep the watch's);
        the player's standing now. A new watch starts its chain of messages there; a renewal
        (the watch had not expired at `now_ms`) keeps its chain (watch.lua)."""
        keys = BoardKeys(board_id)
        reply = self._watch(
            keys=self._watch_keys(keys, channel),
            args=[
                player_id,
                "put",
                until_ms,
                top_n,
                "-" if friends is None else ",".join(friends),
                keep_seconds,
                int(time.time() * 1000) if now_ms is None else now_ms,
            ],
        )
        if reply[0] == "GONE":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        _, score, rank, kept = reply
        return WatchStanding(
            score=format_score(float(score)) if score != "" else None,
            rank=int(rank) if rank != "" else None,
            friends=tuple(kept.split(",")) if kept else (),
        )

    @guarded
    def unwatch(self, board_id: str, player_id: str, channel: Channel) -> None:
        keys = BoardKeys(board_id)
        reply = self._watch(
            keys=self._watch_keys(keys, channel), args=[player_id, "end", 0, 0, "", 0]
        )
        if reply[0] == "GONE":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)

    @staticmethod
    def _watch_keys(keys: BoardKeys, channel: Channel) -> list[str]:
        period, region = channel.period_id, channel.region
        return [
            keys.cfg,
            keys.zset(period, region),
            keys.members(period, region),
            keys.watches(channel.period_kind, region),
            keys.watched_ranks(period, region),
            keys.seq,
        ]
