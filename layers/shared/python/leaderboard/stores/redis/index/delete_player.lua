-- uses: tiebreakers, standing, teams, wake, league (lua_shared/, prepended in this order when loaded)
-- Remove a player from every period and region of a board, with its metadata (and on a league
-- board from each season's group and the league: league.lua); a hidden
-- player's entries too (in the sets' shadows), and on a team board their contributions to
-- teams (teams.lua). Whether the player is hidden stays as it was.
-- The registry lists the board's sorted sets; their names are built from the board's own key
-- prefix, so every key touched shares the declared keys' hash tag (cluster-safe).
-- The removal is appended to the board's outbox for the live publisher alone (operation
-- `remove`; the relay does not send it on: the admin route removes the player from PostgreSQL
-- itself), so the channels and the watches it moves are told on the publisher's next tick, as
-- for a write. Its lines are a hiding's (visibility.lua): "suffix\tscore\t\t1\tscore\trank
-- before", one a set the player was visible on.
-- KEYS: 1 registry, 2 metadata hash, 3 reference counts, 4 sequence, 5 outbox.
-- ARGV: 1 player, 2 key prefix ("lb:{board}:"), 3 now (ms), 4 event id.
-- Returns {entries removed, version of the deletion}.
local player, prefix = ARGV[1], ARGV[2]
local removed = 0
local teams = player_teams(prefix, player)
local raw = redis.call('GET', prefix .. 'cfg')
local cfg = raw and cjson.decode(raw) or {}
local how = ranking(cfg)
local lines = {}
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
  local s, r, held = standing(how, zkey, mkey, player) -- visible: where it stood
  if r then
    lines[#lines + 1] = '\n' .. suffix .. '\t' .. s .. '\t\t1\t' .. s .. '\t' .. r
    if how.keyed then lines[#lines + 1] = '\t\t\t' .. string.sub(held, 1, #held - #player) end
  end
  local member = redis.call('HGET', mkey, player)
  if member then redis.call('HDEL', mkey, player) else member = player end
  removed = removed + redis.call('ZREM', zkey, member) + redis.call('ZREM', prefix .. 'zh:' .. suffix, member)
  if cfg.lg and not string.find(suffix, ':', 1, true) then -- a season: out of its group
    league_unplace(prefix, suffix, player, tonumber(string.match(cfg.lg.rules, '^%d+')))
  end
end
if cfg.lg then redis.call('HDEL', prefix .. 'lg:tier', player) end
redis.call('HDEL', KEYS[2], player)
redis.call('HDEL', KEYS[3], player)
if #teams > 0 then redis.call('HDEL', prefix .. 'pt', player) end
local version = redis.call('INCR', KEYS[4])
if #lines > 0 then
  redis.call('XADD', KEYS[5], '*', 'r', ARGV[4] .. '\t1\t' .. version .. '\t' .. ARGV[3]
    .. '\tremove' .. table.concat(lines), 'p', player, 's', '0', 'g', '', 'm', '')
  wake_live_publisher(KEYS[5])
end
return {removed, version}
