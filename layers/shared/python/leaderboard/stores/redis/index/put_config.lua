-- Publish a board's configuration to the serving index unless a newer version is already there.
-- While the board (or this shard) hides players, the rules end with a space (hidden.lua).
-- KEYS: 1 cfg, 2 hidden players. ARGV: 1 compact config JSON, 2 version.
-- Returns 1 if written, 0 if stale.
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).v > tonumber(ARGV[2]) then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('SET', KEYS[1], ARGV[1] .. ' ')
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1
