"""Watches for player channels (docs/API.md, "Player channels"): a player, or a game server for
it, asks to be told of standing changes on one board channel. The publisher does the telling;
this is the write side: who may watch, what, and for how long."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from leaderboard.domain.auth import Caller
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.errors import Forbidden, NotFound
from leaderboard.domain.live import Channel, player_channel
from leaderboard.domain.validation import require_board_id, require_player_id
from leaderboard.domain.watches import (
    MAX_TTL_SECONDS,
    check_watchable,
    parse_optional_region,
    parse_period_kind,
    parse_watch,
)
from leaderboard.stores.redis.records import WatchStanding

# The query parameters of DELETE .../watch (every other watch parameter is in the body).
UNWATCH_PARAMS = ("period", "region")


class WatchIndex(Protocol):
    def get_board(self, board_id: str) -> dict[str, Any] | None: ...

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
    ) -> WatchStanding: ...

    def unwatch(self, board_id: str, player_id: str, channel: Channel) -> None: ...


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class WatchService:
    def __init__(
        self, index: WatchIndex, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self.index = index
        self.clock = clock

    def put(self, board_id: str, player_id: str, body: Any, caller: Caller) -> dict[str, Any]:
        """Start or renew a watch; the answer names the channel to subscribe to and the
        player's standing to start from (the last rank seen)."""
        board_id, player_id = self._authorized(board_id, player_id, caller)
        request = parse_watch(body, player_id)
        board = self._board(board_id)
        check_watchable(board, request.period_kind, request.region)
        now = self.clock()
        channel = Channel(
            request.period_kind, board.current_period_id(request.period_kind, now), request.region
        )
        expires = now + timedelta(seconds=request.ttl_seconds)
        standing = self.index.watch(
            board_id,
            player_id,
            channel,
            until_ms=int(expires.timestamp() * 1000),
            top_n=request.top_n,
            friends=request.friends,
            keep_seconds=MAX_TTL_SECONDS,
            now_ms=int(now.timestamp() * 1000),
        )
        return {
            "board_id": board_id,
            "player_id": player_id,
            "period_kind": channel.period_kind,
            "period": channel.period_id,
            "region": channel.region,
            "top_n": request.top_n,
            "friends": list(standing.friends),
            "channel": player_channel(player_id),
            "expires_at": _iso(expires),
            "rank": standing.rank,
            "score": standing.score,
        }

    def end(
        self, board_id: str, player_id: str, period: str | None, region: str | None, caller: Caller
    ) -> None:
        """End a watch (none is no error): nothing is published for it from then on."""
        board_id, player_id = self._authorized(board_id, player_id, caller)
        kind, region = parse_period_kind(period), parse_optional_region(region)
        board = self._board(board_id)
        check_watchable(board, kind, region)
        channel = Channel(kind, board.current_period_id(kind, self.clock()), region)
        self.index.unwatch(board_id, player_id, channel)

    @staticmethod
    def _authorized(board_id: str, player_id: str, caller: Caller) -> tuple[str, str]:
        board_id, player_id = require_board_id(board_id), require_player_id(player_id)
        if caller.subject != player_id and not caller.is_server:
            raise Forbidden("a player token may only watch for its own player_id")
        return board_id, player_id

    def _board(self, board_id: str) -> BoardConfig:
        public = self.index.get_board(board_id)
        if public is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        return BoardConfig.from_public(public)
