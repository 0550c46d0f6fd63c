-- uses: tiebreakers, standing, league (lua_shared/, prepended in this order when loaded)
-- A league's season end and its reads of tiers (leaderboard/domain/leagues.py; the keys are
-- listed in league.lua). Settling a season is done in steps, each one call, so a league of a
-- million players never holds the server long: 'begin', then 'groups' for every group (their
-- players' moves by final rank), 'idle' over the league's players who did not play, then
-- 'finish', which puts the new tiers in place with the season marked settled, at once: until
-- then the submit script works a first write's tier out from the closed season itself.
-- KEYS: 1 cfg. ARGV: 1 op, 2 season, then by op:
--   'tiers'  -> {'OK', lg:n:<season> as HGETALL}           (or {'ERR', 'no_board'|'no_league'})
--   'begin'  -> {'DONE'} when the season is settled, else {'OK', HGETALL of lg:n:<season>}
--   'groups' 3 tier, 4 first group number, 5 last -> {'OK', players}
--   'idle'   3 HSCAN cursor, 4 count -> {'OK', next cursor, players}
--   'finish' -> {'OK'}
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
if not cfg.lg then return {'ERR', 'no_league'} end
local op, season = ARGV[1], ARGV[2]
local pfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
local open = pfx .. 'lg:n:' .. season

if op == 'tiers' then return {'OK', redis.call('HGETALL', open)} end

local settled = redis.call('GET', pfx .. 'lg:settled')
if op == 'begin' then
  if settled == season then return {'DONE'} end
  redis.call('DEL', pfx .. 'lg:next')
  return {'OK', redis.call('HGETALL', open)}
end

local L = league_lib()
local R = L.rules(cfg.lg.rules)
local nxt, moves = pfx .. 'lg:next', pfx .. 'lg:mv:' .. season

if op == 'groups' then
  local how = ranking(cfg)
  local tier = tonumber(ARGV[3])
  local players = 0
  for number = tonumber(ARGV[4]), tonumber(ARGV[5]) do
    local g = tier .. '.' .. number
    local gz = pfx .. 'gz:' .. season .. ':' .. g
    local rows
    if how.desc then rows = redis.call('ZREVRANGE', gz, 0, -1, 'WITHSCORES')
    else rows = redis.call('ZRANGE', gz, 0, -1, 'WITHSCORES') end
    local members = #rows / 2
    local rank, last = 0, nil
    for i = 1, #rows, 2 do
      local member, score = rows[i], rows[i + 1]
      local same = score -- what equal ranks share
      if how.spec then same = tb_group(member, how.ncols) end
      local position = (i + 1) / 2
      if how.first or same ~= last then rank = position end
      last = same
      local player = member
      if how.keyed then player = member_player(member) end
      local new = L.moved(R, tier, rank, members)
      redis.call('HSET', nxt, player, new)
      redis.call('HSET', moves, player, tier .. ' ' .. new .. ' ' .. g .. ' ' .. rank)
      players = players + 1
    end
    -- hidden players placed in the group keep their tier
    for _, member in ipairs(redis.call('ZRANGE', pfx .. 'gzh:' .. season .. ':' .. g, 0, -1)) do
      local player = member
      if how.keyed then player = member_player(member) end
      redis.call('HSET', nxt, player, tier)
      redis.call('HSET', moves, player, tier .. ' ' .. tier .. ' ' .. g .. ' -')
      players = players + 1
    end
  end
  return {'OK', players}
end

if op == 'idle' then
  local scan = redis.call('HSCAN', pfx .. 'lg:tier', ARGV[3], 'COUNT', ARGV[4])
  local map, players = pfx .. 'lg:g:' .. season, 0
  local items = scan[2]
  for i = 1, #items, 2 do
    local player, tier = items[i], tonumber(items[i + 1])
    if redis.call('HEXISTS', map, player) == 0 then
      local new = L.idle(R, tier)
      redis.call('HSET', nxt, player, new)
      redis.call('HSET', moves, player, tier .. ' ' .. new .. ' - -')
      players = players + 1
    end
  end
  return {'OK', scan[1], players}
end

if op == 'finish' then
  if settled ~= season then
    if redis.call('EXISTS', nxt) == 1 then redis.call('RENAME', nxt, pfx .. 'lg:tier')
    else redis.call('DEL', pfx .. 'lg:tier') end
    redis.call('SET', pfx .. 'lg:settled', season)
  end
  return {'OK'}
end
return {'ERR', 'unknown_op'}
