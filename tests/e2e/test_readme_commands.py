"""The README's commands run as written (issue 36): the "Try it" block against a running
stack, `make token` for any subject, and the devstack command line without the Makefile's
PYTHONPATH."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.local_stack import RunningStack

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _env(make_run: RunningStack) -> dict[str, str]:
    """A shell as the README's reader has it: no PYTHONPATH, the stack's data folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JWT_SECRET")}
    env["LOCAL_DATA_DIR"] = str(make_run.stack.data_dir)
    return env


def _block_after(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(heading, 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_try_it_block_runs_as_written(make_run: RunningStack) -> None:
    board = f"arena-{uuid.uuid4().hex[:8]}"  # the worker's stack is shared: a board of its own
    script = _block_after("### Try it").replace("http://127.0.0.1:3000", make_run.url)
    script = re.sub(r"\barena\b", board, script)
    # every curl of the block must succeed: a failing one stops the script with its answer
    prelude = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; echo; }\n'
    ran = subprocess.run(
        ["bash", "-c", prelude + script],
        cwd=ROOT,
        env=_env(make_run),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    answers = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    assert answers[0]["board_id"] == board  # the board made first
    assert any(a.get("player_id") == "ada" and a.get("rank") == 1 for a in answers)


def test_make_token_mints_one_for_any_subject(make_run: RunningStack) -> None:
    out = subprocess.run(
        ["make", "-s", "token", "SUB=ada", "SCOPE=leaderboard/server"],
        cwd=ROOT,
        env=_env(make_run),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    claims = _claims(out)
    assert (claims["sub"], claims["scope"]) == ("ada", "leaderboard/server")
    status, _, _ = make_run.request("POST", "/boards/no-such-board/scores", {"score": 1}, token=out)
    assert status == 404  # accepted by the gateway: a token of this stack


def test_the_devstack_command_runs_without_the_makefile(make_run: RunningStack, tmp_path) -> None:
    """`.venv/bin/python -m devstack token --sub NAME` as the README writes it, also from
    another folder: the virtual environment knows where the code is."""
    for cwd in (ROOT, tmp_path):
        ran = subprocess.run(
            [str(ROOT / ".venv/bin/python"), "-m", "devstack", "token", "--sub", "bob"],
            cwd=cwd,
            env=_env(make_run),
            capture_output=True,
            text=True,
        )
        assert ran.returncode == 0, ran.stderr
        assert _claims(ran.stdout.strip())["sub"] == "bob"
    refused = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "-m", "devstack", "token", "--scope", "x"],
        cwd=ROOT,
        env=_env(make_run),
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "--sub" in refused.stderr


def test_make_run_prints_and_serves_the_operator_console(make_run: RunningStack) -> None:
    """README, Operator console: `make run` prints the console's URL beside the demo page's;
    the page, its config for this stack and the local admin-token route answer there."""
    log = make_run.stack.log.read_text(errors="replace")
    assert f"(demo page: {make_run.url}/)" in log
    assert f"Operator console: {make_run.url}/console/" in log
    status, headers, body = make_run.request("GET", "/console/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<script type="module" src="./console.js">' in body
    status, _, body = make_run.request("GET", "/console/config.json")
    config = json.loads(body)
    assert config["api_url"] == make_run.url and config["live"] == make_run.live
    status, _, body = make_run.request("POST", "/local/admin-token")
    token = json.loads(body)["token"]
    assert status == 200 and _claims(token)["scope"] == "leaderboard/admin"
    status, _, _ = make_run.request("GET", "/boards/no-such-board/hidden", token=token)
    assert status == 404  # past the authorizer's admin scope: a token of this stack
