-- uses: tournament (lua_shared/, prepended when loaded)
-- Sign a player up for a tournament, atomically with its cap (domain/tournaments.py).
-- KEYS: 1 cfg, 2 the participants of the window signed up for (a set: `joined`, or a recurring
-- tournament's `joined:<window id>`), 3 a recurring tournament's windows with sign-ups (the
-- rollover removes their keys once each is over). ARGV: 1 player, 2 now (ms), 3 the cfg text
-- the caller's rules came from, 4 the window's rules as the submit script's ARGV 27 reads them
-- ('' = the board is no tournament), placed by the caller with those rules.
-- Returns {'OK', 1 = joined now | 0 = had joined, participants} or {'STALE', cfg text} (the
-- caller's rules are not the board's: it reloads them and asks again) or {'ERR', 'no_board'} |
-- {'ERR', 'not_tournament'} | {'ERR', 'tournament', 'ended' | 'full'}.
-- Joining a window is open from the tournament's creation (a recurring tournament's: from the
-- end of the window before) until the window's end.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'ERR', 'no_board'} end
-- the rules the caller sent, or the same with the space that says the board hides players
if raw ~= ARGV[3] and raw ~= ARGV[3] .. ' ' then return {'STALE', raw} end
if ARGV[4] == '' then return {'ERR', 'not_tournament'} end
local _, te, _, maxp, _, _, window = tournament_window(ARGV[4])
if tonumber(ARGV[2]) >= te then return {'ERR', 'tournament', 'ended'} end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return {'OK', 0, redis.call('SCARD', KEYS[2])}
end
local count = redis.call('SCARD', KEYS[2])
if maxp and count >= maxp then return {'ERR', 'tournament', 'full'} end
redis.call('SADD', KEYS[2], ARGV[1])
if window ~= '' then redis.call('SADD', KEYS[3], window) end
return {'OK', 1, count + 1}
