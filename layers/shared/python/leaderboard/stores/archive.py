"""The archive: closed periods as they stood when they closed, in PostgreSQL.

Written in chunks by the rollover (resumable: a chunk is committed with its positions, so a
cut-off run continues after the last stored position) and read back with the same ranks.
Archived rows never change, so readers may cache them for good.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from leaderboard.domain.errors import NotFound
from leaderboard.domain.periods import Period, parse_period_id
from leaderboard.stores.postgres import Database
from leaderboard.stores.redis_index import Entry, Selection, Window
from leaderboard.stores.standings_reads import window_start


class ArchiveStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def state(self, board_id: str, period_id: str) -> dict[str, Any] | None:
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT status, entries, differences, archived_at, purged_at"
                " FROM archived_periods WHERE board_id = %s AND period = %s",
                (board_id, period_id),
            ).fetchone()
        if row is None:
            return None
        keys = ("status", "entries", "differences", "archived_at", "purged_at")
        return dict(zip(keys, row, strict=True))

    def begin(self, board_id: str, period: Period) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO archived_periods (board_id, period, kind, starts_at, ends_at, status)"
                " VALUES (%s, %s, %s, %s, %s, 'archiving') ON CONFLICT DO NOTHING",
                (board_id, period.id, period.kind, period.starts_at, period.ends_at),
            )

    def stored(self, board_id: str, period_id: str, region: str) -> int:
        """How many entries of this board are stored: where a resumed run continues."""
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT count(*) FROM archive_entries WHERE board_id = %s AND period = %s"
                " AND region = %s",
                (board_id, period_id, region),
            ).fetchone()
        return int(row[0]) if row else 0

    def append(
        self, board_id: str, period_id: str, region: str, start: int, entries: tuple[Entry, ...]
    ) -> None:
        import json

        with (
            self.db.transaction() as conn,
            conn.cursor().copy(
                "COPY archive_entries (board_id, period, kind, region, position, rank, player_id,"
                " score, metadata, tiebreakers) FROM STDIN"
            ) as copy,
        ):
            kind = parse_period_id(period_id).kind
            for offset, entry in enumerate(entries):
                copy.write_row(
                    (
                        board_id,
                        period_id,
                        kind,
                        region,
                        start + offset,
                        entry.rank,
                        entry.player_id,
                        float(entry.score),
                        None if entry.metadata is None else json.dumps(entry.metadata),
                        None if entry.tiebreakers is None else json.dumps(entry.tiebreakers),
                    )
                )

    def finish(self, board_id: str, period_id: str, now: datetime) -> tuple[int, int]:
        """Mark the period archived; returns (global entries, rows that disagree with the
        persisted standings: the check that the two stores saw the same period)."""
        params = {"b": board_id, "p": period_id, "now": now}
        with self.db.transaction() as conn:
            entries = conn.execute(
                "SELECT count(*) FROM archive_entries WHERE board_id = %(b)s AND period = %(p)s"
                " AND region = ''",
                params,
            ).fetchone()
            differences = conn.execute(
                "SELECT count(*) FROM (SELECT region, player_id, score FROM archive_entries"
                "  WHERE board_id = %(b)s AND period = %(p)s) a"
                " FULL OUTER JOIN (SELECT region, player_id, score FROM standings"
                "  WHERE board_id = %(b)s AND period = %(p)s AND present) s"
                " USING (region, player_id) WHERE a.score IS DISTINCT FROM s.score",
                params,
            ).fetchone()
            counts = (int(entries[0]) if entries else 0, int(differences[0]) if differences else 0)
            finished = conn.execute(
                "UPDATE archived_periods SET status = 'archived', entries = %(e)s,"
                " differences = %(d)s, archived_at = %(now)s"
                " WHERE board_id = %(b)s AND period = %(p)s AND status = 'archiving'",
                params | {"e": counts[0], "d": counts[1]},
            )
            if finished.rowcount:  # each board's size, for history pages (see 0006)
                conn.execute(
                    "INSERT INTO archived_totals (board_id, period, region, entries)"
                    " SELECT board_id, period, region, count(*) FROM archive_entries"
                    " WHERE board_id = %(b)s AND period = %(p)s GROUP BY board_id, period, region"
                    " ON CONFLICT DO NOTHING",
                    params,
                )
        return counts

    def mark_purged(self, board_id: str, period_id: str, now: datetime) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE archived_periods SET purged_at = %s WHERE board_id = %s AND period = %s",
                (now, board_id, period_id),
            )

    # --- reads -------------------------------------------------------------------------
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
    ) -> Window:
        params: dict[str, Any] = {"b": board_id, "p": period.id, "k": period.kind}
        params["r"] = region or ""
        with self.db.transaction() as conn:
            total_row = conn.execute(_COUNT, params).fetchone()
            total = int(total_row[0]) if total_row else 0
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

    def players(
        self, board_id: str, period: Period, region: str | None, player_ids: list[str]
    ) -> Selection:
        """Many players of an archived board, in board order (one index probe per id)."""
        params = {"b": board_id, "p": period.id, "k": period.kind, "r": region or ""}
        with self.db.transaction() as conn:
            # The size stored when the period was archived: a key lookup, not a count. No row:
            # that board had no entries.
            total_row = conn.execute(_ARCHIVED_TOTAL, params).fetchone()
            rows = conn.execute(_CHOSEN, params | {"ids": player_ids}).fetchall()
        return Selection(
            total=int(total_row[0]) if total_row else 0,
            entries=tuple(_entry(r) for r in rows),
        )

    def history(
        self,
        board_id: str,
        player_id: str,
        kind: str,
        region: str | None,
        before: str | None,
        limit: int,
    ) -> list[ArchivedResult]:
        """A player's final standings in archived periods of `kind`, newest first, from just
        before `before`: one backward range scan of archive_entries_history, `limit` rows."""
        params = {
            "b": board_id,
            "player": player_id,
            "k": kind,
            "r": region or "",
            "before": before,
            "n": limit,
        }
        with self.db.session() as conn:  # one statement: no BEGIN/COMMIT round trips
            query = _HISTORY_BEFORE if before is not None else _HISTORY_LATEST
            rows = conn.execute(query, params).fetchall()
        return [
            ArchivedResult(
                period=r[0], rank=int(r[1]), score=_score(r[2]), total=int(r[3]), tiebreakers=r[4]
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


_COUNT = (
    "SELECT count(*) FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
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
    "SELECT rank, player_id, score, metadata, tiebreakers FROM archive_entries"
    " WHERE board_id = %(b)s AND player_id = ANY(%(ids)s) AND kind = %(k)s AND region = %(r)s"
    " AND period = %(p)s ORDER BY position"
)
# Totals join on their primary key: only finished periods have one, so a period still being
# archived (or resumed after a cut-off run) never shows a partial total.
# Two statements, not `(before IS NULL OR period < before)`: a generic plan could not use
# that bound as an index condition and would filter its way down a long history instead.
_HISTORY = (
    "SELECT e.period, e.rank, e.score, t.entries, e.tiebreakers FROM archive_entries e"
    " JOIN archived_totals t"
    "  ON t.board_id = e.board_id AND t.period = e.period AND t.region = e.region"
    " WHERE e.board_id = %(b)s AND e.player_id = %(player)s AND e.kind = %(k)s"
    " AND e.region = %(r)s{bound} ORDER BY e.period DESC LIMIT %(n)s"
)
_HISTORY_LATEST = _HISTORY.format(bound="")
_HISTORY_BEFORE = _HISTORY.format(bound=" AND e.period < %(before)s")
_RANGE = (
    "SELECT rank, player_id, score, metadata, tiebreakers FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
    " AND position >= %(start)s AND position < %(end)s ORDER BY position"
)


def _score(value: float) -> int | float:
    from leaderboard.domain.validation import format_score

    return format_score(float(value))


def _entry(row: Any) -> Entry:
    """An archived entry from a (rank, player_id, score, metadata, tiebreakers) row."""
    return Entry(
        rank=int(row[0]),
        player_id=row[1],
        score=_score(row[2]),
        metadata=row[3],
        tiebreakers=row[4],
    )
