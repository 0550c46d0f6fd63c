-- Shared by the scripts that store or read tie-breaker boards (prepended when loaded).
-- A tie-breaker board's member is: the score's key (16 hex digits whose order is the numbers'
-- order), the tie key (16 digits a column, complemented when the column sorts against the
-- board), [the arrival, on ties=first boards], '|', the player. Member order is then the
-- board's order and, the score leading, agrees with the set's own order, so ZLEXCOUNT counts
-- the strictly better tuples. leaderboard/domain/tiebreakers.py computes the same keys.
local TB_OFF, TB_SPAN, TB_W = 999999999999999, 1999999999999998, 16

local function skey(x)
  if x == 0 then x = 0 end -- -0 is 0
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(struct.pack('>d', x), 1, 8)
  if b1 >= 128 then
    b1, b2, b3, b4 = 255 - b1, 255 - b2, 255 - b3, 255 - b4
    b5, b6, b7, b8 = 255 - b5, 255 - b6, 255 - b7, 255 - b8
  else
    b1 = b1 + 128
  end
  return string.format('%02x%02x%02x%02x%02x%02x%02x%02x', b1, b2, b3, b4, b5, b6, b7, b8)
end

-- 1 + the entries strictly better than (score x, tie key) on a set of a tie-breaker board
local function tb_rank(z, desc, x, key)
  if desc then return redis.call('ZLEXCOUNT', z, '(' .. skey(x) .. key .. '}', '+') + 1 end
  return redis.call('ZLEXCOUNT', z, '-', '(' .. skey(x) .. key) + 1
end

-- The player of a member that carries a prefix (everything after the first '|').
local function member_player(member)
  return string.sub(member, string.find(member, '|', 1, true) + 1)
end

-- (score key .. tie key) of a member: what equal ranks share on a shared-ties board.
local function tb_group(member, spec)
  return string.sub(member, 1, TB_W * (1 + #spec))
end

-- The tie-breakers of a member as a JSON object, decoded with the board's spec
-- ({{name, 1 if complemented}, ...}); names are [a-z0-9_], so they need no escaping.
local function tb_json(member, spec)
  local parts = {}
  for i, column in ipairs(spec) do
    local v = tonumber(string.sub(member, 1 + TB_W * i, TB_W * (i + 1)))
    if column[2] == 1 then v = TB_SPAN - v end
    parts[i] = '"' .. column[1] .. '":' .. string.format('%d', v - TB_OFF)
  end
  return '{' .. table.concat(parts, ',') .. '}'
end
