"""Reads of a board (a page, a window, one or many players, a player's standings): the one
place that picks the board's layout (`board_reads.BoardReads`) from the rules this process has."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from leaderboard.domain.errors import BoardMissing, Unavailable
from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import PeriodStanding, Selection, Window
from leaderboard.stores.redis.board_reads import BoardReads, Resharded, StaleRules
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.one_node.reads import OneNodeIndex
from leaderboard.stores.redis.rules import WriteRules

if TYPE_CHECKING:
    from leaderboard.stores.redis.sharded.reads import ShardedIndex

R = TypeVar("R")
Read = Callable[[BoardReads, WriteRules | None], R]


class ReadCommands(IndexBase):
    @cached_property
    def _one_node(self) -> OneNodeIndex:
        return OneNodeIndex(self.client)

    @cached_property
    def _sharded(self) -> ShardedIndex:
        # Imported on first need: most boards are not sharded (a read's cold start).
        from leaderboard.stores.redis.sharded.reads import ShardedIndex

        return ShardedIndex(self.client)

    def _read(self, board_id: str, read: Read[R]) -> R:
        """A read by the board's layout, chosen here from the rules this process has. A board
        not known to be sharded is read on one node (its script answers with the rules when
        the board turns out sharded); a sharded one over its shards, again with newer rules
        when a shard holds them."""
        rules = self._rules.get(board_id)
        if rules is None or rules.shards <= 1:
            try:
                return read(self._one_node, rules)
            except Resharded as found:
                self._remember_rules(board_id, WriteRules.parse(found.text))
        for _ in range(3):
            rules = self._rules[board_id]
            if rules.shards <= 1:
                break  # no longer sharded (it had no entries): read it as any board
            try:
                return read(self._sharded, rules)
            except StaleRules as stale:
                self._remember_rules(board_id, WriteRules.parse(stale.text))
            except BoardMissing:
                break  # its shards were dropped: the board's own rules decide
        self._rules.pop(board_id, None)
        raise Unavailable("the board's layout changed; retry", retry_after=1, store="redis")

    @guarded
    def window(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        *,
        op: str,
        size: int,
        offset_or_rank: int = 0,
        player_id: str = "",
        viewer: str = "",
        ranks: str = "",
    ) -> Window:
        """One read: a page, a window around a rank, one player, or a window around a player.
        `viewer`: the player who reads, if known; a hidden one reads the board with their own
        entry in it (marked `hidden`). `ranks`: what is read ("" players, "teams", or
        "members:<team>": BoardKeys.ranked; `player_id` is then a team or a member)."""
        return self._read(
            board_id,
            lambda layout, rules: layout.window(
                board_id,
                rules,
                period,
                region,
                op=op,
                size=size,
                offset_or_rank=offset_or_rank,
                player_id=player_id,
                viewer=viewer,
                ranks=ranks,
            ),
        )

    @guarded
    def players(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        player_ids: list[str],
        viewer: str = "",
        ranks: str = "",
    ) -> Selection:
        """Many players of one board in one read: the ones with an entry, in board order
        (`viewer` and `ranks`: as in `window`)."""
        return self._read(
            board_id,
            lambda layout, rules: layout.players(
                board_id, rules, period, region, player_ids, viewer=viewer, ranks=ranks
            ),
        )

    @guarded
    def standings(
        self,
        board_id: str,
        player_id: str,
        periods: list[Period],
        region: str | None,
        viewer: str = "",
    ) -> list[PeriodStanding]:
        """A player on every given period the board keeps, globally and on its regional boards
        (only `region`'s when given), in one read (`viewer`: as in `window`)."""
        return self._read(
            board_id,
            lambda layout, rules: layout.standings(
                board_id, rules, player_id, periods, region, viewer=viewer
            ),
        )
