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
import time
import uuid
from pathlib import Path

import pytest

from devstack import tokens
from tests.support.local_stack import ROOT, RunningStack, Stack

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
def stack(make_run: RunningStack) -> Stack:
    """The worker's `make run` (each node test uses boards of its own)."""
    return make_run.stack


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


def readme_block(language: str, containing: str) -> str:
    """The first ```<language> block of clients/js/README.md that contains `containing`."""
    readme = (CLIENT / "README.md").read_text()
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", readme, re.M | re.S)
    found = [block for block in blocks if containing in block]
    assert found, f"no {language} block with {containing!r} in clients/js/README.md"
    return found[0]


def test_the_readme_example_runs(stack: Stack, tmp_path: Path) -> None:
    """clients/js/README.md's example, as written (this stack's URL and API key put in), in a
    project where the package is installed (linked, as a `file:` dependency on the folder is):
    it exits on its own, printing what the README says."""
    code = readme_block("js", "@leaderboard-service/client")
    live = json.loads((stack.data_dir / "stack.json").read_text())["live"]
    values = {
        "http://127.0.0.1:3000": stack.url,
        "ws://127.0.0.1:3001/event/realtime": live["realtime_url"],
        "127.0.0.1:3002": live["http_host"],
        "<live.api_key>": live["api_key"],
        '"arena"': f'"arena-{uuid.uuid4().hex[:8]}"',  # a board of this test's own
    }
    for placeholder in values:
        assert placeholder in code
    # In one pass: a value put in is never taken for a placeholder.
    code = re.sub("|".join(map(re.escape, values)), lambda found: values[found[0]], code)
    (tmp_path / "example.mjs").write_text(code)
    scope = tmp_path / "node_modules" / "@leaderboard-service"
    scope.mkdir(parents=True)
    (scope / "client").symlink_to(CLIENT, target_is_directory=True)
    named = stack.tokens()
    tokens_env = {name: named[name] for name in ("SERVER_TOKEN", "ADMIN_TOKEN")}
    started = time.monotonic()
    result = subprocess.run(
        [str(NODE), "example.mjs"],
        cwd=tmp_path,
        env={**os.environ, **tokens_env},
        capture_output=True,
        text=True,
        timeout=60,  # it must end on its own: close() ends the live connection
        check=False,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["rank 1 replayed false", "top ada", "live bob ada"], (
        result.stdout + result.stderr
    )
    assert result.stderr == ""
    assert took < 30, f"the example took {took:.1f} s"


def test_the_readme_league_example_runs(stack: Stack, tmp_path: Path) -> None:
    """clients/js/README.md's league read, as written, after the lines of its first example
    that make `lb`, on a board of its own."""
    example = readme_block("js", "@leaderboard-service/client")
    setup = example.split("try {", 1)[0]  # the import and `const lb = ...`
    code = readme_block("js", "leaguePlayer(")
    board = f"league-{uuid.uuid4().hex[:8]}"
    assert '"weekly-league"' in code and "http://127.0.0.1:3000" in setup
    code = code.replace('"weekly-league"', f'"{board}"')
    setup = setup.replace("http://127.0.0.1:3000", stack.url)
    (tmp_path / "league.mjs").write_text(
        setup
        + code
        + "console.log(JSON.stringify(group.entries) === JSON.stringify(mine.entries));\n"
    )
    scope = tmp_path / "node_modules" / "@leaderboard-service"
    scope.mkdir(parents=True)
    (scope / "client").symlink_to(CLIENT, target_is_directory=True)
    named = stack.tokens()
    result = subprocess.run(
        [str(NODE), "league.mjs"],
        cwd=tmp_path,
        env={**os.environ, **{name: named[name] for name in ("SERVER_TOKEN", "ADMIN_TOKEN")}},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "bronze bronze-1 true",
        "bronze 1 1",
        "silver 0 0",
        "gold 0 0",
        "1 promotion",
        "1 ada 120 promotion",
        "lines 1 null",
        "true",
    ], result.stdout + result.stderr


def test_the_readme_install_steps_work_on_a_fresh_copy(tmp_path: Path) -> None:
    """What the README says to run in clients/js, on a copy without node_modules or dist (as a
    fresh clone has it), then the tarball installed in another project and imported."""
    command = "npm ci && npm pack"
    assert command in readme_block("sh", "npm pack")
    fresh = tmp_path / "js"
    fresh.mkdir()
    for name in ("package.json", "package-lock.json", "tsconfig.json", "README.md", "src"):
        source = CLIENT / name
        if source.is_dir():
            shutil.copytree(source, fresh / name)
        else:
            shutil.copy2(source, fresh / name)
    # npm and node from the virtual environment; the registry only where the cache misses.
    env = {
        **os.environ,
        "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "npm_config_prefer_offline": "true",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
    }

    def run(args: str, cwd: Path) -> str:
        result = subprocess.run(
            ["sh", "-c", args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, f"{args}:\n{result.stdout}{result.stderr}"
        return result.stdout

    run(command, fresh)
    tarballs = list(fresh.glob("leaderboard-service-client-*.tgz"))
    assert len(tarballs) == 1, list(fresh.iterdir())
    project = tmp_path / "game"
    project.mkdir()
    (project / "package.json").write_text('{"name": "game", "private": true, "type": "module"}')
    run(f"npm install {tarballs[0]}", project)
    manifest = json.loads((project / "package.json").read_text())
    assert manifest["dependencies"]["@leaderboard-service/client"].startswith("file:")
    installed = project / "node_modules" / "@leaderboard-service" / "client"
    assert (installed / "dist" / "leaderboard.js").is_file()
    assert (installed / "dist" / "leaderboard.d.ts").is_file()
    assert not (installed / "node_modules").exists(), "no runtime dependency"
    (project / "probe.js").write_text(
        'import { LeaderboardClient } from "@leaderboard-service/client";\n'
        "console.log(typeof LeaderboardClient);\n"
    )
    assert run("node probe.js", project).strip() == "function"
