"""Acceptance 1: random submission sequences against real Redis/Valkey and the reference
model, for every mode x sort x ties, over every period kind and region, clock moving across
day, week and month boundaries. Pages, around_rank, players and around are compared, ranks
included, and so is every submission's response; so are the player-centred reads (issue 13):
many players at once (with duplicate, unknown and absent ids) and one player on every period."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.support.model_check import OPS, check_against_model, rules


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@given(ops=OPS, board_rules=rules)
def test_redis_matches_reference_model(session_index, mode, sort, ties, ops, board_rules):
    check_against_model(session_index, mode, sort, ties, ops, board_rules)
