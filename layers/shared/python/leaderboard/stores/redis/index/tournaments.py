"""Tournament sign-ups, atomically with the participant cap (join.lua)."""

from __future__ import annotations

from leaderboard.domain.errors import BoardMissing, Conflict, TournamentRefused
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    BoardKeys,
)
from leaderboard.stores.redis.scripts import Script


class TournamentCommands(IndexBase):
    _join = Script(__package__, "join")

    @guarded
    def join(self, board_id: str, player_id: str, now_ms: int) -> tuple[bool, int]:
        """Sign a player up for a tournament: (newly joined, participants now). Refused
        (TournamentRefused) when it ended or is full; NotFound for an unknown board, Conflict
        for a board that is no tournament."""
        keys = BoardKeys(board_id)
        reply = self._join(keys=[keys.cfg, keys.prefix + "joined"], args=[player_id, now_ms])
        if reply[0] == "OK":
            return reply[1] == 1, int(reply[2])
        if reply[1] == "no_board":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        if reply[1] == "not_tournament":
            raise Conflict(f"board {board_id!r} is not a tournament", board_id=board_id)
        raise TournamentRefused(reply[2])
