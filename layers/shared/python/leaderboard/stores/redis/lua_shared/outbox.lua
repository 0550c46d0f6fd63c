-- Shared by the live publisher's scripts (live.lua, live_shard.lua; prepended when loaded).
-- An outbox entry's record (field 'r') and player (field 'p'); nil for an entry that carries
-- no score event's record (the caller skips and counts it).
local function outbox_fields(entry)
  local fields, record, player = entry[2], nil, nil
  for j = 1, #fields - 1, 2 do
    if fields[j] == 'r' then record = fields[j + 1] elseif fields[j] == 'p' then player = fields[j + 1] end
  end
  if type(record) ~= 'string' or type(player) ~= 'string' or not string.find(record, '\t') then
    return nil, nil
  end
  return record, player
end
