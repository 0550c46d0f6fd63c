-- Team boards (issue 23): what each player's submissions contributed to each team, per period
-- and region (a board's `teams`: `sum` adds what they changed in the player's entry, `best`
-- keeps the entry; docs/API.md, "Team boards"). A team's score follows from its members that
-- are not hidden (the sum or the best of their contributions), so the record keeps only the
-- contributions, at the version that set each, as it does standings. Ids in byte order (C), as
-- Redis orders equal scores.
CREATE TABLE team_members (
    board_id     text             NOT NULL,
    period       text             NOT NULL,
    region       text             NOT NULL DEFAULT '',
    team_id      text             COLLATE "C" NOT NULL,
    player_id    text             COLLATE "C" NOT NULL,
    contribution double precision NOT NULL,
    version      bigint           NOT NULL,
    PRIMARY KEY (board_id, period, region, team_id, player_id)
);
-- a player's rows, for an admin delete
CREATE INDEX team_members_player ON team_members (board_id, player_id);

-- A closed period's team rankings and each team's (visible) members, as they stood when the
-- period closed, in rank order: read back like archive_entries.
CREATE TABLE archive_teams (
    board_id text             NOT NULL,
    period   text             NOT NULL,
    kind     text             NOT NULL,
    region   text             NOT NULL,
    position bigint           NOT NULL,
    rank     bigint           NOT NULL,
    team_id  text             COLLATE "C" NOT NULL,
    score    double precision NOT NULL,
    PRIMARY KEY (board_id, period, region, position)
);
CREATE UNIQUE INDEX archive_teams_team ON archive_teams (board_id, period, region, team_id);
-- a team's past results (GET .../players/{team}/history?by=team): one backward range scan a page
CREATE INDEX archive_teams_history
  ON archive_teams (board_id, team_id, kind, region, period) INCLUDE (rank, score);

CREATE TABLE archive_team_members (
    board_id  text             NOT NULL,
    period    text             NOT NULL,
    kind      text             NOT NULL,
    region    text             NOT NULL,
    team_id   text             COLLATE "C" NOT NULL,
    position  bigint           NOT NULL,
    rank      bigint           NOT NULL,
    player_id text             COLLATE "C" NOT NULL,
    score     double precision NOT NULL,
    metadata  jsonb,
    PRIMARY KEY (board_id, period, region, team_id, position)
);
CREATE UNIQUE INDEX archive_team_members_player
  ON archive_team_members (board_id, period, region, team_id, player_id);
