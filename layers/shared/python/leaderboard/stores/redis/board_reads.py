"""What the index's reads need of a board's layout: one Protocol, implemented side by side by
the one-node index (one_node/reads.py: a board's keys on one node) and the sharded index
(sharded/reads.py: a board spread over K shards). `index/reads.py` picks one from the board's
rules, in one place; no service or handler branches on sharding."""

from __future__ import annotations

from typing import Protocol

from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import PeriodStanding, Selection, Window
from leaderboard.stores.redis.rules import WriteRules


class Resharded(Exception):
    """The one-node read found a sharded board: its rules (`text`), to read it by again."""

    def __init__(self, text: str) -> None:
        super().__init__("the board is sharded")
        self.text = text


class StaleRules(Exception):
    """A shard holds other rules than the caller's: reload them (`text`) and read again."""

    def __init__(self, text: str) -> None:
        super().__init__("board rules changed")
        self.text = text


class BoardReads(Protocol):
    """Reads of one board, given the rules this process has for it (None: not known yet, when
    the layout's scripts check them). `viewer`: the player who reads, if known (a hidden one
    sees their own entry); `ranks`: "" players, "teams", or "members:<team>"."""

    def window(
        self,
        board_id: str,
        rules: WriteRules | None,
        period: Period,
        region: str | None,
        *,
        op: str,
        size: int,
        offset_or_rank: int = 0,
        player_id: str = "",
        viewer: str = "",
        ranks: str = "",
    ) -> Window: ...

    def players(
        self,
        board_id: str,
        rules: WriteRules | None,
        period: Period,
        region: str | None,
        player_ids: list[str],
        *,
        viewer: str = "",
        ranks: str = "",
    ) -> Selection: ...

    def standings(
        self,
        board_id: str,
        rules: WriteRules | None,
        player_id: str,
        periods: list[Period],
        region: str | None,
        *,
        viewer: str = "",
    ) -> list[PeriodStanding]: ...
