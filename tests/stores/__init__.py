"""The store adapters (leaderboard/stores) against the real stores: Redis/Valkey (and a
local Redis Cluster) and PostgreSQL."""
