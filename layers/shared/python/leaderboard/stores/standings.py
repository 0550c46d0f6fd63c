"""Score events and standings in PostgreSQL, written in bulk.

A batch costs three statements whatever its size: a temp table, a COPY, and one statement
whose data-modifying CTEs record the new events and fold them into the standings and metadata.
Redelivered events are skipped by event id; an older version never overwrites a newer one, and
a deleted player's tombstone stops any event at or below it. So any delivery order, with any
duplicates, converges to the same rows as one in-order delivery.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from leaderboard.domain.events import ScoreEvent
from leaderboard.stores.postgres import Database

_CREATE_INCOMING = """
CREATE TEMP TABLE incoming (
    event_id uuid, board_id text, player_id text, version bigint,
    occurred_at timestamptz, payload jsonb
) ON COMMIT DROP
"""

_FOLD = """
WITH ins AS (
    INSERT INTO score_events (event_id, board_id, player_id, version, occurred_at, payload)
    SELECT DISTINCT ON (event_id) event_id, board_id, player_id, version, occurred_at, payload
    FROM incoming ORDER BY event_id
    ON CONFLICT (event_id) DO NOTHING
    RETURNING board_id, player_id, version, payload
),
keyed AS (  -- one row per (period, region, player) an event touched; evictions score 0
    SELECT i.board_id, s->>'period' AS period, COALESCE(s->>'region', '') AS region,
           i.player_id, (s->>'score')::float8 AS score, i.version,
           (s->>'present')::boolean AS present, (s->>'changed')::boolean AS changed,
           false AS eviction
    FROM ins i, jsonb_array_elements(i.payload->'scores') s
    UNION ALL
    SELECT i.board_id, e->>'period', COALESCE(e->>'region', ''), e->>'player_id', 0,
           i.version, false, false, true
    FROM ins i, jsonb_array_elements(COALESCE(i.payload->'evicted', '[]')) e
),
live AS (
    SELECT k.* FROM keyed k
    WHERE NOT EXISTS (SELECT 1 FROM player_tombstones t WHERE t.board_id = k.board_id
                      AND t.player_id = k.player_id AND t.version >= k.version)
),
latest AS (
    SELECT DISTINCT ON (board_id, period, region, player_id)
           board_id, period, region, player_id, score, version, present
    FROM live
    ORDER BY board_id, period, region, player_id, version DESC, eviction
),
reached AS (
    SELECT board_id, period, region, player_id, max(version) FILTER (WHERE changed) AS version
    FROM live GROUP BY board_id, period, region, player_id
),
standings_up AS (
    INSERT INTO standings AS s
        (board_id, period, region, player_id, score, version, reached_version, present)
    SELECT l.board_id, l.period, l.region, l.player_id, l.score, l.version, r.version, l.present
    FROM latest l JOIN reached r USING (board_id, period, region, player_id)
    ON CONFLICT (board_id, period, region, player_id) DO UPDATE SET
        score = CASE WHEN EXCLUDED.version > s.version THEN EXCLUDED.score ELSE s.score END,
        present = CASE WHEN EXCLUDED.version > s.version THEN EXCLUDED.present
                       ELSE s.present END,
        version = GREATEST(s.version, EXCLUDED.version),
        reached_version = GREATEST(s.reached_version, EXCLUDED.reached_version),
        updated_at = now()
    RETURNING 1
),
meta_rows AS (  -- metadata given, or dropped because the player left every board (gone)
    SELECT board_id, player_id, version, payload->'metadata' AS metadata, false AS gone
    FROM ins WHERE jsonb_typeof(payload->'metadata') = 'object'
    UNION ALL
    SELECT i.board_id, e->>'player_id', i.version, NULL, true
    FROM ins i, jsonb_array_elements(COALESCE(i.payload->'evicted', '[]')) e
    WHERE (e->>'gone')::boolean
),
meta_latest AS (
    SELECT DISTINCT ON (board_id, player_id) board_id, player_id, version, metadata
    FROM meta_rows m
    WHERE NOT EXISTS (SELECT 1 FROM player_tombstones t WHERE t.board_id = m.board_id
                      AND t.player_id = m.player_id AND t.version >= m.version)
    ORDER BY board_id, player_id, version DESC, gone DESC
),
meta_up AS (
    INSERT INTO player_metadata AS p (board_id, player_id, metadata, version)
    SELECT board_id, player_id, metadata, version FROM meta_latest
    ON CONFLICT (board_id, player_id) DO UPDATE
        SET metadata = EXCLUDED.metadata, version = EXCLUDED.version
        WHERE p.version < EXCLUDED.version
    RETURNING 1
)
SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM standings_up),
       (SELECT count(*) FROM meta_up)
"""


class StandingsStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def write(self, events: Sequence[ScoreEvent]) -> int:
        """Store a batch in one transaction; returns how many events were new."""
        if not events:
            return 0
        with self.db.transaction() as conn:
            conn.execute(_CREATE_INCOMING)
            with conn.cursor().copy(
                "COPY incoming (event_id, board_id, player_id, version, occurred_at, payload)"
                " FROM STDIN"
            ) as copy:
                for event in events:
                    copy.write_row(
                        (
                            event.event_id,
                            event.board_id,
                            event.player_id,
                            event.version,
                            datetime.fromtimestamp(event.occurred_at_ms / 1000, UTC),
                            json.dumps(event.to_json(), separators=(",", ":")),
                        )
                    )
            row = conn.execute(_FOLD).fetchone()
        assert row is not None
        return int(row[0])

    def stored_event_ids(self, event_ids: Sequence[str]) -> set[str]:
        """Which of these events the record already holds."""
        if not event_ids:
            return set()
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT event_id::text FROM score_events WHERE event_id = ANY(%s::uuid[])",
                (list(event_ids),),
            ).fetchall()
        return {row[0] for row in rows}

    def delete_player(self, board_id: str, player_id: str, version: int) -> None:
        """Remove a player at `version`; the tombstone keeps late events from reviving it."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO player_tombstones (board_id, player_id, version) VALUES (%s, %s, %s)"
                " ON CONFLICT (board_id, player_id) DO UPDATE"
                " SET version = GREATEST(player_tombstones.version, EXCLUDED.version),"
                " deleted_at = now()",
                (board_id, player_id, version),
            )
            conn.execute(
                "DELETE FROM standings WHERE board_id = %s AND player_id = %s AND version <= %s",
                (board_id, player_id, version),
            )
            conn.execute(
                "DELETE FROM player_metadata WHERE board_id = %s AND player_id = %s"
                " AND version <= %s",
                (board_id, player_id, version),
            )
