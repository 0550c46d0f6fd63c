"""Issue 23, acceptance 1: hidden players against real Valkey and the reference model. Players
are hidden and shown again between writes; every read route, period and region is compared as
nobody in particular, as each hidden player (their own view: their entry where it would stand)
and as a visible player, for every mode x sort x ties, with and without tie-breakers, single
submissions and batches. (Its own file: the suite runs files in parallel.) `make fuzz` runs
them longer (HYPOTHESIS_PROFILE=long)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.model_check import (
    HIDDEN_BATCH_OPS,
    HIDDEN_OPS,
    check_against_model,
    check_batches_against_model,
    rules,
    tiebreaker_rules,
)

# A share of the profile's examples: a few in `make test`, hundreds under `make fuzz`.
EXAMPLES = max(1, settings().max_examples // 4)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@settings(max_examples=EXAMPLES)
@given(ops=HIDDEN_OPS, board_rules=st.one_of(rules, tiebreaker_rules))
def test_hidden_players_match_reference_model(session_index, mode, sort, ties, ops, board_rules):
    """Hide and show players between writes: nobody else sees a hidden player, the hidden
    player sees their own entry (and submits as usual), max_entries keeps the best entries of
    the whole board."""
    check_against_model(session_index, mode, sort, ties, ops, board_rules)


@pytest.mark.parametrize(
    ("mode", "sort", "ties"),
    [("increment", "desc", "shared"), ("best", "asc", "first"), ("set", "desc", "first")],
)
@settings(max_examples=EXAMPLES)
@given(ops=HIDDEN_BATCH_OPS, board_rules=st.one_of(rules, tiebreaker_rules))
def test_hidden_players_in_batches_match_reference_model(
    session_index, mode, sort, ties, ops, board_rules
):
    check_batches_against_model(session_index, mode, sort, ties, ops, board_rules)
