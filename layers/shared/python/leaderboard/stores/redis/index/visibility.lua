-- uses: tiebreakers, teams, wake (lua_shared/, prepended in this order when loaded)
-- Hide a player on a board (a shadow ban), or show them again, atomically: each of the
-- player's entries moves between its set and the set's shadow (hidden.lua), the board's list of
-- hidden players changes (and with its first, or last, player the space at the end of the
-- board's rules that tells the scripts to look at it), and the board's version moves on.
-- Scores, members and
-- reference counts stay as they are, so hiding and showing again change nothing else. An
-- outbox entry names the sets whose visible entries changed, for the live publisher; the
-- relay does not send it on (the admin route records the hiding in PostgreSQL first).
--
-- A league group has no set of its own to move (league.lua: a read ranks it from the sets).
-- On a team board the player's contributions move the same way, between each team's members
-- set and its shadow, and the teams' scores change with them (teams.lua).
-- KEYS: 1 cfg, 2 set registry, 3 hidden players, 4 sequence, 5 outbox.
-- ARGV: 1 'hide' | 'unhide', 2 player, 3 key prefix, 4 now (ms), 5 event id, 6 what to keep
--       for a hidden player (when it was hidden, ms).
-- Returns {'OK', changed (0: it already was so), version, entries moved} or
-- {'ERR', 'no_board'}. The outbox record is "event_id\t1\tversion\tnow_ms\thide|unhide", then
-- one "suffix\tscore\trank now ('' = hidden)\t1\tscore\trank before ('' = was hidden)" line a
-- set (on ties=first and tie-breaker boards then two empty fields and the member less the
-- player, as submit.lua's lines).
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
local desc, first = cfg.sort == 'desc', cfg.ties == 'first'
local spec = cfg.tb
local ncols = spec and tb_cols(spec)
local keyed = first or spec ~= nil
local op, player, prefix = ARGV[1], ARGV[2], ARGV[3]
local hide = op == 'hide'

if (redis.call('HEXISTS', KEYS[3], player) == 1) == hide then
  return {'OK', 0, redis.call('GET', KEYS[4]) or '0', 0}
end
if hide then
  redis.call('HSET', KEYS[3], player, ARGV[6])
  if string.byte(raw, -1) ~= 32 then redis.call('SET', KEYS[1], raw .. ' ') end
else
  redis.call('HDEL', KEYS[3], player)
  if redis.call('HLEN', KEYS[3]) == 0 and string.byte(raw, -1) == 32 then
    redis.call('SET', KEYS[1], string.sub(raw, 1, -2))
  end
end

-- the public rank of a member of set z
local function rank_in(z, member, score)
  if first then
    local r
    if desc then r = redis.call('ZREVRANK', z, member) else r = redis.call('ZRANK', z, member) end
    return r + 1
  elseif spec then
    return tb_rank(z, desc, tb_group(member, ncols))
  elseif desc then
    return redis.call('ZCOUNT', z, '(' .. score, '+inf') + 1
  end
  return redis.call('ZCOUNT', z, '-inf', '(' .. score) + 1
end

local version = redis.call('INCR', KEYS[4])
local parts = {ARGV[5], '\t1\t', version, '\t', ARGV[4], '\t', op}
local moved = 0
local teams = cfg.teams and player_teams(prefix, player) or {}
for _, suffix in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  for _, team in ipairs(teams) do
    local tm = prefix .. 'tm:' .. suffix .. ':' .. team
    local tmh = prefix .. 'tmh:' .. suffix .. ':' .. team
    local from, to = tm, tmh
    if not hide then from, to = tmh, tm end
    local contribution = redis.call('ZSCORE', from, player)
    if contribution then
      redis.call('ZREM', from, player)
      redis.call('ZADD', to, contribution, player)
      team_settle(prefix, suffix, team, cfg.teams, desc, tm, contribution, hide)
    end
  end
  local z, zh = prefix .. 'z:' .. suffix, prefix .. 'zh:' .. suffix
  local member = player
  if keyed then member = redis.call('HGET', prefix .. 'm:' .. suffix, player) end
  if member then
    local from, to = z, zh
    if not hide then from, to = zh, z end
    local score = redis.call('ZSCORE', from, member)
    if score then
      local before, after = '', ''
      if hide then before = rank_in(z, member, score) end
      redis.call('ZREM', from, member)
      redis.call('ZADD', to, score, member)
      if not hide then after = rank_in(z, member, score) end
      parts[#parts + 1] = '\n' .. suffix .. '\t' .. score .. '\t' .. after .. '\t1\t' .. score
        .. '\t' .. before
      -- keyed boards: the member less the player, as submit.lua's lines end
      if keyed then parts[#parts + 1] = '\t\t\t' .. string.sub(member, 1, #member - #player) end
      moved = moved + 1
    end
  end
end
if moved > 0 then
  redis.call('XADD', KEYS[5], '*', 'r', table.concat(parts), 'p', player, 's', '0', 'g', '',
    'm', '')
  wake_live_publisher(KEYS[5])
end
return {'OK', 1, version, moved}
