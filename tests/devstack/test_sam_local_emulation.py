"""`sam local invoke` of the deployed architecture, arm64 (the default of `make sam-invoke`), on a
machine of another architecture: qemu user emulation. One read, which is slow there (a cold
start takes tens of seconds), so the eight functions of test_sam_local_invoke.py run natively.

A file of its own, so that it runs on another worker than the native test, at the same time:
each needs minutes, mostly waiting on Docker and SAM.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from devstack import sam_local
from devstack.template import ROOT
from tests.support.local_stack import RunningStack, Stack
from tests.support.sam_builds import shared_build
from tests.support.sam_local import require_engine, run_sam

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FUNCTION = "ApiReadFunction"


@pytest.fixture(scope="module")
def image() -> str:
    if sam_local.native_arch() == "arm64":
        pytest.skip(
            "this machine is arm64: test_sam_local_invoke.py runs the deployed architecture"
        )
    require_engine("arm64")
    return sam_local.build_image("arm64")


@pytest.fixture(scope="module")
def stack(image: str, make_run: RunningStack) -> Stack:
    """The worker's `make run`: the containers reach its stores and event API."""
    return make_run.stack


def test_the_deployed_architecture_runs_under_emulation(
    image: str, stack: Stack, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The template built for arm64, as deployed (shared with tests/deploy/test_sam_build.py);
    # the read function runs here, the others natively in test_sam_local_invoke.py.
    built = shared_build(tmp_path_factory, "arm64")
    # A board for the read to find, made through the stack's API.
    put_board = json.loads((ROOT / "events/api_admin_put_board.json").read_text())
    # (a board of its own: the native test creates demo-arena on the same stack)
    status, _, reply = stack.request(
        "PUT",
        "/boards/emulated-arena",
        json.loads(put_board["body"]),
        token=stack.tokens()["ADMIN_TOKEN"],
    )
    assert status == 201, reply
    state = json.loads((stack.data_dir / "stack.json").read_text())
    host = sam_local.docker_host_address()
    env_file = sam_local.write_env_vars(state["env"], tmp_path / "env.json", host)
    command = sam_local.invoke_command(
        FUNCTION,
        ROOT / "events/api_read_list_boards.json",
        template=sam_local.invocation_template(built, "arm64"),
        env_file=env_file,
        image=sam_local.function_images(built, "arm64", only=FUNCTION)[FUNCTION],
    )
    with sam_local.LoopbackForwarder(host, sam_local.store_ports(state["env"])):
        proc = run_sam(command, state["env"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = sam_local.parse_output(proc.stdout)
    assert result["statusCode"] == 200, result
    assert "emulated-arena" in {b["board_id"] for b in json.loads(result["body"])["boards"]}
    # The container really was arm64: the runtime reports the machine it runs on.
    assert (
        "aarch64"
        in subprocess.run(
            ["docker", "run", "--rm", image, "/usr/bin/uname", "-m"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    )
