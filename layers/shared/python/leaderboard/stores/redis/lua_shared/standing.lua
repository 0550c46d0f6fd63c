-- Shared by the scripts that tell one player's standing as the reads rank it (prepended when
-- loaded, after tiebreakers.lua): live.lua for the changed players and the watched ones,
-- watch.lua when a watch starts.
-- `how` is the board's ranking from its cfg: {desc, first (ties = first), spec (tie-breaker
-- columns or nil), ncols, keyed (members carry a prefix, found through the member map)}.
local function ranking(cfg)
  local spec = cfg.tb
  return {desc = cfg.sort == 'desc', first = cfg.ties == 'first', spec = spec,
          ncols = spec and tb_cols(spec), keyed = cfg.ties == 'first' or spec ~= nil}
end

-- (score, rank, member) of a player on one set, or nil without an entry
local function standing(how, zkey, mkey, player)
  local member = player
  if how.keyed then member = redis.call('HGET', mkey, player) end
  if not member then return nil, nil end
  local s = redis.call('ZSCORE', zkey, member)
  if not s then return nil, nil end
  local r
  if how.first then
    if how.desc then r = redis.call('ZREVRANK', zkey, member) else r = redis.call('ZRANK', zkey, member) end
    r = r + 1
  elseif how.spec then
    r = tb_rank(zkey, how.desc, tb_group(member, how.ncols))
  elseif how.desc then
    r = redis.call('ZCOUNT', zkey, '(' .. s, '+inf') + 1
  else
    r = redis.call('ZCOUNT', zkey, '-inf', '(' .. s) + 1
  end
  return s, r, member
end

-- A watch as kept in a channel's watch hash: "until (ms)\ttop N\tfriends (a,b)\tlast told
-- rank\tsince", since = the board's version when the watch started: changes up to it were
-- made before the watch and pass nobody on it (0 for watches kept before it was recorded).
local function watch_decode(raw)
  local f = {}
  for value in string.gmatch(raw .. '\t', '([^\t]*)\t') do f[#f + 1] = value end
  return tonumber(f[1]), tonumber(f[2]), f[3] or '', f[4] or '', tonumber(f[5]) or 0
end

local function watch_encode(until_ms, top_n, friends, told, since)
  return until_ms .. '\t' .. top_n .. '\t' .. friends .. '\t' .. told .. '\t' .. since
end
