-- Equal scores on a shared-rank board are ordered by player id, as Redis orders the members of
-- a sorted set: by their bytes. The database's default collation may follow a language instead
-- (en_US.UTF-8 on Aurora, where 'a' < 'B'), and the read model PostgreSQL serves while Redis is
-- down must order exactly as Redis does. Only the index is rebuilt; the rows are not rewritten.
ALTER TABLE standings ALTER COLUMN player_id TYPE text COLLATE "C";
