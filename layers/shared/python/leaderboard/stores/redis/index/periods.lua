-- The periods a board holds, in one round trip: every sorted set's entry count and the
-- archived periods with theirs.
-- KEYS: 1 registry, 2 archived periods (period id -> entries), 3 cfg. ARGV: 1 key prefix.
-- Returns {cfg JSON or '', n, n x (suffix, entries), then the archived (period, entries) pairs}.
local out = {redis.call('GET', KEYS[3]) or ''}
local sets = redis.call('SMEMBERS', KEYS[1])
out[2] = #sets
for _, suffix in ipairs(sets) do
  out[#out + 1] = suffix
  out[#out + 1] = redis.call('ZCARD', ARGV[1] .. 'z:' .. suffix)
end
for _, item in ipairs(redis.call('HGETALL', KEYS[2])) do out[#out + 1] = item end
return out
