"""Score keys: the 16 hex digits a tie-breaker board's member leads with, and that its submit
script's record carries instead of a formatted number. Their text order must be the numbers'
order, and decoding must give the very double back (ranks and records are exact)."""

from __future__ import annotations

import math
import struct

from hypothesis import given
from hypothesis import strategies as st

from leaderboard.domain.tiebreakers import score_key, score_of_key

finite = st.floats(allow_nan=False, allow_infinity=False)


@given(finite)
def test_a_score_key_decodes_to_the_same_double(score: float) -> None:
    decoded = score_of_key(score_key(score))
    assert decoded == score
    # -0 is stored as 0 (one key for one value): the sign is the only thing not kept
    assert struct.pack(">d", decoded) == struct.pack(">d", score if score != 0 else 0.0)


@given(finite, finite)
def test_score_keys_sort_as_their_scores(a: float, b: float) -> None:
    assert (score_key(a) < score_key(b)) == (a < b)
    assert (score_key(a) == score_key(b)) == (a == b)


def test_the_extremes_keep_their_place() -> None:
    extremes = [-math.inf, -1.7976931348623157e308, -1.0, -5e-324, 0.0, 5e-324, 1.0, math.inf]
    keys = [score_key(x) for x in extremes]
    assert keys == sorted(keys)
    assert [score_of_key(k) for k in keys] == extremes
