-- Hidden players (issue 23): an admin hides a player on a board (a shadow ban). Everyone else's
-- reads leave the player out; the player keeps submitting (recorded in standings as usual) and
-- sees their own entry. The admin route writes this table first, then the serving index; a
-- rebuild restores the hiding from here. The C collation orders player ids by their bytes, as
-- Redis does.
CREATE TABLE hidden_players (
    board_id  text        NOT NULL,
    player_id text        COLLATE "C" NOT NULL,
    hidden_at timestamptz NOT NULL DEFAULT now(),
    reason    text,
    PRIMARY KEY (board_id, player_id)
);

-- An archived period keeps a hidden player's final entry apart from its public board, as the
-- player saw it: its rank and `place` (the position it would hold among the visible entries).
-- Public reads of the archive never touch this table; the player's own reads put the entry
-- back where it stood. The key serves both lookups: one period, and a player's history.
CREATE TABLE archive_hidden_entries (
    board_id    text             NOT NULL,
    player_id   text             COLLATE "C" NOT NULL,
    kind        text             NOT NULL,
    region      text             NOT NULL,
    period      text             NOT NULL,
    rank        bigint           NOT NULL,
    place       bigint           NOT NULL,
    score       double precision NOT NULL,
    metadata    jsonb,
    tiebreakers jsonb,
    PRIMARY KEY (board_id, player_id, kind, region, period)
);
