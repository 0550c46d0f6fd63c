"""Administering boards: create/update rules, remove a player."""

from __future__ import annotations

from typing import Any

from leaderboard.domain.auth import Caller, require_admin
from leaderboard.domain.boards import parse_board_request
from leaderboard.domain.clock import Clock, iso, system_clock
from leaderboard.domain.errors import NotFound
from leaderboard.domain.validation import require_board_id, require_player_id
from leaderboard.services.rebuild import Rebuilder
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
        if existing is not None and Rebuilder(self.db, self.index).is_lost(existing):
            # Its serving data is gone (all of it, or a shard's): publishing the rules alone
            # would open empty sets to writes. Restore it from the record instead (the
            # rebuild publishes last).
            Rebuilder(self.db, self.index).rebuild(board_id)
        else:
            self.index.publish_board(board)
        return board.to_public(), existing is None

    def rebuild(self, board_id: str, caller: Caller) -> dict[str, Any]:
        """Reload a board's serving data from the record (after the cache lost data)."""
        require_admin(caller)
        return Rebuilder(self.db, self.index).rebuild(require_board_id(board_id)).to_json()

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

    def recover_lost(self) -> list[str]:
        """Rebuild every board the index lost (after a restart on an empty cache)."""
        rebuilder = Rebuilder(self.db, self.index)
        lost = rebuilder.lost_boards()
        for board_id in lost:
            rebuilder.rebuild(board_id)
        return lost
