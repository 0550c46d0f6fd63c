"""What the fuzzer (tests/e2e/test_fuzz.py, `make fuzz`) found, each reproduced without it.

Each test names the input schemathesis generated, what was wrong, and what fixed it; it fails on
the code as it was before the fix.
"""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "rules,stored",
    [
        ({"rate_limit_per_minute": 2584.0}, {"rate_limit_per_minute": 2584}),
        ({"max_entries": 10.0, "live_top": 94.0}, {"max_entries": 10, "live_top": 94}),
        ({"max_entries": 1e7}, {"max_entries": 10_000_000}),
    ],
    ids=["rate_limit", "max_entries-live_top", "exponent"],
)
def test_an_integral_number_is_an_integer(rules, stored, api, admin_token, board_id):
    """Found: `PUT /boards/arena {"rate_limit_per_minute": 2584.0, ...}` was 400 "must be an
    integer", though JSON Schema, and so the document, counts 2584.0 as an integer. Fixed in
    domain/validation.py `require_int`: an integral number is the integer; 2584.5 is still 400."""
    created = api.call("PUT", f"/boards/{board_id}", rules, token=admin_token)
    assert created.status == 201, created.body
    assert {k: created.json()[k] for k in stored} == stored
    assert all(type(created.json()[k]) is int for k in stored)
    again = api.call("GET", f"/boards/{board_id}").json()
    assert {k: again[k] for k in stored} == stored


@pytest.mark.parametrize("value", [2584.5, 1e300, "5", True])
def test_a_fractional_or_foreign_value_is_still_not_an_integer(value, api, admin_token, board_id):
    r = api.call("PUT", f"/boards/{board_id}", {"rate_limit_per_minute": value}, token=admin_token)
    assert r.status == 400 and r.json()["field"] == "rate_limit_per_minute", r.body
    assert api.call("GET", f"/boards/{board_id}").status == 404


UNSTORABLE = {
    "nul-in-a-value": '{"name": "a\\u0000b"}',
    "nul-in-a-key": '{"L\\u00a1P\\u0000": 1}',
    "lone-surrogate-value": '{"name": "\\ud800"}',
    "lone-surrogate-key": '{"\\udfff": "x"}',
}


@pytest.mark.parametrize("metadata", list(UNSTORABLE.values()), ids=list(UNSTORABLE))
def test_a_string_postgresql_cannot_store_is_refused(metadata, api, admin_token, board_id):
    """Found: `POST /boards/b/scores {"metadata": {"L¡P\\u0000": ...}}` was accepted (200, in
    Redis at once), then the persister failed on it for ever: PostgreSQL's jsonb has no U+0000,
    so the event was poison and never reached the record. Lone surrogates are the same. Fixed
    in domain/validation.py `parse_json_object`: such a body is 400 before anything is stored."""
    assert api.call("PUT", f"/boards/{board_id}", {}, token=admin_token).status == 201
    raw = ('{"player_id": "p-1", "score": 5, "metadata": ' + metadata + "}").encode()
    r = api.call("POST", f"/boards/{board_id}/scores", raw=raw, token=admin_token)
    assert r.status == 400 and r.json()["code"] == "bad_request", r.body
    assert api.call("GET", f"/boards/{board_id}/players/p-1").status == 404


@pytest.mark.parametrize("text", ['"a\\u0000b"', '"\\ud83d"'], ids=["nul", "lone-surrogate"])
def test_a_board_title_postgresql_cannot_store_is_refused(text, api, admin_token, board_id):
    raw = ('{"title": ' + text + "}").encode()
    r = api.call("PUT", f"/boards/{board_id}", raw=raw, token=admin_token)
    assert r.status == 400 and r.json()["code"] == "bad_request", r.body
    assert api.call("GET", f"/boards/{board_id}").status == 404


def test_other_unicode_is_stored_as_sent(api, admin_token, board_id):
    """The refusal is narrow: escapes, astral characters, surrogate pairs and controls other
    than U+0000 are taken and served as sent (tests/e2e/test_fuzz.py stores such bodies too)."""
    created = api.call("PUT", f"/boards/{board_id}", {"title": "Ünï 🎮"}, token=admin_token)
    assert created.status == 201 and created.json()["title"] == "Ünï 🎮"
    metadata = {"name": "tab\there \U0001f3ae \u00a1", "\u0001": "x", "pair": "\ud83c\udfae"}
    body = {"player_id": "p-1", "score": 5, "metadata": metadata}
    r = api.call("POST", f"/boards/{board_id}/scores", body, token=admin_token)
    assert r.status == 200, r.body
    got = api.call("GET", f"/boards/{board_id}/players/p-1").json()["metadata"]
    assert got == json.loads(json.dumps(metadata))


def test_a_batch_of_only_bad_items_to_an_unknown_board_is_404(api, server_token, board_id):
    """Found: `POST /boards/<never made>/scores/batch` whose items were all invalid answered
    200 with an error per item: with nothing to apply, nothing asked whether the board exists,
    so the fuzz counted a write to a board neither store knew. Fixed in services/scores.py
    `submit_batch`: the board is checked (404, or 503 while it is restored) before item errors."""
    body = {"submissions": [{"player_id": "ada"}, "not a submission", {"score": "7"}]}
    r = api.call("POST", f"/boards/{board_id}/scores/batch", body, token=server_token)
    assert r.status == 404 and r.json()["code"] == "not_found", r.body
    assert api.call("GET", f"/boards/{board_id}").status == 404


@pytest.mark.parametrize("teams", [None, "sum"], ids=["no-teams", "team-board"])
def test_a_null_team_id_is_no_team_as_the_document_says(teams, api, admin_token, board_id):
    """Found (`make test-random`): `POST /boards/arena/scores {..., "team_id": null}` was 200,
    while the document typed `team_id` as a string only, so the fuzz counted a schema-breaking
    request accepted. The code treats null as left out, as it does for `region` and
    `tiebreakers`, whose schemas say so; fixed in docs/openapi.json (Submission, BatchItem)
    and API.md: null or left out, no team."""
    from tests.support.openapi_contract import validator

    for schema in ("Submission", "BatchItem"):
        item = {"player_id": "ada", "score": 5, "team_id": None}
        assert validator(f"#/components/schemas/{schema}").is_valid(item), schema
    rules = {} if teams is None else {"teams": teams}
    assert api.call("PUT", f"/boards/{board_id}", rules, token=admin_token).status == 201
    body = {"player_id": "ada", "score": 5, "team_id": None}
    r = api.call("POST", f"/boards/{board_id}/scores", body, token=admin_token)
    assert r.status == 200 and r.json()["applied"] is True, r.body
    if teams is not None:  # the team board's ranking of teams is still empty
        teams_page = api.call("GET", f"/boards/{board_id}/entries?by=team")
        assert teams_page.status == 200 and teams_page.json()["entries"] == [], teams_page.body
