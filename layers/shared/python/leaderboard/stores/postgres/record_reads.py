"""Reads served from PostgreSQL when the serving index cannot answer (degraded mode).

The same rules as the read script: competition ranks for ties=shared, arrival order for
ties=first, ties listed by player id in the direction of the sort; on tie-breaker boards the
tie key (whose byte order is the board's order) right after the score. Hidden players are
left out, except for the one who reads (their own view). It scans the period's rows, which is
fine for an outage and never the normal path.
"""

from __future__ import annotations

import json
from typing import Any

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.errors import NotFound
from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import Entry, PeriodStanding, Selection, Window
from leaderboard.domain.tiebreakers import decode
from leaderboard.domain.validation import format_score
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database

_ORDER = {  # (sort, ties) -> the board's total order after the score; fixed strings only
    ("desc", "shared"): "s.player_id DESC",
    ("asc", "shared"): "s.player_id ASC",
    ("desc", "first"): "s.reached_version ASC, s.player_id ASC",
    ("asc", "first"): "s.reached_version ASC, s.player_id ASC",
}


class PostgresReadModel:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.boards = BoardRepository(db)

    def board(self, board_id: str) -> BoardConfig:
        board = self.boards.get(board_id)
        if board is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        return board

    def list_boards(self) -> list[dict[str, Any]]:
        return [board.to_public() for board in self.boards.all()]

    def get_board(self, board_id: str) -> dict[str, Any] | None:
        board = self.boards.get(board_id)
        return None if board is None else board.to_public()

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
        board = self._scoped(board_id, period, region, ranks)
        ranked = _ranked(board, ranks)
        params = _params(board_id, period, region, viewer, ranks)
        with self.db.transaction() as conn:
            hidden = _hidden_reader(conn, params)
            total = conn.execute(_total(ranked, ranks), params).fetchone()
            count = int(total[0]) if total else 0
            position = None
            if op in ("player", "around"):
                row = conn.execute(
                    f"SELECT position FROM ({ranked}) w"  # noqa: S608
                    " WHERE player_id = %(player)s",
                    params | {"player": player_id},
                ).fetchone()
                if row is None:
                    what = "team" if ranks == "teams" else "player"
                    raise NotFound(
                        f"{what} {player_id!r} has no entry in {period.id}", player_id=player_id
                    )
                position = int(row[0])
            start = window_start(op, size, offset_or_rank, position, count)
            if op == "player":
                size = 1
            rows = conn.execute(
                f"SELECT player_id, score, metadata, rank, tie_key FROM ({ranked}) w"  # noqa: S608
                " WHERE position >= %(start)s AND position < %(end)s ORDER BY position",
                params | {"start": start, "end": start + size},
            ).fetchall()
        entries = _entries(rows, board, hidden, plain=bool(ranks))
        return Window(count, start, position, entries, tiering=board.tiering())

    def players(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        player_ids: list[str],
        viewer: str = "",
        ranks: str = "",
    ) -> Selection:
        board = self._scoped(board_id, period, region, ranks)
        params = _params(board_id, period, region, viewer, ranks)
        ranked = _ranked(board, ranks)
        with self.db.transaction() as conn:
            hidden = _hidden_reader(conn, params)
            total = conn.execute(_total(ranked, ranks), params).fetchone()
            rows = conn.execute(
                f"SELECT player_id, score, metadata, rank, tie_key"  # noqa: S608
                f" FROM ({ranked}) w"
                " WHERE player_id = ANY(%(ids)s) ORDER BY position",
                params | {"ids": player_ids},
            ).fetchall()
        entries = _entries(rows, board, hidden, plain=bool(ranks))
        count = int(total[0]) if total else 0
        return Selection(total=count, entries=entries, tiering=board.tiering())

    def standings(
        self,
        board_id: str,
        player_id: str,
        periods: list[Period],
        region: str | None,
        viewer: str = "",
    ) -> list[PeriodStanding]:
        """The same answer as the index's: global first, then each region in the board's order;
        one ranked query per period the player is on (an outage path, not the normal one)."""
        board = self.board(board_id)
        if region is not None and region not in (board.regions or ()):
            raise NotFound(f"region {region!r} is not one of the board's regions", region=region)
        regions = [None, region] if region else [None, *(board.regions or ())]
        kept = [p for p in periods if p.kind in board.periods]
        ranked = _ranked(board)
        found: list[PeriodStanding] = []
        with self.db.transaction() as conn:
            hidden = _hidden_reader(conn, {"b": board_id, "v": viewer}) == player_id
            if not hidden and _hidden_reader(conn, {"b": board_id, "v": player_id}):
                return []  # a hidden player, read by someone else
            present = {
                (row[0], row[1])
                for row in conn.execute(
                    "SELECT period, region FROM standings WHERE board_id = %s AND player_id = %s"
                    " AND period = ANY(%s) AND present",
                    (board_id, player_id, [p.id for p in kept]),
                ).fetchall()
            }
            for where in regions:
                for period in kept:
                    if (period.id, where or "") not in present:
                        continue
                    params = {"b": board_id, "p": period.id, "r": where or "", "v": viewer}
                    total = conn.execute(_TOTAL, params).fetchone()
                    row = conn.execute(
                        f"SELECT score, rank, tie_key FROM ({ranked}) w"  # noqa: S608
                        " WHERE player_id = %(player)s",
                        params | {"player": player_id},
                    ).fetchone()
                    if row is None or total is None:
                        continue
                    found.append(
                        PeriodStanding(
                            kind=period.kind,
                            period=period.id,
                            region=where,
                            rank=int(row[1]),
                            score=format_score(float(row[0])),
                            total=int(total[0]),
                            tiebreakers=_tiebreakers(row[2], board),
                            hidden=hidden,
                            tiering=board.tiering(),
                        )
                    )
        return found

    def _scoped(
        self, board_id: str, period: Period, region: str | None, ranks: str = ""
    ) -> BoardConfig:
        """The board, if it keeps this period kind and region (and teams, to read them): the
        read script's checks."""
        board = self.board(board_id)
        if ranks and board.teams is None:
            raise NotFound(f"board {board_id!r} keeps no team rankings", board_id=board_id)
        if period.kind not in board.periods:
            raise NotFound(
                f"board {board_id!r} does not keep {period.kind} periods", period=period.id
            )
        if region is not None and region not in (board.regions or ()):
            raise NotFound(f"region {region!r} is not one of the board's regions", region=region)
        return board


def _visible(alias: str, reader: bool = True) -> str:
    """Hidden players left out, except the one reading (%(v)s: '' for nobody in particular):
    a team's score leaves out every hidden member's contribution (`reader` False)."""
    hidden = (
        "NOT EXISTS (SELECT 1 FROM hidden_players h"  # noqa: S608 - fixed aliases
        f" WHERE h.board_id = {alias}.board_id AND h.player_id = {alias}.player_id)"
    )
    return f" AND ({alias}.player_id = %(v)s OR {hidden})" if reader else f" AND {hidden}"


_TOTAL = (
    "SELECT count(*) FROM standings s WHERE board_id = %(b)s AND period = %(p)s"  # noqa: S608
    " AND region = %(r)s AND present" + _visible("s")
)


def _params(
    board_id: str, period: Period, region: str | None, viewer: str, ranks: str
) -> dict[str, Any]:
    team = ranks[8:] if ranks.startswith("members:") else ""
    return {"b": board_id, "p": period.id, "r": region or "", "v": viewer, "t": team}


def _total(ranked: str, ranks: str) -> str:
    if not ranks:
        return _TOTAL
    return f"SELECT count(*) FROM ({ranked}) w"  # noqa: S608 - fixed fragments


def _hidden_reader(conn: Any, params: dict[str, Any]) -> str:
    """The reader (%(v)s) if the board hides them, else ''."""
    if not params.get("v"):
        return ""
    row = conn.execute(
        "SELECT 1 FROM hidden_players WHERE board_id = %(b)s AND player_id = %(v)s", params
    ).fetchone()
    return str(params["v"]) if row else ""


def _ranked(board: BoardConfig, ranks: str = "") -> str:
    """A period's rows with the board's ranks and 0-based positions, in its total order; with
    `ranks`, its teams or one team's members (plain: shared ranks by score, ties by id)."""
    direction = "DESC" if board.sort == "desc" else "ASC"
    if ranks:
        return _ranked_teams(board, ranks, direction)
    score_order = f"s.score {direction}"
    if board.tiebreakers:
        score_order += f", s.tie_key {direction}"
    order = f"{score_order}, {_ORDER[(board.sort, board.ties)]}"
    rank = "ROW_NUMBER()" if board.ties == "first" else "RANK()"
    return (
        f"SELECT s.player_id, s.score, m.metadata, s.tie_key,"  # noqa: S608 - fixed fragments
        f" {rank} OVER (ORDER BY {score_order if rank == 'RANK()' else order}) AS rank,"
        f" ROW_NUMBER() OVER (ORDER BY {order}) - 1 AS position"
        " FROM standings s LEFT JOIN player_metadata m"
        " ON m.board_id = s.board_id AND m.player_id = s.player_id"
        " WHERE s.board_id = %(b)s AND s.period = %(p)s AND s.region = %(r)s AND s.present"
        + _visible("s")
    )


def _ranked_teams(board: BoardConfig, ranks: str, direction: str) -> str:
    """A team board's teams (their visible members' contributions added up, or the best of
    them), or one team's members, as the index ranks them (teams.lua). Sums of fractional
    scores may round in another order than the index's running totals did."""
    where = " WHERE m.board_id = %(b)s AND m.period = %(p)s AND m.region = %(r)s"
    if ranks == "teams":
        aggregate = "sum" if board.teams == "sum" else ("max" if direction == "DESC" else "min")
        return (
            "SELECT t.team_id AS player_id, t.score, NULL::jsonb AS metadata,"  # noqa: S608
            " NULL::text AS tie_key,"
            f" RANK() OVER (ORDER BY t.score {direction}) AS rank,"
            f" ROW_NUMBER() OVER (ORDER BY t.score {direction}, t.team_id {direction}) - 1"
            " AS position"
            f" FROM (SELECT m.team_id, {aggregate}(m.contribution) AS score"
            f" FROM team_members m{where}{_visible('m', reader=False)}"
            " GROUP BY m.team_id) t"
        )
    return (
        "SELECT m.player_id, m.contribution AS score, d.metadata,"  # noqa: S608
        " NULL::text AS tie_key,"
        f" RANK() OVER (ORDER BY m.contribution {direction}) AS rank,"
        f" ROW_NUMBER() OVER (ORDER BY m.contribution {direction}, m.player_id {direction}) - 1"
        " AS position"
        " FROM team_members m LEFT JOIN player_metadata d"
        " ON d.board_id = m.board_id AND d.player_id = m.player_id"
        f"{where}{_visible('m')} AND m.team_id = %(t)s"
    )


def _tiebreakers(key: str | None, board: BoardConfig) -> dict[str, int] | None:
    if not board.tiebreakers:
        return None
    return decode(key or "", board.tiebreakers, board.sort)


def _entries(
    rows: list[Any], board: BoardConfig, hidden: str = "", plain: bool = False
) -> tuple[Entry, ...]:
    """(player_id, score, metadata, rank, tie key) rows as entries; `hidden`: the hidden
    reader whose own entry may be among them; `plain`: teams or members (no tie-breakers)."""
    return tuple(
        Entry(
            rank=int(r[3]),
            player_id=r[0],
            score=format_score(float(r[1])),
            metadata=r[2] if isinstance(r[2], dict) else (json.loads(r[2]) if r[2] else None),
            tiebreakers=None if plain else _tiebreakers(r[4], board),
            hidden=bool(hidden) and r[0] == hidden,
        )
        for r in rows
    )


def window_start(op: str, size: int, offset_or_rank: int, position: int | None, total: int) -> int:
    """The first position of a window, centred and clamped exactly as the read script does."""
    if op == "page":
        return offset_or_rank
    if op == "player":
        assert position is not None
        return position
    centre = offset_or_rank - 1 if op == "around_rank" else position
    assert centre is not None
    start = min(centre - (size - 1) // 2, total - size)
    return max(start, 0)
