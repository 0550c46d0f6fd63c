-- Shared by the read scripts (read.lua, players.lua; prepended when loaded).
-- Whether a list of the board's rules (its periods, its regions) holds an item.
local function has(list, item)
  if type(list) ~= 'table' then return false end
  for _, v in ipairs(list) do if v == item then return true end end
  return false
end
