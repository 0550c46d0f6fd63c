"""Issue 23: tie-breakers on sharded boards, on one node: ranks merged over the shards by the
whole tuple (shared ties: each shard's ZLEXCOUNT), every read route equal to the reference
model. The cluster's run is in test_sharded_index.py, beside its cluster. (Its own file: the
suite runs files in parallel.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.support.model_check import OPS, check_against_model, tiebreaker_rules

TIEBREAKERS = tiebreaker_rules.map(lambda r: {**r, "max_entries": None})

# A share of the profile's examples: a few in `make test`, hundreds under `make fuzz`.
EXAMPLES = max(1, settings().max_examples // 8)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@pytest.mark.parametrize("shards", [3])
@settings(max_examples=EXAMPLES)
@given(ops=OPS, board_rules=TIEBREAKERS)
def test_sharded_tiebreaker_boards_match_the_reference_model_on_one_node(
    session_index, mode, sort, ties, shards, ops, board_rules
):
    """Issue 23: tie-breakers on sharded boards: ranks merged over the shards by the whole
    tuple (shared: counted with ZLEXCOUNT on each shard), every read route."""
    check_against_model(session_index, mode, sort, ties, ops, board_rules, shards)
