-- Remove up to ARGV[2] entries of an archived period's sorted set and its shadow (hidden
-- players' entries), keeping the reference counts (and so the metadata of players left on no
-- set) exact; drop the sets and their member map when both are empty.
-- KEYS: 1 sorted set, 2 member map, 3 reference counts, 4 metadata, 5 registry, 6 the set's
--       shadow.
-- ARGV: 1 registry suffix, 2 how many, 3 '1' for boards whose members carry a prefix ending
--       in '|' (ties=first, tie-breakers). Returns entries left.
local budget = tonumber(ARGV[2])
for _, set in ipairs({KEYS[1], KEYS[6]}) do
  if budget > 0 then
    local members = redis.call('ZRANGE', set, 0, budget - 1)
    budget = budget - #members
    for _, member in ipairs(members) do
      local player = member
      if ARGV[3] == '1' then player = string.sub(member, string.find(member, '|', 1, true) + 1) end
      redis.call('ZREM', set, member)
      redis.call('HDEL', KEYS[2], player)
      if redis.call('HINCRBY', KEYS[3], player, -1) <= 0 then
        redis.call('HDEL', KEYS[3], player)
        redis.call('HDEL', KEYS[4], player)
      end
    end
  end
end
local left = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[6])
if left == 0 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[6])
  redis.call('SREM', KEYS[5], ARGV[1])
end
return left
