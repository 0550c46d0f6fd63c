-- Publish a board's configuration to the serving index unless a newer version is already there.
-- KEYS: 1 cfg. ARGV: 1 compact config JSON, 2 version. Returns 1 if written, 0 if stale.
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).v > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
