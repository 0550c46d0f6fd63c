-- The event log on the persister's hot path.

-- Each event is kept exactly as the queue delivered it: json stores the text as received
-- (checked, not re-encoded), which is what an audit log should hold and cheaper than jsonb
-- on every insert. Queries still use the same operators (payload->'scores').
ALTER TABLE score_events ALTER COLUMN payload TYPE json USING payload::json;

-- Versions grow per board, so this index only ever appends at its right edge, and it answers
-- the newest version of a board (a rebuild restarts the sequence above it). The former
-- (board_id, player_id, version) index took a random B-tree insert per event.
DROP INDEX score_events_board_player;
CREATE INDEX score_events_board_version ON score_events (board_id, version);
