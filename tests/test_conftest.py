"""The suite's own rules (tests/conftest.py): `make test-fast` starts no server, and tests are
marked `server` by the fixtures they use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pytest(tmp_path: Path, source: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(source)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            *args,
            str(tmp_path / "test_probe.py"),
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers/shared/python"), str(ROOT)]),
            # the rules under test are the conftest's alone: the installed plugins (schemathesis,
            # xdist, coverage...) would only add seconds to each run
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_test_fast_fails_a_test_that_starts_a_server(tmp_path: Path) -> None:
    probe = (
        "from devstack.servers import EmbeddedValkey\n\n"
        "def test_starts_one(tmp_path):\n"
        "    with EmbeddedValkey(tmp_path / 'v'):\n"
        "        pass\n"
    )
    run = _pytest(tmp_path, probe, TEST_NO_SERVERS="1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "make test-fast starts no server, but this test started" in run.stdout


@pytest.mark.parametrize(
    ("fixture", "marked"), [("redis_url", True), ("api", True), ("tmp_path", False)]
)
def test_a_test_using_a_server_fixture_is_marked_server(
    tmp_path: Path, fixture: str, marked: bool
) -> None:
    probe = f"def test_probe({fixture}):\n    pass\n"
    run = _pytest(tmp_path, probe, "--collect-only", "-q", "-m", "server")
    # selected by `-m server`: collected (0); not marked: deselected, nothing to run (5)
    assert run.returncode == (0 if marked else 5), run.stdout + run.stderr
