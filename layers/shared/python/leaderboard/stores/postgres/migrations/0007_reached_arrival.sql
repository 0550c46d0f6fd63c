-- A sharded ties=first board orders equal scores by the arrival of the change that set each
-- score (its shards share no version counter, leaderboard/domain/shards.py). The record keeps
-- that arrival beside reached_version, so a rebuild restores the same order; NULL elsewhere.
ALTER TABLE standings ADD COLUMN reached_arrival bigint;
