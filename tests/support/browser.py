"""Browser tests' shared set-up: Debian's Chromium driven through Playwright's Python API.

Needs `playwright` (the Python package, in requirements-dev) and a Chromium on PATH: run
`make browser` (Debian: `apt-get install chromium`). Playwright's own browser download is not
used, so `playwright install` is never needed. Without either, the tests are skipped.
"""

from __future__ import annotations

import shutil

import pytest

HOW_TO_INSTALL = (
    "run `make browser` (installs Debian's chromium) and "
    "`.venv/bin/pip install -r requirements-dev.txt` (playwright); "
    "`playwright install` is not needed"
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def chromium_or_skip() -> str:
    """The Chromium executable; skips (before any stack starts) when it or playwright is
    missing."""
    pytest.importorskip(
        "playwright.sync_api", reason=f"playwright is not installed: {HOW_TO_INSTALL}"
    )
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip(f"no chromium on PATH: {HOW_TO_INSTALL}")
    return executable
