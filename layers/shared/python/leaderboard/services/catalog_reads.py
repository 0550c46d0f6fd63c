"""Reads about boards rather than of their standings: the catalog, one board, its periods, the
tournaments, and a player's history in the archive."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from leaderboard.domain.auth import Caller
from leaderboard.domain.boards import BoardConfig, script_calendar
from leaderboard.domain.errors import (
    BadRequest,
    NotFound,
    Unavailable,
    Unprocessable,
)
from leaderboard.domain.periods import (
    BOARD_PERIOD_KINDS,
    CUSTOM,
    WEEKLY,
    current_period,
    is_period_id_shape,
    period_status,
    resolve_period,
)
from leaderboard.domain.score_tiers import tier_field
from leaderboard.domain.tournaments import ENDED, OPEN, UPCOMING, tournament_listing
from leaderboard.domain.validation import (
    known_params,
    query_int,
    require_board_id,
    require_player_id,
    require_region,
)

if TYPE_CHECKING:
    pass
from leaderboard.services.read_base import (
    _HISTORY_PARAMS,
    _TOURNAMENTS_PARAMS,
    ARCHIVED_KINDS,
    MAX_WINDOW,
    Query,
    ReadBase,
    _is_period_of,
    _iso,
    top_percent,
)


class CatalogReads(ReadBase):
    def history(
        self, board_id: str, player_id: str, query: Query, *, caller: Caller | None = None
    ) -> dict[str, Any]:
        """A player's final standings in archived periods of one kind, newest first. Always
        from the archive in PostgreSQL: past periods outlive their serving keys.
        `caller` is who reads (anonymous: None)."""
        known_params(query, _HISTORY_PARAMS)
        board_id = require_board_id(board_id)
        player_id = require_player_id(player_id)
        reader = self._reader(caller, query, player_id)
        teams = reader.ranks == "teams"  # by=team: a team's past results
        kind = query.get("kind")
        kind = WEEKLY if kind is None else kind
        if kind not in ARCHIVED_KINDS:
            raise BadRequest("kind must be daily, weekly, monthly or custom", field="kind")
        raw_region = query.get("region")
        region = None if raw_region in (None, "") else require_region(raw_region)
        limit = query_int(query.get("limit"), "limit", default=10, minimum=1, maximum=MAX_WINDOW)
        before = query.get("before")
        if before is not None and not is_period_id_shape(before):
            raise BadRequest("before must be a period id, the `next` of a page", field="before")
        if before is not None and not _is_period_of(before, kind):
            raise Unprocessable(
                f"before must be a {kind} period id, like the `next` of a {kind} page",
                field="before",
            )
        if self._archive_factory is None:
            raise Unavailable("no archive is configured", retry_after=60, store="postgres")
        archive = self._archive_model()
        if teams:
            results = archive.team_history(board_id, player_id, kind, region, before, limit + 1)
        else:
            results = archive.history(
                board_id, player_id, kind, region, before, limit + 1, viewer=reader.player
            )
        if not results and not self._board_exists(board_id):
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        page = results[:limit]
        who = {"by": "team", "team_id": player_id} if teams else {"player_id": player_id}
        return {
            "board_id": board_id,
            **who,
            "kind": kind,
            "region": region,
            "results": [
                {
                    "period": r.period,
                    "rank": r.rank,
                    "score": r.score,
                    "total": r.total,
                    "top_percent": top_percent(r.rank, r.total),
                }
                | ({"tiebreakers": r.tiebreakers} if r.tiebreakers is not None else {})
                | tier_field(r.tiering, r.rank, r.score, r.total)
                | reader.flag(r.hidden)
                for r in page
            ],
            "next": page[-1].period if len(results) > limit else None,
        }

    def _board_exists(self, board_id: str) -> bool:
        try:
            return self.get_board(board_id) is not None
        except NotFound:
            return False

    def periods(self, board_id: str, *, caller: Caller | None = None) -> dict[str, Any]:
        """Every period the board holds: open, closed (awaiting archive) or archived.
        `caller` is who reads (anonymous: None)."""
        board_id = require_board_id(board_id)
        rules, sets, archived = self.index.period_sets(board_id)
        if rules is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        now = self.clock()
        calendar = script_calendar(rules)
        counts = {s: n for s, n in sets.items() if ":" not in s}  # global boards
        for kind in rules["periods"]:
            if kind == CUSTOM:
                if calendar is not None:  # and a recurring tournament's next window
                    counts.setdefault(calendar.period_at(now).id, 0)
                    counts.setdefault(calendar.target_at(now).id, 0)
            else:
                counts.setdefault(current_period(kind, now).id, 0)
        listed = []
        for period_id in set(counts) | set(archived):
            period = resolve_period(period_id, now)
            if period.kind == CUSTOM and calendar is not None:
                # placed by ends by hand older than the rules keep: its start only
                with contextlib.suppress(NotFound):
                    period = calendar.place(period)
            if period_id in archived:
                status, entries = "archived", archived[period_id]
            else:
                status = period_status(period, now)
                entries = counts[period_id]
            listed.append(
                {
                    "period": period.id,
                    "kind": period.kind,
                    "starts_at": _iso(period.starts_at),
                    "ends_at": _iso(period.ends_at),
                    "status": status,
                    "entries": entries,
                }
            )
        order = {kind: n for n, kind in enumerate(BOARD_PERIOD_KINDS)}
        listed.sort(key=lambda p: str(p["period"]), reverse=True)  # newest first in a kind
        listed.sort(key=lambda p: order[str(p["kind"])])  # stable: all-time, daily, weekly...
        return {"board_id": board_id, "periods": listed}

    def tournaments(self, query: Query, *, caller: Caller | None = None) -> dict[str, Any]:
        """Every tournament: open ones first (ending soonest first), then upcoming ones
        (starting soonest first), then ended ones (newest first); `status` keeps one kind.
        A recurring tournament is shown by its window open now, else its next one, else its
        last (`Windows.target_at`), with its recurrence and series bounds.
        `caller` is who reads (anonymous: None)."""
        known_params(query, _TOURNAMENTS_PARAMS)
        wanted = query.get("status")
        if wanted not in (None, UPCOMING, OPEN, ENDED):
            raise BadRequest("status must be open, upcoming or ended", field="status")
        now = self.clock()
        listed = []
        boards = self.list_boards()
        for board in boards["boards"]:
            if not board.get("tournament"):
                continue
            config = BoardConfig.from_public(board)
            assert config.tournament is not None
            listing = tournament_listing(config.tournament, config.created_at, now)
            if wanted is not None and listing["status"] != wanted:
                continue
            listed.append({"board_id": board["board_id"], "title": board.get("title"), **listing})
        self._count_players(listed, degraded=bool(boards.get("degraded")))
        rank = {OPEN: 0, UPCOMING: 1, ENDED: 2}
        listed.sort(key=lambda t: t["board_id"])
        listed.sort(
            key=lambda t: (
                rank[t["status"]],
                t["ends_at"] if t["status"] == OPEN else t["starts_at"],
            )
        )
        ended = [t for t in listed if t["status"] == ENDED]
        ended.sort(key=lambda t: t["ends_at"], reverse=True)
        return {"tournaments": [t for t in listed if t["status"] != ENDED] + ended}

    def _count_players(self, listed: list[dict[str, Any]], *, degraded: bool) -> None:
        """Each listed window's `participants` and `attempts` as Redis holds them (one
        pipeline); null when Redis cannot be read (the list itself then came from PostgreSQL)."""
        counts: list[tuple[int | None, int | None]] = [(None, None)] * len(listed)
        if listed and not degraded:
            with contextlib.suppress(Unavailable):
                counts = list(
                    self.index.tournament_counts(
                        [(t["board_id"], t["period"] if t["recurrence"] else None) for t in listed]
                    )
                )
        for listing, (participants, attempts) in zip(listed, counts, strict=True):
            listing["participants"] = participants
            # counted only under a cap on attempts (a write then reads its player's count)
            capped = listing["max_attempts"] is not None and participants is not None
            listing["attempts"] = (attempts or 0) if capped else None

    def list_boards(self, *, caller: Caller | None = None) -> dict[str, Any]:
        """Every board. `caller` is who reads (anonymous: None)."""
        try:
            return {"boards": self.index.list_boards()}
        except Unavailable:
            if self._fallback_factory is None:
                raise
        return {"boards": self._degraded_model().list_boards(), "degraded": True}
