"""League boards (domain/leagues.py): a group's standings, the tiers' groups, and the season
end's steps (league.lua), each one round trip."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property

from leaderboard.domain.errors import BoardMissing, Conflict
from leaderboard.domain.leagues import Move, script_group
from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import Window
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.one_node.reads import OneNodeIndex
from leaderboard.stores.redis.scripts import Script

# Groups settled per call at a season's end, and league players looked at per idle step.
GROUPS_PER_CALL = 200
IDLE_PER_CALL = 5000
MOVES_PER_READ = 5000


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class LeagueCommands(IndexBase):
    _league = Script(__package__, "league")

    def _call(self, board_id: str, *args: object) -> list[object]:
        reply = self._league(keys=[BoardKeys(board_id).cfg], args=list(args))
        if reply[0] == "ERR" and reply[1] == "no_board":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        if reply[0] == "ERR":
            raise Conflict(f"board {board_id!r} is not a league", board_id=board_id)
        return list(reply)

    @guarded
    def league_group(
        self, board_id: str, season: Period, group: str, player_id: str, size: int, viewer: str
    ) -> tuple[Window, str]:
        """A whole group of `season`: `group` ("tier.number"), or ('') `player_id`'s
        (one_node.reads.NotPlaced when the player has none)."""
        return self._group_reads.league_group(board_id, season, group, player_id, size, viewer)

    @cached_property
    def _group_reads(self) -> OneNodeIndex:
        return OneNodeIndex(self.client)

    @guarded
    def league_tiers(self, board_id: str, season: str) -> dict[int, int]:
        """Tier index -> players placed in it in `season` (groups fill in order: the tier
        has ceil(players / group size) groups)."""
        flat = self._call(board_id, "tiers", season)[1]
        assert isinstance(flat, list)
        return {int(_text(flat[i])): int(flat[i + 1]) for i in range(0, len(flat), 2)}

    @guarded
    def settle_season(
        self, board_id: str, season: str, group_size: int, keep_going: Callable[[], bool]
    ) -> bool:
        """Put every league player's tier after `season` in place (domain League.moved/idle),
        in steps of one call; the last step makes them current at once. False when
        keep_going() turned false first (a later run starts the season again). Returns True
        at once for a season already settled."""
        reply = self._call(board_id, "begin", season)
        if reply[0] == "DONE":
            return True
        flat = reply[1]
        assert isinstance(flat, list)
        placed = {int(_text(flat[i])): int(flat[i + 1]) for i in range(0, len(flat), 2)}
        for tier, players in sorted(placed.items()):
            groups = -(-players // group_size)
            for first in range(1, groups + 1, GROUPS_PER_CALL):
                if not keep_going():
                    return False
                last = min(groups, first + GROUPS_PER_CALL - 1)
                self._call(board_id, "groups", season, tier, first, last)
        cursor = "0"
        while True:
            if not keep_going():
                return False
            reply = self._call(board_id, "idle", season, cursor, IDLE_PER_CALL)
            cursor = _text(reply[1])  # type: ignore[arg-type]
            if cursor == "0":
                break
        self._call(board_id, "finish", season)
        return True

    @guarded
    def season_moves(self, board_id: str, season: str) -> Iterator[Move]:
        """Every move of a settled season, in no order (a read of about MOVES_PER_READ a
        trip, as one string: league.lua's 'moves')."""
        cursor = "0"
        while True:
            reply = self._call(board_id, "moves", season, cursor, MOVES_PER_READ)
            cursor, text = _text(reply[1]), _text(reply[2])  # type: ignore[arg-type]
            words = iter(text.split(" ") if text else ())
            moves = zip(words, words, words, words, words, strict=True)  # five words a move
            for player, old, new, group, rank in moves:
                yield Move(
                    player,
                    int(old),
                    int(new),
                    script_group(group) if group != "-" else None,
                    int(rank) if rank != "-" else None,
                )
            if cursor == "0":
                return

    @guarded
    def forget_moves(self, board_id: str, season: str) -> None:
        """The moves of a season whose events are sent (UNLINK: freed in the background)."""
        self.client.unlink(f"{BoardKeys(board_id).prefix}lg:mv:{season}")

    @guarded
    def drop_season(self, board_id: str, season: str, tiers: int) -> None:
        """Free a purged season's league keys: its placements (one list a tier of the
        league's `tiers`) and moves."""
        prefix = BoardKeys(board_id).prefix
        self.client.unlink(
            f"{prefix}lg:g:{season}",
            f"{prefix}lg:mv:{season}",
            *(f"{prefix}lg:o:{season}:{tier}" for tier in range(tiers)),
        )
