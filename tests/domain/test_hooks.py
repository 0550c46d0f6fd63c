"""Issue 23, validation hooks: the board field, the hook's answer read strictly, what each
verdict or failure becomes under the board's policy, and the deployment's list of hooks."""

from __future__ import annotations

import pytest

from leaderboard.domain.boards import BoardConfig, parse_board_request
from leaderboard.domain.errors import BadRequest, ConfigurationError, Unprocessable
from leaderboard.domain.hooks import (
    HookConfig,
    HookFailure,
    Screening,
    Verdict,
    hook_request,
    parse_hook_answer,
    parse_record_field,
    screenings,
)
from leaderboard.domain.submissions import Submission
from leaderboard.settings import HookSettings

ARN = "arn:aws:lambda:eu-west-1:123456789012:function:anti-cheat"
ALLOWED = {ARN, "no_negative"}


def _board(body: dict, existing: BoardConfig | None = None, **kw) -> BoardConfig:
    return parse_board_request(
        "arena",
        body,
        existing,
        has_entries=kw.pop("has_entries", False),
        now_iso="2026-11-22T00:00:00Z",
        hook_targets=kw.pop("targets", ALLOWED),
    )


def test_a_board_has_no_hook_by_default_and_its_script_config_says_nothing_of_one():
    board = _board({})
    assert board.validation_hook is None
    assert board.to_public()["validation_hook"] is None
    assert "hook" not in board.to_script_config()


def test_the_field_takes_defaults_and_goes_into_the_script_config():
    board = _board({"validation_hook": {"target": ARN}})
    assert board.validation_hook == HookConfig(ARN, 500, "closed")
    assert board.to_public()["validation_hook"] == {
        "target": ARN,
        "timeout_ms": 500,
        "on_failure": "closed",
    }
    assert board.to_script_config()["hook"] == board.to_public()["validation_hook"]
    again = BoardConfig.from_public(board.to_public())  # as PostgreSQL gives it back
    assert again.validation_hook == board.validation_hook


@pytest.mark.parametrize(
    "value",
    [
        "no_negative",  # not an object
        [],
        {"target": "no_negative", "colour": "red"},  # unknown field
        {"timeout_ms": 100},  # no target
        {"target": 5},
        {"target": "Not A Name"},
        {"target": "arn:aws:s3:::bucket"},  # not a Lambda function
        {"target": "no_negative", "timeout_ms": 9},
        {"target": "no_negative", "timeout_ms": 5001},
        {"target": "no_negative", "timeout_ms": 100.5},
        {"target": "no_negative", "timeout_ms": True},
        {"target": "no_negative", "timeout_ms": "100"},
        {"target": "no_negative", "on_failure": "maybe"},
        {"target": "no_negative", "on_failure": None},
        {"target": "arn:aws:lambda:eu-west-1:١٢٣٤٥٦٧٨٩٠١٢:function:f"},  # not ASCII digits
        {"target": "elsewhere", "timeout_ms": 9},  # malformed beside a target not listed
    ],
)
def test_a_bad_hook_is_400_naming_the_field(value):
    with pytest.raises(BadRequest) as caught:
        _board({"validation_hook": value})
    # the hook's own field, or a field inside it (an unknown one: "validation_hook.colour")
    assert caught.value.details["field"].split(".")[0] == "validation_hook"


@pytest.mark.parametrize(
    "target",
    [
        "arn:aws:lambda:eu-west-1:123456789012:function:other",  # a function not allowed
        "elsewhere",  # a well-formed name the configuration does not have
    ],
)
def test_a_well_formed_target_the_deployment_does_not_allow_is_422(target):
    with pytest.raises(Unprocessable) as caught:
        _board({"validation_hook": {"target": target}})
    assert caught.value.details["field"] == "validation_hook.target"


def test_an_integral_timeout_is_an_integer():
    board = _board({"validation_hook": {"target": "no_negative", "timeout_ms": 250.0}})
    assert board.validation_hook == HookConfig("no_negative", 250, "closed")


def test_no_hook_is_allowed_where_the_deployment_lists_none():
    with pytest.raises(Unprocessable):
        _board({"validation_hook": {"target": "no_negative"}}, targets=frozenset())


def test_the_hook_may_change_or_go_once_the_board_has_entries():
    board = _board({"validation_hook": {"target": "no_negative", "on_failure": "open"}})
    changed = _board(
        {"validation_hook": {"target": ARN, "timeout_ms": 10}}, board, has_entries=True
    )
    assert changed.validation_hook == HookConfig(ARN, 10, "closed")
    assert _board({"validation_hook": None}, changed, has_entries=True).validation_hook is None
    kept = _board({"title": "Renamed"}, changed, has_entries=True)
    assert kept.validation_hook == changed.validation_hook  # left out: kept


def test_the_request_lists_every_submission_in_order():
    subs = [
        (Submission("ada", 10, "EU", {"name": "Ada"}), "k-1"),
        (Submission("bob", -2.5, None, None), None),
    ]
    assert hook_request("arena", subs) == {
        "board_id": "arena",
        "submissions": [
            {
                "player_id": "ada",
                "score": 10,
                "region": "EU",
                "metadata": {"name": "Ada"},
                "idempotency_key": "k-1",
            },
            {
                "player_id": "bob",
                "score": -2.5,
                "region": None,
                "metadata": None,
                "idempotency_key": None,
            },
        ],
    }


def test_the_request_carries_tie_breaker_values_where_the_board_has_them():
    sub = Submission("ada", 3, None, None, tiebreakers={"time_ms": 81234, "deaths": 2})
    item = hook_request("speedrun", [(sub, None)])["submissions"][0]
    assert item["tiebreakers"] == {"time_ms": 81234, "deaths": 2}


def test_a_well_formed_answer_is_one_verdict_per_submission():
    answer = {
        "verdicts": [
            {"verdict": "accept"},
            {"verdict": "reject", "reason": "negative"},
            {"verdict": "flag", "reason": None},
        ]
    }
    assert parse_hook_answer(answer, 3) == [
        Verdict("accept"),
        Verdict("reject", "negative"),
        Verdict("flag"),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "accept",
        [{"verdict": "accept"}],
        {},
        {"verdicts": {"verdict": "accept"}},
        {"verdicts": []},  # one too few
        {"verdicts": [{"verdict": "accept"}, {"verdict": "accept"}]},  # one too many
        {"verdicts": [{"verdict": "accept"}], "extra": 1},
        {"verdicts": ["accept"]},
        {"verdicts": [{"verdict": "ACCEPT"}]},
        {"verdicts": [{"verdict": "allow"}]},
        {"verdicts": [{}]},
        {"verdicts": [{"verdict": "flag", "reason": 5}]},
        {"verdicts": [{"verdict": "flag", "reason": "x" * 257}]},
        {"verdicts": [{"verdict": "flag", "note": "?"}]},
    ],
)
def test_anything_else_is_a_failure_never_a_guess(answer):
    with pytest.raises(HookFailure):
        parse_hook_answer(answer, 1)


def test_verdicts_become_screenings():
    hook = HookConfig("no_negative")
    got = screenings(hook, [Verdict("accept"), Verdict("reject", "no"), Verdict("flag", "high")], 3)
    assert got == [
        Screening(verdict="accept"),
        Screening(error="rejected_by_hook", reason="no"),
        Screening(verdict="flag", reason="high"),
    ]


def test_a_failure_follows_the_boards_policy():
    failure = HookFailure("the hook took longer than 100 ms")
    closed = screenings(HookConfig("no_negative", 100, "closed"), failure, 2)
    assert [s.error for s in closed] == ["hook_unavailable"] * 2
    assert all(not s.verdict for s in closed)
    opened = screenings(HookConfig("no_negative", 100, "open"), failure, 2)
    assert [(s.error, s.verdict) for s in opened] == [("", "failed_open")] * 2
    assert opened[0].reason == "the hook took longer than 100 ms"


def test_the_outbox_field_round_trips_verdict_and_reason():
    flagged = Screening(verdict="flag", reason="tab\tand\nnewline")
    assert parse_record_field(flagged.record_field()) == ("flag", "tab\tand\nnewline")
    assert parse_record_field(Screening(verdict="accept").record_field()) == ("accept", None)
    assert parse_record_field("") == (None, None)  # a board without a hook
    assert parse_record_field(None) == (None, None)  # an entry from before hooks


def test_the_deployments_hooks_are_checked_at_cold_start(monkeypatch):
    monkeypatch.setenv("VALIDATION_HOOK_ARNS", f" {ARN} ,, ")
    monkeypatch.setenv("LOCAL_VALIDATION_HOOKS", "no_negative=devstack.hooks:no_negative")
    settings = HookSettings.from_env()
    assert settings.targets == {ARN, "no_negative"}
    assert dict(settings.local) == {"no_negative": "devstack.hooks:no_negative"}
    monkeypatch.delenv("VALIDATION_HOOK_ARNS")
    monkeypatch.delenv("LOCAL_VALIDATION_HOOKS")
    assert HookSettings.from_env().targets == frozenset()
    for name, value in [
        ("VALIDATION_HOOK_ARNS", "arn:aws:lambda:eu-west-1:1:function:x"),
        ("VALIDATION_HOOK_ARNS", "anti-cheat"),
        ("LOCAL_VALIDATION_HOOKS", "no_negative"),
        ("LOCAL_VALIDATION_HOOKS", "no_negative=devstack.hooks"),
        ("LOCAL_VALIDATION_HOOKS", "Bad=devstack.hooks:no_negative"),
        ("LOCAL_VALIDATION_HOOKS", "a=m:f,a=m:g"),
        ("LOCAL_VALIDATION_HOOKS", "a=os.system('x'):f"),
    ]:
        monkeypatch.setenv(name, value)
        with pytest.raises(ConfigurationError):
            HookSettings.from_env()
        monkeypatch.delenv(name)
