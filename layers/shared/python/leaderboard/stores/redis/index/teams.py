"""Team rankings: loading them from the record, which teams each player fed, purging them."""

from __future__ import annotations

from leaderboard.domain.boards import BoardConfig
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import (
    BoardKeys,
)
from leaderboard.stores.redis.scripts import Script


class TeamCommands(IndexBase):
    _purge_teams = Script(__package__, "purge_teams")

    @guarded
    def purge_teams(self, board: BoardConfig, suffix: str, count: int) -> int:
        """Remove up to `count` teams of an archived period's team ranking (with their members
        sets); returns how many are left."""
        keys = BoardKeys(board.board_id)
        return int(
            self._purge_teams(
                keys=[f"{keys.prefix}zt:{suffix}", keys.hidden, keys.player_teams],
                args=[keys.prefix, suffix, count],
            )
        )

    @guarded
    def load_teams(
        self,
        board_id: str,
        period_id: str,
        region: str | None,
        members: dict[str, list[tuple[str, float, bool]]],
        scores: dict[str, float],
    ) -> None:
        """One set's teams, from the record: each team's members (player, contribution,
        hidden: to the shadow) and the teams' scores; one round trip."""
        keys = BoardKeys(board_id)
        suffix = keys.suffix(period_id, region)
        pipe = self.client.pipeline(transaction=False)
        for team, rows in members.items():
            for shadow in (False, True):
                part = {player: value for player, value, hidden in rows if hidden == shadow}
                if part:
                    kind = "tmh" if shadow else "tm"
                    pipe.zadd(f"{keys.prefix}{kind}:{suffix}:{team}", part)
        if scores:
            pipe.zadd(f"{keys.prefix}zt:{suffix}", scores)
        pipe.execute()

    @guarded
    def load_player_teams(self, board_id: str, named: dict[str, list[str]]) -> None:
        """Which teams each player contributed to (for deletes and hiding)."""
        if named:
            mapping = {player: ",".join(teams) for player, teams in named.items()}
            self.client.hset(BoardKeys(board_id).player_teams, mapping=mapping)
