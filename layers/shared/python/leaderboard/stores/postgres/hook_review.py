"""Reviewing what validation hooks flagged: score events PostgreSQL keeps with a verdict."""

from __future__ import annotations

from typing import Any

from leaderboard.domain.clock import iso
from leaderboard.stores.postgres.database import Database

# One backward scan of the partial index score_events_review (migration 0008) per page. The
# verdict is written into the text, never a parameter: a prepared statement's generic plan
# could not prove a parameter inside the index's predicate, and would scan the table.
_PAGE = """
SELECT event_id::text, player_id, occurred_at, hook_verdict, hook_reason, payload
FROM score_events
WHERE board_id = %(board)s AND hook_verdict = '{verdict}'
  AND (%(before)s::uuid IS NULL OR event_id < %(before)s::uuid)
  AND (%(player)s::text IS NULL OR player_id = %(player)s)
ORDER BY event_id DESC
LIMIT %(limit)s
"""
_PAGES = {verdict: _PAGE.format(verdict=verdict) for verdict in ("flag", "failed_open")}


class HookReview:
    def __init__(self, db: Database) -> None:
        self.db = db

    def page(
        self,
        board_id: str,
        verdict: str,
        *,
        player_id: str | None,
        before: str | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        """A board's events with this verdict, newest first, older than event `before`."""
        query = _PAGES[verdict]  # KeyError for anything else: callers check it first
        params = {
            "board": board_id,
            "before": before,
            "player": player_id,
            "limit": limit,
        }
        with self.db.session() as conn:
            rows = conn.execute(query, params).fetchall()
        return [
            {
                "event_id": event_id,
                "player_id": player,
                "score": payload.get("submitted_score"),
                "region": payload.get("region"),
                "metadata": payload.get("metadata"),
                "operation": payload.get("operation"),
                "applied": payload.get("applied"),
                "version": payload.get("version"),
                "occurred_at": iso(occurred),
                "hook_verdict": hook_verdict,
                "hook_reason": reason,
            }
            for event_id, player, occurred, hook_verdict, reason, payload in rows
        ]
