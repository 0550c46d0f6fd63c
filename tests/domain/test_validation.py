"""One rule for unknown body fields on every route (docs/API.md, "Conventions"): 400, each
offending name in `fields` (nested ones by their path), the first in `field`."""

from __future__ import annotations

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.boards import parse_board_request
from leaderboard.domain.errors import BadRequest
from leaderboard.domain.submissions import parse_submission
from leaderboard.domain.watches import parse_watch

PLAYER = Caller("ada", frozenset())


def publish_request(body):
    return parse_board_request(
        "b", body, None, has_entries=False, now_iso="2026-11-22T00:00:00Z", hook_targets={"t"}
    )


@pytest.mark.parametrize(
    ("parse", "fields"),
    [
        (
            lambda: parse_submission({"score": 1, "colour": "red", "zz": 1}, PLAYER),
            ["colour", "zz"],
        ),
        (lambda: parse_watch({"top_n": 3, "team": "x"}, "ada"), ["team"]),
        (lambda: publish_request({"colour": "red"}), ["colour"]),
        (
            lambda: publish_request({"schedule": {"cron": "0 0 * * *", "tz": "UTC"}}),
            ["schedule.tz"],
        ),
        (
            lambda: publish_request(
                {
                    "tournament": {
                        "starts_at": "2026-12-01T00:00:00Z",
                        "ends_at": "2026-12-02T00:00:00Z",
                        "cap": 3,
                    }
                }
            ),
            ["tournament.cap"],
        ),
        (lambda: publish_request({"rewards": {"top": 3, "bonus": 1}}), ["rewards.bonus"]),
        (
            lambda: publish_request(
                {"rewards": {"tiers": [{"name": "a", "ranks": [1, 1], "x": 1}]}}
            ),
            ["rewards.tiers[0].x"],
        ),
        (
            lambda: publish_request({"validation_hook": {"target": "t", "colour": 1}}),
            ["validation_hook.colour"],
        ),
    ],
)
def test_unknown_fields_are_named_by_their_path(parse, fields) -> None:
    with pytest.raises(BadRequest) as caught:
        parse()
    assert caught.value.details["fields"] == fields
    assert caught.value.details["field"] == fields[0]
