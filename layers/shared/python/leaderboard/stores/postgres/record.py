"""Score events and standings in PostgreSQL, written in bulk.

A batch is one statement, so one round trip and, in autocommit, its own transaction. The
batch is folded in the function first (leaderboard.domain.folding): the statement receives
column arrays, one row per standing and per player, and never unpacks event JSON. Its three
data-modifying parts record the new events, fold the rows into the standings and store the
metadata. Redelivered events are skipped by event id; an older version never overwrites a
newer one, and a deleted player's tombstone stops any row at or below it. So any delivery
order, with any duplicates, converges to the same rows as one in-order delivery.

Arrays rather than COPY into a temporary table: no session state, which would pin the
connection behind RDS Proxy, and no catalog churn per batch. The arrays are packed in binary
by leaderboard.stores.postgres.arrays, much faster than psycopg's element-by-element list dumping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from leaderboard.domain.folding import FoldableEvent, fold_events
from leaderboard.stores.postgres.arrays import (
    bool_array,
    float8_array,
    int8_array,
    json_array,
    jsonb_array,
    text_array,
    timestamptz_array_from_ms,
    uuid_array,
)
from leaderboard.stores.postgres.database import Database

_WRITE = """
WITH new_events AS (
    INSERT INTO score_events (event_id, board_id, player_id, version, occurred_at, payload,
                              hook_verdict, hook_reason)
    SELECT * FROM unnest(%(event_id)b::uuid[], %(event_board)b::text[], %(event_player)b::text[],
                         %(event_version)b::int8[], %(occurred_at)b::timestamptz[],
                         %(payload)b::json[], %(hook_verdict)b::text[], %(hook_reason)b::text[])
    ON CONFLICT (event_id) DO NOTHING
    RETURNING 1
),
standings_written AS (
    INSERT INTO standings AS s
        (board_id, period, region, player_id, score, version, reached_version, present,
         reached_arrival, tie_key)
    SELECT i.board_id, i.period, i.region, i.player_id, i.score, i.version,
           CASE WHEN t.version IS NULL OR i.reached_version > t.version
                THEN i.reached_version END,
           i.present,
           CASE WHEN t.version IS NULL OR i.reached_version > t.version
                THEN i.reached_arrival END,
           i.tie_key
    FROM unnest(%(board)b::text[], %(period)b::text[], %(region)b::text[], %(player)b::text[],
                %(score)b::float8[], %(version)b::int8[], %(reached)b::int8[],
                %(present)b::bool[], %(arrival)b::int8[], %(tie_key)b::text[]) WITH ORDINALITY
         AS i(board_id, period, region, player_id, score, version, reached_version, present,
              reached_arrival, tie_key, n)
    LEFT JOIN player_tombstones t ON t.board_id = i.board_id AND t.player_id = i.player_id
    WHERE t.version IS NULL OR t.version < i.version
    ORDER BY i.n  -- the key order the batch was folded in: the same lock order everywhere
    ON CONFLICT (board_id, period, region, player_id) DO UPDATE SET
        score = CASE WHEN EXCLUDED.version > s.version THEN EXCLUDED.score ELSE s.score END,
        tie_key = CASE WHEN EXCLUDED.version > s.version THEN EXCLUDED.tie_key
                       ELSE s.tie_key END,
        present = CASE WHEN EXCLUDED.version > s.version THEN EXCLUDED.present
                       ELSE s.present END,
        version = GREATEST(s.version, EXCLUDED.version),
        reached_version = GREATEST(s.reached_version, EXCLUDED.reached_version),
        -- follows the newest change, whatever order the events arrive in
        reached_arrival = CASE
            WHEN EXCLUDED.reached_version > COALESCE(s.reached_version, 0)
                THEN EXCLUDED.reached_arrival
            ELSE s.reached_arrival END,
        updated_at = now()
    RETURNING 1
),
metadata_written AS (  -- NULL metadata: the player left every board of it
    INSERT INTO player_metadata AS p (board_id, player_id, metadata, version)
    SELECT i.board_id, i.player_id, i.metadata, i.version
    FROM unnest(%(meta_board)b::text[], %(meta_player)b::text[], %(metadata)b::jsonb[],
                %(meta_version)b::int8[]) WITH ORDINALITY
         AS i(board_id, player_id, metadata, version, n)
    WHERE NOT EXISTS (SELECT 1 FROM player_tombstones t WHERE t.board_id = i.board_id
                      AND t.player_id = i.player_id AND t.version >= i.version)
    ORDER BY i.n
    ON CONFLICT (board_id, player_id) DO UPDATE
        SET metadata = EXCLUDED.metadata, version = EXCLUDED.version
        WHERE p.version < EXCLUDED.version
    RETURNING 1
),
teams_written AS (  -- team boards: each player's contribution to a team
    INSERT INTO team_members AS t
        (board_id, period, region, team_id, player_id, contribution, version)
    SELECT i.board_id, i.period, i.region, i.team_id, i.player_id, i.contribution, i.version
    FROM unnest(%(team_board)b::text[], %(team_period)b::text[], %(team_region)b::text[],
                %(team)b::text[], %(team_player)b::text[], %(contribution)b::float8[],
                %(team_version)b::int8[]) WITH ORDINALITY
         AS i(board_id, period, region, team_id, player_id, contribution, version, n)
    WHERE NOT EXISTS (SELECT 1 FROM player_tombstones d WHERE d.board_id = i.board_id
                      AND d.player_id = i.player_id AND d.version >= i.version)
    ORDER BY i.n
    ON CONFLICT (board_id, period, region, team_id, player_id) DO UPDATE
        SET contribution = EXCLUDED.contribution, version = EXCLUDED.version
        WHERE t.version < EXCLUDED.version
    RETURNING 1
)
SELECT (SELECT count(*) FROM new_events), (SELECT count(*) FROM standings_written),
       (SELECT count(*) FROM metadata_written), (SELECT count(*) FROM teams_written)
"""


class RecordedEvent(FoldableEvent, Protocol):
    @property
    def event_id(self) -> str: ...
    @property
    def occurred_at_ms(self) -> int: ...
    def to_message(self) -> str: ...
    @property
    def hook_verdict(self) -> str | None: ...
    @property
    def hook_reason(self) -> str | None: ...


class StandingsStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def write(self, events: Sequence[RecordedEvent], messages: Sequence[str] | None = None) -> int:
        """Store a batch atomically; returns how many events were new.

        `messages` are the queue messages the events were parsed from: the audit log keeps
        them exactly as delivered. Without them (tests, tools) the events are encoded again.
        """
        if not events:
            return 0
        if messages is None:
            messages = [event.to_message() for event in events]
        folded = fold_events(events)
        standings = list(zip(*folded.standings, strict=True)) or [()] * 10
        metadata = list(zip(*folded.metadata, strict=True)) or [()] * 4
        teams = list(zip(*folded.teams, strict=True)) or [()] * 7
        with self.db.session() as conn:  # one statement: atomic on its own
            text = conn.info.encoding
            params = {
                "event_id": uuid_array([event.event_id for event in events]),
                "event_board": text_array([event.board_id for event in events], text),
                "event_player": text_array([event.player_id for event in events], text),
                "event_version": int8_array([event.version for event in events]),
                "occurred_at": timestamptz_array_from_ms([e.occurred_at_ms for e in events]),
                "payload": json_array(messages, text),
                # The validation hook's verdict, a column of its own for the review route.
                "hook_verdict": text_array([e.hook_verdict for e in events], text),
                "hook_reason": text_array([e.hook_reason for e in events], text),
                "board": text_array(standings[0], text),
                "period": text_array(standings[1], text),
                "region": text_array(standings[2], text),
                "player": text_array(standings[3], text),
                "score": float8_array(standings[4]),
                "version": int8_array(standings[5]),
                "reached": int8_array(standings[6]),
                "present": bool_array(standings[7]),
                "arrival": int8_array(standings[8]),
                "tie_key": text_array(standings[9], text),
                "meta_board": text_array(metadata[0], text),
                "meta_player": text_array(metadata[1], text),
                "metadata": jsonb_array(metadata[2], text),
                "meta_version": int8_array(metadata[3]),
                "team_board": text_array(teams[0], text),
                "team_period": text_array(teams[1], text),
                "team_region": text_array(teams[2], text),
                "team": text_array(teams[3], text),
                "team_player": text_array(teams[4], text),
                "contribution": float8_array(teams[5]),
                "team_version": int8_array(teams[6]),
            }
            row = conn.execute(_WRITE, params).fetchone()
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
            # A persister statement that started before the tombstone commits would not see it,
            # and would write an older row back where this one deleted it. This lock waits for
            # the batches in flight and holds new ones until the commit; they then see the
            # tombstone. Admin deletes are rare; a batch waits milliseconds.
            conn.execute(
                "LOCK TABLE standings, player_metadata, team_members IN SHARE ROW EXCLUSIVE MODE"
            )
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
            conn.execute(
                "DELETE FROM team_members WHERE board_id = %s AND player_id = %s AND version <= %s",
                (board_id, player_id, version),
            )
