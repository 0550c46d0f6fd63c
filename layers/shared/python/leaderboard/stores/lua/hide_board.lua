-- Take a board out of service before a rebuild: without its cfg key every write is refused
-- (never applied on top of partial data) and reads fall back to the record. Its sorted sets,
-- member maps, metadata and counters are cleared; idempotency records, rate buckets and the
-- outbox are kept.
-- KEYS: 1 cfg, 2 registry, 3 metadata, 4 reference counts, 5 sequence, 6 score range.
-- ARGV: 1 key prefix.
-- Returns the number of sorted sets cleared.
redis.call('DEL', KEYS[1])
local sets = redis.call('SMEMBERS', KEYS[2])
for _, suffix in ipairs(sets) do
  redis.call('DEL', ARGV[1] .. 'z:' .. suffix, ARGV[1] .. 'm:' .. suffix)
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1] .. 'lost')
return #sets
