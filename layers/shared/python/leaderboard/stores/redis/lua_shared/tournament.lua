-- Shared by the scripts that check a tournament's rules (submit, join; prepended when loaded).
-- The rules of one window (domain/tournaments.py: script_rules, window_rules): "start_ms end_ms
-- join max_participants max_attempts[ window_id]", a cap '' for none. Returns the bounds, the
-- sign-up flag, the caps (nil: none) and the suffix of the window's keys under the board's
-- prefix: '' for a one-shot tournament (`joined`, `attempts`), ':<window id>' for a window of a
-- recurring tournament (`joined:<id>`, `attempts:<id>`, each counted per window), then the id.
local function tournament_window(rules)
  local ts, te, join, maxp, maxa, id =
    string.match(rules, '^(%d+) (%d+) ([01]) (%d*) (%d*) ?(%S*)$')
  return tonumber(ts), tonumber(te), join == '1', tonumber(maxp), tonumber(maxa),
    id ~= '' and (':' .. id) or '', id
end
