-- Shared by the scripts that append to a board's outbox (submit, visibility, delete_player;
-- prepended when loaded). Wakes the live publisher: a message on the board's shard channel,
-- named like its other keys (the outbox's name with 'wake' for 'outbox'), so on a cluster it
-- stays in the board's slot and on its node. The publisher listens only to boards it may publish
-- at once (stores/redis/live/wakes.py): on a board inside its interval, or with no publisher,
-- this is one dictionary lookup and nothing is sent.
local function wake_live_publisher(outbox_key)
  redis.call('SPUBLISH', string.sub(outbox_key, 1, -7) .. 'wake', '')
end
