"""clients/js against the local stack started as a newcomer starts it (`make run`, which also
builds the client): node's own test runner runs clients/js/test/*.test.js, told where the API
and the live updates are and given tokens, one run per file so a failure names its part:
every route, each error type, a board channel's reconnect and gap, the player channels (and,
without the stack, what a scripted socket and fetch show: keep-alive timeout, watch renewal)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack import tokens
from tests.support.local_stack import ROOT, Stack

pytestmark = pytest.mark.e2e

CLIENT = ROOT / "clients" / "js"
NODE = ROOT / ".venv" / "bin" / "node"
# The players the node tests act as (each test uses boards of its own).
PLAYERS = ("player-1", "js-ada", "js-bob", "js-cy", "js-dee", "js-eve")
TEST_FILES = sorted(p.name for p in (CLIENT / "test").glob("*.test.js"))


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    base = Path(tempfile.mkdtemp(prefix="lb-js-"))
    base.chmod(0o755)  # the embedded PostgreSQL user must reach it when running as root
    started = Stack(base / "data")
    try:
        yield started
    finally:
        started.stop()
        shutil.rmtree(base, ignore_errors=True)


def node_env(stack: Stack) -> dict[str, str]:
    """Where the stack is (its stack.json) and a token for each caller the tests need."""
    state = json.loads((stack.data_dir / "stack.json").read_text())
    live = state["live"]
    secret = (stack.data_dir / "jwt-secret").read_text().strip()
    named = stack.tokens()  # what `make token` prints: a player, a server and an admin token
    minted = {player: tokens.mint(secret, player) for player in PLAYERS}
    return {
        **os.environ,
        "LEADERBOARD_API_URL": stack.url,
        "LEADERBOARD_LIVE_REALTIME_URL": live["realtime_url"],
        "LEADERBOARD_LIVE_HTTP_HOST": live["http_host"],
        "LEADERBOARD_LIVE_API_KEY": live["api_key"],
        "LEADERBOARD_TOKENS": json.dumps(
            {
                "admin": named["ADMIN_TOKEN"],
                "server": named["SERVER_TOKEN"],
                "player": named["PLAYER_TOKEN"],
                **minted,
            }
        ),
    }


def test_the_node_tests_are_found() -> None:
    assert TEST_FILES == [
        "errors.test.js",  # each error type, the retries on 429 and 503
        "live.test.js",  # board channels: updates, a reconnect, a gap
        "offline.test.js",  # scripted socket and fetch: keep-alive timeout, watch renewal
        "player.test.js",  # the watch routes and a player channel: a gap, a reconnect
        "routes.test.js",  # every other route
    ]


@pytest.mark.parametrize("test_file", TEST_FILES)
def test_js_client(stack: Stack, test_file: str) -> None:
    assert (CLIENT / "dist" / "leaderboard.js").exists(), "make run builds clients/js"
    result = subprocess.run(
        [str(NODE), "--test", "--test-reporter=spec", f"test/{test_file}"],
        cwd=CLIENT,
        env=node_env(stack),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"node --test test/{test_file} failed:\n{output}"
    # No part of it skipped itself (a test skips without a stack: this one names one).
    assert re.search(r"^\S*\s?skipped 0$", output, re.M), output
