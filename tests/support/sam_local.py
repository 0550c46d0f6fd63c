"""What the `sam local invoke` tests share: the engine check (a skip where Docker cannot run the
containers, a failure on CI), SAM CLI run with the stack's credentials, and a `make run` stack
in a directory the embedded PostgreSQL's user can reach."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from devstack import sam_local
from devstack.template import ROOT


def require_engine(arch: str) -> None:
    """Docker able to run `arch` Lambda containers, or a skip with the reason; on CI (root, OS
    packages reachable) a failure instead."""
    problem = sam_local.engine_problem(arch)
    if problem:
        if os.environ.get("CI") == "true" and os.geteuid() == 0 and shutil.which("apt-get"):
            pytest.fail(f"CI can install and run Docker, yet: {problem}")
        pytest.skip(f"Docker cannot run {arch} Lambda containers here: {problem}")


def run_sam(command: list[str], stack_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """SAM CLI hands the function the stack's credentials, as `make sam-invoke` does: the
    event API takes only publishes signed with them."""
    return subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=sam_local.sam_environment(stack_env),
        timeout=600,
        check=False,
    )
