"""Reads of a league board (docs/API.md, "Leagues"): the tiers with their groups, a player's
own group, and any group by id, each one round trip once the board's league is known (it is
looked up at most CALENDAR_SECONDS ago, as the calendar is)."""

from __future__ import annotations

import time
from typing import Any

from leaderboard.domain.auth import Caller
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.errors import ArchivedPeriod, BadRequest, Conflict, NotFound
from leaderboard.domain.leagues import League
from leaderboard.domain.periods import CUSTOM, Period, period_json, resolve_period
from leaderboard.domain.read_results import Window
from leaderboard.domain.validation import known_params, require_board_id, require_player_id
from leaderboard.services.read_base import CALENDAR_SECONDS, Query, ReadBase, Reader
from leaderboard.stores.redis.one_node.reads import NotPlaced

_LEAGUE_PARAMS = {"season"}
_GROUP_PARAMS = {"season", "viewer"}


class LeagueReads(ReadBase):
    def league(
        self, board_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """The league's rules and, for a season, each tier's groups and players placed."""
        known_params(query, _LEAGUE_PARAMS)
        board_id, league, season = self._season(board_id, query)
        placed = self.index.league_tiers(board_id, season.id)
        tiers = []
        for n, name in enumerate(league.tiers):
            players = placed.get(n, 0)
            groups = -(-players // league.group_size)  # they fill in order
            tiers.append({"tier": name, "groups": groups, "players": players})
        return {
            "board_id": board_id,
            "season": period_json(season, self.clock()),
            "league": league.to_json(),
            "tiers": tiers,
        }

    def league_player(
        self, board_id: str, player_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """The player's group this season (or `season`): its standings, the player's rank and
        zone, the lines. A player placed in no group: their tier, and no group."""
        known_params(query, _GROUP_PARAMS)
        player_id = require_player_id(player_id)
        board_id, league, season = self._season(board_id, query)
        reader = self._who(caller, query, player_id)
        try:
            window, group = self._group_read(board_id, league, season, "", player_id, reader)
        except NotPlaced as none:
            tier = none.tier if none.tier is not None else league.start_tier
            return {
                "board_id": board_id,
                "season": season.id,
                "player_id": player_id,
                "tier": league.tiers[tier],
                "group_id": None,
                "rank": None,
                "zone": None,
                "players": 0,
                "promotion_line": None,
                "relegation_line": None,
                "entries": [],
            }
        body = self._group_body(board_id, league, season, group, window, reader)
        mine = next((e for e in body["entries"] if e["player_id"] == player_id), None)
        return {
            **body,
            "player_id": player_id,
            "rank": mine["rank"] if mine else None,
            "zone": mine["zone"] if mine else None,
        }

    def league_group(
        self, board_id: str, group_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """Any group of the season by its id (`gold-3`)."""
        known_params(query, _GROUP_PARAMS)
        board_id, league, season = self._season(board_id, query)
        tier, number = league.parse_group_id(group_id)
        reader = self._who(caller, query)
        window, group = self._group_read(board_id, league, season, f"{tier}.{number}", "", reader)
        if not window.entries:
            placed = self.index.league_tiers(board_id, season.id).get(tier, 0)
            if number > -(-placed // league.group_size):
                raise NotFound(f"season {season.id} has no group {group_id}", group_id=group_id)
        return self._group_body(board_id, league, season, group, window, reader)

    # --- helpers ---------------------------------------------------------------------------

    def _group_read(
        self,
        board_id: str,
        league: League,
        season: Period,
        group: str,
        player_id: str,
        reader: Reader,
    ) -> tuple[Window, str]:
        try:
            return self.index.league_group(
                board_id, season, group, player_id, league.group_size, reader.player
            )
        except ArchivedPeriod:
            raise NotFound(
                f"season {season.id} is archived and its groups were freed; its final standings "
                "are in the archive (GET .../entries?period=<season>)",
                period=season.id,
            ) from None

    @staticmethod
    def _group_body(
        board_id: str,
        league: League,
        season: Period,
        group: str,
        window: Window,
        reader: Reader,
    ) -> dict[str, Any]:
        tier, number = (int(x) for x in group.split("."))
        # the visible players: a hidden reader's own entry is shown to them, not counted
        members = window.total - sum(1 for e in window.entries if e.hidden)
        entries = [
            reader.entry(e, window.tiering, members) | {"zone": league.zone(tier, e.rank, members)}
            for e in window.entries
        ]
        return {
            "board_id": board_id,
            "season": season.id,
            "tier": league.tiers[tier],
            "group_id": league.group_id(tier, number),
            "players": members,
            "promotion_line": league.promotion_line(tier, members),
            "relegation_line": league.relegation_line(tier, members),
            "entries": entries,
        }

    def _season(self, board_id: str, query: Query) -> tuple[str, League, Period]:
        """The board, its league, and the season asked for (`custom`: the current one)."""
        board_id = require_board_id(board_id)
        league = self._league(board_id)
        raw = query.get("season") or CUSTOM
        period = resolve_period(raw, self.clock())
        if period.kind != CUSTOM:
            raise BadRequest(
                "season must be custom (the current season) or a season's id like "
                "2026-11-30T000000Z",
                field="season",
            )
        return board_id, league, self._placed(board_id, period)

    def _league(self, board_id: str) -> League:
        now = time.monotonic()
        cached = self._leagues.get(board_id)
        if cached is None or cached[0] <= now:
            board = BoardConfig.from_public(self.get_board(board_id))
            # the season is placed with the same board's calendar: not looked up again
            self._remember_calendar(board_id, board.calendar())
            if len(self._leagues) > 4096:
                self._leagues.clear()
            cached = (now + CALENDAR_SECONDS, board.league)
            self._leagues[board_id] = cached
        if cached[1] is None:
            raise Conflict(f"board {board_id!r} is not a league", board_id=board_id)
        return cached[1]
