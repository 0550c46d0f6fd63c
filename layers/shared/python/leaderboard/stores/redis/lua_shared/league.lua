-- Shared by the scripts of league boards (leaderboard/domain/leagues.py; prepended when loaded,
-- after tiebreakers.lua and standing.lua). A league's keys, under the board's prefix:
--   lg:tier          player -> tier index (0 = lowest) after the last settled season, and
--                    `~settled` -> that season's id (no player id holds a '~')
--   lg:g:<season>    player -> group ("tier.number") the player was placed in that season
--   lg:n:<season>    tier -> players placed in it: groups fill in order, so the n-th
--                    player placed in a tier is in group floor((n - 1) / size) + 1
--   gz:<season>:<g>  the group's standings (the season set's members and scores), and
--   gzh:<season>:<g> its shadow for hidden players (hidden.lua)
--   lg:next, lg:mv:<season>  the settling season's new tiers, and every player's move
-- The rules ("size start top promote relegate promote% relegate% drop") are the board's
-- League.script_rules(); the rule is League.moved / League.idle, written here once.
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
    if settled ~= prev2 and prev2 ~= '-'
        and (settled ~= '-' or redis.call('EXISTS', pfx .. 'lg:n:' .. prev2) == 1) then
      return nil
    end
    local g = redis.call('HGET', pfx .. 'lg:g:' .. prev, player)
    if not g then
      if held then return L.idle(L.rules(rules), held) end
      return start
    end
    local tier = tonumber(string.match(g, '^(%d+)'))
    local gz = pfx .. 'gz:' .. prev .. ':' .. g
    local _, rank = standing(how, gz, pfx .. 'm:' .. prev, player)
    if not rank then return tier end -- hidden in that group: keeps the tier
    return L.moved(L.rules(rules), tier, rank, redis.call('ZCARD', gz))
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
