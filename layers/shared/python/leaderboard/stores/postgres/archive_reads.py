"""Reading the archive back: a closed period's windows and chosen players with the ranks they
closed with, a player's (or team's) history over closed periods. Rows never change, so readers
may cache them for good."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboard.domain.errors import NotFound
from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import Entry, Selection, Window
from leaderboard.domain.score_tiers import Tiering
from leaderboard.domain.self_view import self_window, shifted
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record_reads import window_start


class ArchiveReads:
    def __init__(self, db: Database) -> None:
        self.db = db

    def team_history(
        self,
        board_id: str,
        team_id: str,
        kind: str,
        region: str | None,
        before: str | None,
        limit: int,
    ) -> list[ArchivedResult]:
        """A team's final standings in archived periods of `kind`, newest first, from just
        before `before`: one backward range scan of archive_teams_history."""
        params = {"b": board_id, "t": team_id, "k": kind, "r": region or "", "before": before}
        bound = " AND e.period < %(before)s" if before is not None else ""
        with self.db.session() as conn:
            rows = conn.execute(
                "SELECT e.period, e.rank, e.score, (SELECT count(*) FROM archive_teams c"  # noqa: S608
                "  WHERE c.board_id = e.board_id AND c.period = e.period AND c.region = e.region),"
                f" {_TIERS}"
                " FROM archive_teams e WHERE e.board_id = %(b)s AND e.team_id = %(t)s"
                f" AND e.kind = %(k)s AND e.region = %(r)s{bound}"
                " ORDER BY e.period DESC LIMIT %(n)s",
                params | {"n": limit},
            ).fetchall()
        tiering = _tiering(rows, 4)
        return [
            ArchivedResult(r[0], int(r[1]), _score(r[2]), int(r[3]), tiering=tiering) for r in rows
        ]

    def ranked_ids(self, board_id: str, period_id: str, region: str) -> list[str]:
        """The teams of an archived team ranking, in rank order."""
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT team_id FROM archive_teams WHERE board_id = %s AND period = %s"
                " AND region = %s ORDER BY position",
                (board_id, period_id, region),
            ).fetchall()
        return [r[0] for r in rows]

    def _ranked_window(
        self,
        params: dict[str, Any],
        ranks: str,
        op: str,
        size: int,
        offset_or_rank: int,
        player_id: str,
    ) -> Window:
        """A window of an archived team ranking or of one team's members."""
        table, key, scope = _archive_table(ranks)
        params = params | {"t": ranks[8:]}
        with self.db.transaction() as conn:
            total_row = conn.execute(
                f"SELECT count(*) FROM {table}{scope}",  # noqa: S608 - fixed names
                params,
            ).fetchone()
            total = int(total_row[0]) if total_row else 0
            position = None
            if op in ("player", "around"):
                found = conn.execute(
                    f"SELECT position FROM {table}{scope} AND {key} = %(id)s",  # noqa: S608
                    params | {"id": player_id},
                ).fetchone()
                if found is None:
                    raise NotFound(
                        f"{key[:-3]} {player_id!r} has no entry in {params['p']}",
                        player_id=player_id,
                    )
                position = int(found[0])
            start = window_start(op, size, offset_or_rank, position, total)
            end = start + (1 if op == "player" else size)
            rows = conn.execute(
                f"SELECT rank, {key}, score, {_TEAM_META[ranks == 'teams']}, NULL"  # noqa: S608
                f" FROM {table}{scope} AND position >= %(start)s AND position < %(end)s"
                " ORDER BY position",
                params | {"start": start, "end": end},
            ).fetchall()
        entries = tuple(_entry(r) for r in rows)
        return Window(total=total, start=start, player_position=position, entries=entries)

    def _ranked_players(self, params: dict[str, Any], ranks: str, ids: list[str]) -> Selection:
        table, key, scope = _archive_table(ranks)
        params = params | {"t": ranks[8:], "ids": ids}
        with self.db.transaction() as conn:
            total_row = conn.execute(
                f"SELECT count(*) FROM {table}{scope}",  # noqa: S608 - fixed names
                params,
            ).fetchone()
            rows = conn.execute(
                f"SELECT rank, {key}, score, {_TEAM_META[ranks == 'teams']}, NULL"  # noqa: S608
                f" FROM {table}{scope} AND {key} = ANY(%(ids)s) ORDER BY position",
                params,
            ).fetchall()
        return Selection(
            total=int(total_row[0]) if total_row else 0, entries=tuple(_entry(r) for r in rows)
        )

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
        """`viewer`: who reads; a player hidden in that period sees their own entry in it.
        `ranks`: a team board's teams or one team's members (as RedisIndex.window)."""
        params: dict[str, Any] = {"b": board_id, "p": period.id, "k": period.kind}
        params["r"] = region or ""
        if ranks:
            return self._ranked_window(params, ranks, op, size, offset_or_rank, player_id)
        with self.db.transaction() as conn:
            total_row = conn.execute(_COUNT, params).fetchone()
            total = int(total_row[0]) if total_row else 0
            mine = (
                conn.execute(_HIDDEN_ROW, params | {"player": viewer}).fetchone()
                if viewer
                else None
            )
            if mine is not None:
                return self._own_view(
                    conn, params, mine, total, op, size, offset_or_rank, player_id
                )
            position = None
            if op in ("player", "around"):
                found = conn.execute(_POSITION, params | {"player": player_id}).fetchone()
                if found is None:
                    raise NotFound(
                        f"player {player_id!r} has no entry in {period.id}", player_id=player_id
                    )
                position = int(found[0])
            start = window_start(op, size, offset_or_rank, position, total)
            end = start + (1 if op == "player" else size)
            rows = conn.execute(_RANGE, params | {"start": start, "end": end}).fetchall()
        entries = tuple(_entry(r) for r in rows)
        return Window(total=total, start=start, player_position=position, entries=entries)

    def _own_view(
        self,
        conn: Any,
        params: dict[str, Any],
        mine: Any,
        total: int,
        op: str,
        size: int,
        offset_or_rank: int,
        player_id: str,
    ) -> Window:
        """A hidden player's own view of the archived board: theirs put back (self_view)."""
        me = _entry(mine, hidden=True)
        around: int | None = None
        if op in ("player", "around") and player_id != me.player_id:
            found = conn.execute(_POSITION, params | {"player": player_id}).fetchone()
            if found is None:
                raise NotFound(
                    f"player {player_id!r} has no entry in {params['p']}", player_id=player_id
                )
            around = int(found[0])
            if op == "player":  # another player: their rank as this reader sees it
                row = conn.execute(_RANGE, params | {"start": around, "end": around + 1}).fetchall()
                entry = _entry(row[0])
                if around >= int(mine[5]):
                    entry = shifted(entry, me, bool(mine[6]))
                position = around + (1 if int(mine[5]) <= around else 0)
                return Window(
                    total=total + 1, start=position, player_position=position, entries=(entry,)
                )

        def visible(start: int, stop: int) -> tuple[Entry, ...]:
            rows = conn.execute(_RANGE, params | {"start": start, "end": stop}).fetchall()
            return tuple(_entry(r) for r in rows)

        return self_window(
            op=op,
            size=size,
            offset_or_rank=offset_or_rank,
            me=me,
            place=int(mine[5]),
            visible_total=total,
            first=bool(mine[6]),
            visible=visible,
            around_position=around,
        )

    def players(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        player_ids: list[str],
        viewer: str = "",
        ranks: str = "",
    ) -> Selection:
        """Many players of an archived board, in board order (one index probe per id); in a
        hidden `viewer`'s own view, with their entry put back. `ranks`: as in `window`."""
        params = {"b": board_id, "p": period.id, "k": period.kind, "r": region or ""}
        if ranks:
            return self._ranked_players(params, ranks, player_ids)
        with self.db.transaction() as conn:
            # The size stored when the period was archived: a key lookup, not a count. No row:
            # that board had no entries.
            total_row = conn.execute(_ARCHIVED_TOTAL, params).fetchone()
            rows = conn.execute(_CHOSEN, params | {"ids": player_ids}).fetchall()
            mine = (
                conn.execute(_HIDDEN_ROW, params | {"player": viewer}).fetchone()
                if viewer
                else None
            )
        total = int(total_row[0]) if total_row else 0
        entries = [_entry(r) for r in rows]
        if mine is None:
            return Selection(total=total, entries=tuple(entries))
        me, place = _entry(mine, hidden=True), int(mine[5])
        first = bool(mine[6])
        placed = [(place, 1, me)] if me.player_id in player_ids else []
        for r, entry in zip(rows, entries, strict=True):
            position = int(r[5])
            if position >= place:
                entry = shifted(entry, me, first)
            placed.append((position, 2 if position >= place else 0, entry))
        placed.sort(key=lambda item: item[:2])
        return Selection(total=total + 1, entries=tuple(e for _, _, e in placed))

    def history(
        self,
        board_id: str,
        player_id: str,
        kind: str,
        region: str | None,
        before: str | None,
        limit: int,
        viewer: str = "",
    ) -> list[ArchivedResult]:
        """A player's final standings in archived periods of `kind`, newest first, from just
        before `before`: one backward range scan of archive_entries_history, `limit` rows.
        Periods in which the board hid the player count only when they read it themselves
        (`viewer`), with the rank and total they saw."""
        params = {
            "b": board_id,
            "player": player_id,
            "k": kind,
            "r": region or "",
            "before": before,
            "n": limit,
        }
        with self.db.session() as conn:  # one statement: no BEGIN/COMMIT round trips
            if viewer == player_id:  # their own: with the periods the board hid them in
                query = _OWN_HISTORY_BEFORE if before is not None else _OWN_HISTORY_LATEST
            else:
                query = _HISTORY_BEFORE if before is not None else _HISTORY_LATEST
            rows = conn.execute(query, params).fetchall()
        tiering = _tiering(rows, 6)
        return [
            ArchivedResult(
                period=r[0],
                rank=int(r[1]),
                score=_score(r[2]),
                total=int(r[3]) + (1 if r[5] else 0),
                tiebreakers=r[4],
                hidden=bool(r[5]),
                tiering=tiering,
            )
            for r in rows
        ]


@dataclass(frozen=True, slots=True)
class ArchivedResult:
    """How a player finished one archived period."""

    period: str
    rank: int
    score: int | float
    total: int
    tiebreakers: dict[str, int] | None = None  # boards with tie-breakers only
    hidden: bool = False  # the board hid the player then (shown to the player alone)
    tiering: Tiering | None = None  # the board's score tiers now (a view: not archived)


# Team boards' archives: where a team ranking or a team's members are kept, and what stands
# for metadata in their rows (teams have none).
_TEAM_TABLES = {"teams": "archive_teams", "members": "archive_team_members"}
_TEAM_META = {True: "NULL::jsonb", False: "metadata"}


def _archive_table(ranks: str) -> tuple[str, str, str]:
    """(table, id column, WHERE clause) of what a read or a chunk of the archive ranks: the
    players (ranks ""), a team ranking, or one team's members."""
    scope = " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
    if not ranks:
        return "archive_entries", "player_id", scope
    table = _TEAM_TABLES[ranks.split(":", 1)[0]]
    key = "team_id" if ranks == "teams" else "player_id"
    return table, key, scope + ("" if ranks == "teams" else " AND team_id = %(t)s")


_COUNT = (
    "SELECT count(*) FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
)
_HIDDEN_ROW = (  # a hidden player's own entry, the place it would have held, the board's ties
    "SELECT rank, player_id, score, metadata, tiebreakers, place,"
    " (SELECT config->>'ties' = 'first' FROM boards WHERE board_id = %(b)s)"
    " FROM archive_hidden_entries WHERE board_id = %(b)s AND player_id = %(player)s"
    " AND kind = %(k)s AND region = %(r)s AND period = %(p)s"
)
_ARCHIVED_TOTAL = (
    "SELECT entries FROM archived_totals"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
)
_POSITION = (  # archive_entries_history: the kind follows from the period
    "SELECT position FROM archive_entries WHERE board_id = %(b)s AND player_id = %(player)s"
    " AND kind = %(k)s AND region = %(r)s AND period = %(p)s"
)
_CHOSEN = (
    "SELECT rank, player_id, score, metadata, tiebreakers, position FROM archive_entries"
    " WHERE board_id = %(b)s AND player_id = ANY(%(ids)s) AND kind = %(k)s AND region = %(r)s"
    " AND period = %(p)s ORDER BY position"
)
# Totals join on their primary key: only finished periods have one, so a period still being
# archived (or resumed after a cut-off run) never shows a partial total.
# Two statements, not `(before IS NULL OR period < before)`: a generic plan could not use
# that bound as an index condition and would filter its way down a long history instead.
# The board's score tiers, [score_tiers, sort], in the same statement as a history page: a
# view of the ranks, read from the board as it is now (evaluated once, not per row).
_TIERS = (
    "(SELECT jsonb_build_array(config->'score_tiers', config->'sort') FROM boards"
    " WHERE board_id = %(b)s)"
)
_HISTORY = (
    "SELECT e.period, e.rank, e.score, t.entries, e.tiebreakers, false, {tiers}"
    " FROM archive_entries e"
    " JOIN archived_totals t"
    "  ON t.board_id = e.board_id AND t.period = e.period AND t.region = e.region"
    " WHERE e.board_id = %(b)s AND e.player_id = %(player)s AND e.kind = %(k)s"
    " AND e.region = %(r)s{bound} ORDER BY e.period DESC LIMIT %(n)s"
)
_HISTORY_LATEST = _HISTORY.format(bound="", tiers=_TIERS)
_HISTORY_BEFORE = _HISTORY.format(bound=" AND e.period < %(before)s", tiers=_TIERS)
# A player's own history: the periods in which the board hid them too (a page of each table,
# merged), with the total they saw (one more: their own entry).
_OWN_HISTORY = (
    "SELECT * FROM (({public}) UNION ALL ("
    "SELECT h.period, h.rank, h.score, t.entries, h.tiebreakers, true, {tiers}"
    " FROM archive_hidden_entries h JOIN archived_totals t"
    "  ON t.board_id = h.board_id AND t.period = h.period AND t.region = h.region"
    " WHERE h.board_id = %(b)s AND h.player_id = %(player)s AND h.kind = %(k)s"
    " AND h.region = %(r)s{bound} ORDER BY h.period DESC LIMIT %(n)s)) o"
    " ORDER BY 1 DESC LIMIT %(n)s"
)
_OWN_HISTORY_LATEST = _OWN_HISTORY.format(public=_HISTORY_LATEST, bound="", tiers=_TIERS)
_OWN_HISTORY_BEFORE = _OWN_HISTORY.format(
    public=_HISTORY_BEFORE, bound=" AND h.period < %(before)s", tiers=_TIERS
)
_RANGE = (
    "SELECT rank, player_id, score, metadata, tiebreakers FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
    " AND position >= %(start)s AND position < %(end)s ORDER BY position"
)


def _tiering(rows: list[Any], column: int) -> Tiering | None:
    """The board's score tiers from a history page's `_TIERS` column (None without rows)."""
    if not rows or rows[0][column] is None:
        return None
    tiers, sort = rows[0][column]
    return Tiering.of(tiers, sort or "desc")


def _score(value: float) -> int | float:
    from leaderboard.domain.validation import format_score

    return format_score(float(value))


def _entry(row: Any, hidden: bool = False) -> Entry:
    """An archived entry from a (rank, player_id, score, metadata, tiebreakers, ...) row."""
    return Entry(
        rank=int(row[0]),
        player_id=row[1],
        score=_score(row[2]),
        metadata=row[3],
        tiebreakers=row[4],
        hidden=hidden,
    )
