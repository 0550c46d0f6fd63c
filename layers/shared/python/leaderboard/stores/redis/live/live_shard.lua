-- uses: outbox (lua_shared/, prepended when loaded)
-- One shard's changes since the last tick, for the live publisher (round 1 of 2 on a sharded
-- board: round 2 reads the channels' tops and the changed players' ranks across all shards).
--
-- Like live.lua: reads the outbox entries after this shard's live cursor, moves the cursor past
-- them, and names every player whose standing changed on a channel. The changed players live
-- on this shard, so their current member, score and metadata are read here.
--
-- KEYS: 1 cfg, 2 outbox stream, 3 live state hash (this shard's cursor), 4 sequence,
--       5 metadata hash, then one (sorted set, member map) pair per channel.
-- ARGV: 1 entries to read at most, 2 changed entries at most per channel, 3 channel count,
--       then per channel: period id, region ('' = global).
-- Returns {'GONE'} (no board) or {'OK', skipped, read, sequence, cfg text, then per channel:
-- {n changed (0 = no change), truncated (0/1), newest stream id of a change, then per changed
-- player, newest first: player, member ('' = removed), score, metadata}}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'GONE'} end
local rules = cjson.decode(raw)
local keyed = rules.ties == 'first' or rules.tb ~= nil -- a member map per set

local cursor = redis.call('HGET', KEYS[3], 'cursor')
local entries
if cursor then
  entries = redis.call('XRANGE', KEYS[2], '(' .. cursor, '+', 'COUNT', tonumber(ARGV[1]))
else
  entries = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', tonumber(ARGV[1]))
end
local sequence = redis.call('GET', KEYS[4]) or '0'
if #entries > 0 then redis.call('HSET', KEYS[3], 'cursor', entries[#entries][1]) end

local nch = tonumber(ARGV[3])
local by_scope = {}
for i = 0, nch - 1 do by_scope[ARGV[4 + i * 2] .. '\t' .. ARGV[5 + i * 2]] = i + 1 end

local changed, newest, order, skipped = {}, {}, 0, 0
local function mark(suffix, player, id)
  local period, region = string.match(suffix, '^([^:]+):?(.*)$')
  local ch = period and by_scope[period .. '\t' .. region]
  if ch == nil or player == nil or player == '' then return end
  order = order + 1
  changed[ch] = changed[ch] or {}
  changed[ch][player] = order
  newest[ch] = id
end

for _, entry in ipairs(entries) do
  local record, player = outbox_fields(entry)
  if record == nil then
    skipped = skipped + 1
  else
    local head = true
    for line in string.gmatch(record, '[^\n]+') do
      if head then
        head = false
      else
        -- "suffix\tscore\trank\tchanged[\tprevious score\tprevious rank]" ("-\tsuffix\tplayer\tgone"
        -- needs max_entries, which a sharded board cannot have)
        local a, _, _, d = string.match(line, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)')
        if a ~= nil and a ~= '-' and d == '1' then mark(a, player, entry[1]) end
      end
    end
  end
end

local out = {'OK', skipped, #entries, sequence, raw}
local max_changed = tonumber(ARGV[2])
for ch = 1, nch do
  local players = changed[ch]
  if not players then
    out[#out + 1] = {0, 0, ''}
  else
    local zkey, mkey = KEYS[6 + (ch - 1) * 2], KEYS[7 + (ch - 1) * 2]
    local recent = {}
    for pid, n in pairs(players) do recent[#recent + 1] = {pid, n} end
    table.sort(recent, function(x, y) return x[2] > y[2] end)
    local part = {math.min(#recent, max_changed), #recent > max_changed and 1 or 0, newest[ch]}
    for i = 1, math.min(#recent, max_changed) do
      local pid = recent[i][1]
      local member = pid
      if keyed then member = redis.call('HGET', mkey, pid) end
      local score = member and redis.call('ZSCORE', zkey, member)
      part[#part + 1] = pid
      part[#part + 1] = score and member or ''
      part[#part + 1] = score or ''
      part[#part + 1] = redis.call('HGET', KEYS[5], pid) or ''
    end
    out[#out + 1] = part
  end
end
return out
