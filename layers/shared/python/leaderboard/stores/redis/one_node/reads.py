"""Reads of a board held on one node (the one-node layout of `board_reads.BoardReads`): every
read is one call of read.lua or players.lua, one round trip, whatever the board's size. The
scripts check the board's rules themselves: one that finds the board sharded answers with its
rules (`Resharded`)."""

from __future__ import annotations

import json
from typing import Any

from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import Entry, PeriodStanding, Selection, Window
from leaderboard.domain.score_tiers import Tiering
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.board_reads import Resharded
from leaderboard.stores.redis.client import RedisLike
from leaderboard.stores.redis.errors import read_error
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.records import CustomPeriodsKept, read_tiebreakers
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.scripts import Script


class NotPlaced(Exception):
    """A league read of a player placed in no group this season: the tier they hold (None:
    none yet, they start in the league's start tier)."""

    def __init__(self, tier: int | None) -> None:
        super().__init__("not placed in a group this season")
        self.tier = tier


class OneNodeIndex:
    _read = Script(__package__, "read")
    _players = Script(__package__, "players")

    def __init__(self, client: RedisLike) -> None:
        self.client = client

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
    ) -> Window:
        """One read: a page, a window around a rank, one player, or a window around a player.
        `viewer`: the player who reads, if known; a hidden one reads the board with their own
        entry in it (marked `hidden`). `ranks`: what is read ("" players, "teams", or
        "members:<team>": BoardKeys.ranked; `player_id` is then a team or a member)."""

        return self._window(
            board_id,
            period,
            region,
            [op, period.kind, region or "", player_id, offset_or_rank, size, period.id]
            # ARGV 8-9, who reads and what is read, only when there is something to say
            + ([viewer, ranks.split(":", 1)[0]] if viewer or ranks else []),
            ranks,
        )[0]

    def league_group(
        self, board_id: str, season: Period, group: str, player_id: str, size: int, viewer: str
    ) -> tuple[Window, str]:
        """A league group of `season`, whole (`size`: the league's group size): the group
        `group` ("tier.number"), or ('') the group `player_id` was placed in. NotPlaced when
        the player has none this season."""
        return self._window(
            board_id,
            season,
            None,
            ["page", season.kind, "", player_id, 0, size, season.id, viewer, "", season.id, group],
            "",
        )

    def _window(
        self, board_id: str, period: Period, region: str | None, args: list[object], ranks: str
    ) -> tuple[Window, str]:
        keys = BoardKeys(board_id)
        reply = self._read(
            keys=[
                keys.cfg,
                keys.ranked(ranks, period.id, region),
                keys.members(period.id, region),
                keys.meta,
                keys.archived,
            ],
            args=args,
        )
        player_id = str(args[3])
        if reply[0] == "SHARDED":
            if ranks:
                raise read_error(board_id, period, region, player_id, "no_teams")
            raise Resharded(reply[1])
        if reply[0] == "ERR" and reply[1] == "not_placed":
            raise NotPlaced(int(reply[2]) if reply[2] else None)
        if reply[0] == "ERR":
            raise _refused(board_id, period, region, player_id, reply)
        group = reply.pop() if len(args) > 9 else ""
        total, start, position, count = (int(x) for x in reply[1:5])
        shown = reply[5]  # the hidden reader whose own entry the window holds ('' = none)
        rows = reply[7 : 7 + 3 * count]
        metas = reply[7 + 3 * count : 7 + 4 * count]
        tbs = read_tiebreakers(reply[7 + 4 * count :], count)
        entries = tuple(
            Entry(
                rank=int(rows[i * 3 + 2]),
                player_id=rows[i * 3],
                score=format_score(float(rows[i * 3 + 1])),
                metadata=json.loads(metas[i]) if metas[i] else None,
                tiebreakers=tbs[i],
                hidden=bool(shown) and rows[i * 3] == shown,
            )
            for i in range(count)
        )
        window = Window(
            total=total,
            start=start,
            player_position=None if position < 0 else position,
            entries=entries,
            tiering=Tiering.from_script(reply[6]),
        )
        return window, group

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
    ) -> Selection:
        """Many players of one board in one read: the ones with an entry, in board order
        (`viewer` and `ranks`: as in `window`)."""

        keys = BoardKeys(board_id)
        reply = self._players(
            keys=[keys.cfg, keys.meta, keys.archived],
            args=[
                "many",
                keys.prefix,
                viewer,
                period.kind,
                period.id,
                region or "",
                ranks,
                *player_ids,
            ],
        )
        if reply[0] == "SHARDED":
            if ranks:
                raise read_error(board_id, period, region, "", "no_teams")
            raise Resharded(reply[1])
        if reply[0] == "ERR":
            raise _refused(board_id, period, region, "", reply)
        total, count, shown = int(reply[1]), int(reply[2]), reply[3]
        rows = reply[5 : 5 + 4 * count]
        metas = reply[5 + 4 * count : 5 + 5 * count]
        tbs = read_tiebreakers(reply[5 + 5 * count :], count)
        found = sorted(
            (
                int(rows[i * 4 + 3]),
                Entry(
                    rank=int(rows[i * 4 + 2]),
                    player_id=rows[i * 4],
                    score=format_score(float(rows[i * 4 + 1])),
                    metadata=json.loads(metas[i]) if metas[i] else None,
                    tiebreakers=tbs[i],
                    hidden=bool(shown) and rows[i * 4] == shown,
                ),
            )
            for i in range(count)
        )
        entries = tuple(entry for _, entry in found)
        return Selection(total=total, entries=entries, tiering=Tiering.from_script(reply[4]))

    def standings(
        self,
        board_id: str,
        rules: WriteRules | None,
        player_id: str,
        periods: list[Period],
        region: str | None,
        *,
        viewer: str = "",
    ) -> list[PeriodStanding]:
        """A player on every given period the board keeps, globally and on its regional boards
        (only `region`'s when given), in one read (`viewer`: as in `window`)."""

        keys = BoardKeys(board_id)
        args: list[str] = ["standings", keys.prefix, viewer, player_id, region or ""]
        for period in periods:
            args += [period.kind, period.id]
        reply = self._players(keys=[keys.cfg, keys.meta, keys.archived], args=args)
        if reply[0] == "CUSTOM":
            raise CustomPeriodsKept(WriteRules.parse(reply[1]).calendar)
        if reply[0] == "SHARDED":
            raise Resharded(reply[1])
        if reply[0] == "ERR":
            raise read_error(board_id, periods[0], region, player_id, reply[1])
        count, shown, tiering = int(reply[1]), reply[2], Tiering.from_script(reply[3])
        rows = reply[4 : 4 + 6 * count]
        tbs = read_tiebreakers(reply[4 + 6 * count :], count)
        return [
            PeriodStanding(
                kind=rows[i * 6],
                period=rows[i * 6 + 1],
                region=rows[i * 6 + 2] or None,
                score=format_score(float(rows[i * 6 + 3])),
                rank=int(rows[i * 6 + 4]),
                total=int(rows[i * 6 + 5]),
                tiebreakers=tbs[i],
                hidden=shown == player_id,
                tiering=tiering,
            )
            for i in range(count)
        ]


def _refused(
    board_id: str, period: Period, region: str | None, player_id: str, reply: list[Any]
) -> Exception:
    """A script's {'ERR', code}: an archived period's comes with the board's score tiers."""
    tiering = Tiering.from_script(reply[2]) if len(reply) > 2 else None
    return read_error(board_id, period, region, player_id, reply[1], tiering)
