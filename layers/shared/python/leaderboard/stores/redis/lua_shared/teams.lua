-- Shared by the scripts that change team boards' entries (prepended when loaded).
-- A team board keeps, beside each sorted set of players (suffix = period[:region]):
--   lb:{b}:zt:<suffix>         the teams: team -> score
--   lb:{b}:tm:<suffix>:<team>  the team's members: player -> their contribution
--   lb:{b}:tmh:<suffix>:<team> the same for the team's hidden members (hidden.lua), which
--                              count for nothing until shown again
--   lb:{b}:pt                  player -> the teams they contributed to ("a,b"), board-wide
-- A contribution is what the player's submissions naming the team added to the player's entry
-- (board `teams: sum`; the team's score is the sum of its visible members' contributions), or
-- the player's entry as it stood after their latest submission naming the team (`teams: best`;
-- the team's score is the best of them). A team is ranked while it has a visible member.

-- 'lb:{b}:' of a board's cfg key
local function board_prefix(cfg_key)
  return string.sub(cfg_key, 1, #cfg_key - 3)
end

local function fmt17(x) return string.format('%.17g', x) end

-- The best contribution left on a team's members set: a team's score on `best` boards.
local function team_best(tm, desc)
  local top
  if desc then top = redis.call('ZREVRANGE', tm, 0, 0, 'WITHSCORES')
  else top = redis.call('ZRANGE', tm, 0, 0, 'WITHSCORES') end
  return top[2]
end

-- Take a member's contribution off (gone: true) or put it back on (false) a team's score,
-- after it left or joined the team's visible members set `tm`.
local function team_settle(pfx, sfx, team, agg, desc, tm, contribution, gone)
  local zt = pfx .. 'zt:' .. sfx
  if redis.call('EXISTS', tm) == 0 then
    redis.call('ZREM', zt, team) -- no visible member left: not ranked
  elseif agg == 'sum' then
    if gone then redis.call('ZINCRBY', zt, fmt17(-tonumber(contribution)), team)
    elseif redis.call('ZSCORE', zt, team) then redis.call('ZINCRBY', zt, contribution, team)
    else redis.call('ZADD', zt, contribution, team) end
  else
    redis.call('ZADD', zt, team_best(tm, desc), team)
  end
end

-- The teams a player contributed to on this board.
local function player_teams(pfx, player)
  local teams = {}
  local known = redis.call('HGET', pfx .. 'pt', player)
  if known then
    for team in string.gmatch(known, '[^,]+') do teams[#teams + 1] = team end
  end
  return teams
end
