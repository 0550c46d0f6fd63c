"""Redis/Valkey: the serving index (index/ and the two layouts a board's reads take, one_node/
and sharded/), the live publisher's reads (live/), and what they share (keys, scripts, rules,
records, errors)."""
