-- Closed periods, snapshotted from the serving index as they stood when they closed.

CREATE TABLE archived_periods (
    board_id    text        NOT NULL,
    period      text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('daily', 'weekly', 'monthly')),
    starts_at   timestamptz NOT NULL,
    ends_at     timestamptz NOT NULL,
    status      text        NOT NULL CHECK (status IN ('archiving', 'archived')),
    entries     bigint      NOT NULL DEFAULT 0,  -- global board
    differences bigint      NOT NULL DEFAULT 0,  -- snapshot rows that disagree with standings
    started_at  timestamptz NOT NULL DEFAULT now(),
    archived_at timestamptz,
    purged_at   timestamptz,                    -- its Redis keys were removed
    PRIMARY KEY (board_id, period)
);

-- One row per entry of the global ('' region) and every regional board, in rank order.
CREATE TABLE archive_entries (
    board_id  text             NOT NULL,
    period    text             NOT NULL,
    region    text             NOT NULL DEFAULT '',
    position  bigint           NOT NULL,  -- 0-based place in the board's order
    rank      bigint           NOT NULL,
    player_id text             NOT NULL,
    score     double precision NOT NULL,
    metadata  jsonb,
    PRIMARY KEY (board_id, period, region, position)
);
CREATE UNIQUE INDEX archive_entries_player ON archive_entries (board_id, period, region, player_id);
