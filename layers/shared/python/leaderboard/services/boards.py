"""Administering boards: create/update rules, remove a player, hide a player (a shadow ban)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Any

from leaderboard.domain.auth import Caller, require_admin
from leaderboard.domain.boards import end_by_hand, parse_board_request
from leaderboard.domain.clock import Clock, iso, system_clock, to_ms
from leaderboard.domain.errors import BadRequest, BoardMissing, NotFound
from leaderboard.domain.events import new_event_id
from leaderboard.domain.periods import period_json
from leaderboard.domain.validation import (
    known_params,
    query_int,
    require_board_id,
    require_player_id,
)
from leaderboard.services.rebuild import Rebuilder
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.hidden_players import HiddenPlayers
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.redis.serving_index import RedisIndex


class BoardAdminService:
    def __init__(
        self,
        db: Database,
        index: RedisIndex,
        clock: Clock = system_clock,
        hook_targets: Collection[str] = frozenset(),
    ) -> None:
        """`hook_targets`: the validation hooks a board may name here (HookSettings)."""
        self.db = db
        self.boards = BoardRepository(db)
        self.index = index
        self.clock = clock
        self.hook_targets = hook_targets

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
                board_id,
                body,
                existing,
                has_entries=has_entries,
                now_iso=iso(self.clock()),
                hook_targets=self.hook_targets,
            )
            self.boards.save(conn, board)
        if existing is not None and Rebuilder(self.db, self.index).is_lost(existing):
            # Its serving data is gone (all of it, or a shard's): publishing the rules alone
            # would open empty sets to writes. Restore it from the record instead (the
            # rebuild publishes last).
            Rebuilder(self.db, self.index).rebuild(board_id)
        else:
            self.index.publish_board(board)
        # the rollover's next minute looks at it, and knows from then on when it is due
        self.index.rollover_due_at(board_id, self.clock())
        return board.to_public(), existing is None

    def end_period(self, board_id: str, caller: Caller) -> dict[str, Any]:
        """End the board's current custom period now (a season ended by hand) and start the
        next; the rollover archives the ended one as it does a scheduled end. The end is the
        next whole second: a submission still on the old rules until they are published goes
        to the period that contains its own instant."""
        require_admin(caller)
        board_id = require_board_id(board_id)
        now = self.clock()
        with self.db.transaction() as conn:
            existing = self.boards.get_for_update(conn, board_id)
            if existing is None:
                raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
            at = now.replace(microsecond=0) + timedelta(seconds=1)
            board = end_by_hand(existing, at, iso(now))
            self.boards.save(conn, board)
        self.index.publish_board(board)
        self.index.rollover_due_at(board_id, at)  # the ended period is archived from `at` on
        calendar = board.calendar()
        assert calendar is not None
        return {
            "board_id": board_id,
            # as from the end on: the ended period closed, the new one open
            "ended": period_json(calendar.period_at(at - timedelta(microseconds=1)), at),
            "current": period_json(calendar.period_at(at), at),
        }

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

    def hide_player(
        self, board_id: str, player_id: str, body: dict[str, Any], caller: Caller
    ) -> tuple[dict[str, Any], bool]:
        """Hide a player on a board: everyone else's reads leave them out from now on; they
        keep submitting and see their own entry. The record first (a rebuild hides them
        again), then the serving index. (body, whether they were not hidden before)."""
        require_admin(caller)
        board_id, player_id = self._known_board(board_id), require_player_id(player_id)
        known_params(body, {"reason"})
        reason = body.get("reason")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
            raise BadRequest(
                f"reason must be a string of at most {MAX_REASON} characters", field="reason"
            )
        record, created = HiddenPlayers(self.db).hide(board_id, player_id, reason, self.clock())
        moved = self._set_hidden(board_id, player_id, True)
        return {"board_id": board_id, "hidden": True} | record.to_json(), created or moved

    def unhide_player(self, board_id: str, player_id: str, caller: Caller) -> None:
        """Show a hidden player again (404 if the board does not hide them)."""
        require_admin(caller)
        board_id, player_id = self._known_board(board_id), require_player_id(player_id)
        recorded = HiddenPlayers(self.db).unhide(board_id, player_id)
        # The index too, even if the record had forgotten it: a retry after a failure there.
        if not self._set_hidden(board_id, player_id, False) and not recorded:
            raise NotFound(
                f"player {player_id!r} is not hidden on {board_id!r}", player_id=player_id
            )

    def hidden_players(
        self, board_id: str, query: Mapping[str, str | None], caller: Caller
    ) -> dict[str, Any]:
        """The players a board hides, by player id, `limit` a page after `after`."""
        require_admin(caller)
        known_params(query, _HIDDEN_PARAMS)
        board_id = self._known_board(board_id)
        limit = query_int(query.get("limit"), "limit", default=100, minimum=1, maximum=1000)
        after = query.get("after")
        if after is not None:
            after = require_player_id(after)
        rows = HiddenPlayers(self.db).page(board_id, after, limit + 1)
        page = rows[:limit]
        return {
            "board_id": board_id,
            "players": [row.to_json() for row in page],
            "next": page[-1].player_id if len(rows) > limit else None,
        }

    def _known_board(self, board_id: str) -> str:
        board_id = require_board_id(board_id)
        if self.boards.get(board_id) is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        return board_id

    def _set_hidden(self, board_id: str, player_id: str, hidden: bool) -> bool:
        """Move the player's entries in the serving index; whether that changed anything. A
        board whose serving data was lost gets the hiding from the record when rebuilt."""
        now_ms = to_ms(self.clock())
        try:
            changed, _ = self.index.set_hidden(
                board_id, player_id, hidden, event_id=new_event_id(now_ms), now_ms=now_ms
            )
        except BoardMissing:
            return False
        return changed

    def flags(
        self, board_id: str, query: Mapping[str, str | None], caller: Caller
    ) -> dict[str, Any]:
        """Submissions the board's validation hook flagged (or that were applied because it
        failed open), newest first, for review: `verdict`, `player_id`, `limit`, `before`."""
        from leaderboard.stores.postgres.hook_review import HookReview

        require_admin(caller)
        board_id = require_board_id(board_id)
        known_params(query, _FLAGS_PARAMS)
        verdict = query.get("verdict") or "flag"
        if verdict not in ("flag", "failed_open"):
            raise BadRequest("verdict must be flag or failed_open", field="verdict")
        raw_player = query.get("player_id")
        player_id = None if raw_player is None else require_player_id(raw_player)
        limit = query_int(query.get("limit"), "limit", default=50, minimum=1, maximum=200)
        before = query.get("before")
        if before is not None and not _EVENT_ID_RE.fullmatch(before):
            raise BadRequest("before must be an event id, the `next` of a page", field="before")
        if self.boards.get(board_id) is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        rows = HookReview(self.db).page(
            board_id, verdict, player_id=player_id, before=before, limit=limit + 1
        )
        page = rows[:limit]
        return {
            "board_id": board_id,
            "verdict": verdict,
            "player_id": player_id,
            "flags": page,
            "next": page[-1]["event_id"] if len(rows) > limit else None,
        }

    def recover_lost(self) -> list[str]:
        """Rebuild every board the index lost (after a restart on an empty cache)."""
        rebuilder = Rebuilder(self.db, self.index)
        lost = rebuilder.lost_boards()
        for board_id in lost:
            rebuilder.rebuild(board_id)
        return lost


_FLAGS_PARAMS = {"verdict", "player_id", "limit", "before"}
_HIDDEN_PARAMS = {"after", "limit"}
MAX_REASON = 500
_EVENT_ID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
