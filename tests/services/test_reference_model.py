"""Acceptance 1: random submission sequences against real Redis/Valkey and the reference
model, for every mode x sort x ties, over every period kind and region, clock moving across
day, week and month boundaries. Pages, around_rank, players and around are compared, ranks
included, and so is every submission's response; so are the player-centred reads (issue 13):
many players at once (with duplicate, unknown and absent ids) and one player on every period."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.support.model_check import (
    BATCH_OPS,
    OPS,
    check_against_model,
    check_batches_against_model,
    rules,
)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@given(ops=OPS, board_rules=rules)
def test_redis_matches_reference_model(session_index, mode, sort, ties, ops, board_rules):
    check_against_model(session_index, mode, sort, ties, ops, board_rules)


@pytest.mark.parametrize("ties", ["shared", "first"])
@pytest.mark.parametrize("sort", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "set"])
@given(ops=BATCH_OPS, board_rules=rules)
def test_batches_match_reference_model(session_index, mode, sort, ties, ops, board_rules):
    """Issue 22: the same through the batch route, bad items, replays and conflicts inside a
    batch included; every item's result is the single route's."""
    check_batches_against_model(session_index, mode, sort, ties, ops, board_rules)
