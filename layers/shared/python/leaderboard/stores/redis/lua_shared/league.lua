-- Shared by the scripts of league boards (leaderboard/domain/leagues.py; prepended when loaded,
-- after tiebreakers.lua). A league's keys, under the board's prefix:
--   lg:tier          player -> tier index (0 = lowest) after the last settled season, and
--                    `~settled` -> that season's id (no player id holds a '~')
--   lg:g:<season>    player -> group ("tier.number") the player was placed in that season
--   lg:o:<season>:<tier>  the players placed in the tier, in the order they were placed:
--                    groups fill in order, so the n-th is in group floor((n - 1) / size) + 1
--                    and a group is its slice of the list (league_group_rows); a removed
--                    player's place holds '' (league_unplace): taken, by nobody. A group keeps
--                    no standings of its own: a write places a player with one RPUSH and
--                    never touches the group again; a read ranks the group's few players
--                    from the season's sets (ZMSCORE), as the season set orders them.
--   lg:next, lg:mv:<season>  the settling season's new tiers, and every player's move
-- The rules ("size start top promote relegate promote% relegate% drop") are the board's
-- League.script_rules(); the rule is League.moved / League.idle, written here once.
-- The keys of season `season`'s placement lists, one a tier (0..top).
local function league_tier_lists(pfx, season, top)
  local keys = {}
  for tier = 0, top do keys[#keys + 1] = pfx .. 'lg:o:' .. season .. ':' .. tier end
  return keys
end

-- Set order: by score, equal scores by member in byte order (ZRANGE; ZREVRANGE reversed).
local function league_asc(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return bytes_lt(a[2], b[2])
end
local function league_desc(a, b)
  if a[1] ~= b[1] then return a[1] > b[1] end
  return bytes_lt(b[2], a[2])
end

-- Group `g` ("tier.number") of season `season`: its entries on the set `zkey` as a flat list
-- {member, score, ...} in the order ZRANGE (ZREVRANGE when how.desc) WITHSCORES would give
-- them on a set of those entries alone, then its placed players with no entry there
-- ({player, member} each: hidden, or removed). `mkey`: the season's member map (keyed
-- boards). Three commands at most, for `size` players.
local function league_group_rows(pfx, season, g, size, how, zkey, mkey)
  local tier, number = string.match(g, '^(%d+)%.(%d+)$')
  local from = (tonumber(number) - 1) * size
  local players = redis.call('LRANGE', pfx .. 'lg:o:' .. season .. ':' .. tier, from,
    from + size - 1)
  local rows, missing = {}, {}
  local kept = {} -- a removed player's place ('') is nobody
  for i = 1, #players do
    if players[i] ~= '' then kept[#kept + 1] = players[i] end
  end
  players = kept
  if #players == 0 then return rows, missing end
  local members, asked, whose = players, players, nil
  if how.keyed then
    members = redis.call('HMGET', mkey, unpack(players))
    asked, whose = {}, {}
    for i = 1, #players do
      if members[i] then asked[#asked + 1] = members[i]; whose[#asked] = players[i]
      else missing[#missing + 1] = {players[i], false} end -- removed: no member any more
    end
    if #asked == 0 then return rows, missing end
  end
  local scores = redis.call('ZMSCORE', zkey, unpack(asked))
  local entries = {}
  for i = 1, #asked do
    local s = scores[i]
    if s then entries[#entries + 1] = {tonumber(s), asked[i], s}
    else missing[#missing + 1] = {whose and whose[i] or asked[i], asked[i]} end
  end
  table.sort(entries, how.desc and league_desc or league_asc)
  for i = 1, #entries do
    rows[2 * i - 1], rows[2 * i] = entries[i][2], entries[i][3]
  end
  return rows, missing
end

-- Take `player` out of their group of season `season` (an admin removal): their place in the
-- tier's list becomes '' (taken, by nobody: the groups after it keep their players) and they
-- are placed again, as a new player, by their next write of the season.
local function league_unplace(pfx, season, player, size)
  local map = pfx .. 'lg:g:' .. season
  local g = redis.call('HGET', map, player)
  if not g then return end
  local tier, number = string.match(g, '^(%d+)%.(%d+)$')
  local list = pfx .. 'lg:o:' .. season .. ':' .. tier
  local from = (tonumber(number) - 1) * size
  for i, p in ipairs(redis.call('LRANGE', list, from, from + size - 1)) do
    if p == player then redis.call('LSET', list, from + i - 1, ''); break end
  end
  redis.call('HDEL', map, player)
end

-- A group's rows (league_group_rows) ranked as the board ranks: calls each(position, rank,
-- member, score) in order; shared ranks share a score (and tie key on tie-breaker boards).
local function league_ranked(rows, how, each)
  local rank, last = 0, nil
  for i = 1, #rows, 2 do
    local member = rows[i]
    local same = rows[i + 1]
    if how.spec then same = tb_group(member, how.ncols) end
    local position = (i + 1) / 2
    if how.first or same ~= last then rank = position end
    last = same
    if each(position, rank, member, rows[i + 1]) then return end
  end
end

-- `player`'s rank among a group's rows and the rows' count (nil rank: not among them)
local function league_rank_in(rows, how, player)
  local found
  league_ranked(rows, how, function(_, rank, member)
    local who = member
    if how.keyed then who = member_player(member) end
    if who == player then found = rank; return true end
  end)
  return found, #rows / 2
end

-- Made on demand (`league_lib()`): the functions of a fragment are made anew on every call of
-- a script, and a board that is no league must not pay for them.
local function league_lib()
  local L = {}

  -- the rules' eight fields, split on single spaces (one match: a loop of gmatch cost a
  -- submission that places a player about 4% more)
  function L.rules(text)
    local size, start, top, p, r, pp, rp, drop = string.match(text,
      '^([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*)')
    return {size = tonumber(size), start = tonumber(start), top = tonumber(top),
            p = tonumber(p), r = tonumber(r), pp = tonumber(pp), rp = tonumber(rp),
            drop = drop == '1'}
  end

  -- the tier after the season of rank `rank` among `members` ranked players of tier `tier`
  function L.moved(R, tier, rank, members)
    local p = R.p or math.floor(members * R.pp / 100)
    local r = R.r or math.floor(members * R.rp / 100)
    if tier < R.top and rank <= p then return tier + 1 end
    if tier > 0 and rank > members - r then return tier - 1 end
    return tier
  end

  -- the tier after a season the player did not play
  function L.idle(R, tier)
    if R.drop and tier > 0 then return tier - 1 end
    return tier
  end

  -- The tier a player is placed in this season when the last season (`prev`) is not settled
  -- yet (`settled`: the last that is, '-' none; `held`: the player's tier after it, or nil):
  -- its move is worked out here for this player alone, from the same closed group the
  -- rollover reads. nil when the season before it (`prev2`) is not settled either (the
  -- rollover is behind: the caller answers 503). The common case, the last season settled,
  -- is submit.lua's own (a write that places a player pays for no function made here).
  function L.tier_unsettled(rules, start, pfx, player, prev, prev2, how, held, settled)
    local R = L.rules(rules)
    if settled ~= prev2 and prev2 ~= '-'
        and (settled ~= '-' or redis.call('EXISTS', unpack(league_tier_lists(pfx, prev2,
          R.top))) > 0) then
      return nil
    end
    local g = redis.call('HGET', pfx .. 'lg:g:' .. prev, player)
    if not g then
      if held then return L.idle(R, held) end
      return start
    end
    local tier = tonumber(string.match(g, '^(%d+)'))
    local rows = league_group_rows(pfx, prev, g, R.size, how, pfx .. 'z:' .. prev,
      pfx .. 'm:' .. prev)
    local rank, members = league_rank_in(rows, how, player)
    if not rank then return tier end -- hidden in that group: keeps the tier
    return L.moved(R, tier, rank, members)
  end

  return L
end

