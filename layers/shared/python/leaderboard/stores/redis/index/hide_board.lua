-- Take a board out of service before a rebuild: without its cfg key every write is refused
-- (never applied on top of partial data) and reads fall back to the record. Its sorted sets,
-- member maps, metadata, counters, hidden players and team rankings (the rebuild restores
-- them from the record) are cleared; idempotency records, rate buckets and the outbox are
-- kept.
-- KEYS: 1 cfg, 2 registry, 3 metadata, 4 reference counts, 5 sequence, 6 score range,
--       7 hidden players.
-- ARGV: 1 key prefix.
-- Returns the number of sorted sets cleared.
redis.call('DEL', KEYS[1])
local sets = redis.call('SMEMBERS', KEYS[2])
-- team boards: every team's members sets (of teams with only hidden members too)
local hidden_teams = {}
for _, player in ipairs(redis.call('HKEYS', KEYS[7])) do
  for team in string.gmatch(redis.call('HGET', ARGV[1] .. 'pt', player) or '', '[^,]+') do
    hidden_teams[#hidden_teams + 1] = team
  end
end
for _, suffix in ipairs(sets) do
  local zt = ARGV[1] .. 'zt:' .. suffix
  for _, team in ipairs(redis.call('ZRANGE', zt, 0, -1)) do
    redis.call('DEL', ARGV[1] .. 'tm:' .. suffix .. ':' .. team)
    redis.call('DEL', ARGV[1] .. 'tmh:' .. suffix .. ':' .. team)
  end
  for _, team in ipairs(hidden_teams) do redis.call('DEL', ARGV[1] .. 'tmh:' .. suffix .. ':' .. team) end
  redis.call('DEL', zt)
  redis.call('DEL', ARGV[1] .. 'z:' .. suffix, ARGV[1] .. 'm:' .. suffix, ARGV[1] .. 'zh:' .. suffix)
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[1] .. 'lost',
  ARGV[1] .. 'pt')
return #sets
