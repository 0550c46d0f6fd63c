"""The period.ended event (issue 24): reward tiers over shared ranks and top percents, the cap on
a tier's players, a stable id and byte-identical JSON on a re-run, and the webhook signature."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.period_events import (
    MAX_TIER_PLAYERS,
    PeriodEnded,
    Rewards,
    parse_rewards,
    sign,
    verify,
)
from leaderboard.domain.periods import ALL_TIME_PERIOD, parse_period_id

WEEK = parse_period_id("2026-W47")
SECRET = b"whsec-test"


@dataclass(frozen=True)
class Row:
    rank: int
    player_id: str
    score: int | float
    tiebreakers: dict[str, int] | None = None


def ranked(scores: list[int]) -> list[Row]:
    """Rows in rank order, equal scores sharing a rank (standard competition ranking)."""
    rows, rank = [], 0
    for position, score in enumerate(scores, start=1):
        if position == 1 or score != scores[position - 2]:
            rank = position
        rows.append(Row(rank, f"p{position}", score))
    return rows


REWARDS = {
    "top": 3,
    "tiers": [
        {"name": "winner", "ranks": [1, 1]},
        {"name": "podium", "ranks": [2, 10]},
        {"name": "top10pct", "top_percent": 10},
    ],
}


def build(rows, rewards=REWARDS, total=None, **kwargs):
    return PeriodEnded.build(
        "arena",
        WEEK,
        reason=kwargs.pop("reason", "schedule"),
        total=len(rows) if total is None else total,
        entries=iter(rows),
        rewards=parse_rewards(rewards),
        **kwargs,
    )


def test_tiers_take_every_entry_whose_rank_falls_in_their_range_shared_ranks_included():
    rows = ranked([100, 100, 90, 80, 80, 80, 70, 60, 50, 40, 30, 20] + [10] * 8)  # 20 entries
    event = build(rows)
    tiers = {t.name: t for t in event.tiers}
    assert [p["player_id"] for p in tiers["winner"].players] == ["p1", "p2"]  # both rank 1
    assert (tiers["podium"].from_rank, tiers["podium"].to_rank) == (2, 10)
    assert [p["rank"] for p in tiers["podium"].players] == [3, 4, 4, 4, 7, 8, 9, 10]
    # top 10 % of 20 entries: ranks <= 2, so the two players sharing rank 1
    assert (tiers["top10pct"].from_rank, tiers["top10pct"].to_rank) == (1, 2)
    assert [p["player_id"] for p in tiers["top10pct"].players] == ["p1", "p2"]
    assert [p["rank"] for p in event.top] == [1, 1, 3]
    assert not any(t.truncated for t in event.tiers)
    assert event.total_entries == 20


def test_top_percent_rounds_up_and_an_empty_period_has_empty_tiers():
    event = build(ranked(list(range(95, 0, -1))), {"tiers": [{"name": "t", "top_percent": 10}]})
    assert event.tiers[0].to_rank == 10  # ceil(95 * 0.1)
    assert len(event.tiers[0].players) == 10
    empty = build([], {"tiers": [{"name": "t", "top_percent": 10}]})
    assert empty.tiers[0].players == () and empty.top == () and empty.total_entries == 0


def test_a_tier_lists_at_most_1000_players_and_says_it_was_cut():
    rows = ranked(list(range(5000, 0, -1)))
    event = build(rows, {"top": 0, "tiers": [{"name": "all", "ranks": [1, 1500]}]})
    assert len(event.tiers[0].players) == MAX_TIER_PLAYERS
    assert event.tiers[0].truncated is True
    assert event.to_json().count('"truncated":true') == 1


def test_entries_are_read_only_as_deep_as_the_event_needs():
    read = []

    def rows():
        for row in ranked(list(range(1000, 0, -1))):
            read.append(row.rank)
            yield row

    PeriodEnded.build(
        "arena", WEEK, reason="schedule", total=1000, entries=rows(), rewards=Rewards(top=5)
    )
    assert max(read) == 6  # the first rank past the top 5 stops the reading


def test_the_same_period_gives_the_same_id_and_byte_identical_json():
    rows = ranked([30, 20, 20, 10])
    first, again = build(rows), build(list(rows))
    assert first.event_id == again.event_id
    assert first.to_json() == again.to_json()
    envelope = json.loads(first.to_json())
    assert envelope["id"] == first.event_id and envelope["type"] == "period.ended"
    assert envelope["time"] == "2026-11-23T00:00:00Z"  # the week's end, not the clock
    assert envelope["data"]["period"] == {
        "id": "2026-W47",
        "kind": "weekly",
        "starts_at": "2026-11-16T00:00:00Z",
        "ends_at": "2026-11-23T00:00:00Z",
    }
    other_board = PeriodEnded.build("other", WEEK, reason="schedule", total=0, entries=[])
    other_week = PeriodEnded.build(
        "arena", parse_period_id("2026-W48"), reason="schedule", total=0, entries=[]
    )
    assert len({first.event_id, other_board.event_id, other_week.event_id}) == 3


def test_tiebreakers_are_listed_when_the_board_has_them():
    rows = [Row(1, "ada", 10, {"time_ms": -900}), Row(2, "bob", 10, {"time_ms": -950})]
    event = build(rows, {"top": 2})
    assert event.top[0] == {
        "rank": 1,
        "player_id": "ada",
        "score": 10,
        "tiebreakers": {"time_ms": -900},
    }
    assert "tiebreakers" not in build(ranked([5]), {"top": 1}).top[0]


def test_an_all_time_close_takes_its_time_from_closed_at():
    closed = datetime(2026, 12, 1, 18, 30, tzinfo=UTC)
    event = PeriodEnded.build(
        "cup", ALL_TIME_PERIOD, reason="tournament", total=0, entries=[], closed_at=closed
    )
    assert event.time == "2026-12-01T18:30:00Z" and event.ends_at is None
    with pytest.raises(ValueError, match="closed_at"):
        PeriodEnded.build("cup", ALL_TIME_PERIOD, reason="manual", total=0, entries=[])
    with pytest.raises(ValueError, match="reason"):
        build([], reason="whim")


def test_an_event_too_large_for_the_bus_cuts_its_longest_tiers_the_same_way_each_time():
    rows = [Row(r, f"player-with-a-long-identifier-{r:06d}", r) for r in range(1, 1001)]
    rewards = {"top": 0, "tiers": [{"name": f"t{i}", "ranks": [1, 1000]} for i in range(5)]}
    event = build(rows, rewards, total=1000)
    assert len(event.to_json().encode()) <= 240 * 1024
    assert any(t.truncated for t in event.tiers)
    assert build(rows, rewards, total=1000).to_json() == event.to_json()


@pytest.mark.parametrize(
    ("rewards", "error"),
    [
        ([], BadRequest),
        ({"top": "10"}, BadRequest),
        ({"top": True}, BadRequest),
        ({"top": 1001}, BadRequest),
        ({"top": -1}, BadRequest),
        ({"top": 10.5}, BadRequest),
        ({"extra": 1}, BadRequest),
        ({"tiers": {}}, BadRequest),
        ({"tiers": [{"name": f"t{i}", "ranks": [1, 1]} for i in range(11)]}, BadRequest),
        ({"tiers": [{"name": "a", "ranks": [3, 2]}]}, Unprocessable),
        ({"tiers": [{"name": "a", "ranks": [0, 2]}]}, BadRequest),
        ({"tiers": [{"name": "a", "ranks": [1, 1_000_001]}]}, BadRequest),
        ({"tiers": [{"name": "a", "ranks": [1]}]}, BadRequest),
        ({"tiers": [{"name": "a", "ranks": [1, 2.5]}]}, BadRequest),
        ({"tiers": [{"name": "a", "top_percent": 0}]}, BadRequest),
        ({"tiers": [{"name": "a", "top_percent": 100.5}]}, BadRequest),
        ({"tiers": [{"name": "a", "top_percent": "5"}]}, BadRequest),
        ({"tiers": [{"name": "a", "top_percent": 5, "ranks": [1, 2]}]}, BadRequest),
        ({"tiers": [{"name": "a"}]}, BadRequest),
        ({"tiers": [{"name": "Has Space", "ranks": [1, 1]}]}, BadRequest),
        (
            {"tiers": [{"name": "a", "ranks": [1, 1]}, {"name": "a", "ranks": [2, 2]}]},
            Unprocessable,
        ),
        # a malformed tier after one whose ranks are out of order: the shape comes first
        ({"tiers": [{"name": "a", "ranks": [3, 2]}, {"name": "B", "ranks": [1, 1]}]}, BadRequest),
    ],
)
def test_reward_declarations_are_checked_strictly(rewards, error):
    """What the API document's schema refuses (type, shape, range, count) is 400; what it cannot
    state (a tier's `from` above its `to`, a name used twice) 422 (docs/API.md, "Errors")."""
    with pytest.raises(error):
        parse_rewards(rewards)


def test_integral_numbers_are_integers_in_a_reward_declaration():
    """5.0 is the integer 5, as JSON Schema (and every other integer field) counts it."""
    parsed = parse_rewards({"top": 3.0, "tiers": [{"name": "a", "ranks": [1.0, 2.0]}]})
    assert parsed.to_json() == {"top": 3, "tiers": [{"name": "a", "ranks": [1, 2]}]}


def test_a_valid_declaration_and_the_defaults():
    parsed = parse_rewards(REWARDS)
    assert parsed.top == 3 and [t.name for t in parsed.tiers] == ["winner", "podium", "top10pct"]
    assert parsed.to_json() == REWARDS
    assert parse_rewards(None) == Rewards(top=10, tiers=())
    assert (
        parse_rewards({"tiers": [{"name": "all", "top_percent": 100}]}).tiers[0].top_percent == 100
    )


# --- signatures ------------------------------------------------------------------------------

BODY = b'{"id":"x","type":"period.ended"}'
NOW = 1_800_000_000


def test_sign_is_hmac_sha256_of_timestamp_dot_body():
    import hashlib
    import hmac

    expected = hmac.new(SECRET, b"1800000000." + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, NOW, BODY) == f"v1={expected}"


def test_verify_accepts_ours_and_refuses_wrong_secret_stale_time_and_tampered_body():
    signature = sign(SECRET, NOW, BODY)
    assert verify(SECRET, str(NOW), signature, BODY, now=NOW + 10)
    assert verify(SECRET, str(NOW), f"v1=00,{signature}", BODY, now=NOW)  # rotation: either one
    assert not verify(b"other-secret", str(NOW), signature, BODY, now=NOW)
    assert not verify(SECRET, str(NOW), signature, BODY, now=NOW + 301)  # stale
    assert not verify(SECRET, str(NOW), signature, BODY, now=NOW - 301)  # from the future
    assert not verify(SECRET, str(NOW), signature, BODY + b" ", now=NOW)  # tampered body
    assert not verify(SECRET, str(NOW + 1), signature, BODY, now=NOW)  # timestamp swapped
    assert not verify(SECRET, None, signature, BODY, now=NOW)
    assert not verify(SECRET, "soon", signature, BODY, now=NOW)
    assert not verify(SECRET, str(NOW), None, BODY, now=NOW)
    assert verify(SECRET, str(NOW), signature, BODY, now=NOW + 3600, tolerance_s=3600)
