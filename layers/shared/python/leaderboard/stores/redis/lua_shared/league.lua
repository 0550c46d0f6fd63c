-- Shared by the scripts of league boards (leaderboard/domain/leagues.py; prepended when loaded,
-- after tiebreakers.lua and standing.lua). A league's keys, under the board's prefix:
--   lg:tier          player -> tier index (0 = lowest) after the last settled season
--   lg:settled       the id of the last season whose moves are in lg:tier
--   lg:g:<season>    player -> group ("tier.number") the player was placed in that season
--   lg:n:<season>    tier -> its open group's number, "tier:c" -> players placed in it
--   gz:<season>:<g>  the group's standings (the season set's members and scores), and
--   gzh:<season>:<g> its shadow for hidden players (hidden.lua)
--   lg:next, lg:mv:<season>  the settling season's new tiers, and every player's move
-- The rules ("size start top promote relegate promote% relegate% drop") are the board's
-- League.script_rules(); the rule is League.moved / League.idle, written here once.
-- Made on demand (`league_lib()`): the functions of a fragment are made anew on every call of
-- a script, and a board that is no league must not pay for them.
local function league_lib()
  local L = {}

  function L.rules(text)
    local f = {}
    for value in string.gmatch(text .. ' ', '([^ ]*) ') do f[#f + 1] = value end
    return {size = tonumber(f[1]), start = tonumber(f[2]), top = tonumber(f[3]),
            p = tonumber(f[4]), r = tonumber(f[5]), pp = tonumber(f[6]), rp = tonumber(f[7]),
            drop = f[8] == '1'}
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

  -- The tier a player is placed in this season. `prev`, `prev2`: the two seasons before it
  -- ('-': none). Until the rollover has settled the previous season, its move is worked out
  -- here for this player alone, from the same closed group the rollover reads; nil when the
  -- one before is not settled either (the rollover is behind: the caller answers 503).
  function L.tier_now(R, pfx, player, prev, prev2, how)
    local settled = redis.call('GET', pfx .. 'lg:settled') or '-'
    local held = tonumber(redis.call('HGET', pfx .. 'lg:tier', player))
    if prev == '-' or settled == prev then return held or R.start end
    if settled ~= prev2 and prev2 ~= '-'
        and (settled ~= '-' or redis.call('EXISTS', pfx .. 'lg:n:' .. prev2) == 1) then
      return nil
    end
    local g = redis.call('HGET', pfx .. 'lg:g:' .. prev, player)
    if not g then
      if held then return L.idle(R, held) end
      return R.start
    end
    local tier = tonumber(string.match(g, '^(%d+)'))
    local gz = pfx .. 'gz:' .. prev .. ':' .. g
    local _, rank = standing(how, gz, pfx .. 'm:' .. prev, player)
    if not rank then return tier end -- hidden in that group: keeps the tier
    return L.moved(R, tier, rank, redis.call('ZCARD', gz))
  end

  -- The player's group this season, placing them in their tier's open group on their first
  -- write (first come first served; a full group opens the next). Returns the group, whether
  -- placed now, or nil when the tier cannot be known yet (tier_now).
  function L.place(R, pfx, season, player, prev, prev2, how)
    local map = pfx .. 'lg:g:' .. season
    local g = redis.call('HGET', map, player)
    if g then return g, false end
    local tier = L.tier_now(R, pfx, player, prev, prev2, how)
    if not tier then return nil, false end
    local open = pfx .. 'lg:n:' .. season
    local number = tonumber(redis.call('HGET', open, tier)) or 1
    local count = redis.call('HINCRBY', open, tier .. ':c', 1)
    if count > R.size then
      number = number + 1
      redis.call('HSET', open, tier, number, tier .. ':c', 1)
    elseif count == 1 then
      redis.call('HSET', open, tier, number)
    end
    g = tier .. '.' .. number
    redis.call('HSET', map, player, g)
    return g, true
  end

  return L
end

-- The group set of season `suffix` holding `player`'s entry, and its shadow; nil for a set
-- that is no season's global set, or a player placed in no group of it.
local function league_group_sets(pfx, suffix, player)
  if string.find(suffix, ':', 1, true) then return nil, nil end
  local g = redis.call('HGET', pfx .. 'lg:g:' .. suffix, player)
  if not g then return nil, nil end
  return pfx .. 'gz:' .. suffix .. ':' .. g, pfx .. 'gzh:' .. suffix .. ':' .. g
end
