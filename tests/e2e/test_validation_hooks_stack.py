"""Issue 23, acceptance 4 on the local stack: `make run` as a user starts it, the example hooks
it configures (devstack/hooks.py), and over real HTTP a hook's accept, reject, flag, timeout
and failure; the flagged submission reaches PostgreSQL through the queue and the persister,
and the admin's review route lists it."""

from __future__ import annotations

import json
import time
import uuid

import psycopg
import pytest

from tests.support.local_stack import RunningStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _wait_for_verdicts(database_url: str, boards: list[str], count: int) -> list[tuple]:
    deadline = time.monotonic() + 60
    while True:
        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT board_id, player_id, hook_verdict, hook_reason FROM score_events"
                " WHERE board_id = ANY(%s) ORDER BY board_id, player_id",
                (boards,),
            ).fetchall()
        if len(rows) >= count or time.monotonic() > deadline:
            assert len(rows) == count, rows
            return rows
        time.sleep(0.2)


def test_validation_hooks_on_the_local_stack(make_run: RunningStack) -> None:
    stack = make_run.stack
    run = uuid.uuid4().hex[:8]  # boards of this test's own on the worker's stack

    def b(name: str) -> str:
        return f"{name}-{run}"

    tokens = stack.tokens()
    admin, server = tokens["ADMIN_TOKEN"], tokens["SERVER_TOKEN"]
    boards = {
        b("hooked"): {"target": "no_negative", "timeout_ms": 1000},
        b("late"): {"target": "slow", "timeout_ms": 100, "on_failure": "closed"},
        b("lenient"): {"target": "broken", "on_failure": "open"},
        b("strict"): {"target": "wrong_answer", "on_failure": "closed"},
    }
    for board, hook in boards.items():
        status, _, body = stack.request(
            "PUT", f"/boards/{board}", {"validation_hook": hook, "mode": "best"}, token=admin
        )
        assert status == 201, body
        assert json.loads(body)["validation_hook"]["target"] == hook["target"]
    status, _, body = stack.request(
        "PUT", f"/boards/{b('nope')}", {"validation_hook": {"target": "os_system"}}, token=admin
    )
    # well-formed, but not a hook this deployment lists: 422
    assert status == 422 and json.loads(body)["field"] == "validation_hook.target"

    def submit(board: str, player: str, score: int) -> tuple[int, dict, dict]:
        status, headers, body = stack.request(
            "POST",
            f"/boards/{b(board)}/scores",
            {"player_id": player, "score": score},
            token=server,
        )
        return status, headers, json.loads(body)

    status, _, body = submit("hooked", "ada", 120)  # accept
    assert status == 200 and body["standings"][0]["rank"] == 1
    status, _, body = submit("hooked", "bob", -5)  # reject
    assert (status, body) == (
        422,
        {"message": "negative scores are not allowed", "code": "rejected_by_hook"},
    )
    status, _, body = submit("hooked", "cy", 2_500_000)  # flag: applied
    assert status == 200 and body["standings"][0]["rank"] == 1
    started = time.monotonic()
    status, headers, body = submit("late", "ada", 1)  # timeout, fails closed
    assert time.monotonic() - started < 1.5, "the 2 s hook was not waited for"
    assert status == 503 and body["code"] == "hook_unavailable"
    assert headers["retry-after"] == "1"
    status, _, body = submit("lenient", "ada", 1)  # failure, fails open
    assert status == 200
    status, _, body = submit("strict", "ada", 1)  # malformed answer, fails closed
    assert status == 503 and body["code"] == "hook_unavailable"
    status, _, body = stack.request(
        "POST",
        f"/boards/{b('hooked')}/scores/batch",
        {"submissions": [{"player_id": "dee", "score": 7}, {"player_id": "eve", "score": -1}]},
        token=server,
    )
    assert [r["status"] for r in json.loads(body)["results"]] == [200, 422]

    for board in ("hooked", "late", "strict"):  # refused: nothing on the boards
        entries = json.loads(stack.request("GET", f"/boards/{b(board)}/entries")[2])
        players = {e["player_id"] for e in entries["entries"]}
        assert players == {"hooked": {"ada", "cy", "dee"}}.get(board, set()), board

    state = json.loads((stack.data_dir / "stack.json").read_text())["env"]
    rows = _wait_for_verdicts(state["DATABASE_URL"], list(boards), 4)
    assert rows == [
        (b("hooked"), "ada", "accept", None),
        (b("hooked"), "cy", "flag", "score 2500000 is unusually high"),
        (b("hooked"), "dee", "accept", None),
        (b("lenient"), "ada", "failed_open", "the hook raised RuntimeError"),
    ]
    status, _, body = stack.request("GET", f"/boards/{b('hooked')}/flags", token=admin)
    assert status == 200, body
    flags = json.loads(body)["flags"]
    assert [(f["player_id"], f["score"], f["hook_reason"]) for f in flags] == [
        ("cy", 2_500_000, "score 2500000 is unusually high")
    ]
    assert stack.request("GET", f"/boards/{b('hooked')}/flags", token=server)[0] == 403
