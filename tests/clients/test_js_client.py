"""clients/js against the local stack started as a newcomer starts it (`make run`, which also
builds the client): node's own test runner runs clients/js/test/*.test.js, told where the API
and the live updates are and given tokens, one run per file so a failure names its part:
every route, each error type, a board channel's reconnect and gap, the player channels, reads
while the socket cannot connect or the runtime has no WebSocket (and, without the stack, what a
scripted socket and fetch show: keep-alive timeout, watch renewal, polling before the socket is
up). Where a Node.js 20 is on PATH, the parts about the WebSocket run on it too."""

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


def node_major(node: str) -> int | None:
    try:
        version = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v(\d+)\.", version.strip())
    return int(found[1]) if found else None


def older_node() -> str | None:
    """A Node.js 20 or 21 on PATH (one without a global WebSocket), if the machine has one: the
    package's engines say 22+, but with a WebSocket passed in it works there too."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "node"
        if folder and candidate.is_file() and node_major(str(candidate)) in (20, 21):
            return str(candidate)
    return None


OLDER_NODE = older_node()


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
        "websocket.test.js",  # no socket: reads at once, polls; no WebSocket; one passed in
    ]


def run_node_tests(node: str, stack: Stack, *test_files: str) -> None:
    assert (CLIENT / "dist" / "leaderboard.js").exists(), "make run builds clients/js"
    paths = [f"test/{name}" for name in test_files]
    result = subprocess.run(
        [node, "--test", "--test-reporter=spec", *paths],
        cwd=CLIENT,
        env=node_env(stack),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{node} --test {' '.join(paths)} failed:\n{output}"
    # No part of it skipped itself (a test skips without a stack: this one names one).
    assert re.search(r"^\S*\s?skipped 0$", output, re.M), output


@pytest.mark.parametrize("test_file", TEST_FILES)
def test_js_client(stack: Stack, test_file: str) -> None:
    run_node_tests(str(NODE), stack, test_file)


@pytest.mark.skipif(OLDER_NODE is None, reason="no Node.js 20 or 21 on PATH")
def test_js_client_on_node_20(stack: Stack) -> None:
    """Where there is no global WebSocket: onError says what to do while polling serves reads,
    and the `ws` package's WebSocket passed in carries live updates."""
    assert OLDER_NODE is not None
    run_node_tests(OLDER_NODE, stack, "websocket.test.js", "offline.test.js")
