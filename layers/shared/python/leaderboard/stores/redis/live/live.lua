-- uses: tiebreakers, standing, outbox, league (lua_shared/, prepended in this order when loaded)
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
-- Player channels: for a channel with watches, the watched players whose last known rank lies
-- between where a changed player was and where it is now (widened by the number of changes, as
-- each change moves anyone's rank by one at most) are ranked again; those whose standing
-- changed in a way a game shows (passed, a friend passed, entered or left the top N) get a
-- player message. So the work grows with the changes that cross watched ranks, at most
-- `checks` watches a channel a call; the rest wait in the channel's dirty set for the next call.
--
-- KEYS: 1 cfg, 2 outbox stream, 3 live state hash, 4 sequence, 5 metadata hash,
--       then per channel: sorted set, member map, watch hash, watched ranks, dirty watches.
-- ARGV: 1 entries to read at most, 2 top size, 3 changed entries at most, 4 channel count,
--       then per channel: period kind, period id, region ('' = global); then now (ms), the
--       watches to rank again a channel at most (checks), the seconds to keep watched ranks.
-- Returns {'GONE'} (no board), {'IDLE'} (nothing new), or {'OK', skipped, read, then per channel
-- with a change: {kind, period, region, version, previous ('' = none), total,
-- {player, score, rank, ...top}, {player, score ('' = removed), rank ('' = removed), previous rank
-- ('' = none or unknown), ...changed},
-- truncated (0/1), {metadata JSON ('' = none) for top then changed}, {tie keys for top then
-- changed ('' = none), then the board's columns as JSON: tie-breaker boards only, else empty},
-- {per player message: {player, score ('' = none), rank ('' = none), previous told rank
-- ('' = none), top N, events ("passed,friend_passed,..."), passers truncated (0/1),
-- {passer, score, rank, friend (0/1), metadata JSON ('' = none), ...}, league place (see
-- `watched`)}, ...}}}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'GONE'} end
local cfg = cjson.decode(raw)
local how = ranking(cfg)
local desc, first, spec, ncols, keyed = how.desc, how.first, how.spec, how.ncols, how.keyed

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
-- before[ch][player] = the player's rank before the first change this call reads;
-- history[ch][player] = the player's changes, oldest first: {version, the entry before it},
-- the entry being {score, rank, order ('' = unknown: older records)} or false (none, or
-- not known: an eviction). Watches compare entries as they stood when the watch started.
local changed, before, history, order, skipped = {}, {}, {}, 0, 0
local function mark(period, region, player, version, prior)
  local ch = by_scope[period .. '\t' .. region]
  if ch == nil or player == nil or player == '' then return end
  order = order + 1
  changed[ch] = changed[ch] or {}
  before[ch] = before[ch] or {}
  history[ch] = history[ch] or {}
  if changed[ch][player] == nil then
    before[ch][player] = prior and prior[2] or ''
    history[ch][player] = {}
  end
  changed[ch][player] = order
  local h = history[ch][player]
  h[#h + 1] = {version, prior}
end

for _, entry in ipairs(entries) do
  local record, player = outbox_fields(entry)
  if record == nil then
    skipped = skipped + 1
  else
    local head = true
    local version = 0
    for line in string.gmatch(record, '[^\n]+') do
      if head then
        head = false
        version = tonumber(string.match(line, '^[^\t]*\t[^\t]*\t([^\t]*)')) or 0
      else
        -- "suffix\tscore\trank\tchanged\tprevious score\tprevious rank[\ttie key\tteam
        -- contribution\tprevious order]" / "-\tsuffix\tplayer\tgone" (suffix = period[:region];
        -- the previous order: the member before, less the player, on keyed boards); records
        -- written before issue 22 carry period and region in two fields, and before issue 23
        -- no previous entry.
        local f = {}
        for value in string.gmatch(line .. '\t', '([^\t]*)\t') do f[#f + 1] = value end
        if f[1] == '~' then
          -- a league board's group line (submit.lua): no set of a channel
        elseif f[1] == '-' then
          local period, region
          if #f == 5 then period, region = f[2], f[3]
          else period, region = string.match(f[2] or '', '^([^:]+):?(.*)$') end
          mark(period, region, f[#f - 1], version, false) -- evicted by max_entries
        elseif #f == 5 then
          if f[5] == '1' then mark(f[1], f[2], player, version, false) end -- period, region
        elseif #f >= 4 and f[4] == '1' then
          local period, region = string.match(f[1], '^([^:]+):?(.*)$')
          local prior = false -- the standing changed: the entry before, if it was ranked
          if f[6] ~= nil and f[6] ~= '' and f[6] ~= '-' then prior = {f[5], f[6], f[9] or ''} end
          mark(period, region, player, version, prior)
        end
      end
    end
  end
end

local version = redis.call('GET', KEYS[4]) or '0'
local top_size, max_changed = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {'OK', skipped, #entries}

-- A player's standing on a set, read once a call: this script never writes the board's sets,
-- and a changed player is ranked both for its channel's message and for the watches.
local standings = {}
local function rank_of(zkey, mkey, player)
  local key = zkey .. '\n' .. player
  local hit = standings[key]
  if hit == nil then
    local s, r, member = standing(how, zkey, mkey, player)
    hit = {s or false, r or false, member or false}
    standings[key] = hit
  end
  return hit[1] or nil, hit[2] or nil, hit[3] or nil
end
local nkeys = 5 -- keys per channel
local now_ms = tonumber(ARGV[5 + nch * 3])
local max_checks = tonumber(ARGV[6 + nch * 3])
local keep_ranks = tonumber(ARGV[7 + nch * 3])

-- The changed players ahead of a watch looked at for its passers, nearest first.
local WALK = 100
-- A board that hides players ends its rules with a space (hidden.lua).
local hides = string.byte(raw, -1) == 32
local function in_shadow(zkey, mkey, player)
  local member = player
  if keyed then member = redis.call('HGET', mkey, player) end
  if not member then return false end
  local shadow = string.gsub(zkey, '}:z:', '}:zh:', 1)
  return redis.call('ZSCORE', shadow, member) ~= false
end

-- Whether entry a stood strictly ahead of entry b, each {score, rank, order}: the score (on
-- tie-breaker boards '#' and its key), and on keyed boards the member less the player, whose
-- bytes order equal scores as the set does ('' = not known: then equal scores tie).
local function number_of(text)
  if string.byte(text, 1) == 35 then return unskey(string.sub(text, 2)) end -- '#': a key
  return tonumber(text)
end
local function ahead(a, b)
  local x, y = a[3], b[3]
  if not (spec and x ~= '' and y ~= '') then -- the order starts with the score's key
    local p, q = number_of(a[1]), number_of(b[1])
    if p ~= q then
      if desc then return p > q end
      return p < q
    end
    if not (first and x ~= '' and y ~= '') then return false end -- equal: a shared rank
  end
  if desc then return bytes_lt(y, x) end -- the arrival, or the whole tuple, decides
  return bytes_lt(x, y)
end
-- The entry a player's changes after version `since` started from: {score, rank, order},
-- false (none then), or nil when none of its changes is after `since`.
local function entry_since(changes, since)
  if changes == nil then return nil end
  for _, c in ipairs(changes) do
    if c[1] > since then return c[2] end
  end
  return nil
end

-- The player messages of one channel's watches (see the top of this file).
local function watched(zkey, mkey, wkeys, players, before_ranks, changes, meta_key)
  -- On a league board's season channel: the watching player's group ("tier.number"), rank in
  -- it ('' = hidden) and its visible players, as "group rank players" ('' elsewhere).
  local season = cfg.lg and string.match(zkey, '}:z:([^:]+)$')
  local function league_place(player)
    if not season then return '' end
    local pfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
    local g = redis.call('HGET', pfx .. 'lg:g:' .. season, player)
    if not g then return '' end
    local rows = league_group_rows(pfx, season, g, tonumber(string.match(cfg.lg.rules, '^%d+')),
      how, zkey, mkey)
    local r, n = league_rank_in(rows, how, player)
    return g .. ' ' .. (r or '') .. ' ' .. n
  end
  local whash, wrank, wdirty = wkeys[1], wkeys[2], wkeys[3]
  if redis.call('EXISTS', whash) == 0 then return {} end
  local count = 0
  for _ in pairs(players) do count = count + 1 end
  local queue, queued, deferred = {}, {}, {}
  local function consider(pid)
    if not queued[pid] then queued[pid] = true; queue[#queue + 1] = pid end
  end
  for _, pid in ipairs(redis.call('SPOP', wdirty, max_checks)) do
    consider(pid)
    deferred[pid] = true -- ranked a call late: the passers of the call before are not known
  end
  -- the spans of ranks the changes crossed, merged before any lookup: with many changes a tick
  -- (a backlog) the widened spans overlap, and each watch is then looked up once, not once a span
  local spans = {}
  local function between(lo, hi)
    spans[#spans + 1] = {lo, hi == '+inf' and math.huge or hi}
  end
  -- the changed players where they are now, by rank; a rank is moved by one a change at most
  local movers, mover_of = {}, {}
  for pid in pairs(players) do
    local s, r = rank_of(zkey, mkey, pid)
    local b = tonumber(before_ranks[pid])
    local m = {pid = pid, rank = r, score = s}
    mover_of[pid] = m
    if r then movers[#movers + 1] = m end
    if redis.call('HEXISTS', whash, pid) == 1 then consider(pid) end
    if r and b then between(math.max(1, math.min(r, b) - count), math.max(r, b) + count)
    elseif r then between(math.max(1, r - count), '+inf')
    elseif b then between(math.max(1, b - count), '+inf') end
  end
  table.sort(movers, function(x, y) return x.rank < y.rank end)
  table.sort(spans, function(x, y) return x[1] < y[1] end)
  local k = 0
  while k < #spans do
    k = k + 1
    local lo, hi = spans[k][1], spans[k][2]
    while k < #spans and spans[k + 1][1] <= hi + 1 do
      k = k + 1
      if spans[k][2] > hi then hi = spans[k][2] end
    end
    local upper = hi == math.huge and '+inf' or hi
    for _, pid in ipairs(redis.call('ZRANGEBYSCORE', wrank, lo, upper)) do consider(pid) end
  end

  local out, ranked = {}, false
  for i, w in ipairs(queue) do
    if i > max_checks then -- the rest in a later call, first in line
      for j = i, #queue do redis.call('SADD', wdirty, queue[j]) end
      redis.call('EXPIRE', wdirty, keep_ranks)
      break
    end
    local raw = redis.call('HGET', whash, w)
    local until_ms, top_n, friends, told, since
    if raw then until_ms, top_n, friends, told, since = watch_decode(raw) end
    if not raw or until_ms == nil or until_ms < now_ms then -- ended or expired
      if raw then redis.call('HDEL', whash, w) end
      redis.call('ZREM', wrank, w)
    else
      local old = tonumber(redis.call('ZSCORE', wrank, w))
      local s, r, member = rank_of(zkey, mkey, w)
      if not r and hides and in_shadow(zkey, mkey, w) then
        r = old -- hidden: the channel stays silent, as a hidden player's reads tell nothing
      end
      if r ~= old then
        ranked = true
        if r then redis.call('ZADD', wrank, r, w) else redis.call('ZREM', wrank, w) end
        local events, by, more = {}, {}, 0
        -- the watcher's own changes since the watch started, and its entry then
        local mine = entry_since(changes[w], since)
        if r and old and r > old then
          local base = mine
          if base == nil then -- unchanged since: as it stands now
            base = {s, r, member and keyed and string.sub(member, 1, #member - #w) or ''}
          end
          -- m passed w: a change of m's since the watch started, ahead of w now, and m's entry
          -- before that change was not ahead of w's entry then
          local function passed(m)
            if m.pid == w or not (m.rank < r) then return false end
            local was = entry_since(changes[m.pid], since)
            if was == nil then return false end -- no change of its since the watch started
            return not (was and base and ahead(was, base))
          end
          local fset = {}
          for f in string.gmatch(friends, '[^,]+') do
            fset[f] = true
            local m = mover_of[f]
            if m and m.rank and passed(m) then by[#by + 1] = {m, 1} end
          end
          local friends_by = #by
          -- friends first, and among them, as among the others, the nearest first
          table.sort(by, function(x, y) return x[1].rank > y[1].rank end)
          -- the others, nearest first: from the last mover ahead of the player upwards
          local lo, hi = 1, #movers
          while lo <= hi do
            local mid = math.floor((lo + hi) / 2)
            if movers[mid].rank < r then lo = mid + 1 else hi = mid - 1 end
          end
          -- at most WALK of them looked at: a backlog tick's thousands of changes, most of them
          -- ahead all along, must not cost thousands of steps for every watch it concerns
          for k = hi, math.max(1, hi - WALK + 1), -1 do
            local m = movers[k]
            if not fset[m.pid] and passed(m) then
              if #by >= 10 then more = 1; break end
              by[#by + 1] = {m, 0}
            end
          end
          if hi > WALK and more == 0 and #by < 10 then more = 1 end -- some were not looked at
          if deferred[w] then more = 1 end
          -- a player's own write that cost it places is no pass, unless others passed it too
          if #by > 0 or mine == nil then events[#events + 1] = 'passed' end
          if friends_by > 0 then events[#events + 1] = 'friend_passed' end
        end
        if r and r <= top_n and (old == nil or old > top_n) then events[#events + 1] = 'entered_top' end
        if old and old <= top_n and (r == nil or r > top_n) then events[#events + 1] = 'left_top' end
        if #events > 0 then
          local flat = {}
          for k = 1, math.min(#by, 10) do
            local m = by[k][1]
            flat[#flat + 1] = m.pid
            flat[#flat + 1] = m.score
            flat[#flat + 1] = m.rank
            flat[#flat + 1] = by[k][2]
            flat[#flat + 1] = redis.call('HGET', meta_key, m.pid) or ''
          end
          if #by > 10 then more = 1 end
          out[#out + 1] = {w, s or '', r or '', told, top_n, table.concat(events, ','), more, flat,
            league_place(w)}
          redis.call('HSET', whash, w, watch_encode(until_ms, top_n, friends, r or '', since))
        end
      end
    end
  end
  if ranked then redis.call('EXPIRE', wrank, keep_ranks) end
  return out
end

for ch = 1, nch do
  local players = changed[ch]
  if players then
    local base = 5 + (ch - 1) * 3
    local kind, period, region = ARGV[base], ARGV[base + 1], ARGV[base + 2]
    local zkey, mkey = KEYS[6 + (ch - 1) * nkeys], KEYS[7 + (ch - 1) * nkeys]
    local wkeys = {KEYS[8 + (ch - 1) * nkeys], KEYS[9 + (ch - 1) * nkeys], KEYS[10 + (ch - 1) * nkeys]}
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
      if spec then tbs[#tbs + 1] = tb_key(rows[i], ncols) end
      local position = (i - 1) / 2
      local rank
      if first then
        rank = position + 1
      else
        -- Competition ranking from the top: equal scores (tuples) share the rank of the first.
        local value = tonumber(s)
        local same = prev_score ~= nil and value == prev_score
        if same and spec then same = tb_group(rows[i], ncols) == tb_group(rows[i - 2], ncols) end
        if same then rank = prev_rank else rank = position + 1 end
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
      if spec then tbs[#tbs + 1] = s and tb_key(member, ncols) or '' end
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
    if spec then tbs[#tbs + 1] = spec end -- what the caller decodes them with
    out[#out + 1] = {kind, period, region, version, previous, redis.call('ZCARD', zkey),
                     top, moved, truncated, metas, tbs,
                     watched(zkey, mkey, wkeys, players, before[ch], history[ch], KEYS[5])}
  end
end
return out
