-- uses: tiebreakers, hidden, lists (lua_shared/, prepended in this order when loaded)
-- Player-centred reads in one round trip: many players on one board, or one player on every
-- period the board keeps. Ranks follow the same rules as read.lua, so they agree with `entries`.
-- Sorted-set names are built from the board's own key prefix: every key touched shares the
-- declared keys' hash tag (cluster-safe).
--
-- KEYS: 1 cfg, 2 metadata hash, 3 archived periods (period id -> entries).
-- ARGV: 1 op, 2 key prefix, 3 who reads ('' = anonymous: a hidden reader sees their own entry,
--       hidden.lua), then
--   'many':      4 period kind, 5 period id, 6 region ('' = global), 7 what the set ranks
--                ('' = players, 'teams' = a team board's teams, 'members:<team>' = one team's
--                members: plain sets, shared ranks, teams.lua), 8.. distinct player (team) ids
--                -> {'OK', total, n, the hidden reader shown ('' = none), the board's score
--                    tiers (cfg.tiers, handed back unread; '' = none), n x (player, score,
--                    rank, position), n metadata ('' = none), on tie-breaker boards n tie keys
--                    and the board's columns as JSON}
--   'standings': 4 player, 5 region ('' = every region the player is on), 6.. (kind, period id)
--                -> {'OK', n, the hidden reader shown ('' = none), the score tiers (as for
--                    'many'), n x (kind, period id, region, score, rank, total), on tie-breaker
--                    boards n tie keys and the board's columns as JSON}
-- or {'ERR', code} ('archived': read the archive, then the score tiers too), or
-- {'SHARDED', cfg text}, or for
-- 'standings' on a board of custom periods asked without one {'CUSTOM', cfg text}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
-- A sharded board keeps only its rules here: the caller reads its shards (shard_read.lua).
if cfg.shards and cfg.shards > 1 then return {'SHARDED', raw} end
local op, prefix = ARGV[1], ARGV[2]
local desc, first = cfg.sort == 'desc', cfg.ties == 'first'
local spec = cfg.tb -- tie-breaker columns ("name:flipped,..."), or nil
local ncols = spec and tb_cols(spec)
local keyed = first or spec ~= nil
local ranks = op == 'many' and ARGV[7] or ''
if ranks ~= '' then
  if not cfg.teams then return {'ERR', 'no_teams'} end
  first, spec, ncols, keyed = false, nil, nil, false
end
local HV = nil -- a hidden reader, shown their own entry (hidden.lua)
if ranks ~= 'teams' and ARGV[3] ~= '' and string.byte(raw, -1) == 32 then
  HV = hidden_lib().hidden_reader(prefix .. 'hidden', ARGV[3])
end

-- the sorted set of a suffix that this read ranks
local function set_of(sfx)
  if ranks == 'teams' then return prefix .. 'zt:' .. sfx end
  if ranks ~= '' then return prefix .. 'tm:' .. sfx .. ':' .. string.sub(ranks, 9) end
  return prefix .. 'z:' .. sfx
end

local function suffix(period_id, region)
  if region == '' then return period_id end
  return period_id .. ':' .. region
end

-- (position, score, rank, tie key or nil) of a player on one sorted set, or nil
-- without an entry.
local function place(sfx, player)
  local zkey, member = set_of(sfx), player
  if HV then HV.show(zkey, keyed and prefix .. 'm:' .. sfx or nil) end
  if keyed then
    member = redis.call('HGET', prefix .. 'm:' .. sfx, player)
    if not member then return nil end
  end
  local pos
  if desc then pos = redis.call('ZREVRANK', zkey, member) else pos = redis.call('ZRANK', zkey, member) end
  if not pos then return nil end
  local score = redis.call('ZSCORE', zkey, member)
  local rank
  local tbs = nil
  if spec then tbs = tb_key(member, ncols) end
  if first then
    rank = pos + 1
  elseif spec then
    rank = tb_rank(zkey, desc, tb_group(member, ncols))
  elseif desc then
    rank = redis.call('ZCOUNT', zkey, '(' .. score, '+inf') + 1  -- 1 + strictly better scores
  else
    rank = redis.call('ZCOUNT', zkey, '-inf', '(' .. score) + 1
  end
  return pos, score, rank, tbs
end

if op == 'many' then
  local kind, period_id, region = ARGV[4], ARGV[5], ARGV[6]
  if not has(cfg.periods, kind) then return {'ERR', 'no_period'} end
  if region ~= '' and not has(cfg.regions, region) then return {'ERR', 'unknown_region'} end
  local sfx = suffix(period_id, region)
  local zkey = set_of(sfx)
  if HV then HV.show(zkey, keyed and prefix .. 'm:' .. sfx or nil) end
  local total = redis.call('ZCARD', zkey)
  if total == 0 and redis.call('HEXISTS', KEYS[3], period_id) == 1 then
    if HV then HV.unshow() end
    return {'ERR', 'archived', cfg.tiers or ''}
  end
  local out = {'OK', total, 0, HV and HV.shown[zkey] and HV.player or '', cfg.tiers or ''}
  local found, tbs = {}, {}
  if total > 0 then
    for i = 8, #ARGV do
      local pos, score, rank, tb = place(sfx, ARGV[i])
      if tb then tbs[#tbs + 1] = tb end
      if pos then
        out[#out + 1] = ARGV[i]
        out[#out + 1] = score
        out[#out + 1] = rank
        out[#out + 1] = pos
        found[#found + 1] = ARGV[i]
      end
    end
  end
  out[3] = #found
  if HV then HV.unshow() end -- nothing below reads the set
  if #found > 0 and ranks ~= 'teams' then
    local metas = redis.call('HMGET', KEYS[2], unpack(found))
    for i = 1, #found do out[#out + 1] = metas[i] or '' end
  elseif #found > 0 then
    for i = 1, #found do out[#out + 1] = '' end -- teams have no metadata
  end
  tb_append(out, tbs, spec)
  return out
end

if op == 'standings' then
  local player, only = ARGV[4], ARGV[5]
  if cfg.sched then -- a board of custom periods: the caller places its current one
    local asked = false
    for i = 6, #ARGV, 2 do asked = asked or ARGV[i] == 'custom' end
    if not asked then return {'CUSTOM', raw} end
  end
  local regions = {''}
  if only ~= '' then
    if not has(cfg.regions, only) then return {'ERR', 'unknown_region'} end
    regions[2] = only
  elseif type(cfg.regions) == 'table' then
    for _, r in ipairs(cfg.regions) do regions[#regions + 1] = r end
  end
  local out, tbs = {'OK', 0, '', cfg.tiers or ''}, {}
  for _, region in ipairs(regions) do
    for i = 6, #ARGV, 2 do
      local kind, period_id = ARGV[i], ARGV[i + 1]
      if has(cfg.periods, kind) then
        local sfx = suffix(period_id, region)
        local pos, score, rank, tb = place(sfx, player)
        if pos then
          if tb then tbs[#tbs + 1] = tb end
          if HV and HV.player == player and HV.shown[prefix .. 'z:' .. sfx] then out[3] = player end
          out[#out + 1] = kind
          out[#out + 1] = period_id
          out[#out + 1] = region
          out[#out + 1] = score
          out[#out + 1] = rank
          out[#out + 1] = redis.call('ZCARD', prefix .. 'z:' .. sfx)
          out[2] = out[2] + 1
        end
      end
    end
  end
  if HV then HV.unshow() end
  tb_append(out, tbs, spec)
  return out
end

return {'ERR', 'bad_op'}
