-- uses: tiebreakers, hidden (lua_shared/, prepended in this order when loaded)
-- One shard's part of a read on a sharded board (leaderboard/domain/shards.py merges them).
--
-- The caller sends the board rules it cached with the cfg text they came from; one GET proves
-- them current (else STALE: reload, read again), as the submit script does.
--
-- KEYS: 1 cfg, 2 metadata hash, 3 archived periods, then the sorted sets of the read (for
--       'find' on ties=first and tie-breaker boards each set is followed by its member map).
-- On tie-breaker boards "better" counts the strictly better (score, tie-breakers) tuples
-- (tiebreakers.lua).
-- ARGV: 1 op, 2 cfg text, 3 '1' = desc, 4 '1' = ties first, then by op:
--   'range': 5 local start, 6 local stop, 7 '1' = with metadata, 8 period id.
--            A run of the set: {'OK', archived, total, start, better, n, n x (member, score),
--            [n metadata]}; start is clamped into the set; better = members with a strictly
--            better score than the first row (ties first: start); archived = 1 when the set
--            is empty and its period was archived.
--   'find':  5 player, then one period id per set.
--            {'OK', metadata ('' = none), then per set: member ('' = none), score, archived}.
--   'findmany': 5 period id, 6.. players; KEYS[4] the set (ties first: KEYS[5] its member map).
--            {'OK', 0, then per player: member ('' = none), score, metadata}.
--   'count': 5 window w (0 = none), 6 '1' = with metadata, 7 query count, 8 '1' = positions,
--            then per query: set number (1 = KEYS[4]), score, member.
--            {'OK', then per query: total, better, position (-1 unless asked or needed),
--            [run of up to 2w + 1 rows starting w before where the member sits]}; better =
--            members with a strictly better score (ties first: members before it), position =
--            members before it in the set's order, both without the member itself.
--   'viewer': 5 player (who reads), then one period id per set.
--            {'OK', '1' when this shard hides the player (else just {'OK', ''}), metadata,
--            then per set: member ('' = none), score}: the hidden reader's own entries, from
--            the sets' shadows (hidden.lua), for the caller to put back in the reader's view.
-- Errors: {'ERR', 'no_board'} | {'STALE', cfg text}.
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[2] and current ~= ARGV[2] .. ' ' then -- a space: the shard hides players
  if not current then return {'ERR', 'no_board'} end
  return {'STALE', current}
end
local op, desc, first = ARGV[1], ARGV[3] == '1', ARGV[4] == '1'
local spec = nil -- tie-breaker columns, or nil
local ncols = nil
if string.find(ARGV[2], '"tb"', 1, true) then
  spec = cjson.decode(ARGV[2]).tb
  ncols = tb_cols(spec)
end
local keyed = first or spec ~= nil -- members carry a prefix ending in '|'

-- Members with a strictly better score (tuple, on tie-breaker boards) than this entry's.
local function better_count(z, score, member)
  if spec then return tb_rank(z, desc, tb_group(member, ncols)) - 1 end
  if desc then return redis.call('ZCOUNT', z, '(' .. score, '+inf') end
  return redis.call('ZCOUNT', z, '-inf', '(' .. score)
end

local function rank_of(z, member)
  if desc then return redis.call('ZREVRANK', z, member) end
  return redis.call('ZRANK', z, member)
end

local function add_run(out, z, a, b, with_meta)
  local total = redis.call('ZCARD', z)
  local start = a
  if start > total - 1 then start = math.max(total - 1, 0) end
  if b < start then b = start end
  local rows = {}
  if total > 0 then
    if desc then rows = redis.call('ZREVRANGE', z, start, b, 'WITHSCORES')
    else rows = redis.call('ZRANGE', z, start, b, 'WITHSCORES') end
  end
  local better = start
  if not first and #rows > 0 then better = better_count(z, rows[2], rows[1]) end
  out[#out + 1] = total
  out[#out + 1] = start
  out[#out + 1] = better
  out[#out + 1] = #rows / 2
  for i = 1, #rows do out[#out + 1] = rows[i] end
  if with_meta and #rows > 0 then
    local players = {}
    for i = 1, #rows, 2 do
      local p = rows[i]
      if keyed then p = member_player(p) end
      players[#players + 1] = p
    end
    local metas = redis.call('HMGET', KEYS[2], unpack(players))
    for i = 1, #players do out[#out + 1] = metas[i] or '' end
  end
  return total
end

if op == 'range' then
  local out = {'OK', 0}
  local total = add_run(out, KEYS[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1')
  if total == 0 then out[2] = redis.call('HEXISTS', KEYS[3], ARGV[8]) end
  return out
end

if op == 'find' then
  local player = ARGV[5]
  local out = {'OK', redis.call('HGET', KEYS[2], player) or ''}
  local step = keyed and 2 or 1
  for i = 0, (#KEYS - 3) / step - 1 do
    local z = KEYS[4 + i * step]
    local member = player
    if keyed then member = redis.call('HGET', KEYS[5 + i * step], player) end
    local score = false
    if member then score = redis.call('ZSCORE', z, member) end
    if score then
      out[#out + 1] = member
      out[#out + 1] = score
      out[#out + 1] = 0
    else
      out[#out + 1] = ''
      out[#out + 1] = ''
      local archived = 0
      if redis.call('ZCARD', z) == 0 then archived = redis.call('HEXISTS', KEYS[3], ARGV[6 + i]) end
      out[#out + 1] = archived
    end
  end
  return out
end

if op == 'findmany' then
  local z = KEYS[4]
  local out = {'OK', 0}
  for i = 6, #ARGV do
    local member = ARGV[i]
    if keyed then member = redis.call('HGET', KEYS[5], ARGV[i]) end
    local score = false
    if member then score = redis.call('ZSCORE', z, member) end
    if score then
      out[#out + 1] = member
      out[#out + 1] = score
      out[#out + 1] = redis.call('HGET', KEYS[2], ARGV[i]) or ''
    else
      out[#out + 1] = ''
      out[#out + 1] = ''
      out[#out + 1] = ''
    end
  end
  return out
end

if op == 'viewer' then
  local player = ARGV[5]
  local prefix = string.sub(KEYS[1], 1, #KEYS[1] - 3)
  local L = string.byte(current, -1) == 32 and hidden_lib()
  if not L or not L.is_hidden(prefix .. 'hidden', player) then return {'OK', ''} end
  local shadow_of = L.shadow_of
  local out = {'OK', '1', redis.call('HGET', KEYS[2], player) or ''}
  local step = keyed and 2 or 1
  for i = 0, (#KEYS - 3) / step - 1 do
    local z = KEYS[4 + i * step]
    local member = player
    if keyed then member = redis.call('HGET', KEYS[5 + i * step], player) end
    local score = member and redis.call('ZSCORE', shadow_of(z), member)
    if score then
      out[#out + 1] = member
      out[#out + 1] = score
    else
      out[#out + 1] = ''
      out[#out + 1] = ''
    end
  end
  return out
end

if op == 'count' then
  local w, with_meta, positions = tonumber(ARGV[5]), ARGV[6] == '1', ARGV[8] == '1'
  local out = {'OK'}
  for q = 0, tonumber(ARGV[7]) - 1 do
    local z = KEYS[3 + tonumber(ARGV[9 + q * 3])]
    local score, member = ARGV[10 + q * 3], ARGV[11 + q * 3]
    local at = -1
    if first or w > 0 or positions then
      -- Where the member sits in this set's order: its own rank, or, on the other shards, the
      -- rank it would take (added and removed inside this script: never seen by anyone).
      if redis.call('ZSCORE', z, member) then
        at = rank_of(z, member)
      else
        redis.call('ZADD', z, score, member)
        at = rank_of(z, member)
        redis.call('ZREM', z, member)
      end
    end
    local total = redis.call('ZCARD', z)
    out[#out + 1] = total
    if first then out[#out + 1] = at else out[#out + 1] = better_count(z, score, member) end
    out[#out + 1] = at
    if w > 0 then add_run(out, z, math.max(at - w, 0), at + w, with_meta) end
  end
  return out
end

return {'ERR', 'unknown_op'}
