-- Remove a player from every period and region of a board, with its metadata.
-- The registry lists the board's sorted sets; their names are built from the board's own key
-- prefix, so every key touched shares the declared keys' hash tag (cluster-safe).
-- KEYS: 1 registry, 2 metadata hash, 3 reference counts, 4 sequence.
-- ARGV: 1 player, 2 key prefix ("lb:{board}:").
-- Returns {entries removed, version of the deletion}.
local player, prefix = ARGV[1], ARGV[2]
local removed = 0
for _, suffix in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local zkey, mkey = prefix .. 'z:' .. suffix, prefix .. 'm:' .. suffix
  local member = redis.call('HGET', mkey, player)
  if member then redis.call('HDEL', mkey, player) else member = player end
  removed = removed + redis.call('ZREM', zkey, member)
end
redis.call('HDEL', KEYS[2], player)
redis.call('HDEL', KEYS[3], player)
return {removed, redis.call('INCR', KEYS[4])}
