"""Issue 23, acceptance 1: team boards against real Valkey and the reference model. Submissions
name teams (or none, or one on a board without teams: 422); teams add their members'
contributions up (`sum`) or keep the best (`best`); players are hidden and shown again between
writes. The team rankings (`by=team`) and each team's members (`team=<id>`) are compared on
every read route, period and region, as nobody in particular and as each hidden player, beside
every player read; for every mode x sort x ties, single submissions and batches. (Its own
file: the suite runs files in parallel.) `make fuzz` runs them longer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from tests.support.model_check import (
    TEAM_OPS,
    check_against_model,
    check_batches_against_model,
    team_rules,
)

# A share of the profile's examples: a few in `make test`, hundreds under `make fuzz`.
EXAMPLES = max(1, settings().max_examples // 4)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@settings(max_examples=EXAMPLES)
@given(ops=TEAM_OPS, board_rules=team_rules)
def test_team_boards_match_reference_model(session_index, mode, sort, ties, ops, board_rules):
    check_against_model(session_index, mode, sort, ties, ops, board_rules)


@pytest.mark.parametrize(
    ("mode", "sort", "ties"),
    [("increment", "desc", "shared"), ("best", "asc", "first"), ("set", "desc", "first")],
)
@settings(max_examples=EXAMPLES)
@given(ops=TEAM_OPS, board_rules=team_rules)
def test_team_boards_in_batches_match_reference_model(
    session_index, mode, sort, ties, ops, board_rules
):
    check_batches_against_model(session_index, mode, sort, ties, ops, board_rules)
