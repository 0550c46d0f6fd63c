-- Tie-breaker boards order equal scores by up to three integer columns. The record keeps the
-- columns' ordering key (leaderboard/domain/tiebreakers.py: fixed-width digits whose byte order
-- is the board's order), so a rebuild restores the same members and a read from the record
-- orders by (score, tie_key) with the "C" collation; the values are decoded with the board's
-- columns. NULL on boards without tie-breakers.
ALTER TABLE standings ADD COLUMN tie_key text COLLATE "C";
ALTER TABLE archive_entries ADD COLUMN tiebreakers jsonb;
