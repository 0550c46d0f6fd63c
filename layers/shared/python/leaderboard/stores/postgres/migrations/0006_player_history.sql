-- A player's past results: one page of GET .../players/{player}/history is one range scan.

-- The kind of each archived entry's period, so a player's weekly results are one contiguous
-- range of the index below (period ids of different kinds interleave in text order).
ALTER TABLE archive_entries ADD COLUMN kind text;
UPDATE archive_entries e SET kind = p.kind
  FROM archived_periods p WHERE p.board_id = e.board_id AND p.period = e.period;
ALTER TABLE archive_entries ALTER COLUMN kind SET NOT NULL,
  ADD CONSTRAINT archive_entries_kind CHECK (kind IN ('daily', 'weekly', 'monthly'));

-- (board, player, kind, region) then the periods in order: a history page walks this index
-- backwards from `before` and stops after `limit` rows, however many periods exist. It also
-- finds a player in one archived period (the kind follows from the period id), so it replaces
-- the former (board, period, region, player) index rather than adding a third.
CREATE UNIQUE INDEX archive_entries_history
  ON archive_entries (board_id, player_id, kind, region, period) INCLUDE (rank, score);
DROP INDEX archive_entries_player;

-- The size of each archived board (period x region), fixed once the period is archived: a
-- history row's total and top percent without counting the period's entries.
CREATE TABLE archived_totals (
    board_id text   NOT NULL,
    period   text   NOT NULL,
    region   text   NOT NULL,
    entries  bigint NOT NULL,
    PRIMARY KEY (board_id, period, region)
);
INSERT INTO archived_totals (board_id, period, region, entries)
  SELECT e.board_id, e.period, e.region, count(*)
    FROM archive_entries e
    JOIN archived_periods p ON p.board_id = e.board_id AND p.period = e.period
   WHERE p.status = 'archived'
   GROUP BY e.board_id, e.period, e.region;
