-- Remove a player from every period and region of a board, with its metadata; a hidden
-- player's entries too (in the sets' shadows), and on a team board their contributions to
-- teams (teams.lua). Whether the player is hidden stays as it was.
-- The registry lists the board's sorted sets; their names are built from the board's own key
-- prefix, so every key touched shares the declared keys' hash tag (cluster-safe).
-- KEYS: 1 registry, 2 metadata hash, 3 reference counts, 4 sequence.
-- ARGV: 1 player, 2 key prefix ("lb:{board}:").
-- Returns {entries removed, version of the deletion}.
local player, prefix = ARGV[1], ARGV[2]
local removed = 0
local teams = player_teams(prefix, player)
local cfg = {}
if #teams > 0 then cfg = cjson.decode(redis.call('GET', prefix .. 'cfg') or '{}') end
for _, suffix in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  for _, team in ipairs(teams) do
    local tm = prefix .. 'tm:' .. suffix .. ':' .. team
    local contribution = redis.call('ZSCORE', tm, player)
    if contribution then
      redis.call('ZREM', tm, player)
      if cfg.teams then team_settle(prefix, suffix, team, cfg.teams, cfg.sort ~= 'asc', tm, contribution, true) end
    end
    redis.call('ZREM', prefix .. 'tmh:' .. suffix .. ':' .. team, player)
  end
  local zkey, mkey = prefix .. 'z:' .. suffix, prefix .. 'm:' .. suffix
  local member = redis.call('HGET', mkey, player)
  if member then redis.call('HDEL', mkey, player) else member = player end
  removed = removed + redis.call('ZREM', zkey, member) + redis.call('ZREM', prefix .. 'zh:' .. suffix, member)
end
redis.call('HDEL', KEYS[2], player)
redis.call('HDEL', KEYS[3], player)
if #teams > 0 then redis.call('HDEL', prefix .. 'pt', player) end
return {removed, redis.call('INCR', KEYS[4])}
