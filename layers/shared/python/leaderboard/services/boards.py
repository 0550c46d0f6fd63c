"""Administering boards: create/update rules, remove a player."""

from __future__ import annotations

from typing import Any

from leaderboard.domain.auth import Caller, require_admin
from leaderboard.domain.boards import parse_board_request
from leaderboard.domain.clock import Clock, iso, system_clock
from leaderboard.domain.errors import NotFound
from leaderboard.domain.validation import require_board_id, require_player_id
from leaderboard.stores.postgres import BoardRepository, Database
from leaderboard.stores.redis_index import RedisIndex
from leaderboard.stores.standings import StandingsStore


class BoardAdminService:
    def __init__(self, db: Database, index: RedisIndex, clock: Clock = system_clock) -> None:
        self.db = db
        self.boards = BoardRepository(db)
        self.index = index
        self.clock = clock

    def put_board(
        self, board_id: str, body: dict[str, Any], caller: Caller
    ) -> tuple[dict[str, Any], bool]:
        """Create or update; PostgreSQL first (the record), then publish to the index."""
        require_admin(caller)
        board_id = require_board_id(board_id)
        with self.db.transaction() as conn:
            existing = self.boards.get_for_update(conn, board_id)
            has_entries = existing is not None and self.index.board_entry_count(board_id) > 0
            board = parse_board_request(
                board_id, body, existing, has_entries=has_entries, now_iso=iso(self.clock())
            )
            self.boards.save(conn, board)
        self.index.publish_board(board)
        return board.to_public(), existing is None

    def delete_player(self, board_id: str, player_id: str, caller: Caller) -> None:
        require_admin(caller)
        board_id = require_board_id(board_id)
        player_id = require_player_id(player_id)
        if self.boards.get(board_id) is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        # The serving index first: its deletion version becomes the tombstone in the record,
        # so no event from before the deletion (still queued, or redelivered) brings it back.
        _, version = self.index.delete_player(board_id, player_id)
        StandingsStore(self.db).delete_player(board_id, player_id, version)

    def publish_all(self) -> int:
        """Publish every board's rules to the index (after a restart or a lost cache)."""
        boards = self.boards.all()
        for board in boards:
            self.index.publish_board(board)
        return len(boards)
