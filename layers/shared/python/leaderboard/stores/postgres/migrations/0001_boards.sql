-- Board configuration: the source of truth for every board's rules.
-- The serving index holds a published copy (lb:{board}:cfg) that the scripts read.
CREATE TABLE boards (
    board_id   text PRIMARY KEY CHECK (board_id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    config     jsonb       NOT NULL,
    version    integer     NOT NULL CHECK (version > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
