"""The archive: closed periods as they stood when they closed, in PostgreSQL.

Written in chunks by the rollover (resumable: a chunk is committed with its positions, so a
cut-off run continues after the last stored position) and read back with the same ranks.
Archived rows never change, so readers may cache them for good.

Hidden players' final entries are kept apart (archive_hidden_entries): public reads never see
them, and a hidden player's own reads put their entry back where it would have stood
(leaderboard.domain.self_view), with the rank they saw then.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from leaderboard.domain.periods import Period, parse_period_id
from leaderboard.domain.read_results import Entry
from leaderboard.stores.postgres.archive_reads import (
    ArchiveReads,
    _archive_table,
)


class ArchiveStore(ArchiveReads):
    """The archive's writes (by the rollover), over its reads."""

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

    def stored(self, board_id: str, period_id: str, region: str, ranks: str = "") -> int:
        """How many entries of this board (ranks ""), teams ("teams") or members of a team
        ("members:<team>") are stored: where a resumed run continues."""
        table, _, _ = _archive_table(ranks)
        team = ranks[8:]
        with self.db.transaction() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM {table} WHERE board_id = %s AND period = %s"  # noqa: S608
                " AND region = %s" + (" AND team_id = %s" if team else ""),
                (board_id, period_id, region, *((team,) if team else ())),
            ).fetchone()
        return int(row[0]) if row else 0

    def append(
        self,
        board_id: str,
        period_id: str,
        region: str,
        start: int,
        entries: tuple[Entry, ...],
        ranks: str = "",
    ) -> None:
        """A chunk in rank order from position `start`: of the players (ranks ""), of a team
        ranking ("teams": an entry's player_id is the team) or of one team's members."""
        import json

        table, key, _ = _archive_table(ranks)
        kind = parse_period_id(period_id).kind
        team = (ranks[8:],) if ranks.startswith("members:") else ()
        columns = "board_id, period, kind, region, " + ("team_id, " if team else "")
        columns += f"position, rank, {key}, score"
        plain = ranks == "teams"  # no metadata, no tie-breakers
        if not plain:
            columns += ", metadata" + ("" if team else ", tiebreakers")
        with (
            self.db.transaction() as conn,
            conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
        ):
            for offset, entry in enumerate(entries):
                row: tuple[Any, ...] = (
                    board_id,
                    period_id,
                    kind,
                    region,
                    *team,
                    start + offset,
                    entry.rank,
                    entry.player_id,
                    float(entry.score),
                )
                if not plain:
                    row += (None if entry.metadata is None else json.dumps(entry.metadata),)
                    if not team:
                        tiebreakers = entry.tiebreakers
                        row += (None if tiebreakers is None else json.dumps(tiebreakers),)
                copy.write_row(row)

    def append_hidden(
        self, board_id: str, period_id: str, region: str, rows: list[tuple[Entry, int]]
    ) -> None:
        """Hidden players' final entries, each with the place it would have held: written once
        the visible board is stored (a resumed run writes them again; the first copy stays)."""
        import json

        kind = parse_period_id(period_id).kind
        with self.db.transaction() as conn:
            for entry, place in rows:
                conn.execute(
                    "INSERT INTO archive_hidden_entries (board_id, player_id, kind, region,"
                    " period, rank, place, score, metadata, tiebreakers)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (
                        board_id,
                        entry.player_id,
                        kind,
                        region,
                        period_id,
                        entry.rank,
                        place,
                        float(entry.score),
                        None if entry.metadata is None else json.dumps(entry.metadata),
                        None if entry.tiebreakers is None else json.dumps(entry.tiebreakers),
                    ),
                )

    # --- team boards -------------------------------------------------------------------
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
                "  WHERE board_id = %(b)s AND period = %(p)s UNION ALL"
                "  SELECT region, player_id, score FROM archive_hidden_entries"
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
