-- Count a board's entries over all its sorted sets, hidden players' too (decides whether its
-- rules may still change).
-- KEYS: 1 registry. ARGV: 1 key prefix. Returns the total number of entries.
local total = 0
for _, suffix in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  total = total + redis.call('ZCARD', ARGV[1] .. 'z:' .. suffix)
    + redis.call('ZCARD', ARGV[1] .. 'zh:' .. suffix)
end
return total
