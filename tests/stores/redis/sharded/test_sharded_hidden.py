"""Issue 23: hidden players on sharded boards, on one node. A hidden player's entries live in
the shadow sets of their own shard; every other shard counts where they would stand, and the
reads put their entry back into their own view. Every read route, as nobody in particular, as
each hidden player and as a visible one, equal to the reference model, with and without
tie-breakers. (Its own file: the suite runs files in parallel.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.model_check import HIDDEN_OPS, check_against_model, rules, tiebreaker_rules

# max_entries is refused on sharded boards (docs/API.md, "Sharded boards")
RULES = st.one_of(rules, tiebreaker_rules).map(lambda r: {**r, "max_entries": None})

# A share of the profile's examples: a few in `make test`, hundreds under `make fuzz`.
EXAMPLES = max(1, settings().max_examples // 8)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@settings(max_examples=EXAMPLES)
@given(ops=HIDDEN_OPS, board_rules=RULES)
def test_hidden_players_on_sharded_boards_match_the_reference_model(
    session_index, mode, sort, ties, ops, board_rules
):
    check_against_model(session_index, mode, sort, ties, ops, board_rules, shards=3)
