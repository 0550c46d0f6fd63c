"""`sam build` once per architecture per test session, shared by the xdist workers: the
template's build (tests/deploy/test_sam_build.py checks it) is what `sam local invoke` runs
too (tests/devstack/test_sam_local_*.py), and a build is tens of seconds of CPU. The first
worker that asks builds, under a file lock; the others wait for it and reuse the result."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from devstack import sam_local


def shared_build(tmp_path_factory: pytest.TempPathFactory, arch: str) -> Path:
    """The built template (`<build dir>/template.yaml`) of every function and layer for
    `arch`, as `make build` builds them (bytecode for the runtime when a python3.13 is
    here)."""
    # the session's base temp folder is per worker; its parent is the session's
    folder = tmp_path_factory.getbasetemp().parent / f"sam-build-{arch}"
    folder.mkdir(exist_ok=True)
    built = folder / "build" / "template.yaml"
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / "done").exists():
                sam_local.build_functions(arch, folder / "build", runtime_python=True)
                (folder / "done").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return built
