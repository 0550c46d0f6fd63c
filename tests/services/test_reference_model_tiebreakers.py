"""Issue 23, acceptance 1: boards with 1-3 tie-breaker columns in mixed directions, values at
their bounds and wrong columns refused, against real Valkey and the reference model, for every
mode x sort x ties, over every period kind and region: every read route and every response
(rank movement included), single submissions and batches. (Its own file: the suite runs files
in parallel.) `make fuzz` runs them longer (HYPOTHESIS_PROFILE=long); batches take the
combinations that cover each mode, sort and tie rule once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.support.model_check import (
    BATCH_OPS,
    OPS,
    check_against_model,
    check_batches_against_model,
    tiebreaker_rules,
)

# A share of the profile's examples: a few in `make test`, hundreds under `make fuzz`.
EXAMPLES = max(1, settings().max_examples // 4)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@settings(max_examples=EXAMPLES)
@given(ops=OPS, board_rules=tiebreaker_rules)
def test_tiebreaker_boards_match_reference_model(session_index, mode, sort, ties, ops, board_rules):
    """Issue 23: 1-3 tie-breaker columns in mixed directions, values at their bounds, wrong
    columns refused; every read route and period, and every response, equal to the model."""
    check_against_model(session_index, mode, sort, ties, ops, board_rules)


@pytest.mark.parametrize(
    ("mode", "sort", "ties"),
    [("increment", "desc", "shared"), ("best", "asc", "first"), ("set", "desc", "first")],
)
@settings(max_examples=EXAMPLES)
@given(ops=BATCH_OPS, board_rules=tiebreaker_rules)
def test_tiebreaker_batches_match_reference_model(
    session_index, mode, sort, ties, ops, board_rules
):
    check_batches_against_model(session_index, mode, sort, ties, ops, board_rules)
