-- uses: tiebreakers, standing (lua_shared/, prepended in this order when loaded)
-- Start, renew or end one player's watch of a board channel (docs/API.md, "Player channels").
-- KEYS: 1 cfg, 2 the channel's sorted set, 3 its member map, 4 the channel's watch hash
--       (player -> watch, for every period of the kind), 5 the current period's watched ranks
--       (player -> the rank the publisher last knew), 6 the board's version (sequence).
-- ARGV: 1 player, 2 'put' | 'end', 3 until (ms), 4 top N, 5 friends ("a,b"; '-' keeps the
--       watch's), 6 seconds to keep the keys, 7 now (ms).
-- A renewal (the watch exists and has not expired) keeps the rank last told, the rank the
-- publisher last knew and the version the watch started at: a pass the publisher has not told
-- yet is still told, and the channel's previous_rank chain goes on unbroken. A new watch starts
-- at the board's version now: what was written before it passed nobody on it.
-- Returns {'GONE'} (no board) or {'OK', score ('' = none), rank ('' = none), friends}.
local raw = redis.call('GET', KEYS[1])
if not raw then return {'GONE'} end
local player = ARGV[1]
if ARGV[2] == 'end' then
  redis.call('HDEL', KEYS[4], player)
  redis.call('ZREM', KEYS[5], player)
  return {'OK', '', '', ''}
end
local how = ranking(cjson.decode(raw))
local s, r = standing(how, KEYS[2], KEYS[3], player)
local friends, told, renewal = ARGV[5], r or '', false
local since
local old = redis.call('HGET', KEYS[4], player)
if old then
  local until_ms, _, kept, kept_told, kept_since = watch_decode(old)
  renewal = until_ms ~= nil and until_ms >= tonumber(ARGV[7])
  if friends == '-' then friends = kept end
  if renewal then told, since = kept_told, kept_since end
end
if friends == '-' then friends = '' end
since = since or redis.call('GET', KEYS[6]) or '0'
redis.call('HSET', KEYS[4], player, watch_encode(ARGV[3], ARGV[4], friends, told, since))
if renewal then
  -- the rank the publisher last knew stays, unknown included (a new period, or no entry yet):
  -- an entry made since is still told (entered_top) by the publisher's next call, which ranks
  -- the player as one of its changes
elseif r then
  redis.call('ZADD', KEYS[5], r, player)
else
  redis.call('ZREM', KEYS[5], player)
end
local keep = tonumber(ARGV[6])
for i = 4, 5 do
  if redis.call('TTL', KEYS[i]) < keep then redis.call('EXPIRE', KEYS[i], keep) end
end
return {'OK', s or '', r or '', friends}
