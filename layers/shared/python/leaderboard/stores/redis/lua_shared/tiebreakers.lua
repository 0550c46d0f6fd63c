-- Shared by the scripts that store or read tie-breaker boards (prepended when loaded).
-- A tie-breaker board's member is: the score's key (16 hex digits whose order is the numbers'
-- order), the tie key (16 digits a column, complemented when the column sorts against the
-- board), [the arrival, on ties=first boards], '|', the player. Member order is then the
-- board's order and, the score leading, agrees with the set's own order, so ZLEXCOUNT counts
-- the strictly better tuples. leaderboard/domain/tiebreakers.py computes the same keys.
local TB_W = 16

-- a < b in byte order (Lua's own string comparison follows the server's locale)
local function bytes_lt(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- After a read's rows: each entry's tie key, then the board's columns (`spec`), which the caller
-- decodes them with (stores/redis/records.py: read_tiebreakers); nothing when spec is nil.
local function tb_append(out, tbs, spec)
  if not spec then return end
  for i = 1, #tbs do out[#out + 1] = tbs[i] end
  out[#out + 1] = spec
end

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

-- The score a member's score key encodes (skey's inverse): exact, as the key is the bits.
local function unskey(member)
  local hi = tonumber(string.sub(member, 1, 8), 16)
  local lo = tonumber(string.sub(member, 9, 16), 16)
  if hi >= 2147483648 then hi = hi - 2147483648
  else hi, lo = 4294967295 - hi, 4294967295 - lo end
  return (struct.unpack('>d', struct.pack('>I4I4', hi, lo)))
end

-- 1 + the entries strictly better than a (score key .. tie key) group on a set of a
-- tie-breaker board: a shared rank, one ZLEXCOUNT
local function tb_rank(z, desc, group)
  if desc then return redis.call('ZLEXCOUNT', z, '(' .. group .. '}', '+') + 1 end
  return redis.call('ZLEXCOUNT', z, '-', '(' .. group) + 1
end

-- The player of a member that carries a prefix (everything after the first '|').
local function member_player(member)
  return string.sub(member, string.find(member, '|', 1, true) + 1)
end

-- How many columns a board's spec names ("name:flipped,..." : the board's cfg `tb`).
local function tb_cols(spec)
  local _, commas = string.gsub(spec, ',', ',')
  return commas + 1
end

-- (score key .. tie key) of a member: what equal ranks share on a shared-ties board.
local function tb_group(member, ncols)
  return string.sub(member, 1, TB_W * (1 + ncols))
end

-- The tie key of a member (its columns' digits): the caller decodes it with the board's
-- columns (leaderboard/domain/tiebreakers.py), so a read pays one string.sub an entry.
local function tb_key(member, ncols)
  return string.sub(member, TB_W + 1, TB_W * (1 + ncols))
end
