"""Score tiers (docs/API.md, "Score tiers"): the board field's checks, 400 for its shape and 422
for the rules the schema cannot state, each naming the field by its path; and the tier rule at
its boundaries: the exact cut-off score on desc and asc boards, percentiles of boards of 1, 7
and 100 entries, shared ranks sharing a tier."""

from __future__ import annotations

from dataclasses import replace

import pytest

from leaderboard.domain.boards import BoardConfig, parse_board_request
from leaderboard.domain.errors import BadRequest, Conflict, Unprocessable
from leaderboard.domain.score_tiers import ScoreTiers, Tiering, cutoff, tier_field

NOW = "2026-11-22T00:00:00Z"
MEDALS = {
    "by": "score",
    "tiers": [
        {"name": "gold", "score": 5000},
        {"name": "silver", "score": 1000},
        {"name": "bronze"},
    ],
}
PERCENT = {
    "by": "percentile",
    "tiers": [
        {"name": "top1", "top_percent": 1},
        {"name": "top10", "top_percent": 10},
        {"name": "rest"},
    ],
}


def board(body: dict, existing: BoardConfig | None = None, has_entries: bool = False):
    return parse_board_request("b", body, existing, has_entries=has_entries, now_iso=NOW)


def tiers(*items: dict, by: str = "score") -> dict:
    return {"score_tiers": {"by": by, "tiers": list(items)}}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"score_tiers": []}, "score_tiers"),
        ({"score_tiers": "gold"}, "score_tiers"),
        ({"score_tiers": {"tiers": MEDALS["tiers"]}}, "score_tiers.by"),
        ({"score_tiers": {"by": "rank", "tiers": MEDALS["tiers"]}}, "score_tiers.by"),
        ({"score_tiers": {"by": "score"}}, "score_tiers.tiers"),
        ({"score_tiers": {"by": "score", "tiers": []}}, "score_tiers.tiers"),
        ({"score_tiers": {"by": "score", "tiers": {"name": "a"}}}, "score_tiers.tiers"),
        (tiers(*({"name": f"t{i}", "score": 100 - i} for i in range(17))), "score_tiers.tiers"),
        (tiers({"name": "a", "score": 1}, "b"), "score_tiers.tiers[1]"),
        (tiers({"score": 1}), "score_tiers.tiers[0].name"),
        (tiers({"name": "Gold", "score": 1}), "score_tiers.tiers[0].name"),
        (tiers({"name": "", "score": 1}), "score_tiers.tiers[0].name"),
        (tiers({"name": "a" * 33, "score": 1}), "score_tiers.tiers[0].name"),
        (tiers({"name": "a", "score": 2}, {"name": "b b"}), "score_tiers.tiers[1].name"),
        (tiers({"name": "a", "score": "5"}), "score_tiers.tiers[0].score"),
        (tiers({"name": "a", "score": True}), "score_tiers.tiers[0].score"),
        (tiers({"name": "a", "score": 2**53}), "score_tiers.tiers[0].score"),
        (tiers({"name": "a", "score": None}), "score_tiers.tiers[0].score"),
        # a bound of the other kind: an unknown key of the tier's shape
        (tiers({"name": "a", "top_percent": 5}), "score_tiers.tiers[0].top_percent"),
        (tiers({"name": "a", "score": 5}, by="percentile"), "score_tiers.tiers[0].score"),
        (
            tiers({"name": "a", "top_percent": 0}, by="percentile"),
            "score_tiers.tiers[0].top_percent",
        ),
        (
            tiers({"name": "a", "top_percent": -1}, by="percentile"),
            "score_tiers.tiers[0].top_percent",
        ),
        (
            tiers({"name": "a", "top_percent": 100.5}, by="percentile"),
            "score_tiers.tiers[0].top_percent",
        ),
        (
            tiers({"name": "a", "top_percent": "10"}, by="percentile"),
            "score_tiers.tiers[0].top_percent",
        ),
        ({"score_tiers": {**MEDALS, "colour": 1}}, "score_tiers.colour"),
        (tiers({"name": "a", "score": 1, "colour": 1}), "score_tiers.tiers[0].colour"),
    ],
)
def test_a_malformed_score_tiers_is_400_naming_the_field(body, field) -> None:
    with pytest.raises(BadRequest) as caught:
        board(body)
    assert not isinstance(caught.value, Unprocessable)
    assert caught.value.details["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        # a name twice
        (tiers({"name": "a", "score": 5}, {"name": "a"}), "score_tiers.tiers[1].name"),
        # a bound left out before the last tier
        (tiers({"name": "a"}, {"name": "b", "score": 1}), "score_tiers.tiers[0].score"),
        (
            tiers({"name": "a", "top_percent": 5}, {"name": "b"}, {"name": "c"}, by="percentile"),
            "score_tiers.tiers[1].top_percent",
        ),
        # percentages must grow down the list, strictly
        (
            tiers(
                {"name": "a", "top_percent": 10}, {"name": "b", "top_percent": 5}, by="percentile"
            ),
            "score_tiers.tiers[1].top_percent",
        ),
        (
            tiers(
                {"name": "a", "top_percent": 10}, {"name": "b", "top_percent": 10}, by="percentile"
            ),
            "score_tiers.tiers[1].top_percent",
        ),
        # scores strictly better first by the board's sort (a rule between two fields)
        (tiers({"name": "a", "score": 5}, {"name": "b", "score": 5}), "score_tiers.tiers[1].score"),
        (tiers({"name": "a", "score": 5}, {"name": "b", "score": 9}), "score_tiers.tiers[1].score"),
        (
            {"sort": "asc", **tiers({"name": "a", "score": 9}, {"name": "b", "score": 5})},
            "score_tiers.tiers[1].score",
        ),
        ({"sort": "asc", **tiers(*MEDALS["tiers"])}, "score_tiers.tiers[1].score"),
    ],
)
def test_a_well_formed_score_tiers_that_breaks_a_rule_is_422_naming_the_field(body, field) -> None:
    with pytest.raises(Unprocessable) as caught:
        board(body)
    assert caught.value.details["field"] == field


def test_the_shape_of_every_field_is_checked_before_any_rule() -> None:
    """A broken tier rule beside a malformed field is 400, as on every route."""
    body = tiers({"name": "a"}, {"name": "a"}) | {"live_top": 0}
    with pytest.raises(BadRequest) as caught:
        board(body)
    assert caught.value.status == 400 and caught.value.details["field"] == "live_top"


def test_a_sort_changed_under_score_tiers_is_422_and_percentiles_follow_any_sort() -> None:
    medals = board({"score_tiers": MEDALS})
    with pytest.raises(Unprocessable) as caught:
        board({"sort": "asc"}, medals)
    assert caught.value.details["field"] == "score_tiers.tiers[1].score"
    assert board({"sort": "asc", "score_tiers": PERCENT}, board({"score_tiers": PERCENT})).sort == (
        "asc"
    )


def test_score_tiers_round_trip_and_may_change_with_entries() -> None:
    medals = board({"score_tiers": MEDALS, "mode": "best"})
    assert medals.to_public()["score_tiers"] == MEDALS
    assert BoardConfig.from_public(medals.to_public()) == medals
    # a view of the ranks: changed, replaced or cleared on a board with entries
    changed = board({"score_tiers": PERCENT}, medals, has_entries=True)
    assert changed.to_public()["score_tiers"] == PERCENT
    assert board({"score_tiers": None}, changed, has_entries=True).score_tiers is None
    with pytest.raises(Conflict):  # while an immutable rule still is one
        board({"mode": "set", "score_tiers": None}, changed, has_entries=True)
    # left out: kept
    assert board({"title": "t"}, changed).score_tiers == changed.score_tiers
    assert board({}).to_public()["score_tiers"] is None
    # 10.0 is the integer 10, as JSON Schema counts integers; floats keep every digit
    exact = tiers({"name": "a", "score": 0.1 + 0.2}, {"name": "b", "score": 10.0})
    assert board({"sort": "asc"} | exact).to_public()["score_tiers"]["tiers"] == [
        {"name": "a", "score": 0.30000000000000004},
        {"name": "b", "score": 10},
    ]


def test_the_scripts_keep_the_tiers_as_text_with_every_digit_and_the_sort() -> None:
    exact = board(
        {"sort": "asc", "score_tiers": tiers({"name": "a", "score": 0.1 + 0.2})["score_tiers"]}
    )
    text = exact.to_script_config()["tiers"]
    assert isinstance(text, str)
    assert Tiering.from_script(text) == exact.tiering() == Tiering(exact.score_tiers, desc=False)
    assert "tiers" not in board({}).to_script_config()
    assert Tiering.from_script("") is None


def _medals(desc: bool) -> Tiering:
    raw = (
        MEDALS
        if desc
        else {
            "by": "score",
            "tiers": [
                {"name": "gold", "score": 10},
                {"name": "silver", "score": 60.5},
                {"name": "bronze"},
            ],
        }
    )
    return Tiering(ScoreTiers.parse(raw), desc)


def test_a_score_bound_is_this_score_or_better_by_the_boards_sort() -> None:
    desc = _medals(desc=True)
    assert [desc.tier(1, s, 3) for s in (9999, 5000, 4999.999, 1000, 999, -5)] == [
        "gold",
        "gold",
        "silver",
        "silver",
        "bronze",
        "bronze",
    ]
    asc = _medals(desc=False)  # lower is better: a bound is "this score or lower"
    assert [asc.tier(1, s, 3) for s in (-1, 10, 10.5, 60.5, 61, 1e9)] == [
        "gold",
        "gold",
        "silver",
        "silver",
        "bronze",
        "bronze",
    ]
    # ranks and totals play no part in score tiers
    assert desc.tier(1000, 5000, 1000) == desc.tier(1, 5000, 1) == "gold"


def test_a_standing_no_tier_takes_has_none() -> None:
    capped = Tiering(ScoreTiers.parse(tiers({"name": "gold", "score": 100})["score_tiers"]), True)
    assert (capped.tier(1, 100, 5), capped.tier(1, 99.5, 5)) == ("gold", None)
    top = {"by": "percentile", "tiers": [{"name": "top", "top_percent": 10}]}
    only_top = Tiering(ScoreTiers.parse(top), True)
    assert [only_top.tier(r, 0, 20) for r in (1, 2, 3)] == ["top", "top", None]
    # a live entry that left the board has no standing, so no tier
    assert capped.tier(None, None, 5) is None
    assert tier_field(None, 1, 100, 5) == {}
    assert tier_field(capped, 1, 100, 5) == {"tier": "gold"}


@pytest.mark.parametrize(
    ("total", "expected"),
    [
        # N = 1: max(1, ceil(0.01)) = 1 for top1 and top10: the one entry is top1
        (1, {1: "top1"}),
        # N = 7: top1 ends at ceil(0.07) -> 1, top10 at ceil(0.7) -> 1: the rest from rank 2
        (7, {1: "top1", 2: "rest", 7: "rest"}),
        # N = 100: top1 is rank 1, top10 ranks 2-10, rank 11 on is the rest
        (100, {1: "top1", 2: "top10", 10: "top10", 11: "rest", 100: "rest"}),
        # N = 101: ceil(1.01) = 2, ceil(10.1) = 11
        (101, {2: "top1", 3: "top10", 11: "top10", 12: "rest"}),
    ],
)
def test_percentile_tiers_at_their_boundaries(total, expected) -> None:
    tiering = Tiering(ScoreTiers.parse(PERCENT), desc=True)
    assert {rank: tiering.tier(rank, 0, total) for rank in expected} == expected


def test_shared_ranks_share_a_tier() -> None:
    """On a ties=shared board of 20 entries top10 ends at rank 2; three entries sharing rank 2
    are all in it, and the next one (rank 5) is not."""
    tiering = Tiering(ScoreTiers.parse(PERCENT), desc=False)  # the sort plays no part here
    assert [tiering.tier(rank, 7, 20) for rank in (1, 2, 2, 2, 5)] == [
        "top1",
        "top10",
        "top10",
        "top10",
        "rest",
    ]


def test_percent_cut_offs_are_exact_decimals() -> None:
    """N x p / 100 in floating point can land a hair above a whole number (750 x 4.4 / 100 is
    33.00000000000001, whose ceiling is 34): the cut-off is computed on the decimal the board
    gives, 4.4 % of 750 being exactly 33."""
    assert 750 * 4.4 / 100 > 33
    assert cutoff(750, 4.4) == 33
    assert cutoff(300, 7) == 21
    assert cutoff(1000, 0.7) == 7
    assert cutoff(3, 0.1 + 0.2) == 1  # 0.30000000000000004 % of 3: ceil of a hair above 0
    assert cutoff(100_000, 0.3) == 300
    assert cutoff(5, 100) == 5 and cutoff(0, 50) == 1


def test_a_board_without_tiers_carries_none() -> None:
    plain = board({})
    assert plain.tiering() is None and plain.score_tiers is None
    assert replace(plain, score_tiers=ScoreTiers.parse(PERCENT)).tiering() is not None
