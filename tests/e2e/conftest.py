"""The in-process local stack the end-to-end tests that look inside it share: one per
pytest-xdist worker, started once (a stack start is seconds of CPU on a busy machine). Each
test works on boards of its own. Tests that need a stack as `make run` starts it, from
outside, use the `make_run` fixture (tests/conftest.py); tests that need a stack of another
shape (empty, quiet, a cluster, stopped and restarted) start their own."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.servers import free_port
from devstack.stack import LocalStack, StackConfig

ROOT = Path(__file__).resolve().parents[2]


def started_stack(concurrency: int = 2) -> Iterator[LocalStack]:
    """The whole local stack in this process, on a free port, with throwaway data and its own
    embedded servers (as on a fresh machine); the JS client the demo page imports built
    first, as `make run` builds it."""
    subprocess.run(["make", "-s", "--no-print-directory", "js-client"], cwd=ROOT, check=True)
    with pytest.MonkeyPatch.context() as env:
        for name in ("REDIS_URL", "DATABASE_URL", "SQS_ENDPOINT_URL", "WEBHOOK_URL"):
            env.delenv(name, raising=False)
        base = Path(tempfile.mkdtemp(prefix="lb-e2e-"))
        base.chmod(0o755)  # the embedded PostgreSQL user must reach it when running as root
        local = LocalStack(
            StackConfig(data_dir=base / "data", port=free_port(), concurrency=concurrency)
        )
        try:
            local.start()
            yield local
        finally:
            local.stop()
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def local_stack() -> Iterator[LocalStack]:
    yield from started_stack()
