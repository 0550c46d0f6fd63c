-- What changed on a board's live channels since the last call, in one round trip.
--
-- The submit script already appends every applied event to the board's outbox stream (kept at
-- least a minute, until the relay sees it in PostgreSQL). This script reads the entries after
-- the board's live cursor, moves the cursor past them, and for every channel with a change
-- returns the current top entries and the changed players' current standing. A channel's
-- previous message version is kept here too, so consecutive messages chain and a client can
-- tell a gap. Malformed entries are skipped and counted, never retried: the live path is
-- best-effort and must not stall on one bad entry.
--
-- KEYS: 1 cfg, 2 outbox stream, 3 live state hash, 4 sequence, 5 metadata hash,
--       then one (sorted set, member map) pair per channel.
-- ARGV: 1 entries to read at most, 2 top size, 3 changed entries at most, 4 channel count,
--       then per channel: period kind, period id, region ('' = global).
-- Returns {'GONE'} (no board), {'IDLE'} (nothing new), or {'OK', skipped, read, then per channel
-- with a change: {kind, period, region, version, previous ('' = none), total,
-- {player, score, rank, ...top}, {player, score ('' = removed), rank ('' = removed), previous rank
-- ('' = none or unknown), ...changed},
-- truncated (0/1), {metadata JSON ('' = none) for top then changed}, {tie keys for top then
-- changed ('' = none), then the board's columns as JSON: tie-breaker boards only, else empty}}}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'GONE'} end
local cfg = cjson.decode(raw)
local desc, first = cfg.sort == 'desc', cfg.ties == 'first'
local spec = cfg.tb -- tie-breaker columns, or nil
local keyed = first or spec ~= nil

local cursor = redis.call('HGET', KEYS[3], 'cursor')
local entries
if cursor then
  entries = redis.call('XRANGE', KEYS[2], '(' .. cursor, '+', 'COUNT', tonumber(ARGV[1]))
else
  entries = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', tonumber(ARGV[1]))
end
if #entries == 0 then return {'IDLE'} end
redis.call('HSET', KEYS[3], 'cursor', entries[#entries][1])

local nch = tonumber(ARGV[4])
local by_scope = {}
for i = 0, nch - 1 do
  by_scope[ARGV[6 + i * 3] .. '\t' .. ARGV[7 + i * 3]] = i + 1
end

-- changed[ch][player] = order of the player's latest change (higher = more recent);
-- before[ch][player] = the player's rank before the first change this call reads
local changed, before, order, skipped = {}, {}, 0, 0
local function mark(period, region, player, previous_rank)
  local ch = by_scope[period .. '\t' .. region]
  if ch == nil or player == nil or player == '' then return end
  order = order + 1
  changed[ch] = changed[ch] or {}
  before[ch] = before[ch] or {}
  if changed[ch][player] == nil then before[ch][player] = previous_rank or '' end
  changed[ch][player] = order
end

for _, entry in ipairs(entries) do
  local fields, record, player = entry[2], nil, nil
  for j = 1, #fields - 1, 2 do
    if fields[j] == 'r' then record = fields[j + 1] elseif fields[j] == 'p' then player = fields[j + 1] end
  end
  if type(record) ~= 'string' or type(player) ~= 'string' or not string.find(record, '\t') then
    skipped = skipped + 1
  else
    local head = true
    for line in string.gmatch(record, '[^\n]+') do
      if head then
        head = false
      else
        -- "suffix\tscore\trank\tchanged\tprevious score\tprevious rank" /
        -- "-\tsuffix\tplayer\tgone" (suffix = period[:region]); records written before issue 22
        -- carry period and region in two fields, and before issue 23 no previous entry.
        local f = {}
        for value in string.gmatch(line .. '\t', '([^\t]*)\t') do f[#f + 1] = value end
        if f[1] == '-' then
          local period, region
          if #f == 5 then period, region = f[2], f[3]
          else period, region = string.match(f[2] or '', '^([^:]+):?(.*)$') end
          mark(period, region, f[#f - 1]) -- evicted by max_entries
        elseif #f == 5 then
          if f[5] == '1' then mark(f[1], f[2], player) end -- period, region
        elseif #f >= 4 and f[4] == '1' then
          local period, region = string.match(f[1], '^([^:]+):?(.*)$')
          mark(period, region, player, f[6]) -- the player's standing changed
        end
      end
    end
  end
end

local version = redis.call('GET', KEYS[4]) or '0'
local top_size, max_changed = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {'OK', skipped, #entries}

-- (score, rank, member) of a player, or nil without an entry
local function rank_of(zkey, mkey, player)
  local member = player
  if keyed then member = redis.call('HGET', mkey, player) end
  if not member then return nil, nil end
  local s = redis.call('ZSCORE', zkey, member)
  if not s then return nil, nil end
  local r
  if first then
    if desc then r = redis.call('ZREVRANK', zkey, member) else r = redis.call('ZRANK', zkey, member) end
    r = r + 1
  elseif spec then
    r = tb_rank(zkey, desc, tb_group(member, spec))
  elseif desc then
    r = redis.call('ZCOUNT', zkey, '(' .. s, '+inf') + 1
  else
    r = redis.call('ZCOUNT', zkey, '-inf', '(' .. s) + 1
  end
  return s, r, member
end

for ch = 1, nch do
  local players = changed[ch]
  if players then
    local base = 5 + (ch - 1) * 3
    local kind, period, region = ARGV[base], ARGV[base + 1], ARGV[base + 2]
    local zkey, mkey = KEYS[6 + (ch - 1) * 2], KEYS[7 + (ch - 1) * 2]
    local field = 'v:' .. kind .. ':' .. region
    local previous = redis.call('HGET', KEYS[3], field) or ''
    redis.call('HSET', KEYS[3], field, version)

    local rows
    if desc then rows = redis.call('ZREVRANGE', zkey, 0, top_size - 1, 'WITHSCORES')
    else rows = redis.call('ZRANGE', zkey, 0, top_size - 1, 'WITHSCORES') end
    local top, ids, tbs = {}, {}, {}
    local prev_score, prev_rank = nil, nil
    for i = 1, #rows, 2 do
      local pid, s = rows[i], rows[i + 1]
      if keyed then pid = member_player(rows[i]) end
      if spec then tbs[#tbs + 1] = tb_key(rows[i], spec) end
      local position = (i - 1) / 2
      local rank
      if first then
        rank = position + 1
      else
        -- Competition ranking from the top: equal scores (tuples) share the rank of the first.
        local value = tonumber(s)
        if spec then value = tb_group(rows[i], spec) end
        if prev_score ~= nil and value == prev_score then rank = prev_rank else rank = position + 1 end
        prev_score, prev_rank = value, rank
      end
      top[#top + 1] = pid
      top[#top + 1] = s
      top[#top + 1] = rank
      ids[#ids + 1] = pid
    end

    local recent = {}
    for pid, n in pairs(players) do recent[#recent + 1] = {pid, n} end
    table.sort(recent, function(x, y) return x[2] > y[2] end)
    local truncated = 0
    if #recent > max_changed then truncated = 1 end
    local moved = {}
    for i = 1, math.min(#recent, max_changed) do
      local pid = recent[i][1]
      local s, r, member = rank_of(zkey, mkey, pid)
      if spec then tbs[#tbs + 1] = s and tb_key(member, spec) or '' end
      moved[#moved + 1] = pid
      moved[#moved + 1] = s or ''
      moved[#moved + 1] = r or ''
      moved[#moved + 1] = before[ch][pid]
      ids[#ids + 1] = pid
    end

    local metas = {}
    if #ids > 0 then
      local found = redis.call('HMGET', KEYS[5], unpack(ids))
      for i = 1, #ids do metas[i] = found[i] or '' end
    end
    if spec then tbs[#tbs + 1] = cjson.encode(spec) end -- what the caller decodes them with
    out[#out + 1] = {kind, period, region, version, previous, redis.call('ZCARD', zkey),
                     top, moved, truncated, metas, tbs}
  end
end
return out
