-- uses: tiebreakers, hidden, wake, tournament, standing, league (lua_shared/, prepended in this order when loaded)
-- Apply one score submission to every period and region set of a board, atomically.
-- All keys share the board's hash tag, so this runs unchanged on Redis Cluster.
--
-- Every call is paid by a hot board, so the script does only what a submission must
-- (docs/architecture.md, "The submit script"): the caller sends the board rules it cached with
-- the exact cfg text they came from, and one GET proves them current (else STALE: reload,
-- resend); the checks that need only the request ran in the caller and arrive as one error
-- code, answered after the idempotency check as before. An increment is written blind
-- (ZADD XX INCR) when the board's score range proves no set can leave its bounds; otherwise,
-- and in the other modes, every set is planned (read) before anything is written.
--
-- KEYS: 1 cfg, 2 score range ("lo hi" over every set), 3 idempotency record, 4 sequence,
--       5 metadata, 6 reference counts, 7 set registry, 8 rate bucket, 9 outbox stream, then
--       each sorted set (ties=first and
--       tie-breaker boards: each sorted set followed by its member map). A hidden player's
--       submission goes to the shadow of each set (hidden.lua) and answers the ranks the player
--       would hold on the visible set; max_entries counts hidden entries too (unhiding a player
--       never pushes anyone out).
-- ARGV: 1 cfg text the rules came from, 2 player, 3 score, 4 now (ms), 5 event id, 6 region
--       ('' = none), 7 metadata JSON ('' = none), 8 request fingerprint ('' = no idempotency
--       key), 9 idempotency TTL (s), 10 error code found by the caller ('' = none), 11 mode,
--       12 '1' = desc, 13 '1' = ties first, 14 min, 15 max, 16 rate per minute,
--       17 max entries ('' = none for 14-17), 18 where the set suffix starts in a set key,
--       19 '1' = a shard of a sharded board (no rank: it takes every shard; rank '-'),
--       20 (shards of sharded ties=first boards, else '') the member prefix of this arrival,
--       21 the arrival as a number (kept in the record: a rebuild orders the ties by it; '' =
--       none), 22 the tie key of the submitted tie-breakers ('' = the board has none),
--       23 the validation hook's verdict, kept in the outbox, 24 the team the submission names
--       ('' = none), 25 the board's team aggregate ('sum' | 'best'; '' = no teams),
--       26 the score key of the submitted score (tie-breaker boards; '' = not sent),
--       27 a tournament's rules "start_ms end_ms join max_participants max_attempts" ('' =
--       not a tournament); a recurring tournament's then " window_id": the window the caller
--       placed the submission in with the rules this script proves current (its sorted sets
--       are among the KEYS), whose sign-ups and attempts are counted apart from other windows,
--       28 a league's "season previous-season the-one-before rules" (league.lua; '-' for no
--       season; '' = no league)
--       (19-27 are '' where unused).
-- Returns {'OK', record} | {'REPLAY', record} | {'STALE', cfg text} | {'ERR', code, ...}.
-- A record is "event_id\tapplied\tversion\tnow_ms\tmode[\tarrival]", then one
-- "suffix\tscore\trank\tchanged\tprevious score\tprevious rank[\ttie key]" line per set
-- (suffix = period[:region]; on tie-breaker boards each score is '#' and the score's key,
-- which the caller decodes, as formatting a number costs the script more than its work there;
-- rank '' = trimmed out by max_entries, '-' = not ranked: a shard
-- of a sharded board; changed '1', or '2' for a hidden player's entry (the live publisher
-- shows only '1'); previous '' = no entry before; the tie key of the entry kept, on
-- boards with tie-breakers; on team boards then the player's contribution to the named team
-- after this submission, '' = unchanged or no team: teams.lua; on ties=first and tie-breaker
-- boards then the previous entry's member without its player, '' = none: what orders it
-- among equal scores, for the live publisher's "who passed whom"), then one
-- "-\tsuffix\tplayer\tgone" line per entry max_entries evicted (gone = 1: that player is left on
-- no set of the board, so its metadata was dropped); on league boards last one
-- "~\tseason\tgroup\tplaced now (1|0)" line (league.lua: the group's standings are a read's).
local mode, fp = ARGV[11], ARGV[8]
local inc = mode == 'increment'
-- got: {cfg, [score range], [idempotency record]}
local got
if inc then
  if fp ~= '' then got = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])
  else got = redis.call('MGET', KEYS[1], KEYS[2]) end
elseif fp ~= '' then
  got = redis.call('MGET', KEYS[1], KEYS[3])
  got[3] = got[2]
  got[2] = false
else
  got = {redis.call('GET', KEYS[1])}
end
-- the rules the caller sent, or the same with the space that says the board hides players
if got[1] ~= ARGV[1] and got[1] ~= ARGV[1] .. ' ' then
  if not got[1] then return {'ERR', 'no_board'} end
  return {'STALE', got[1]}
end
if fp ~= '' and got[3] then
  local prev = got[3]
  local nl = string.find(prev, '\n', 1, true)
  if string.sub(prev, 1, nl - 1) == fp then return {'REPLAY', string.sub(prev, nl + 1)} end
  return {'ERR', 'idempotency_conflict'}
end
if ARGV[10] ~= '' then return {'ERR', ARGV[10], '', ''} end

-- Tournaments: the window, the sign-up, the cap on participants and on attempts, checked here
-- so that twelve clients at once can never pass a limit (domain/tournaments.py).
local tour = ARGV[27] or ''
local tour_join, tour_attempts -- keys to write once the submission is applied
local tour_window -- a recurring tournament's window: listed in `windows` with its first player
local tpfx
if tour ~= '' then
  local ts, te, join, maxp, maxa, sfx, window = tournament_window(tour)
  if tonumber(ARGV[4]) < ts then return {'ERR', 'tournament', 'not_started'} end
  if tonumber(ARGV[4]) >= te then return {'ERR', 'tournament', 'ended'} end
  tpfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
  local joined = tpfx .. 'joined' .. sfx
  if redis.call('SISMEMBER', joined, ARGV[2]) == 0 then
    if join then return {'ERR', 'tournament', 'not_joined'} end
    if maxp and redis.call('SCARD', joined) >= maxp then
      return {'ERR', 'tournament', 'full'}
    end
    tour_join = joined -- playing is joining, without a sign-up
    if window ~= '' then tour_window = window end
  end
  if maxa then
    tour_attempts = tpfx .. 'attempts' .. sfx
    if (tonumber(redis.call('HGET', tour_attempts, ARGV[2])) or 0) >= maxa then
      return {'ERR', 'tournament', 'attempts_exhausted'}
    end
  end
end

local player, delta, now = ARGV[2], ARGV[3], tonumber(ARGV[4])
local score = tonumber(delta)
local desc, first = ARGV[12] == '1', ARGV[13] == '1'
local min, max, maxe = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[17])
local off = tonumber(ARGV[18])
local unranked = ARGV[19] == '1'
local SAFE = 9007199254740991
local function fmt(x) return string.format('%.17g', x) end
-- Tie-breaker boards: members lead with the score's key and the tie key (tiebreakers.lua).
local tkey = ARGV[22] or ''
local tb = tkey ~= ''
local keyed = first or tb -- entries whose member is not the player: a member map per set
-- the submitted score's key (the caller sends it; older callers do not)
local sk_sent = tb and (ARGV[26] ~= nil and ARGV[26] ~= '' and ARGV[26] or skey(score)) or nil
-- Team boards: the team this submission's contribution goes to (teams.lua).
local agg = ARGV[25] or ''
local team = agg ~= '' and ARGV[24] or ''
local step = keyed and 2 or 1
local S = 9 -- the sets start after the board's own keys
local n = (#KEYS - S) / step
local pfx -- 'lb:{b}:' of the cfg key, for the keys of teams and of hidden players
if team ~= '' then pfx = string.sub(KEYS[1], 1, #KEYS[1] - 3) end
-- Hidden players: the board has some (its rules end with a space), and whether this one is.
local any_hidden = string.byte(got[1], -1) == 32
local shadow_of, hidden = nil, false
if any_hidden then
  local L = hidden_lib()
  pfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
  shadow_of, hidden = L.shadow_of, L.is_hidden(pfx .. 'hidden', player)
end

-- Blind increments: old scores lie in [lo, hi] on every set (0 stands for a new entry), and
-- rounding is monotonic, so [lo + d, hi + d] inside the bounds proves every result is.
local lo, hi, range_changed
local blind = false
if inc and not keyed and score ~= 0 then
  if got[2] then
    local a, b = string.match(got[2], '^(%S+) (%S+)$')
    lo, hi = tonumber(a), tonumber(b)
  else
    lo, hi = 0, 0
    for _, suffix in ipairs(redis.call('SMEMBERS', KEYS[7])) do
      local z = string.sub(KEYS[S + 1], 1, off - 1) .. suffix
      for _, set in ipairs(any_hidden and {z, shadow_of(z)} or {z}) do -- and hidden entries
        local top = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
        local bottom = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
        if top[2] then hi = math.max(hi, tonumber(top[2])) end
        if bottom[2] then lo = math.min(lo, tonumber(bottom[2])) end
      end
    end
    range_changed = true
  end
  -- A hidden player's entries are not where a blind write would put them: always planned.
  blind = not hidden and hi + score <= math.min(max or SAFE, SAFE)
    and lo + score >= math.max(min or -SAFE, -SAFE)
end

-- Otherwise plan every set first, so a rejected submission writes nothing.
local plan = {}
if not blind then
  for i = 1, n do
    local zk = KEYS[S + (i - 1) * step + 1]
    local m = keyed and KEYS[S + i * 2] or nil
    local z = zk
    if hidden then z = shadow_of(zk) end -- the hidden player's entries are in the shadow
    local member = player
    if keyed then member = redis.call('HGET', m, player) end
    local old, old_key, old_sk = nil, '', nil
    if not member then
      member = nil
    elseif tb then
      -- A tie-breaker member starts with its score's key: the tuple compares as text, and
      -- the number is decoded only where arithmetic needs it (an increment, a team's sum).
      old_sk, old_key = string.sub(member, 1, 16), string.sub(member, 17, 16 + #tkey)
      if inc then old = unskey(member) end
    else
      old = tonumber(redis.call('ZSCORE', z, member))
    end
    local new, new_key, new_sk = nil, tkey, nil
    if tb and not inc then
      new = score
      new_sk = sk_sent
      if old_sk and mode == 'best' then -- the whole tuple: the score, then the tie-breakers
        local held = old_sk .. old_key
        local sent = new_sk .. tkey
        if (desc and sent <= held) or ((not desc) and sent >= held) then
          new, new_key, new_sk = nil, old_key, old_sk -- kept: its number is not needed
        end
      end
    elseif inc then
      new = (old or 0) + score
      if math.abs(new) > SAFE or (min and new < min) or (max and new > max) then
        local suffix = string.sub(zk, off)
        local period, region = string.match(suffix, '^([^:]+):?(.*)$')
        return {'ERR', 'bounds', period, region}
      end
    elseif mode == 'best' then
      -- the whole tuple is compared: the score, then the tie-breakers
      if old == nil or (desc and (score > old or (score == old and tkey > old_key)))
          or ((not desc) and (score < old or (score == old and tkey < old_key))) then
        new = score
      else
        new, new_key = old, old_key
      end
    else
      new = score
    end
    if tb and inc then new_sk = new == score and sk_sent or skey(new) end
    plan[i] = {z, m, member, old, new, old_key, new_key, old_sk, new_sk}
  end
end

if ARGV[16] ~= '' then
  local bucket = redis.call('HMGET', KEYS[8], 't', 'ts')
  local cap = tonumber(ARGV[16])
  local tokens = tonumber(bucket[1]) or cap
  local elapsed = now - (tonumber(bucket[2]) or now)
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(cap, tokens + elapsed * cap / 60000)
  if tokens < 1 then
    return {'ERR', 'rate_limited', string.format('%d', math.ceil((1 - tokens) * 60000 / cap))}
  end
  redis.call('HSET', KEYS[8], 't', fmt(tokens - 1), 'ts', ARGV[4])
  redis.call('PEXPIRE', KEYS[8], 61000)
end

-- The rank an entry (score, member) holds on the visible set zv, or, for a hidden player's
-- entry (absent: not in zv), the rank it would hold there: the player's own view. keylen: the
-- length of the entry's tie key (tie-breaker boards). A plain board's ranks are counted in
-- the loop instead: a call costs more than its work there.
local plain = not (first or tb or hidden)
local lexed = tb and not first -- ranked by the (score key .. tie key) group the entry is in
local place = nil
if not plain then place = function(zv, score_text, member, keylen, absent)
  if first then
    if absent then -- counted, then taken out (a tie-breaker record shows scores as keys)
      redis.call('ZADD', zv, tb and fmt(unskey(member)) or score_text, member)
    end
    local r
    if desc then r = redis.call('ZREVRANK', zv, member) else r = redis.call('ZRANK', zv, member) end
    if absent then redis.call('ZREM', zv, member) end
    return r + 1
  elseif tb then
    return tb_rank(zv, desc, string.sub(member, 1, 16 + keylen))
  elseif desc then
    return redis.call('ZCOUNT', zv, '(' .. score_text, '+inf') + 1
  end
  return redis.call('ZCOUNT', zv, '-inf', '(' .. score_text) + 1
end end

-- League boards: the player's group this season, placed on their first write (league.lua).
local lg = ARGV[28] or ''
local LG -- {season, group, placed now}
if lg ~= '' then
  local season, prev, prev2, rules = string.match(lg, '^(%S+) (%S+) (%S+) (.*)$')
  local lpfx = string.sub(KEYS[1], 1, #KEYS[1] - 3)
  -- A placed player's group is one lookup; the league's functions and rules are made only to
  -- place one (most writes of a season are not a player's first).
  local g = redis.call('HGET', lpfx .. 'lg:g:' .. season, player)
  local placed = false
  if not g then
    -- Placed in their tier's open group, first come first served: one count a tier, the n-th
    -- player placed being in group floor((n - 1) / size) + 1, so no group passes its size.
    local size, start = string.match(rules, '^(%d+) (%d+) ')
    local got = redis.call('HMGET', lpfx .. 'lg:tier', player, '~settled')
    local tier
    if prev == '-' or got[2] == prev then
      tier = tonumber(got[1]) or tonumber(start) -- the tier the last season left them in
    else
      local how = {desc = desc, first = first, spec = tb and tkey or nil,
                   ncols = tb and #tkey / 16 or nil, keyed = keyed}
      tier = league_lib().tier_unsettled(rules, tonumber(start), lpfx, player, prev, prev2, how,
        tonumber(got[1]), got[2] or '-')
      if not tier then return {'ERR', 'league_settling'} end
    end
    local count = redis.call('RPUSH', lpfx .. 'lg:o:' .. season .. ':' .. tier, player)
    g = tier .. '.' .. (math.floor((count - 1) / tonumber(size)) + 1)
    redis.call('HSET', lpfx .. 'lg:g:' .. season, player, g)
    placed = true
  end
  LG = {season = season, group = g, placed = placed}
end

local version = redis.call('INCR', KEYS[4])
if tour_join then redis.call('SADD', tour_join, player) end
if tour_window then redis.call('SADD', tpfx .. 'windows', tour_window) end
if tour_attempts then -- the player's, and the window's total under '~' (no player id holds one)
  redis.call('HINCRBY', tour_attempts, player, 1)
  redis.call('HINCRBY', tour_attempts, '~', 1)
end
local tie = ''
if first then
  -- Equal scores order by member; this prefix makes the earlier arrival come first. A shard
  -- of a sharded board gets it from the caller: an arrival stamp all shards compare alike.
  if ARGV[20] and ARGV[20] ~= '' then tie = ARGV[20]
  elseif desc then tie = string.format('%015d|', 999999999999999 - version)
  else tie = string.format('%015d|', version) end
elseif tb then
  tie = '|'
end

local applied = false
local joined = false -- the player entered a team's members set
local parts = {ARGV[5], '\t', '0', '\t', version, '\t', ARGV[4], '\t', mode}
if ARGV[21] and ARGV[21] ~= '' then parts[#parts + 1] = '\t' .. ARGV[21] end -- the arrival ordering its ties
local evicted
-- Blind increments of integers know the old score without reading it.
local exact = blind and math.floor(score) == score
for i = 1, n do
  local z, m, member, new, changed, shown
  local zv -- the visible set (z is its shadow when the player is hidden)
  local prev, prev_rank -- the entry before this submission (nil: it had none)
  local prev_text -- its score as the record shows it (nil: none)
  local new_text -- the entry's score as a number's text, once written
  local old_sk, new_sk -- tie-breaker boards: the score keys of the entry before and after
  local old_order = '' -- keyed boards: the entry's member before, less the player
  local kept = tkey -- the tie key of the entry after this submission
  local old_member -- keyed boards: the entry's member before this submission
  if blind then
    z = KEYS[S + i]
    zv = z
    member = player
    -- The old score: new - delta is exact when both are integers (below 2^53); else read it.
    local before
    if not exact then before = redis.call('ZSCORE', z, player) end
    shown = redis.call('ZADD', z, 'XX', 'INCR', delta, player)
    if not shown then
      redis.call('ZADD', z, delta, player)
      redis.call('HINCRBY', KEYS[6], player, 1)
      redis.call('SADD', KEYS[7], string.sub(z, off))
      shown = delta
    else
      new = tonumber(shown)
      if exact then prev = new - score else prev = tonumber(before) end
      if prev then prev_text = fmt(prev) end
      if prev and not unranked then
        -- Counted after the write: only this player moved, so leave its own entry out.
        if desc then
          prev_rank = redis.call('ZCOUNT', z, '(' .. fmt(prev), '+inf') + 1
          if new > prev then prev_rank = prev_rank - 1 end
        else
          prev_rank = redis.call('ZCOUNT', z, '-inf', '(' .. fmt(prev)) + 1
          if new < prev then prev_rank = prev_rank - 1 end
        end
      end
    end
    new = tonumber(shown)
    new_text = shown
    changed = true
  else
    local p = plan[i]
    local old, old_key
    z, m, member, old, new, old_key, kept = p[1], p[2], p[3], p[4], p[5], p[6], p[7]
    old_member = member
    if keyed and member then old_order = string.sub(member, 1, #member - #player) end
    old_sk, new_sk = p[8], p[9]
    zv = hidden and KEYS[S + (i - 1) * step + 1] or z
    if tb then
      -- Scores travel as their keys ('#' + 16 hex digits, decoded by the caller): the
      -- script formats no number.
      changed = old_sk == nil or new_sk ~= old_sk or kept ~= old_key
      shown = '#' .. new_sk
      if old_sk then prev_text = '#' .. old_sk end
    else
      changed = old == nil or new ~= old or kept ~= old_key
      shown = fmt(new)
      if old then prev_text = fmt(old) end
    end
    prev = old
    -- a team's sum needs the number a tie-breaker entry held (the old member has it)
    if tb and changed and old_sk and not old and agg == 'sum' then prev = unskey(member) end
    if changed and prev_text and not unranked then
      -- The rank before the write (an unchanged entry's is its rank, found below).
      if lexed then prev_rank = tb_rank(zv, desc, old_sk .. old_key)
      elseif not plain then prev_rank = place(zv, prev_text, member, #old_key, hidden)
      elseif desc then prev_rank = redis.call('ZCOUNT', zv, '(' .. fmt(old), '+inf') + 1
      else prev_rank = redis.call('ZCOUNT', zv, '-inf', '(' .. fmt(old)) + 1 end
    end
    if changed then
      local fresh = player
      if keyed then
        fresh = tie .. player
        if tb then fresh = new_sk .. kept .. fresh end
        if member then redis.call('ZREM', z, member) end
        redis.call('HSET', m, player, fresh)
      end
      -- a tie-breaker entry's score: as the caller sent it when that is the one kept
      if tb then new_text = new_sk == sk_sent and delta or fmt(new) else new_text = shown end
      redis.call('ZADD', z, new_text, fresh)
      if not prev_text then
        redis.call('HINCRBY', KEYS[6], player, 1)
        redis.call('SADD', KEYS[7], string.sub(zv, off))
      end
      member = fresh
    end
  end
  if changed then
    applied = true
    if inc and lo then
      if new > hi then hi = new; range_changed = true end
      if new < lo then lo = new; range_changed = true end
    end
  end
  local contribution = ''
  if team ~= '' and changed then
    -- The team's members set (its shadow while the player is hidden: it counts for nothing)
    -- and, for a visible player, the team's score.
    local sfx = string.sub(zv, off)
    local tm = pfx .. (hidden and 'tmh:' or 'tm:') .. sfx .. ':' .. team
    if agg == 'sum' then
      local dn = new - (prev or 0)
      local d = prev and fmt(dn) or new_text
      contribution = redis.call('ZINCRBY', tm, d, player)
      -- equal to the change only when the player was not on the team's set before (or held 0)
      if tonumber(contribution) == dn then joined = true end
      if not hidden then redis.call('ZINCRBY', pfx .. 'zt:' .. sfx, d, team) end
    else
      contribution = new_text
      if redis.call('ZADD', tm, contribution, player) == 1 then joined = true end
      if not hidden then
        local zt = pfx .. 'zt:' .. sfx
        -- a best-mode entry only gets better: so does the team's best; else look again
        if mode == 'best' then
          redis.call('ZADD', zt, desc and 'GT' or 'LT', contribution, team)
        else
          local top
          if desc then top = redis.call('ZREVRANGE', tm, 0, 0, 'WITHSCORES')
          else top = redis.call('ZRANGE', tm, 0, 0, 'WITHSCORES') end
          redis.call('ZADD', zt, top[2], team)
        end
      end
    end
  end
  local present = true
  if changed and maxe and any_hidden then
    -- The board's best maxe entries, hidden ones among them: the worst of the visible set and
    -- its shadow goes first.
    local sets = {zv, shadow_of(zv)}
    local excess = redis.call('ZCARD', zv) + redis.call('ZCARD', sets[2]) - maxe
    while excess > 0 do
      local vset, v, vs
      for _, set in ipairs(sets) do
        local w
        if desc then w = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
        else w = redis.call('ZREVRANGE', set, 0, 0, 'WITHSCORES') end
        if w[1] then
          local ws = tonumber(w[2])
          if not v or (desc and (ws < vs or (ws == vs and bytes_lt(w[1], v))))
              or ((not desc) and (ws > vs or (ws == vs and bytes_lt(v, w[1])))) then
            vset, v, vs = set, w[1], ws
          end
        end
      end
      redis.call('ZREM', vset, v)
      local vp = v
      if keyed then
        vp = member_player(v)
        redis.call('HDEL', m, vp)
      end
      if vp == player then present = false end
      if redis.call('HINCRBY', KEYS[6], vp, -1) <= 0 then redis.call('HDEL', KEYS[6], vp) end
      evicted = evicted or {}
      evicted[#evicted + 1] = {string.sub(zv, off), vp}
      excess = excess - 1
    end
  elseif changed and maxe then
    local excess = redis.call('ZCARD', z) - maxe
    if excess > 0 then
      local victims
      if desc then victims = redis.call('ZRANGE', z, 0, excess - 1)
      else victims = redis.call('ZREVRANGE', z, 0, excess - 1) end
      evicted = evicted or {}
      for _, v in ipairs(victims) do
        redis.call('ZREM', z, v)
        local vp = v
        if keyed then
          vp = member_player(v)
          redis.call('HDEL', m, vp)
        end
        if vp == player then present = false end
        if redis.call('HINCRBY', KEYS[6], vp, -1) <= 0 then redis.call('HDEL', KEYS[6], vp) end
        evicted[#evicted + 1] = {string.sub(zv, off), vp}
      end
    end
  end
  local rank = ''
  if unranked then
    rank = '-'
  elseif present then
    if lexed then rank = tb_rank(zv, desc, new_sk .. kept)
    elseif not plain then rank = place(zv, shown, member, #kept, hidden)
    elseif desc then rank = redis.call('ZCOUNT', zv, '(' .. shown, '+inf') + 1
    else rank = redis.call('ZCOUNT', zv, '-inf', '(' .. shown) + 1 end
  end
  -- One string for all lines, built once (each line its own string costs more than its work).
  local at = #parts
  parts[at + 1] = '\n'
  parts[at + 2] = string.sub(zv, off)
  parts[at + 3] = '\t'
  parts[at + 4] = shown
  parts[at + 5] = '\t'
  parts[at + 6] = rank
  parts[at + 7] = changed and (hidden and '\t2\t' or '\t1\t') or '\t0\t'
  if prev_text then
    parts[at + 8] = prev_text
    if unranked then prev_rank = '-' elseif not changed then prev_rank = rank end
    parts[at + 9] = '\t' .. (prev_rank or '')
  else
    parts[at + 8] = '\t'
  end
  if keyed then
    parts[#parts + 1] = '\t' .. (tb and kept or '') .. '\t' .. contribution .. '\t' .. old_order
  else
    if tb or agg ~= '' then parts[#parts + 1] = '\t' .. (tb and kept or '') end
    if agg ~= '' then parts[#parts + 1] = '\t' .. contribution end
  end
end
if LG then
  parts[#parts + 1] = '\n~\t' .. LG.season .. '\t' .. LG.group .. '\t' .. (LG.placed and '1' or '0')
end
-- Whether an evicted player is gone (on no set of the board) is decided only now: the
-- submitting player may leave one set and enter another in this same script.
if evicted then
  for _, e in ipairs(evicted) do
    local gone = '0'
    if redis.call('HEXISTS', KEYS[6], e[2]) == 0 then
      redis.call('HDEL', KEYS[5], e[2])
      gone = '1'
    end
    parts[#parts + 1] = '\n-\t' .. e[1] .. '\t' .. e[2] .. '\t' .. gone
  end
end
if range_changed then redis.call('SET', KEYS[2], fmt(lo) .. ' ' .. fmt(hi)) end
-- Which teams the player contributed to (for deletes, hiding): asked only when the player
-- joined a team's members set, as a set's first entry always adds the team here.
if team ~= '' and joined then
  local known = redis.call('HGET', pfx .. 'pt', player)
  if not known then redis.call('HSET', pfx .. 'pt', player, team)
  elseif not string.find(',' .. known .. ',', ',' .. team .. ',', 1, true) then
    redis.call('HSET', pfx .. 'pt', player, known .. ',' .. team)
  end
end

local meta = ARGV[7]
if meta ~= '' and (not maxe or (tonumber(redis.call('HGET', KEYS[6], player)) or 0) > 0) then
  redis.call('HSET', KEYS[5], player, meta)
end

if applied then parts[3] = '1' end
local record = table.concat(parts)
if fp ~= '' then redis.call('SET', KEYS[3], fp .. '\n' .. record, 'EX', ARGV[9]) end
-- The outbox keeps the event until the relay has seen it in PostgreSQL: if this process dies
-- before its queue send, the event still reaches the system of record.
local verdict = ARGV[23] or '' -- a validation hook's verdict travels with the event
if verdict == '' and team == '' then
  redis.call('XADD', KEYS[9], '*', 'r', record, 'p', player, 's', delta, 'g', ARGV[6], 'm', meta)
else -- and the team the submission named
  redis.call('XADD', KEYS[9], '*', 'r', record, 'p', player, 's', delta, 'g', ARGV[6], 'm', meta,
    'h', verdict, 't', team)
end
wake_live_publisher(KEYS[9])
return {'OK', record}
