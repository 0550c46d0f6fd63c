"""The archive: closed periods as they stood when they closed, in PostgreSQL.

Written in chunks by the rollover (resumable: a chunk is committed with its positions, so a
cut-off run continues after the last stored position) and read back with the same ranks.
Archived rows never change, so readers may cache them for good.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from leaderboard.domain.errors import NotFound
from leaderboard.domain.periods import Period
from leaderboard.stores.postgres import Database
from leaderboard.stores.redis_index import Entry, Window
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
                "COPY archive_entries (board_id, period, region, position, rank, player_id, score,"
                " metadata) FROM STDIN"
            ) as copy,
        ):
            for offset, entry in enumerate(entries):
                copy.write_row(
                    (
                        board_id,
                        period_id,
                        region,
                        start + offset,
                        entry.rank,
                        entry.player_id,
                        float(entry.score),
                        None if entry.metadata is None else json.dumps(entry.metadata),
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
            conn.execute(
                "UPDATE archived_periods SET status = 'archived', entries = %(e)s,"
                " differences = %(d)s, archived_at = %(now)s"
                " WHERE board_id = %(b)s AND period = %(p)s AND status = 'archiving'",
                params | {"e": counts[0], "d": counts[1]},
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
        params: dict[str, Any] = {"b": board_id, "p": period.id, "r": region or ""}
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
        entries = tuple(
            Entry(rank=int(r[0]), player_id=r[1], score=_score(r[2]), metadata=r[3]) for r in rows
        )
        return Window(total=total, start=start, player_position=position, entries=entries)


_COUNT = (
    "SELECT count(*) FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
)
_POSITION = (
    "SELECT position FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s AND player_id = %(player)s"
)
_RANGE = (
    "SELECT rank, player_id, score, metadata FROM archive_entries"
    " WHERE board_id = %(b)s AND period = %(p)s AND region = %(r)s"
    " AND position >= %(start)s AND position < %(end)s ORDER BY position"
)


def _score(value: float) -> int | float:
    from leaderboard.domain.validation import format_score

    return format_score(float(value))
