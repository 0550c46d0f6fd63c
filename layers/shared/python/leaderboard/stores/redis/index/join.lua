-- Sign a player up for a tournament, atomically with its cap (domain/tournaments.py).
-- KEYS: 1 cfg, 2 the tournament's participants (a set). ARGV: 1 player, 2 now (ms).
-- Returns {'OK', 1 = joined now | 0 = had joined, participants} or {'ERR', 'no_board'} |
-- {'ERR', 'not_tournament'} | {'ERR', 'tournament', 'ended' | 'full'}.
-- Joining is open from the tournament's creation until its end.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
local cfg = cjson.decode(raw)
if type(cfg.tour) ~= 'string' then return {'ERR', 'not_tournament'} end
local _, te, _, maxp = string.match(cfg.tour, '^(%d+) (%d+) ([01]) (%d*) (%d*)$')
if tonumber(ARGV[2]) >= tonumber(te) then return {'ERR', 'tournament', 'ended'} end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return {'OK', 0, redis.call('SCARD', KEYS[2])}
end
local count = redis.call('SCARD', KEYS[2])
if maxp ~= '' and count >= tonumber(maxp) then return {'ERR', 'tournament', 'full'} end
redis.call('SADD', KEYS[2], ARGV[1])
return {'OK', 1, count + 1}
