-- The submit script as shipped before issue 22, kept only as the baseline of
-- benchmarks/submit_cpu.py (replayed in the same run as the current script).
-- Apply one score submission to every period and region key of a board, atomically.
-- All keys share the board's hash tag, so this runs unchanged on Redis Cluster.
--
-- KEYS: 1 cfg, 2 idempotency record, 3 sequence, 4 metadata hash, 5 reference counts,
--       6 key registry, 7 rate bucket, 8 outbox stream, then one (sorted set, member map) pair
--       per candidate.
-- ARGV: 1 player, 2 score, 3 region ('' = none), 4 metadata JSON ('' = none), 5 now (ms),
--       6 event id, 7 request fingerprint ('' = no idempotency key), 8 idempotency TTL (s),
--       9 candidate count, then per candidate: kind, period id, region ('' = global), key suffix.
-- Returns {'OK', record} | {'REPLAY', record} | {'ERR', code, ...}. A record is
-- "event_id\tapplied\tversion\tnow_ms\tmode", then one "period\tregion\tscore\trank\tchanged" line
-- per standing (rank '' = trimmed out by max_entries), then one "-\tperiod\tregion\tplayer\tgone"
-- line per entry max_entries evicted (gone = 1: that player is left on no board of this board id,
-- so its metadata was dropped).
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)

if ARGV[7] ~= '' then
  local prev = redis.call('GET', KEYS[2])
  if prev then
    local nl = string.find(prev, '\n', 1, true)
    if string.sub(prev, 1, nl - 1) == ARGV[7] then
      return {'REPLAY', string.sub(prev, nl + 1)}
    end
    return {'ERR', 'idempotency_conflict'}
  end
end

local function has(list, item)
  if type(list) ~= 'table' then return false end
  for _, v in ipairs(list) do if v == item then return true end end
  return false
end

local player, region, meta, now = ARGV[1], ARGV[3], ARGV[4], tonumber(ARGV[5])
local score = tonumber(ARGV[2])
if region ~= '' and not has(cfg.regions, region) then return {'ERR', 'unknown_region'} end

local desc, mode, first = cfg.sort == 'desc', cfg.mode, cfg.ties == 'first'
local SAFE = 9007199254740991
local function fmt(x) return string.format('%.17g', x) end

if mode == 'increment' then
  if cfg.max_inc and math.abs(score) > cfg.max_inc then return {'ERR', 'max_increment'} end
elseif (cfg.min and score < cfg.min) or (cfg.max and score > cfg.max) then
  return {'ERR', 'bounds', '', ''}
end

-- Plan every change first, so a rejected submission writes nothing.
local plan = {}
local n = tonumber(ARGV[9])
for i = 0, n - 1 do
  local a = 10 + i * 4
  if has(cfg.periods, ARGV[a]) then
    local zkey, mkey = KEYS[9 + i * 2], KEYS[10 + i * 2]
    local member = player
    if first then member = redis.call('HGET', mkey, player) end
    local old = nil
    if member then
      local s = redis.call('ZSCORE', zkey, member)
      if s then old = tonumber(s) end
    else
      member = nil
    end
    local new
    if mode == 'increment' then
      new = (old or 0) + score
      if math.abs(new) > SAFE or (cfg.min and new < cfg.min) or (cfg.max and new > cfg.max) then
        return {'ERR', 'bounds', ARGV[a + 1], ARGV[a + 2]}
      end
    elseif mode == 'best' then
      if old == nil or (desc and score > old) or ((not desc) and score < old) then new = score
      else new = old end
    else
      new = score
    end
    plan[#plan + 1] = {zkey = zkey, mkey = mkey, member = member, old = old, new = new,
                       period = ARGV[a + 1], region = ARGV[a + 2], suffix = ARGV[a + 3]}
  end
end

if cfg.rate then
  local bucket = redis.call('HMGET', KEYS[7], 't', 'ts')
  local cap = cfg.rate
  local tokens = tonumber(bucket[1]) or cap
  local elapsed = now - (tonumber(bucket[2]) or now)
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(cap, tokens + elapsed * cap / 60000)
  if tokens < 1 then
    return {'ERR', 'rate_limited', string.format('%d', math.ceil((1 - tokens) * 60000 / cap))}
  end
  redis.call('HSET', KEYS[7], 't', fmt(tokens - 1), 'ts', string.format('%d', now))
  redis.call('PEXPIRE', KEYS[7], 61000)
end

local version = redis.call('INCR', KEYS[3])
local tie = ''
if first then
  -- Equal scores order by member; this prefix makes the earlier arrival come first.
  if desc then tie = string.format('%015d|', 999999999999999 - version)
  else tie = string.format('%015d|', version) end
end

local applied = false
local lines = {}
local evicted = {}
for _, p in ipairs(plan) do
  local present = true
  local changed = p.old == nil or p.new ~= p.old
  if changed then
    applied = true
    local member = player
    if first then
      member = tie .. player
      if p.member then redis.call('ZREM', p.zkey, p.member) end
      redis.call('HSET', p.mkey, player, member)
    end
    redis.call('ZADD', p.zkey, fmt(p.new), member)
    if p.old == nil then
      redis.call('HINCRBY', KEYS[5], player, 1)
      redis.call('SADD', KEYS[6], p.suffix)
    end
    if cfg.max_entries then
      local excess = redis.call('ZCARD', p.zkey) - cfg.max_entries
      if excess > 0 then
        local victims
        if desc then victims = redis.call('ZRANGE', p.zkey, 0, excess - 1)
        else victims = redis.call('ZREVRANGE', p.zkey, 0, excess - 1) end
        for _, v in ipairs(victims) do
          redis.call('ZREM', p.zkey, v)
          local vp = v
          if first then
            vp = string.sub(v, 17)
            redis.call('HDEL', p.mkey, vp)
          end
          if vp == player then present = false end
          if redis.call('HINCRBY', KEYS[5], vp, -1) <= 0 then redis.call('HDEL', KEYS[5], vp) end
          evicted[#evicted + 1] = {p.period, p.region, vp}
        end
      end
    end
    p.member = member
  end
  local rank = ''
  if present then
    if first then
      local r
      if desc then r = redis.call('ZREVRANK', p.zkey, p.member)
      else r = redis.call('ZRANK', p.zkey, p.member) end
      rank = string.format('%d', r + 1)
    elseif desc then
      rank = string.format('%d', redis.call('ZCOUNT', p.zkey, '(' .. fmt(p.new), '+inf') + 1)
    else
      rank = string.format('%d', redis.call('ZCOUNT', p.zkey, '-inf', '(' .. fmt(p.new)) + 1)
    end
  end
  lines[#lines + 1] = p.period .. '\t' .. p.region .. '\t' .. fmt(p.new) .. '\t' .. rank
    .. '\t' .. (changed and '1' or '0')
end
-- Whether an evicted player is gone (on no sorted set of the board) is decided only now: the
-- submitting player may leave one set and enter another in this same script.
for _, e in ipairs(evicted) do
  local gone = '0'
  if redis.call('HEXISTS', KEYS[5], e[3]) == 0 then
    redis.call('HDEL', KEYS[4], e[3])
    gone = '1'
  end
  lines[#lines + 1] = '-\t' .. e[1] .. '\t' .. e[2] .. '\t' .. e[3] .. '\t' .. gone
end

if meta ~= '' and (tonumber(redis.call('HGET', KEYS[5], player)) or 0) > 0 then
  redis.call('HSET', KEYS[4], player, meta)
end

local record = ARGV[6] .. '\t' .. (applied and '1' or '0') .. '\t' .. string.format('%d', version)
  .. '\t' .. ARGV[5] .. '\t' .. mode
if #lines > 0 then record = record .. '\n' .. table.concat(lines, '\n') end
if ARGV[7] ~= '' then
  redis.call('SET', KEYS[2], ARGV[7] .. '\n' .. record, 'EX', tonumber(ARGV[8]))
end
-- The outbox keeps the event until the relay has seen it in PostgreSQL: if this process dies
-- before its queue send, the event still reaches the system of record.
redis.call('XADD', KEYS[8], '*', 'r', record, 'p', player, 's', ARGV[2], 'g', region, 'm', meta)
return {'OK', record}
