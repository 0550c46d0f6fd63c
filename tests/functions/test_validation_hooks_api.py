"""Issue 23, validation hooks through the API as the gateway serves it (the functions in this
process, with the example hooks `make run` configures): every verdict and failure over the
routes, the verdicts reaching PostgreSQL through the queue and the persister, and the admin's
review route. (tests/e2e/test_e2e_local_stack.py does the same over real HTTP.)"""

from __future__ import annotations

import sys

import psycopg

from tests.support.api import drain_queue


def _write_scores():
    return vars(sys.modules["lambda_ApiWriteFunction_app"])["scores"]


def _persist(api, sqs, queue_url) -> None:
    drain_queue(sqs, queue_url, lambda e: api.api.invoke("PersisterFunction", e))


def test_hooks_over_the_api_reach_the_record_and_the_review_route(
    api, sqs, queue_url, admin_token, server_token, database_url, board_id
):
    hook = {"target": "no_negative", "timeout_ms": 1000}
    put = api.call("PUT", f"/boards/{board_id}", {"validation_hook": hook}, token=admin_token)
    assert put.status == 201, put.body
    assert put.json()["validation_hook"] == hook | {"on_failure": "closed"}
    assert api.call("GET", f"/boards/{board_id}").json()["validation_hook"]["target"] == (
        "no_negative"
    )
    bad = api.call(
        "PUT", f"/boards/{board_id}", {"validation_hook": {"target": "evil"}}, token=admin_token
    )
    assert bad.status == 422 and bad.json()["field"] == "validation_hook.target"  # not configured

    def submit(player, score):
        return api.call(
            "POST",
            f"/boards/{board_id}/scores",
            {"player_id": player, "score": score},
            token=server_token,
        )

    assert submit("ada", 5).status == 200
    rejected = submit("bob", -5)
    assert rejected.status == 422
    assert rejected.json() == {
        "message": "negative scores are not allowed",
        "code": "rejected_by_hook",
    }
    assert submit("cy", 2_500_000).status == 200
    batch = api.call(
        "POST",
        f"/boards/{board_id}/scores/batch",
        {
            "submissions": [
                {"player_id": "dee", "score": 1_000_001},
                {"player_id": "eve", "score": -1},
            ]
        },
        token=server_token,
    )
    assert [r["status"] for r in batch.json()["results"]] == [200, 422]

    _persist(api, sqs, queue_url)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT player_id, hook_verdict, hook_reason FROM score_events"
            " WHERE board_id = %s ORDER BY player_id",
            (board_id,),
        ).fetchall()
    assert rows == [
        ("ada", "accept", None),
        ("cy", "flag", "score 2500000 is unusually high"),
        ("dee", "flag", "score 1000001 is unusually high"),
    ]

    flags = api.call("GET", f"/boards/{board_id}/flags", token=admin_token)
    assert flags.status == 200, flags.body
    page = flags.json()
    assert [(f["player_id"], f["score"], f["hook_reason"]) for f in page["flags"]] == [
        ("dee", 1_000_001, "score 1000001 is unusually high"),  # newest first
        ("cy", 2_500_000, "score 2500000 is unusually high"),
    ]
    assert page["next"] is None and page["verdict"] == "flag"
    first = api.call("GET", f"/boards/{board_id}/flags?limit=1", token=admin_token).json()
    assert [f["player_id"] for f in first["flags"]] == ["dee"] and first["next"]
    rest = api.call(
        "GET", f"/boards/{board_id}/flags?limit=1&before={first['next']}", token=admin_token
    ).json()
    assert [f["player_id"] for f in rest["flags"]] == ["cy"] and rest["next"] is None
    mine = api.call("GET", f"/boards/{board_id}/flags?player_id=cy", token=admin_token).json()
    assert [f["player_id"] for f in mine["flags"]] == ["cy"]
    assert api.call("GET", f"/boards/{board_id}/flags", token=server_token).status == 403
    assert api.call("GET", f"/boards/{board_id}/flags").status == 401
    assert (
        api.call("GET", f"/boards/{board_id}/flags?before=2026-W47", token=admin_token).status
        == 400
    )
    assert (
        api.call("GET", f"/boards/{board_id}/flags?verdict=accept", token=admin_token).status == 400
    )
    assert api.call("GET", "/boards/no-such-board/flags", token=admin_token).status == 404
    empty = api.call("GET", f"/boards/{board_id}/flags?player_id=", token=admin_token)
    assert empty.status == 400 and empty.json()["field"] == "player_id"


def test_a_timeout_and_a_failure_over_the_api_follow_the_boards_policy(
    api, sqs, queue_url, admin_token, server_token, board_id
):
    slow, broken = f"{board_id}-slow", f"{board_id}-broken"
    for board, hook in (
        (slow, {"target": "slow", "timeout_ms": 50}),
        (broken, {"target": "broken", "on_failure": "open"}),
    ):
        put = api.call("PUT", f"/boards/{board}", {"validation_hook": hook}, token=admin_token)
        assert put.status == 201, put.body
    late = api.call(
        "POST", f"/boards/{slow}/scores", {"player_id": "ada", "score": 1}, token=server_token
    )
    assert late.status == 503 and late.json()["code"] == "hook_unavailable"
    assert late.headers["retry-after"] == "1"
    assert api.call("GET", f"/boards/{slow}/entries").json()["total"] == 0
    opened = api.call(
        "POST", f"/boards/{broken}/scores", {"player_id": "ada", "score": 1}, token=server_token
    )
    assert opened.status == 200
    _persist(api, sqs, queue_url)
    failed = api.call(
        "GET", f"/boards/{broken}/flags?verdict=failed_open", token=admin_token
    ).json()["flags"]
    assert [(f["player_id"], f["hook_verdict"]) for f in failed] == [("ada", "failed_open")]
    assert "RuntimeError" in failed[0]["hook_reason"]


def test_a_board_without_a_hook_costs_no_hook_call_and_no_lambda_client(
    api, admin_token, server_token, board_id
):
    assert api.call("PUT", f"/boards/{board_id}", {}, token=admin_token).status == 201
    hooks = _write_scores().hooks
    calls = hooks.calls
    for n in range(3):
        scored = api.call(
            "POST",
            f"/boards/{board_id}/scores",
            {"player_id": f"p{n}", "score": n},
            token=server_token,
        )
        assert scored.status == 200
    assert hooks.calls == calls
    assert hooks.lambdas._clients == {}
