"""Live channel names: the documented form, valid segments, one channel per board."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from leaderboard.domain.live import board_channel, board_segment, channel_name
from leaderboard.domain.validation import BOARD_ID_RE

SEGMENT = re.compile(r"[A-Za-z0-9-]{1,50}")


@given(st.lists(st.from_regex(BOARD_ID_RE, fullmatch=True), min_size=2, max_size=30, unique=True))
def test_board_segments_are_valid_channel_segments_and_one_to_one(ids: list[str]) -> None:
    segments = [board_segment(b) for b in ids]
    for segment in segments:
        assert SEGMENT.fullmatch(segment), segment
    assert len(set(segments)) == len(ids)


def test_channel_names_follow_the_documented_form() -> None:
    assert board_channel("arena_2") == "/leaderboards/arenaU2"
    assert channel_name("arena", "weekly", None) == "/leaderboards/arena/weekly"
    assert channel_name("arena", "all-time", "EU") == "/leaderboards/arena/all-time/EU"
    long_id = "a" * 64
    segment = board_segment(long_id)
    assert len(segment) == 50 and segment.startswith("a" * 36 + "-H")
    assert board_segment("a" * 50) == "a" * 50
