-- Remove up to ARGV[3] teams of an archived period's team ranking, with their members sets and
-- the sets' shadows (teams.lua); once the ranking is empty, the shadows of teams all of whose
-- members are hidden (found through the hidden players' teams).
-- KEYS: 1 the team ranking (zt:<suffix>), 2 hidden players, 3 the teams each player named.
-- ARGV: 1 key prefix, 2 suffix, 3 how many teams at most. Returns the teams left.
local prefix, suffix, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local teams = redis.call('ZRANGE', KEYS[1], 0, count - 1)
for _, team in ipairs(teams) do
  redis.call('DEL', prefix .. 'tm:' .. suffix .. ':' .. team, prefix .. 'tmh:' .. suffix .. ':' .. team)
  redis.call('ZREM', KEYS[1], team)
end
local left = redis.call('ZCARD', KEYS[1])
if left == 0 then
  for _, player in ipairs(redis.call('HKEYS', KEYS[2])) do
    local named = redis.call('HGET', KEYS[3], player)
    if named then
      for team in string.gmatch(named, '[^,]+') do
        redis.call('DEL', prefix .. 'tmh:' .. suffix .. ':' .. team)
      end
    end
  end
end
return left
