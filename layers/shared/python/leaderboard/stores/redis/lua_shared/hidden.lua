-- Shared by the scripts that read or write sets of boards that may hide players (prepended).
-- A hidden player's entries live in a shadow sorted set beside each set ('zh:' where the set
-- has 'z:'), with the same members (the member map is shared), so every public read, total
-- and live message leaves them out at no cost. `lb:{b}:hidden` names the board's hidden
-- players, and while there is one the board's rules key ends with a space (JSON ignores it):
-- a script learns from the rules it reads anyway whether it need look further, so a board
-- with none pays nothing (visibility.lua keeps the space). The hidden player's own view is the
-- board with their own entry in it: for the length of a read script it is added to each set
-- the script reads and removed again at every way out of the script, so nobody else ever sees
-- it. Lua makes a script's functions anew on every call, so these are made only when a board
-- hides players (callers test the space themselves: `string.byte(cfg, -1) == 32`), by
-- `hidden_lib()`.
local function hidden_lib()
  local L = {}

  -- 'lb:{b}:z:<suffix>' -> 'lb:{b}:zh:<suffix>' (a team's members: 'tm:...' -> 'tmh:...')
  function L.shadow_of(z)
    local kind_end = string.find(z, ':', string.find(z, '}:', 1, true) + 2, true)
    return string.sub(z, 1, kind_end - 1) .. 'h' .. string.sub(z, kind_end)
  end

  -- whether the board hides `player` (hash: its hidden players)
  function L.is_hidden(hash, player)
    return player ~= '' and redis.call('HEXISTS', hash, player) == 1
  end

  -- A hidden reader: `show(z, m)` adds their entry of set z (from its shadow; m: the set's
  -- member map on boards whose members carry a prefix, else nil) to z for this script only,
  -- `shown[z]` is what it added, `unshow()` takes it all away again.
  function L.reader(player)
    local reader = {player = player, shown = {}}
    function reader.show(z, m)
      if reader.shown[z] then return end
      local member = player
      if m then member = redis.call('HGET', m, player) end
      if not member then return end
      local score = redis.call('ZSCORE', L.shadow_of(z), member)
      if not score then return end
      redis.call('ZADD', z, score, member)
      reader.shown[z] = member
    end
    function reader.unshow()
      for z, member in pairs(reader.shown) do redis.call('ZREM', z, member) end
      reader.shown = {}
    end
    return reader
  end

  -- The reader, if the board hides them (hash: its hidden players); else nil.
  function L.hidden_reader(hash, player)
    if not L.is_hidden(hash, player) then return nil end
    return L.reader(player)
  end

  return L
end
