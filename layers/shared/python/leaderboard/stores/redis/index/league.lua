-- uses: tiebreakers, standing, league (lua_shared/, prepended in this order when loaded)
-- A league's season end and its reads of tiers (leaderboard/domain/leagues.py; the keys are
-- listed in league.lua). Settling a season is done in steps, each one call, so a league of a
-- million players never holds the server long: 'begin', then 'groups' for every group (their
-- players' moves by final rank), 'idle' over the league's players who did not play, then
-- 'finish', which puts the new tiers in place with the season marked settled, at once: until
-- then the submit script works a first write's tier out from the closed season itself.
-- KEYS: 1 cfg. ARGV: 1 op, 2 season, then by op:
--   'tiers'  -> {'OK', {tier, players placed, ...} for the tiers anyone was placed in}
--            (or {'ERR', 'no_board'|'no_league'})
--   'begin'  -> {'DONE'} when the season is settled, else {'OK', the tiers as 'tiers' gives them}
--   'groups' 3 tier, 4 first group number, 5 last -> {'OK', players}
--   'idle'   3 HSCAN cursor, 4 count -> {'OK', next cursor, players}
--   'finish' -> {'OK'}
--   'moves'  3 HSCAN cursor, 4 count -> {'OK', next cursor, the moves read (a settled
--            season's) as HSCAN gives them, joined by spaces: "player old new group rank" each}
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
if not cfg.lg then return {'ERR', 'no_league'} end
local op, season = ARGV[1], ARGV[2]
local pfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
local L = league_lib()
local R = L.rules(cfg.lg.rules)

-- tier, players placed in it, ... for the tiers anyone was placed in this season
local function placed()
  local out = {}
  for tier, key in ipairs(league_tier_lists(pfx, season, R.top)) do
    local n = redis.call('LLEN', key)
    if n > 0 then out[#out + 1] = tostring(tier - 1); out[#out + 1] = n end
  end
  return out
end

if op == 'tiers' then return {'OK', placed()} end

local settled = redis.call('HGET', pfx .. 'lg:tier', '~settled')
if op == 'begin' then
  if settled == season then return {'DONE'} end
  -- a league nobody has played yet: no tier to move (a board's every season would else cost
  -- the steps below, a minute's seasons on a busy stack)
  local tiers = placed()
  if #tiers == 0 and redis.call('EXISTS', pfx .. 'lg:tier') == 0 then return {'DONE'} end
  redis.call('DEL', pfx .. 'lg:next')
  return {'OK', tiers}
end

local nxt, moves = pfx .. 'lg:next', pfx .. 'lg:mv:' .. season

-- Read in one string a call: as a hash's fields and values, the reader parsed two replies a
-- move in redis-py's parser (no hiredis on Lambda), 2.8 s of 1M moves' 0.8 s here.
if op == 'moves' then
  local scan = redis.call('HSCAN', moves, ARGV[3], 'COUNT', ARGV[4])
  return {'OK', scan[1], table.concat(scan[2], ' ')}
end

-- Each player's new tier and move, written a batch of players a call (one HSET a player and
-- key cost the settling most of its time): `put` gathers, `flush` writes.
local nt, mv, gathered = {}, {}, 0
local function flush()
  if gathered == 0 then return end
  redis.call('HSET', nxt, unpack(nt))
  redis.call('HSET', moves, unpack(mv))
  nt, mv, gathered = {}, {}, 0
end
local function put(player, new, move)
  local at = gathered * 2
  nt[at + 1], nt[at + 2] = player, new
  mv[at + 1], mv[at + 2] = player, move
  gathered = gathered + 1
  if gathered == 1000 then flush() end -- unpack's limit is some 8,000 values
end

if op == 'groups' then
  local how = ranking(cfg)
  local zkey, mkey = pfx .. 'z:' .. season, pfx .. 'm:' .. season
  local tier = tonumber(ARGV[3])
  local players = 0
  -- tiers and ranks as text, each formatted once a call (a number's formatting was most of
  -- what writing a move cost the script)
  local text = {}
  local function str(x)
    local t = text[x]
    if not t then t = tostring(x); text[x] = t end
    return t
  end
  for number = tonumber(ARGV[4]), tonumber(ARGV[5]) do
    local g = tier .. '.' .. number
    local head, mid = str(tier) .. ' ', ' ' .. g .. ' '
    local rows, missing = league_group_rows(pfx, season, g, R.size, how, zkey, mkey)
    local members = #rows / 2
    league_ranked(rows, how, function(_, rank, member)
      local player = member
      if how.keyed then player = member_player(member) end
      local new = str(L.moved(R, tier, rank, members))
      put(player, new, head .. new .. mid .. str(rank))
      players = players + 1
    end)
    -- hidden players placed in the group keep their tier (a removed player left the league)
    if #missing > 0 then
      local asked = {}
      for i, m in ipairs(missing) do asked[i] = m[2] or '' end
      local hidden = redis.call('ZMSCORE', pfx .. 'zh:' .. season, unpack(asked))
      for i, m in ipairs(missing) do
        if m[2] and hidden[i] then
          put(m[1], str(tier), head .. str(tier) .. mid .. '-')
          players = players + 1
        end
      end
    end
  end
  flush()
  return {'OK', players}
end

if op == 'idle' then
  local scan = redis.call('HSCAN', pfx .. 'lg:tier', ARGV[3], 'COUNT', ARGV[4])
  local map, players = pfx .. 'lg:g:' .. season, 0
  local items = scan[2]
  -- whether each was placed this season, a thousand players a call
  for first = 1, #items, 2000 do
    local last = math.min(#items, first + 1999)
    local names = {}
    for i = first, last, 2 do names[#names + 1] = items[i] end
    local placed = redis.call('HMGET', map, unpack(names))
    for j = 1, #names do
      if not placed[j] and names[j] ~= '~settled' then -- the marker is no player
        local tier = tonumber(items[first + 2 * j - 1])
        local new = L.idle(R, tier)
        put(names[j], new, tier .. ' ' .. new .. ' - -')
        players = players + 1
      end
    end
  end
  flush()
  return {'OK', scan[1], players}
end

if op == 'finish' then
  if settled ~= season then
    -- the new tiers and the season they follow, in place at once
    redis.call('HSET', nxt, '~settled', season)
    redis.call('RENAME', nxt, pfx .. 'lg:tier')
  end
  return {'OK'}
end
return {'ERR', 'unknown_op'}
