"""Boards in PostgreSQL, the source of truth for their rules (versioned; the serving index holds a
copy the scripts check)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from leaderboard.domain.boards import BoardConfig
from leaderboard.stores.postgres.database import Database


class BoardRepository:
    """Board configuration rows."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get_for_update(self, conn: psycopg.Connection[Any], board_id: str) -> BoardConfig | None:
        row = conn.execute(
            "SELECT config, version FROM boards WHERE board_id = %s FOR UPDATE", (board_id,)
        ).fetchone()
        return None if row is None else _board(row[0], row[1])

    def save(self, conn: psycopg.Connection[Any], board: BoardConfig) -> None:
        conn.execute(
            "INSERT INTO boards (board_id, config, version, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (board_id) DO UPDATE SET config = EXCLUDED.config,"
            " version = EXCLUDED.version, updated_at = EXCLUDED.updated_at",
            (
                board.board_id,
                Jsonb(board.to_public()),
                board.version,
                board.created_at,
                board.updated_at,
            ),
        )

    def get(self, board_id: str) -> BoardConfig | None:
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT config, version FROM boards WHERE board_id = %s", (board_id,)
            ).fetchone()
        return None if row is None else _board(row[0], row[1])

    def all(self) -> list[BoardConfig]:
        with self.db.transaction() as conn:
            cur = conn.cursor(row_factory=dict_row)
            rows = cur.execute("SELECT config, version FROM boards ORDER BY board_id").fetchall()
        return [_board(r["config"], r["version"]) for r in rows]


def _board(config: dict[str, Any], version: int) -> BoardConfig:
    return BoardConfig.from_public({**config, "version": version})
