-- The system of record for scores: every event, and the standings they produce.

-- Append-only audit log; the event id makes a redelivered event a no-op.
CREATE TABLE score_events (
    event_id    uuid        PRIMARY KEY,
    board_id    text        NOT NULL,
    player_id   text        NOT NULL,
    version     bigint      NOT NULL,
    occurred_at timestamptz NOT NULL,
    payload     jsonb       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX score_events_board_player ON score_events (board_id, player_id, version);

-- Current standing of a player in one period and region ('' = the global board).
-- `version` is the newest event applied (older events never overwrite it); `reached_version`
-- is the version at which the current score was reached (the order of ties=first boards);
-- `present` is false once max_entries trimmed the player out of that board.
CREATE TABLE standings (
    board_id        text             NOT NULL,
    period          text             NOT NULL,
    region          text             NOT NULL DEFAULT '',
    player_id       text             NOT NULL,
    score           double precision NOT NULL,
    version         bigint           NOT NULL,
    reached_version bigint,
    present         boolean          NOT NULL,
    updated_at      timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (board_id, period, region, player_id)
);

-- Latest metadata of a player on a board; NULL once the player left every board of it.
CREATE TABLE player_metadata (
    board_id  text   NOT NULL,
    player_id text   NOT NULL,
    metadata  jsonb,
    version   bigint NOT NULL,
    PRIMARY KEY (board_id, player_id)
);

-- An admin deleted the player at `version`: no event at or below it may bring them back.
CREATE TABLE player_tombstones (
    board_id   text        NOT NULL,
    player_id  text        NOT NULL,
    version    bigint      NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (board_id, player_id)
);
