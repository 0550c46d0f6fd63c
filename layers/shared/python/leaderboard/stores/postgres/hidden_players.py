"""Hidden players in PostgreSQL: the record of which players an admin hid on which board.

The admin route writes here first and then moves the player's entries in the serving index,
so a rebuild (which restores the index from the record) hides them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from leaderboard.domain.clock import iso
from leaderboard.stores.postgres.database import Database


@dataclass(frozen=True, slots=True)
class HiddenPlayer:
    player_id: str
    hidden_at: datetime
    reason: str | None

    def to_json(self) -> dict[str, str | None]:
        return {
            "player_id": self.player_id,
            "hidden_at": iso(self.hidden_at),
            "reason": self.reason,
        }


class HiddenPlayers:
    def __init__(self, db: Database) -> None:
        self.db = db

    def hide(
        self, board_id: str, player_id: str, reason: str | None, now: datetime
    ) -> tuple[HiddenPlayer, bool]:
        """Record the player as hidden: (the record, whether it is new). Hiding again keeps
        the first time and takes a new reason only if one is given."""
        with self.db.transaction() as conn:
            row = conn.execute(
                "INSERT INTO hidden_players (board_id, player_id, hidden_at, reason)"
                " VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (board_id, player_id) DO UPDATE"
                " SET reason = COALESCE(EXCLUDED.reason, hidden_players.reason)"
                " RETURNING hidden_at, reason, xmax = 0",
                (board_id, player_id, now, reason),
            ).fetchone()
        assert row is not None
        return HiddenPlayer(player_id, row[0], row[1]), bool(row[2])

    def unhide(self, board_id: str, player_id: str) -> bool:
        """Forget the hiding; False if the player was not hidden."""
        with self.db.transaction() as conn:
            done = conn.execute(
                "DELETE FROM hidden_players WHERE board_id = %s AND player_id = %s",
                (board_id, player_id),
            )
        return bool(done.rowcount)

    def page(self, board_id: str, after: str | None, limit: int) -> list[HiddenPlayer]:
        """The board's hidden players in player id order, after `after`."""
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT player_id, hidden_at, reason FROM hidden_players WHERE board_id = %s"
                " AND player_id > %s ORDER BY player_id LIMIT %s",
                (board_id, after or "", limit),
            ).fetchall()
        return [HiddenPlayer(r[0], r[1], r[2]) for r in rows]

    def of_board(self, board_id: str) -> dict[str, datetime]:
        """Every hidden player of a board (for a rebuild)."""
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT player_id, hidden_at FROM hidden_players WHERE board_id = %s",
                (board_id,),
            ).fetchall()
        return {r[0]: r[1] for r in rows}
