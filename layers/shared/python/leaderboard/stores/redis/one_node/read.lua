-- uses: tiebreakers, hidden, lists, league (lua_shared/, prepended in this order when loaded)
-- Every read in one round trip: the window of entries, their ranks, their metadata, the total.
--
-- KEYS: 1 cfg, 2 sorted set, 3 member map (ties=first and tie-breaker boards), 4 metadata hash,
--       5 archived periods (period id -> entries).
-- ARGV: 1 op ('page' | 'around_rank' | 'player' | 'around'), 2 period kind, 3 region ('' = global),
--       4 player (player/around), 5 offset (page) or rank (around_rank), 6 window size,
--       7 period id, 8 who reads (none or '' = anonymous): a hidden player reads the board with
--       their own entry in it (hidden.lua), 9 what the set ranks (none or '' = players;
--       'teams': a team board's teams, 'members': one team's members, teams.lua: plain sets,
--       shared ranks, no tie-breakers, and no metadata for teams), 10-11 a league group (below).
-- Returns {'OK', total, start, player_position (-1 if none), n, the hidden reader shown ('' =
--          none), the board's score tiers (cfg.tiers, text handed back unread; '' = none),
--          then n x (player, score, rank), then n metadata JSON strings ('' = none),
--          then on tie-breaker boards n tie keys and the board's columns as JSON} or
--          {'ERR', code} ('archived': read the archive, then the score tiers too), or
--          {'SHARDED', cfg text}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
-- A sharded board keeps only its rules here: the caller reads its shards (shard_read.lua).
if cfg.shards and cfg.shards > 1 then return {'SHARDED', raw} end

if not has(cfg.periods, ARGV[2]) then return {'ERR', 'no_period'} end
if ARGV[3] ~= '' and not has(cfg.regions, ARGV[3]) then return {'ERR', 'unknown_region'} end

local key = KEYS[2]
-- A league group (leagues.py, league.lua): ARGV 10 the season, 11 the group ("tier.number"; ''
-- = the group of the player ARGV 4), ranked here from the season's set (KEYS 2) whole: the
-- window and ranks below are taken from its rows; the group ends the reply.
local group = ARGV[11]
local lpfx
if ARGV[10] and ARGV[10] ~= '' then
  if not cfg.lg then return {'ERR', 'no_league'} end
  lpfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
  if group == '' then
    group = redis.call('HGET', lpfx .. 'lg:g:' .. ARGV[10], ARGV[4])
    if not group then
      return {'ERR', 'not_placed', redis.call('HGET', lpfx .. 'lg:tier', ARGV[4]) or ''}
    end
  end
else
  group = nil
end
local desc, first = cfg.sort == 'desc', cfg.ties == 'first'
local spec = cfg.tb -- tie-breaker columns ("name:flipped,..."), or nil
local ranks = ARGV[9] or ''
if ranks ~= '' then
  if not cfg.teams then return {'ERR', 'no_teams'} end
  first, spec = false, nil
end
local ncols = spec and tb_cols(spec)
local keyed = first or spec ~= nil
local HV = nil -- a hidden reader, shown their own entry (hidden.lua)
if ranks ~= 'teams' and ARGV[8] and ARGV[8] ~= '' and string.byte(raw, -1) == 32 then
  HV = hidden_lib().hidden_reader(string.sub(KEYS[1], 1, #KEYS[1] - 3) .. 'hidden', ARGV[8])
end
if HV then HV.show(key, keyed and KEYS[3] or nil) end

local grows -- a league group's rows (league_group_rows), in the set's order
local total
if group then
  grows = league_group_rows(lpfx, ARGV[10], group, tonumber(string.match(cfg.lg.rules, '^%d+')),
    {desc = desc, keyed = keyed}, key, KEYS[3])
  total = #grows / 2
  if HV and HV.shown[key] then -- shown only if of this group
    local seen = false
    for i = 1, #grows, 2 do seen = seen or grows[i] == HV.shown[key] end
    if not seen then HV.unshow() end
  end
else
  total = redis.call('ZCARD', key)
end
-- A closed period whose keys were purged after archiving is served from the archive.
if total == 0 and redis.call('HEXISTS', KEYS[5], ARGV[7]) == 1 then
  if HV then HV.unshow() end
  return {'ERR', 'archived', cfg.tiers or ''}
end
local op, size = ARGV[1], tonumber(ARGV[6])
local start, ppos = 0, -1

local function centre(pos)
  local s = pos - math.floor((size - 1) / 2)
  if s > total - size then s = total - size end
  if s < 0 then s = 0 end
  return s
end

if op == 'page' then
  start = tonumber(ARGV[5])
elseif op == 'around_rank' then
  start = centre(tonumber(ARGV[5]) - 1)
else
  local member = ARGV[4]
  if keyed then member = redis.call('HGET', KEYS[3], ARGV[4]) end
  local pos = false
  if member and grows then
    for i = 1, #grows, 2 do
      if grows[i] == member then pos = (i - 1) / 2; break end
    end
  elseif member then
    if desc then pos = redis.call('ZREVRANK', key, member) else pos = redis.call('ZRANK', key, member) end
  end
  if not pos then
    if HV then HV.unshow() end
    return {'ERR', 'no_player'}
  end
  ppos = pos
  if op == 'player' then
    start, size = pos, 1
  else
    start = centre(pos)
  end
end

local rows
if grows then
  rows = {}
  for i = 2 * start + 1, math.min(#grows, 2 * (start + size)) do rows[#rows + 1] = grows[i] end
elseif desc then rows = redis.call('ZREVRANGE', key, start, start + size - 1, 'WITHSCORES')
else rows = redis.call('ZRANGE', key, start, start + size - 1, 'WITHSCORES') end

local out = {'OK', total, start, ppos, #rows / 2, HV and HV.shown[key] and HV.player or '',
             cfg.tiers or ''}
local players = {}
local prev_score, prev_rank, prev_member = nil, nil, nil
local tbs = {}
for i = 1, #rows, 2 do
  local pid, s = rows[i], rows[i + 1]
  local member = pid
  if keyed then pid = member_player(member) end
  if spec then tbs[#tbs + 1] = tb_key(member, ncols) end
  local position = start + (i - 1) / 2
  local rank
  if first then
    rank = position + 1
  else
    -- Competition ranking: 1 + the number of strictly better scores (tuples, with
    -- tie-breakers).
    local value = tonumber(s)
    local same = prev_score ~= nil and value == prev_score
    -- equal scores: equal tuples only with equal tie keys (compared only then)
    if same and spec then same = tb_group(member, ncols) == tb_group(prev_member, ncols) end
    if same then
      rank = prev_rank
    elseif prev_score ~= nil then
      rank = position + 1
    elseif grows then -- a group is read whole (leagues.py): its first row has nobody above
      rank = position + 1
    elseif spec then
      rank = tb_rank(key, desc, tb_group(member, ncols))
    elseif desc then
      rank = redis.call('ZCOUNT', key, '(' .. s, '+inf') + 1
    else
      rank = redis.call('ZCOUNT', key, '-inf', '(' .. s) + 1
    end
    prev_score, prev_rank, prev_member = value, rank, member
  end
  out[#out + 1] = pid
  out[#out + 1] = s
  out[#out + 1] = rank
  players[#players + 1] = pid
end
if HV then HV.unshow() end -- nothing below reads the set
if #players > 0 and ranks ~= 'teams' then
  local metas = redis.call('HMGET', KEYS[4], unpack(players))
  for i = 1, #players do out[#out + 1] = metas[i] or '' end
elseif #players > 0 then
  for i = 1, #players do out[#out + 1] = '' end
end
tb_append(out, tbs, spec)
if group then out[#out + 1] = group end
return out
