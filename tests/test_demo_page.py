"""The demo page at `/`, driven in a real headless Chromium against the real local stack.

Needs `playwright` (the Python package, in requirements-dev) and a Chromium on PATH: run
`make browser` (Debian: `apt-get install chromium`). Playwright's own browser download is not
used, so `playwright install` is never needed. Without either, the test is skipped.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack import tokens
from devstack.servers import free_port
from devstack.stack import LocalStack, StackConfig

pytestmark = pytest.mark.e2e

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
BOARD = "demo-arena"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def chromium() -> str:
    """The Chromium executable; skips (before the stack starts) when it or playwright is missing."""
    pytest.importorskip(
        "playwright.sync_api", reason=f"playwright is not installed: {HOW_TO_INSTALL}"
    )
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip(f"no chromium on PATH: {HOW_TO_INSTALL}")
    return executable


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """The whole local stack in this process, on a free port, with throwaway data."""
    for name in ("REDIS_URL", "DATABASE_URL", "SQS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    base = Path(tempfile.mkdtemp(prefix="lb-demo-"))
    base.chmod(0o755)  # the embedded PostgreSQL user must reach it when running as root
    local = LocalStack(StackConfig(data_dir=base / "data", port=free_port(), concurrency=2))
    try:
        local.start()
        yield local
    finally:
        local.stop()
        shutil.rmtree(base, ignore_errors=True)


def _http(stack: LocalStack, method: str, path: str, body: object, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        stack.url + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_demo_page_drives_the_api_live(chromium: str, stack: LocalStack, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    server = tokens.mint(secret, "demo-server", "leaderboard/server")
    started = time.monotonic()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(6_000)
            errors: list[str] = []
            foreign: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on(
                "request",
                lambda request: (
                    None
                    if request.url.startswith((stack.url + "/", "data:"))
                    else foreign.append(request.url)
                ),
            )
            page.goto(stack.url + "/")

            # No boards yet: the hint, then the one-click demo board with an admin token.
            expect(page.locator("#empty-state")).to_be_visible()
            expect(page.locator("#empty-state")).to_contain_text("PUT /boards/{id}")
            page.fill("#admin-token", admin)
            page.click("#create-demo")
            expect(page.locator("#create-result")).to_have_attribute("data-status", "201")
            expect(page.locator("#board")).to_have_value(BOARD)
            expect(page.locator("#empty-state")).to_be_hidden()
            expect(page.locator("#region option")).to_have_text(["Global", "EU", "NA"])
            expect(page.locator("#period option")).to_have_text(
                ["all-time", "daily", "weekly", "monthly"]
            )

            # Three scores through the form, as a game server. Bob's name is markup: it must
            # come back as text.
            page.fill("#token", server)
            for player, score, region, name in [
                ("ada", "120", "EU", "Ada"),
                ("bob", "95", "NA", "<b>Bob</b>"),
                ("cy", "150", "EU", "Cy"),
            ]:
                page.fill("#player", player)
                page.fill("#score", score)
                page.select_option("#submit-region", region)
                page.fill("#name", name)
                page.click("#submit")
                expect(page.locator("#result")).to_have_attribute("data-status", "200")
                expect(page.locator("#result")).to_contain_text(f"{player}: applied")
            expect(page.locator("#standings tbody tr")).to_have_count(8)  # 4 periods x 2
            assert page.evaluate("sessionStorage.getItem('leaderboard-demo.token')") == server

            rows = page.locator("#entries tbody tr")
            expect(rows.locator("td.rank")).to_have_text(["1", "2", "3"])
            expect(rows.locator("td.player")).to_have_text(["cy", "ada", "bob"])
            expect(rows.locator("td.score")).to_have_text(["150", "120", "95"])
            expect(rows.locator("td.name")).to_have_text(["Cy", "Ada", "<b>Bob</b>"])
            assert page.locator("#entries tbody b").count() == 0
            expect(page.locator("#entries-period")).to_have_text("all-time")
            expect(page.locator("#entries-total")).to_have_text("3")
            expect(page.locator("#entries caption")).to_contain_text("Demo Arena")

            # A score from elsewhere shows up through the live refresh alone.
            status, body = _http(
                stack,
                "POST",
                f"/boards/{BOARD}/scores",
                {"player_id": "dee", "score": 200, "region": "NA", "metadata": {"name": "Dee"}},
                server,
            )
            assert status == 200, body
            expect(rows.locator("td.player")).to_have_text(
                ["dee", "cy", "ada", "bob"], timeout=6_000
            )
            expect(page.locator("#entries-total")).to_have_text("4")

            # Regions and periods.
            page.select_option("#region", "EU")
            expect(rows.locator("td.player")).to_have_text(["cy", "ada"])
            expect(page.locator("#entries-total")).to_have_text("2")
            page.select_option("#region", "NA")
            expect(rows.locator("td.player")).to_have_text(["dee", "bob"])
            expect(rows.locator("td.name")).to_have_text(["Dee", "<b>Bob</b>"])
            page.select_option("#period", "weekly")
            expect(page.locator("#entries-period")).to_have_text(_re(r"\d{4}-W\d{2}"))
            expect(rows.locator("td.player")).to_have_text(["dee", "bob"])
            page.select_option("#region", "")
            page.select_option("#period", "daily")
            expect(page.locator("#entries-period")).to_have_text(_re(r"\d{4}-\d{2}-\d{2}"))
            page.select_option("#period", "monthly")
            expect(page.locator("#entries-period")).to_have_text(_re(r"\d{4}-\d{2}"))
            expect(rows.locator("td.player")).to_have_text(["dee", "cy", "ada", "bob"])

            # Paging, two per page.
            page.select_option("#period", "all-time")
            page.fill("#limit", "2")
            page.press("#limit", "Tab")
            expect(rows.locator("td.player")).to_have_text(["dee", "cy"])
            expect(page.locator("#page-info")).to_have_text("1\u20132 of 4")
            expect(page.locator("#prev")).to_be_disabled()
            page.click("#next")
            expect(rows.locator("td.player")).to_have_text(["ada", "bob"])
            expect(rows.locator("td.rank")).to_have_text(["3", "4"])
            expect(page.locator("#page-info")).to_have_text("3\u20134 of 4")
            expect(page.locator("#next")).to_be_disabled()
            page.click("#prev")
            expect(rows.locator("td.player")).to_have_text(["dee", "cy"])
            page.fill("#limit", "10")
            page.press("#limit", "Tab")
            expect(rows.locator("td.player")).to_have_text(["dee", "cy", "ada", "bob"])
            expect(page.locator("#next")).to_be_disabled()

            # Find a player: the card, the window around it, and the highlight.
            page.fill("#find-player", "ada")
            page.click("#find")
            card = page.locator("#player-card")
            expect(card).to_be_visible()
            expect(card.locator("[data-field=rank]")).to_have_text("3 of 4")
            expect(card.locator("[data-field=score]")).to_have_text("120")
            expect(card.locator("[data-field=top_percent]")).to_have_text("75%")
            expect(card.locator("#card-title")).to_contain_text("Ada (ada)")
            expect(page.locator("#around tbody tr td.player")).to_have_text(
                ["dee", "cy", "ada", "bob"]
            )
            expect(page.locator("#around tbody tr.me td.player")).to_have_text("ada")
            expect(page.locator("#entries tbody tr.me td.player")).to_have_text("ada")
            page.select_option("#region", "EU")
            expect(card.locator("[data-field=rank]")).to_have_text("2 of 2")
            expect(card.locator("[data-field=top_percent]")).to_have_text("100%")
            page.select_option("#region", "")

            # A bad token: the gateway's 401 with its message.
            page.fill("#token", "not-a-token")
            page.fill("#player", "eve")
            page.fill("#score", "1")
            page.click("#submit")
            expect(page.locator("#result")).to_have_attribute("data-status", "401")
            expect(page.locator("#result")).to_contain_text("401")
            expect(page.locator("#result")).to_contain_text("Unauthorized")
            expect(rows.locator("td.player")).to_have_text(["dee", "cy", "ada", "bob"])

            # A look at the page, for people.
            shot = tmp_path / "demo.png"
            page.screenshot(path=str(shot), full_page=True)
            assert errors == [], errors
            assert foreign == [], f"the page requested other origins: {foreign}"
        finally:
            browser.close()

    data = shot.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC)
    assert time.monotonic() - started < 40


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"^{pattern}$")
