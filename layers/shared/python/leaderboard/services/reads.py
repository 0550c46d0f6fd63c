"""Reading boards: pages, a player's standing, windows around a rank or a player (the read
service: these, with the catalog's reads of catalog_reads.py over read_base.py's sources)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import (
    NotFound,
    Unprocessable,
)
from leaderboard.domain.periods import (
    PERIOD_KINDS,
    current_period,
)
from leaderboard.domain.read_results import PeriodStanding
from leaderboard.domain.score_tiers import tier_field
from leaderboard.domain.validation import (
    known_params,
    query_int,
    require_board_id,
    require_player_id,
    require_player_ids,
    require_region,
)
from leaderboard.stores.redis.records import CustomPeriodsKept
from leaderboard.stores.redis.serving_index import RedisIndex

if TYPE_CHECKING:
    pass
from leaderboard.services.catalog_reads import CatalogReads
from leaderboard.services.league_reads import LeagueReads
from leaderboard.services.read_base import (
    _AROUND_PARAMS,
    _ENTRIES_PARAMS,
    _PLAYER_PARAMS,
    _PLAYERS_PARAMS,
    _STANDINGS_PARAMS,
    MAX_OFFSET,
    MAX_WINDOW,
    Query,
    top_percent,
)


class ReadService(CatalogReads, LeagueReads):
    """Reads from the serving index; from the system of record while the index can't answer.

    `fallback` builds the PostgreSQL read model on first need, so a healthy read function
    never imports the database driver. After the index fails, reads go straight to the
    fallback for `bypass_seconds` instead of waiting on a dead server each time.
    """

    def entries(
        self, board_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """A page, or a window around a rank. `caller` is who reads (anonymous: None)."""
        known_params(query, _ENTRIES_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        reader = self._reader(caller, query)
        limit = query_int(query.get("limit"), "limit", default=10, minimum=1, maximum=MAX_WINDOW)
        if query.get("around_rank") is not None:
            rank = query_int(
                query.get("around_rank"), "around_rank", default=1, minimum=1, maximum=MAX_OFFSET
            )
            if query.get("offset") is not None:  # each well-formed (400 first), not both: 422
                query_int(query.get("offset"), "offset", default=0, minimum=0, maximum=MAX_OFFSET)
                raise Unprocessable("use either offset or around_rank, not both", field="offset")
            window, degraded = self._window(
                board_id,
                period,
                region,
                op="around_rank",
                size=limit,
                offset_or_rank=rank,
                viewer=reader.player,
                ranks=reader.ranks,
            )
        else:
            offset = query_int(
                query.get("offset"), "offset", default=0, minimum=0, maximum=MAX_OFFSET
            )
            window, degraded = self._window(
                board_id,
                period,
                region,
                op="page",
                size=limit,
                offset_or_rank=offset,
                viewer=reader.player,
                ranks=reader.ranks,
            )
        self._require_data(board_id, period, window.total)
        return self._envelope_of(reader, board_id, period, region, window.total, degraded) | {
            "entries": [reader.entry(e, window.tiering, window.total) for e in window.entries]
        }

    def player(
        self, board_id: str, player_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """One player's rank and score. `caller` is who reads (anonymous: None)."""
        known_params(query, _PLAYER_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        player_id = require_player_id(player_id)
        reader = self._reader(caller, query, player_id)
        window, degraded = self._window(
            board_id,
            period,
            region,
            op="player",
            size=1,
            player_id=player_id,
            viewer=reader.player,
            ranks=reader.ranks,
        )
        entry = window.entries[0]
        envelope = self._envelope_of(reader, board_id, period, region, window.total, degraded)
        tier = tier_field(window.tiering, entry.rank, entry.score, window.total)
        if reader.ranks == "teams":
            return (
                envelope
                | {
                    "team_id": entry.player_id,
                    "rank": entry.rank,
                    "score": entry.score,
                    "top_percent": top_percent(entry.rank, window.total),
                }
                | tier
            )
        return (
            envelope
            | {
                "player_id": entry.player_id,
                "rank": entry.rank,
                "score": entry.score,
                "top_percent": top_percent(entry.rank, window.total),
                "metadata": entry.metadata,
            }
            | ({"tiebreakers": entry.tiebreakers} if entry.tiebreakers is not None else {})
            | tier
            | reader.flag(entry.hidden)
        )

    def around(
        self, board_id: str, player_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """The window around a player. `caller` is who reads (anonymous: None)."""
        known_params(query, _AROUND_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        player_id = require_player_id(player_id)
        reader = self._reader(caller, query, player_id)
        count = query_int(query.get("count"), "count", default=10, minimum=1, maximum=MAX_WINDOW)
        window, degraded = self._window(
            board_id,
            period,
            region,
            op="around",
            size=count,
            player_id=player_id,
            viewer=reader.player,
            ranks=reader.ranks,
        )
        assert window.player_position is not None
        me = window.entries[window.player_position - window.start]
        envelope = self._envelope_of(reader, board_id, period, region, window.total, degraded)
        tiering, total = window.tiering, window.total
        return envelope | {
            "team" if reader.ranks == "teams" else "player": reader.entry(me, tiering, total),
            "entries": [reader.entry(e, tiering, total) for e in window.entries],
        }

    def players(
        self, board_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """Many players (friends, a party) on one board in one read, in board order.
        `caller` is who reads (anonymous: None)."""
        known_params(query, _PLAYERS_PARAMS)
        board_id, period, region = self._scope(board_id, query)
        ids = require_player_ids(query.get("ids"))
        viewer = self._reader(caller, query)
        me, ranks = viewer.player, viewer.ranks
        chosen, degraded = self._served(
            lambda index: index.players(board_id, period, region, ids, viewer=me, ranks=ranks),
            lambda record: record.players(board_id, period, region, ids, viewer=me, ranks=ranks),
            lambda tiering: replace(
                self._archive_model().players(
                    board_id, period, region, ids, viewer=me, ranks=ranks
                ),
                tiering=tiering,
            ),
        )
        self._require_data(board_id, period, chosen.total)
        found = {entry.player_id for entry in chosen.entries}
        envelope = self._envelope_of(viewer, board_id, period, region, chosen.total, degraded)
        return envelope | {
            "entries": [viewer.entry(e, chosen.tiering, chosen.total) for e in chosen.entries],
            "missing": [player for player in ids if player not in found],
        }

    def standings(
        self, board_id: str, player_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """One player on every current period the board keeps, and its regional boards.
        `caller` is who reads (anonymous: None)."""
        known_params(query, _STANDINGS_PARAMS)
        board_id = require_board_id(board_id)
        player_id = require_player_id(player_id)
        reader = self._reader(caller, query, player_id)
        raw_region = query.get("region")
        region = None if raw_region in (None, "") else require_region(raw_region)
        now = self.clock()
        periods = [current_period(kind, now) for kind in PERIOD_KINDS]
        cached = self._calendars.get(board_id)
        if cached is not None and cached[0] > time.monotonic() and cached[1] is not None:
            periods.append(cached[1].period_at(now))

        def from_index(index: RedisIndex) -> list[PeriodStanding]:
            try:
                return index.standings(board_id, player_id, periods, region, viewer=reader.player)
            except CustomPeriodsKept as kept:  # a board of custom periods: place the current one
                self._remember_calendar(board_id, kept.calendar)
                if kept.calendar is None:
                    raise
                periods.append(kept.calendar.period_at(now))
                return index.standings(board_id, player_id, periods, region, viewer=reader.player)

        found, degraded = self._served(
            from_index,
            lambda record: record.standings(
                board_id, player_id, periods, region, viewer=reader.player
            ),
        )
        if not found:
            raise NotFound(
                f"player {player_id!r} has no entry on any current period of {board_id!r}"
                + (f" ({region})" if region else ""),
                player_id=player_id,
            )
        body: dict[str, Any] = {
            "board_id": board_id,
            "player_id": player_id,
            "standings": [
                {
                    "period": s.period,
                    "kind": s.kind,
                    "region": s.region,
                    "rank": s.rank,
                    "score": s.score,
                    "total": s.total,
                    "top_percent": top_percent(s.rank, s.total),
                }
                | ({"tiebreakers": s.tiebreakers} if s.tiebreakers is not None else {})
                | tier_field(s.tiering, s.rank, s.score, s.total)
                | reader.flag(s.hidden)
                for s in found
            ],
        }
        if degraded:
            body["degraded"] = True
        return body
