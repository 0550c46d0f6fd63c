"""The demo page and issue 24: it creates a board of seasons (custom periods on a Berlin
Sunday-evening schedule, with reward tiers), ends the current season with its admin button,
and shows the period.ended event the stack's rollover then emits, as the stack's webhook
receiver got it, signature checked."""

from __future__ import annotations

import time

from devstack import tokens
from devstack.stack import LocalStack
from tests.e2e.test_demo_page import _http, _open_page, chromium, stack  # noqa: F401 (fixtures)

SEASONS = "demo-seasons"


def test_the_demo_page_ends_a_season_and_shows_its_event(chromium: str, stack: LocalStack) -> None:  # noqa: F811
    from playwright.sync_api import expect

    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    server = tokens.mint(secret, "demo-server", "leaderboard/server")
    with _open_page(chromium, stack.url + "/") as (page, watch):
        expect(page.locator("#events-panel")).to_be_visible()  # the local stack's receiver
        page.fill("#admin-token", admin)
        page.select_option("#demo-preset", "seasons")
        expect(page.locator("#preset-hint")).to_contain_text("Sunday at 18:00 in Berlin")
        page.click("#create-demo")
        expect(page.locator("#create-result")).to_have_attribute("data-status", "201")
        expect(page.locator("#board")).to_have_value(SEASONS)
        status, board = _http(stack, "GET", f"/boards/{SEASONS}", None, None)
        assert status == 200 and board["schedule"] == {
            "cron": "0 18 * * SUN",
            "timezone": "Europe/Berlin",
        }, board
        for player, score in (("ada", 40), ("bo", 70), ("cy", 55), ("dee", 10)):
            body = {"player_id": player, "score": score}
            status, answer = _http(stack, "POST", f"/boards/{SEASONS}/scores", body, server)
            assert status == 200, answer
        page.select_option("#period", "custom")
        rows = page.locator("#entries tbody tr")
        expect(rows.locator("td.player")).to_have_text(["bo", "cy", "ada", "dee"], timeout=6_000)

        expect(page.locator("#end-season")).to_be_enabled()
        page.click("#end-season")
        result = page.locator("#end-result")
        expect(result).to_have_attribute("data-status", "200")
        expect(result).to_contain_text("is current")
        time.sleep(1.2)  # the season ends at the next whole second
        stack.invoke("RolloverFunction", {"kinds": ["custom"], "due": True})

        event = page.locator("#events li").first
        # the rollover, the bus, the queue, a cold webhook worker, then the page's next poll
        expect(event).to_contain_text(SEASONS, timeout=30_000)
        expect(event).to_contain_text("manual, 4 entries")
        expect(event).to_contain_text("signature ok")
        expect(event).to_contain_text("Top: 1. bo (70); 2. cy (55); 3. ada (40)")
        expect(event).to_contain_text("champion: bo · top-half: bo, cy")
        expect(rows).to_have_count(0, timeout=6_000)  # the new season starts empty
        assert watch.errors == [], watch.errors
