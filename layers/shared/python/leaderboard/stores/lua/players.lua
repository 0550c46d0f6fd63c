-- Player-centred reads in one round trip: many players on one board, or one player on every
-- period the board keeps. Ranks follow the same rules as read.lua, so they agree with `entries`.
-- Sorted-set names are built from the board's own key prefix: every key touched shares the
-- declared keys' hash tag (cluster-safe).
--
-- KEYS: 1 cfg, 2 metadata hash, 3 archived periods (period id -> entries).
-- ARGV: 1 op, 2 key prefix, then
--   'many':      3 period kind, 4 period id, 5 region ('' = global), 6.. distinct player ids
--                -> {'OK', total, n, n x (player, score, rank, position), n metadata ('' = none),
--                    on tie-breaker boards n tie keys and the board's columns as JSON}
--   'standings': 3 player, 4 region ('' = every region the player is on), 5.. (kind, period id)
--                -> {'OK', n, n x (kind, period id, region, score, rank, total), on
--                    tie-breaker boards n tie keys and the board's columns as JSON}
-- or {'ERR', code} ('archived': read the archive), or {'SHARDED', cfg text}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
-- A sharded board keeps only its rules here: the caller reads its shards (shard_read.lua).
if cfg.shards and cfg.shards > 1 then return {'SHARDED', raw} end
local op, prefix = ARGV[1], ARGV[2]
local desc, first = cfg.sort == 'desc', cfg.ties == 'first'
local spec = cfg.tb -- tie-breaker columns, or nil
local keyed = first or spec ~= nil

local function has(list, item)
  if type(list) ~= 'table' then return false end
  for _, v in ipairs(list) do if v == item then return true end end
  return false
end

local function suffix(period_id, region)
  if region == '' then return period_id end
  return period_id .. ':' .. region
end

-- (position, score, rank, tie key or nil) of a player on one sorted set, or nil
-- without an entry.
local function place(sfx, player)
  local zkey, member = prefix .. 'z:' .. sfx, player
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
  if spec then tbs = tb_key(member, spec) end
  if first then
    rank = pos + 1
  elseif spec then
    rank = tb_rank(zkey, desc, tb_group(member, spec))
  elseif desc then
    rank = redis.call('ZCOUNT', zkey, '(' .. score, '+inf') + 1  -- 1 + strictly better scores
  else
    rank = redis.call('ZCOUNT', zkey, '-inf', '(' .. score) + 1
  end
  return pos, score, rank, tbs
end

if op == 'many' then
  local kind, period_id, region = ARGV[3], ARGV[4], ARGV[5]
  if not has(cfg.periods, kind) then return {'ERR', 'no_period'} end
  if region ~= '' and not has(cfg.regions, region) then return {'ERR', 'unknown_region'} end
  local sfx = suffix(period_id, region)
  local total = redis.call('ZCARD', prefix .. 'z:' .. sfx)
  if total == 0 and redis.call('HEXISTS', KEYS[3], period_id) == 1 then
    return {'ERR', 'archived'}
  end
  local out, found, tbs = {'OK', total, 0}, {}, {}
  if total > 0 then
    for i = 6, #ARGV do
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
  if #found > 0 then
    local metas = redis.call('HMGET', KEYS[2], unpack(found))
    for i = 1, #found do out[#out + 1] = metas[i] or '' end
  end
  if spec then
    for i = 1, #tbs do out[#out + 1] = tbs[i] end
    out[#out + 1] = cjson.encode(spec) -- what the caller decodes the tie keys with
  end
  return out
end

if op == 'standings' then
  local player, only = ARGV[3], ARGV[4]
  local regions = {''}
  if only ~= '' then
    if not has(cfg.regions, only) then return {'ERR', 'unknown_region'} end
    regions[2] = only
  elseif type(cfg.regions) == 'table' then
    for _, r in ipairs(cfg.regions) do regions[#regions + 1] = r end
  end
  local out, tbs = {'OK', 0}, {}
  for _, region in ipairs(regions) do
    for i = 5, #ARGV, 2 do
      local kind, period_id = ARGV[i], ARGV[i + 1]
      if has(cfg.periods, kind) then
        local sfx = suffix(period_id, region)
        local pos, score, rank, tb = place(sfx, player)
        if pos then
          if tb then tbs[#tbs + 1] = tb end
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
  if spec then
    for i = 1, #tbs do out[#out + 1] = tbs[i] end
    out[#out + 1] = cjson.encode(spec) -- what the caller decodes the tie keys with
  end
  return out
end

return {'ERR', 'bad_op'}
