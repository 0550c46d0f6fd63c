"""Reading boards: pages, a player's standing, windows around a rank or a player."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leaderboard.domain.clock import Clock, system_clock
from leaderboard.domain.errors import BadRequest, NotFound
from leaderboard.domain.periods import ALL_TIME, Period, resolve_period
from leaderboard.domain.validation import (
    query_int,
    require_board_id,
    require_player_id,
    require_region,
)
from leaderboard.stores.redis_index import RedisIndex, Window

MAX_WINDOW = 100
MAX_OFFSET = 999_999_999
Query = Mapping[str, str | None]
_ENTRIES_PARAMS = {"period", "region", "offset", "limit", "around_rank"}
_PLAYER_PARAMS = {"period", "region"}
_AROUND_PARAMS = {"period", "region", "count"}


def _only(query: Query, allowed: set[str]) -> None:
    unknown = sorted(set(query) - allowed)
    if unknown:
        raise BadRequest(f"unknown query parameter(s): {', '.join(unknown)}", fields=unknown)


class ReadService:
    def __init__(self, index: RedisIndex, clock: Clock = system_clock) -> None:
        self.index = index
        self.clock = clock

    def _scope(self, board_id: str, query: Query) -> tuple[str, Period, str | None]:
        board_id = require_board_id(board_id)
        period = resolve_period(query.get("period"), self.clock())
        raw_region = query.get("region")
        region = None if raw_region in (None, "") else require_region(raw_region)
        return board_id, period, region

    def _require_data(self, period: Period, window: Window) -> None:
        """A past or future period with no entries is unknown (404); the open one is just empty."""
        if window.total == 0 and period.kind != ALL_TIME and not period.is_open_at(self.clock()):
            raise NotFound(f"no data for period {period.id}", period=period.id)

    def _envelope(
        self, board_id: str, period: Period, region: str | None, window: Window
    ) -> dict[str, Any]:
        return {"board_id": board_id, "period": period.id, "region": region, "total": window.total}

    def entries(self, board_id: str, query: Query) -> dict[str, Any]:
        _only(query, _ENTRIES_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        limit = query_int(query.get("limit"), "limit", default=10, minimum=1, maximum=MAX_WINDOW)
        if query.get("around_rank") is not None:
            if query.get("offset") is not None:
                raise BadRequest("use either offset or around_rank, not both", field="offset")
            rank = query_int(
                query.get("around_rank"), "around_rank", default=1, minimum=1, maximum=MAX_OFFSET
            )
            window = self.index.window(
                board_id, period, region, op="around_rank", size=limit, offset_or_rank=rank
            )
        else:
            offset = query_int(
                query.get("offset"), "offset", default=0, minimum=0, maximum=MAX_OFFSET
            )
            window = self.index.window(
                board_id, period, region, op="page", size=limit, offset_or_rank=offset
            )
        self._require_data(period, window)
        return self._envelope(board_id, period, region, window) | {
            "entries": [e.to_json() for e in window.entries]
        }

    def player(self, board_id: str, player_id: str, query: Query) -> dict[str, Any]:
        _only(query, _PLAYER_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        player_id = require_player_id(player_id)
        window = self.index.window(
            board_id, period, region, op="player", size=1, player_id=player_id
        )
        entry = window.entries[0]
        return self._envelope(board_id, period, region, window) | {
            "player_id": entry.player_id,
            "rank": entry.rank,
            "score": entry.score,
            "top_percent": top_percent(entry.rank, window.total),
            "metadata": entry.metadata,
        }

    def around(self, board_id: str, player_id: str, query: Query) -> dict[str, Any]:
        _only(query, _AROUND_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        player_id = require_player_id(player_id)
        count = query_int(query.get("count"), "count", default=10, minimum=1, maximum=MAX_WINDOW)
        window = self.index.window(
            board_id, period, region, op="around", size=count, player_id=player_id
        )
        assert window.player_position is not None
        me = window.entries[window.player_position - window.start]
        return self._envelope(board_id, period, region, window) | {
            "player": me.to_json(),
            "entries": [e.to_json() for e in window.entries],
        }

    def list_boards(self) -> dict[str, Any]:
        return {"boards": self.index.list_boards()}

    def get_board(self, board_id: str) -> dict[str, Any]:
        board_id = require_board_id(board_id)
        board = self.index.get_board(board_id)
        if board is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        return board


def top_percent(rank: int, total: int) -> float:
    """100 x rank / total, rounded to 4 decimals so it reads well and compares exactly."""
    return round(100.0 * rank / total, 4)
