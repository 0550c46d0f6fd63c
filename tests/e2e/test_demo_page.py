"""The demo page at `/`, driven in a real headless Chromium against the real local stack.

The page takes its live updates over the event API's WebSocket (the gateway names it in a
`<meta name="leaderboard-live">`) and polls every 2 s only while that socket is down.

Needs `playwright` (the Python package, in requirements-dev) and a Chromium on PATH: run
`make browser` (Debian: `apt-get install chromium`). Playwright's own browser download is not
used, so `playwright install` is never needed. Without either, the test is skipped.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from devstack import tokens
from devstack.servers import free_port
from devstack.stack import LocalStack
from tests.e2e.conftest import started_stack
from tests.support.browser import CHROMIUM_ARGS, PNG_MAGIC, chromium_or_skip

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
# The modules of clients/js the page loads (it imports leaderboard.js, which imports the rest).
CLIENT_MODULES = ("leaderboard.js", "client.js", "errors.js", "live.js", "types.js")

BOARD = "demo-arena"
DEMO_BOARD = {
    "title": "Demo Arena",
    "mode": "best",
    "periods": ["all-time", "daily", "weekly", "monthly"],
    "regions": ["EU", "NA"],
}
SPEEDRUN = "demo-speedrun"
SPEEDRUN_TIEBREAKERS = [{"name": "time_ms", "sort": "asc"}, {"name": "deaths", "sort": "asc"}]
CLANS = "demo-clans"
# The acceptance point: a score submitted through the API shows within 1 s, without reload.
LIVE_WITHIN_S = 1.0
# Polling: one 2 s period, plus the read and the render.
POLLED_WITHIN_S = 3.0


@pytest.fixture
def chromium() -> str:
    """The Chromium executable; skips (before the stack starts) when it or playwright is missing."""
    return chromium_or_skip()


@pytest.fixture
def stack() -> Iterator[LocalStack]:
    """A stack of the test's own, for the test that starts from no board at all (the page's
    empty state)."""
    yield from started_stack()


@pytest.fixture
def shared_stack(local_stack: LocalStack) -> LocalStack:
    """The worker's stack, for the tests that each create boards of their own and look only
    at them."""
    return local_stack


def _http(
    stack: LocalStack, method: str, path: str, body: object, token: str | None
) -> tuple[int, dict]:
    """One request; with no token (None or ""), no Authorization header: a read takes a token
    optionally, but one that is sent must be valid."""
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        stack.url + path, data=json.dumps(body).encode(), method=method, headers=headers
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
            modules: dict[str, int] = {}
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on(
                "response",
                lambda response: (
                    modules.__setitem__(response.url, response.status)
                    if "/client/" in response.url
                    else None
                ),
            )
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
            # Everything the page does from here on goes through the JS client it imported.
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
            mode = page.locator("#live-mode")
            expect(mode).to_have_attribute("data-mode", "websocket")
            expect(mode).to_have_attribute("data-channel", f"/leaderboards/{BOARD}/all-time")
            assert modules == {f"{stack.url}/client/{name}": 200 for name in CLIENT_MODULES}, (
                "the page did not load clients/js from the gateway"
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
            expect(mode).to_have_attribute("data-channel", f"/leaderboards/{BOARD}/all-time/NA")
            expect(rows.locator("td.name")).to_have_text(["Dee", "<b>Bob</b>"])
            page.select_option("#period", "weekly")
            expect(page.locator("#entries-period")).to_have_text(_re(r"\d{4}-W\d{2}"))
            expect(rows.locator("td.player")).to_have_text(["dee", "bob"])
            expect(mode).to_have_attribute("data-channel", f"/leaderboards/{BOARD}/weekly/NA")
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

            # Live off: neither the socket nor polling; on again: the socket again.
            page.uncheck("#live")
            expect(mode).to_have_attribute("data-mode", "off")
            expect(mode).to_have_text("Live: off")
            page.check("#live")
            expect(mode).to_have_attribute("data-mode", "websocket")
            expect(mode).to_have_text("Live: WebSocket")

            # A bad token: the gateway's 401 with its message.
            page.fill("#token", "not-a-token")
            page.fill("#player", "eve")
            page.fill("#score", "1")
            page.click("#submit")
            expect(page.locator("#result")).to_have_attribute("data-status", "401")
            expect(page.locator("#result")).to_contain_text("401")
            expect(page.locator("#result")).to_contain_text("Unauthorized")
            expect(rows.locator("td.player")).to_have_text(["dee", "cy", "ada", "bob"])

            # Issue 23, in the same page and stack (a stack takes longer than this part).
            _tiebreakers_and_rank_movement(page, stack, admin, server)

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


def test_demo_page_shows_a_submitted_score_over_the_websocket_within_a_second(
    chromium: str, shared_stack: LocalStack
) -> None:
    """The acceptance point: the page open in one browser context shows a score submitted
    through the API within 1 s, without reload and without polling."""
    from playwright.sync_api import expect

    stack, board = shared_stack, f"demo-live-{uuid.uuid4().hex[:8]}"
    server = _create_board(stack, board)
    _submit(stack, board, server, "ada", 120)
    realtime_url = _served_live_config(stack)["realtime_url"]

    with _open_page(chromium, f"{stack.url}/#board={board}") as (page, watch):
        mode = page.locator("#live-mode")
        expect(mode).to_have_attribute("data-mode", "websocket")
        expect(mode).to_have_attribute("data-channel", f"/leaderboards/{board}/all-time")
        expect(mode).to_have_text("Live: WebSocket")
        players = page.locator("#entries tbody tr td.player")
        expect(players).to_have_text(["ada"])
        page.evaluate("window.__sameDocument = true")  # a reload would drop it

        # Idle: more than one polling period without a single read of the entries.
        page.wait_for_timeout(500)  # the one read made on subscribe_success settles
        idle_from = time.monotonic()
        page.wait_for_timeout(2_500)
        assert watch.entries_since(idle_from) == [], "the page polled with the socket up"

        status, body = _submit(stack, board, server, "zed", 500, name="Zed")
        answered = time.monotonic()
        assert status == 200, body
        _wait_for_row(page, "zed", timeout_ms=5_000)
        shown_after = time.monotonic() - answered
        assert shown_after < LIVE_WITHIN_S, f"shown {shown_after:.3f} s after the API answered"

        expect(players).to_have_text(["zed", "ada"])
        expect(page.locator("#entries tbody tr td.score")).to_have_text(["500", "120"])
        expect(page.locator("#entries tbody tr td.name")).to_have_text(["Zed", ""])
        expect(page.locator("#entries-total")).to_have_text("2")
        # Straight from the message's `top`: no read of the entries at all.
        assert watch.entries_since(idle_from) == []
        assert watch.loads == 1, "the page was reloaded"
        assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
        assert watch.sockets == [realtime_url]
        assert watch.errors == [], watch.errors


def test_demo_page_polls_while_the_websocket_is_unreachable_then_goes_live(
    chromium: str, shared_stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The meta names a port nobody listens on: the page says it polls, and does, every 2 s.
    When that port starts answering (a forwarder to the real WebSocket), it reconnects on its
    own and stops polling."""
    from playwright.sync_api import expect

    stack, board = shared_stack, f"demo-poll-{uuid.uuid4().hex[:8]}"
    server = _create_board(stack, board)
    _submit(stack, board, server, "ada", 120)
    real = _served_live_config(stack)
    closed = free_port()
    unreachable = dict(real, realtime_url=f"ws://127.0.0.1:{closed}/event/realtime")
    # The gateway itself serves the page with that meta. (Rewriting the page with page.route
    # would not do: a document fulfilled by the test is not loopback-served, and Chromium's
    # Local Network Access checks then refuse its socket to 127.0.0.1 once the port answers.)
    assert stack.gateway is not None
    monkeypatch.setattr(stack.gateway.api, "live", unreachable)
    assert _served_live_config(stack) == unreachable

    with _open_page(chromium, f"{stack.url}/#board={board}") as (page, watch):
        mode = page.locator("#live-mode")
        expect(mode).to_have_attribute("data-mode", "polling")
        expect(mode).to_have_text("Live: polling every 2 s (WebSocket unavailable)")
        # the first read: a cold read worker on a loaded machine can take seconds
        expect(page.locator("#entries tbody tr td.player")).to_have_text(["ada"], timeout=15_000)
        page.evaluate("window.__sameDocument = true")

        status, body = _submit(stack, board, server, "bob", 130)
        answered = time.monotonic()
        assert status == 200, body
        _wait_for_row(page, "bob", timeout_ms=6_000)
        shown_after = time.monotonic() - answered
        assert shown_after < POLLED_WITHIN_S, f"polled in only after {shown_after:.3f} s"
        assert watch.entries_since(answered), "shown without a read: not by polling"
        expect(page.locator("#entries tbody tr td.player")).to_have_text(["bob", "ada"])
        assert len(watch.sockets) >= 2, f"no reconnect attempts: {watch.sockets}"
        assert set(watch.sockets) == {unreachable["realtime_url"]}

        # The socket comes back: the page finds it (backoff of at most 15 s), stops polling.
        with _Forwarder(closed, urlsplit(real["realtime_url"]).port or 0):
            expect(mode).to_have_attribute("data-mode", "websocket", timeout=20_000)
            expect(mode).to_have_attribute("data-channel", f"/leaderboards/{board}/all-time")
            page.wait_for_timeout(500)
            idle_from = time.monotonic()
            page.wait_for_timeout(2_500)
            assert watch.entries_since(idle_from) == [], "still polling with the socket up"
            status, body = _submit(stack, board, server, "cy", 140)
            answered = time.monotonic()
            assert status == 200, body
            _wait_for_row(page, "cy", timeout_ms=5_000)
            shown_after = time.monotonic() - answered
            assert shown_after < LIVE_WITHIN_S, f"shown {shown_after:.3f} s after the answer"
            assert watch.entries_since(idle_from) == []
        expect(page.locator("#entries tbody tr td.player")).to_have_text(["cy", "bob", "ada"])
        assert watch.loads == 1, "the page was reloaded"
        assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
        assert watch.errors == [], watch.errors


def _tiebreakers_and_rank_movement(page: Any, stack: LocalStack, admin: str, server: str) -> None:
    """Issue 23: the page creates the speedrun board (tie-breakers time_ms, then deaths, both
    lower is better), sends each column's value with a score, shows the values in the table
    ordered by them, and tells rank movement: in the submission's standings from
    `previous_rank`, and on the live entry that moved from the message's `changed`."""
    from playwright.sync_api import expect

    page.click("#create-details summary")  # closed since the first board was created
    page.fill("#admin-token", admin)
    page.select_option("#demo-preset", "speedrun")
    expect(page.locator("#preset-hint")).to_contain_text(SPEEDRUN)
    page.click("#create-demo")
    expect(page.locator("#create-result")).to_have_attribute("data-status", "201")
    expect(page.locator("#board")).to_have_value(SPEEDRUN)
    status, board = _http(stack, "GET", f"/boards/{SPEEDRUN}", None, "")
    assert status == 200 and board["tiebreakers"] == SPEEDRUN_TIEBREAKERS, board
    expect(page.locator("#tiebreaker-fields input")).to_have_count(2)
    expect(page.locator("label[for=tb-time_ms]")).to_have_text(
        "time_ms (tie-breaker, lower is better)"
    )
    expect(page.locator("#entries thead th")).to_have_text(
        ["Rank", "Move", "Player", "Score", "time_ms", "deaths", "Name"]
    )
    mode = page.locator("#live-mode")
    expect(mode).to_have_attribute("data-channel", f"/leaderboards/{SPEEDRUN}/all-time")
    expect(mode).to_have_attribute("data-mode", "websocket")

    standing = page.locator("#standings tbody tr[data-period=all-time][data-region='']")
    rows = page.locator("#entries tbody tr")
    page.fill("#token", server)

    def submit(player: str, score: str, time_ms: str, deaths: str) -> None:
        page.fill("#player", player)
        page.fill("#score", score)
        page.fill("#tb-time_ms", time_ms)
        page.fill("#tb-deaths", deaths)
        page.fill("#name", player.title())
        page.click("#submit")
        expect(page.locator("#result")).to_have_attribute("data-status", "200")
        expect(page.locator("#result")).to_contain_text(f"{player}: applied")

    # Two equal scores: the faster time ranks first, whatever the order of arrival.
    submit("ada", "3", "90000", "1")
    expect(standing.locator("td.move")).to_have_text("new")
    submit("bob", "3", "81234", "2")
    expect(standing.locator("td.rank")).to_have_text("1")
    expect(standing.locator("td.move")).to_have_text("new")
    expect(standing.locator("td[data-column=time_ms]")).to_have_text("81234")
    expect(rows.locator("td.player")).to_have_text(["bob", "ada"])
    expect(rows.locator("td.rank")).to_have_text(["1", "2"])
    expect(rows.locator("td.score")).to_have_text(["3", "3"])
    expect(rows.locator("td[data-column=time_ms]")).to_have_text(["81234", "90000"])
    expect(rows.locator("td[data-column=deaths]")).to_have_text(["2", "1"])
    # The live message with bob has come (so ada's next change is in a later one): it marks
    # him new; the HTTP read after the submission alone would not.
    expect(page.locator("#entries tbody tr[data-player=bob] td.move")).to_have_text("new")

    # Ada runs it faster, with the same score: a better tuple on a `best` board, so she moves up.
    submit("ada", "3", "80000", "0")
    expect(standing.locator("td.rank")).to_have_text("1")
    expect(standing.locator("td.move")).to_have_text("up 1 place")
    expect(standing.locator("td.move")).to_have_class("move up")
    expect(standing.locator("td[data-column=time_ms]")).to_have_text("80000")
    expect(rows.locator("td.player")).to_have_text(["ada", "bob"])
    expect(rows.locator("td[data-column=time_ms]")).to_have_text(["80000", "81234"])
    expect(rows.locator("td[data-column=deaths]")).to_have_text(["0", "2"])
    # Live: the message's `changed` says ada came from rank 2; bob, passed, is not marked.
    expect(rows.locator("td.move")).to_have_text(["up 1 place", ""])


LEAGUE = "demo-league"
LADDER = "demo-ladder"
DEMO_PLAYER = "you"  # the player the league preset seeds and follows


def test_the_demo_page_shows_a_league_and_score_tiers(
    chromium: str, shared_stack: LocalStack, tmp_path: Path
) -> None:
    """The league preset seeds its players and follows the demo player: the league panel shows
    their tier, their group as the API ranks it, each row in its zone, the promotion and
    relegation lines between the rows the API's lines fall between, and the tiers with their
    group counts; a group picked by id; a score through the form re-ranks the group. The ladder
    preset's entries carry their score tier as a badge. A board without either shows neither."""
    from playwright.sync_api import expect

    stack = shared_stack
    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    server = tokens.mint(secret, "demo-server", "leaderboard/server")
    started = time.monotonic()

    def get(path: str) -> dict[str, Any]:
        status, body = _http(stack, "GET", path, None, None)
        assert status == 200, (path, body)
        return body

    with _open_page(chromium, stack.url + "/") as (page, watch):
        panel = page.locator("#league-panel")
        _open_create_form(page)  # folded away once the shared stack has boards
        page.fill("#admin-token", admin)
        page.select_option("#demo-preset", "league")
        expect(page.locator("#preset-hint")).to_contain_text(LEAGUE)
        expect(page.locator("#preset-hint")).to_contain_text("A league keeps one shard.")
        expect(page.locator("#demo-shards")).to_be_disabled()
        page.click("#create-demo")
        result = page.locator("#create-result")
        expect(result).to_have_attribute("data-status", "201")
        expect(result).to_contain_text("9 of 9 players seeded")
        expect(page.locator("#board")).to_have_value(LEAGUE)
        expect(panel).to_be_visible()
        expect(page.locator("#find-player")).to_have_value(DEMO_PLAYER)
        board = get(f"/boards/{LEAGUE}")
        assert board["league"]["start_tier"] == "silver" and board["score_tiers"] is None

        # The tiers, highest first, with the API's counts; the demo player's tier marked.
        overview = get(f"/boards/{LEAGUE}/league")
        mine = get(f"/boards/{LEAGUE}/league/players/{DEMO_PLAYER}")
        tiers = list(reversed(overview["tiers"]))
        tier_rows = page.locator("#league-tiers tbody tr")
        expect(tier_rows.locator("td.tier-name")).to_have_text([t["tier"] for t in tiers])
        expect(tier_rows.locator("td.groups")).to_have_text([str(t["groups"]) for t in tiers])
        expect(tier_rows.locator("td.players")).to_have_text([str(t["players"]) for t in tiers])
        expect(page.locator("#league-tiers tbody tr.me td.tier-name")).to_have_text(mine["tier"])
        expect(page.locator("#league-season")).to_contain_text(overview["season"]["period"])

        # My group: the player's tier, rank and zone; the rows and the lines as the API has them.
        me = page.locator("#league-me")
        expect(me.locator("[data-field=tier]")).to_have_text(mine["tier"])
        expect(me.locator("[data-field=group]")).to_have_text(mine["group_id"])
        expect(me.locator("[data-field=rank]")).to_have_text(f"{mine['rank']} of {mine['players']}")
        assert mine["promotion_line"] is not None and mine["relegation_line"] is not None, mine
        _expect_league_group(page, mine, DEMO_PLAYER)
        expect(page.locator("#league-group-caption")).to_contain_text(f"with {DEMO_PLAYER}")
        # The zones are told apart by colour as well as by text.
        colours = page.evaluate(
            """() => Object.fromEntries(["promotion", "safe", "relegation"].map((zone) => [zone,
                 getComputedStyle(document.querySelector(
                   `#league-group tbody tr[data-zone=${zone}]:not(.me)`)).backgroundColor]))"""
        )
        assert len(set(colours.values())) == 3, colours

        # Any group by id, from the picker (a labelled select).
        expect(page.locator("label[for=league-group-pick]")).to_have_text("Group")
        picks = page.locator("#league-group-pick option")
        groups = [f"{t['tier']}-{n}" for t in tiers for n in range(1, t["groups"] + 1)]
        expect(picks).to_have_text([f"The group with {DEMO_PLAYER}", *groups])
        other = groups[groups.index(mine["group_id"]) + 1]  # the next one in the list
        page.focus("#league-group-pick")
        page.keyboard.press("ArrowDown")  # from the player's group to the next option
        page.keyboard.press("ArrowDown")
        expect(page.locator("#league-group-pick")).to_have_value(other)
        expect(page.locator("#league-group")).to_have_attribute("data-group", other)
        _expect_league_group(page, get(f"/boards/{LEAGUE}/league/groups/{other}"), DEMO_PLAYER)
        page.select_option("#league-group-pick", "")
        expect(page.locator("#league-group")).to_have_attribute("data-group", mine["group_id"])

        # A score through the form: its place in the league, and the group re-ranked.
        best = max(e["score"] for e in mine["entries"]) + 10
        page.fill("#token", server)
        page.fill("#player", DEMO_PLAYER)
        page.fill("#score", str(best))
        page.click("#submit")
        expect(page.locator("#result")).to_have_attribute("data-status", "200")
        expect(page.locator("#result")).to_contain_text(
            f"league group {mine['group_id']} ({mine['tier']})"
        )
        expect(me.locator("[data-field=rank]")).to_have_text(f"1 of {mine['players']}")
        moved = get(f"/boards/{LEAGUE}/league/players/{DEMO_PLAYER}")
        assert moved["rank"] == 1 and moved["zone"] == "promotion", moved
        _expect_league_group(page, moved, DEMO_PLAYER)
        # A score from elsewhere: the live message makes the page read the league again.
        rival = next(e["player_id"] for e in moved["entries"] if e["zone"] == "relegation")
        status, body = _submit(stack, LEAGUE, server, rival, best + 10)
        assert status == 200 and body["league"]["group_id"] == mine["group_id"], body
        assert get(f"/boards/{LEAGUE}/league/players/{rival}")["rank"] == 1
        expect(me.locator("[data-field=rank]")).to_have_text(f"2 of {mine['players']}")
        _expect_league_group(
            page, get(f"/boards/{LEAGUE}/league/players/{DEMO_PLAYER}"), DEMO_PLAYER
        )
        # The league board has no score tiers: no tier column.
        expect(page.locator("#entries thead th")).to_have_text(
            ["Rank", "Move", "Player", "Score", "Name"]
        )
        shot = tmp_path / "league.png"
        panel.screenshot(path=str(shot))
        page.screenshot(path=str(tmp_path / "league-page.png"), full_page=True)

        # The ladder: score tiers as badges on its entries and the player card.
        _open_create_form(page)
        page.select_option("#demo-preset", "ladder")
        page.click("#create-demo")
        expect(result).to_have_attribute("data-status", "201")
        expect(result).to_contain_text("5 of 5 players seeded")
        expect(page.locator("#board")).to_have_value(LADDER)
        expect(panel).to_be_hidden()  # no league
        expect(page.locator("#entries thead th")).to_have_text(
            ["Rank", "Move", "Player", "Score", "Tier", "Name"]
        )
        entries = get(f"/boards/{LADDER}/entries")["entries"]
        rows = page.locator("#entries tbody tr")
        expect(rows.locator("td.player")).to_have_text([e["player_id"] for e in entries])
        expect(rows.locator("td.tier")).to_have_text([e["tier"] or "\u2013" for e in entries])
        expect(rows.locator("td.tier .tier-badge")).to_have_count(len(entries))
        page.fill("#find-player", entries[-1]["player_id"])
        page.click("#find")
        expect(page.locator("#player-card [data-field=tier]")).to_have_text(entries[-1]["tier"])
        expect(page.locator("#card-tier")).to_be_visible()
        assert watch.errors == [], watch.errors
    assert shot.read_bytes().startswith(PNG_MAGIC)
    assert time.monotonic() - started < 40


def _expect_league_group(page: Any, group: dict[str, Any], player: str) -> None:
    """The group table shows `group` (an answer of the API) as it is: its players in order with
    their ranks, scores and zones, `player`'s row marked, and one line row for each of the
    group's lines, between the last rank promoted and the next, and between the last rank
    that stays and the first relegated."""
    from playwright.sync_api import expect

    entries = group["entries"]
    rows = page.locator("#league-group tbody tr[data-testid=league-row]")
    expect(rows.locator("td.player")).to_have_text([e["player_id"] for e in entries])
    expect(rows.locator("td.rank")).to_have_text([str(e["rank"]) for e in entries])
    expect(rows.locator("td.score")).to_have_text([str(e["score"]) for e in entries])
    expect(rows.locator("td.zone")).to_have_text([e["zone"] for e in entries])
    for n, entry in enumerate(entries):
        expect(rows.nth(n)).to_have_class(re.compile(rf"\bzone-{entry['zone']}\b"))
    mine = [e["player_id"] for e in entries if e["player_id"] == player]
    expect(page.locator("#league-group tbody tr.me td.player")).to_have_text(mine)

    # Every row in order: an entry's rank, or the line it is.
    shown = page.locator("#league-group tbody tr").evaluate_all(
        "rows => rows.map((r) => r.dataset.line ? r.dataset.line : Number(r.dataset.rank))"
    )
    lines = {
        kind: group[f"{kind}_line"]
        for kind in ("promotion", "relegation")
        if group[f"{kind}_line"] is not None
    }
    assert sorted(x for x in shown if isinstance(x, str)) == sorted(lines), (shown, group)
    for kind, line in lines.items():
        at = shown.index(kind)
        before = [x for x in shown[:at] if isinstance(x, int)]
        after = [x for x in shown[at + 1 :] if isinstance(x, int)]
        if kind == "promotion":  # ranks 1..line go up: the line follows the last of them
            assert all(r <= line for r in before) and all(r > line for r in after), (kind, shown)
        else:  # ranks from the line on go down: the line comes before the first of them
            assert all(r < line for r in before) and all(r >= line for r in after), (kind, shown)
    expect(page.locator("#league-group tr[data-line]")).to_have_count(len(lines))
    for kind in lines:
        expect(page.locator(f"#league-group tr[data-line={kind}]")).to_be_visible()


# ---- helpers --------------------------------------------------------------------------------


def _create_board(stack: LocalStack, board: str) -> str:
    """Create a board of the demo arena's rules through the API; returns a game server's
    token."""
    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    status, body = _http(stack, "PUT", f"/boards/{board}", DEMO_BOARD, admin)
    assert status == 201, body
    return tokens.mint(secret, "demo-server", "leaderboard/server")


def _submit(
    stack: LocalStack, board: str, token: str, player: str, score: int, name: str | None = None
) -> tuple[int, dict]:
    body: dict[str, Any] = {"player_id": player, "score": score}
    if name is not None:
        body["metadata"] = {"name": name}
    return _http(stack, "POST", f"/boards/{board}/scores", body, token)


def _served_live_config(stack: LocalStack) -> dict[str, str]:
    """The live-updates config the gateway puts in the page's `leaderboard-live` meta."""
    with urllib.request.urlopen(stack.url + "/", timeout=10) as response:
        page = response.read().decode()
    found = re.search(r'<meta name="leaderboard-live" content="([^"]*)">', page)
    assert found, "the gateway serves the demo page without its leaderboard-live meta"
    config: dict[str, str] = json.loads(html.unescape(found.group(1)))
    assert config["realtime_url"].startswith("ws://"), config
    return config


def _wait_for_row(page: Any, player: str, timeout_ms: int) -> None:
    """Return as soon as the entries table has a row for `player` (checked every 20 ms)."""
    page.wait_for_function(
        "(player) => [...document.querySelectorAll('#entries tbody tr')]"
        ".some((row) => row.dataset.player === player)",
        arg=player,
        polling=20,
        timeout=timeout_ms,
    )


class _Watch:
    """What a page does on the network and in its lifetime, as the assertions need it."""

    def __init__(self, page: Any) -> None:
        self.entries: list[tuple[float, str]] = []  # (monotonic time, url) of entries reads
        self.sockets: list[str] = []
        self.errors: list[str] = []
        self.loads = 0
        page.on("request", self._request)
        page.on("websocket", lambda ws: self.sockets.append(ws.url))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("load", lambda _page: self._loaded())

    def _request(self, request: Any) -> None:
        if request.method == "GET" and "/entries?" in request.url:
            self.entries.append((time.monotonic(), request.url))

    def _loaded(self) -> None:
        self.loads += 1

    def entries_since(self, moment: float) -> list[str]:
        return [url for at, url in self.entries if at >= moment]


class _Forwarder:
    """Listens on `port` and pipes every connection to `target`: a WebSocket endpoint that was
    unreachable comes back, as after a restart."""

    def __init__(self, port: int, target: int) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", port))
        self._listener.settimeout(0.1)
        self._open: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="forwarder", daemon=True)

    def __enter__(self) -> _Forwarder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join(5)
        self._listener.close()
        for sock in self._open:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", self._target), timeout=5)
            upstream.settimeout(None)
            self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"^{pattern}$")


def _open_create_form(page: Any) -> None:
    page.locator("#create-details").evaluate("details => { details.open = true; }")


@contextmanager
def _open_page(chromium: str, url: str) -> Iterator[tuple[Any, _Watch]]:
    """The page at `url` in a fresh browser context, watched from its first request."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.set_default_timeout(6_000)
            watch = _Watch(page)
            page.goto(url)
            yield page, watch
        finally:
            browser.close()


def test_the_demo_page_creates_and_watches_a_sharded_board(
    chromium: str, shared_stack: LocalStack
) -> None:
    """Issue 22: the page creates a board of 4 shards and shows it like any other, live."""
    from playwright.sync_api import expect

    stack = shared_stack

    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    server = tokens.mint(secret, "demo-server", "leaderboard/server")
    sharded = "demo-arena-sharded"
    with _open_page(chromium, stack.url + "/") as (page, watch):
        _open_create_form(page)  # folded away once the shared stack has boards
        page.fill("#admin-token", admin)
        page.fill("#demo-shards", "4")
        page.click("#create-demo")
        expect(page.locator("#create-result")).to_have_attribute("data-status", "201")
        expect(page.locator("#board")).to_have_value(sharded)
        status, board = _http(stack, "GET", f"/boards/{sharded}", None, None)
        assert status == 200 and board["shards"] == 4
        mode = page.locator("#live-mode")
        expect(mode).to_have_attribute("data-channel", f"/leaderboards/{sharded}/all-time")
        expect(mode).to_have_attribute("data-mode", "websocket")

        items = [
            {"player_id": f"p{n}", "score": n * 10, "metadata": {"name": f"P{n}"}}
            for n in range(12)
        ]
        status, body = _http(
            stack, "POST", f"/boards/{sharded}/scores/batch", {"submissions": items}, server
        )
        assert status == 200 and {r["status"] for r in body["results"]} == {200}, body
        rows = page.locator("#entries tbody tr")
        expect(rows.locator("td.player")).to_have_text(
            [f"p{n}" for n in range(11, 1, -1)], timeout=6_000
        )  # the top 10, live
        expect(rows.locator("td.rank")).to_have_text([str(r) for r in range(1, 11)])
        expect(page.locator("#entries-total")).to_have_text("12")

        page.fill("#token", server)
        page.fill("#player", "zed")
        page.fill("#score", "1000")
        page.click("#submit")
        expect(page.locator("#result")).to_have_attribute("data-status", "200")
        expect(page.locator("#standings td.rank").first).to_have_text("—")  # one shard: no rank
        expect(rows.locator("td.player").first).to_have_text("zed", timeout=6_000)
        assert watch.errors == [], watch.errors


def test_the_demo_page_shows_a_team_board(chromium: str, shared_stack: LocalStack) -> None:
    """The page creates the clan wars board (teams: sum), sends a score's team from its form,
    ranks the teams, opens a team's members ranked by what each added to it, keeps that view
    across a reload, and reads the team view again on each live message (which carries
    players only)."""
    from playwright.sync_api import expect

    stack = shared_stack

    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    server = tokens.mint(secret, "demo-server", "leaderboard/server")
    started = time.monotonic()

    def post(player: str, score: int, team: str | None, region: str | None = None) -> None:
        body: dict[str, Any] = {"player_id": player, "score": score}
        if team is not None:
            body["team_id"] = team
        if region is not None:
            body["region"] = region
        status, answer = _http(stack, "POST", f"/boards/{CLANS}/scores", body, server)
        assert status == 200 and answer["applied"], answer

    with _open_page(chromium, stack.url + "/") as (page, watch):
        expect(page.locator("#team-field")).to_be_hidden()
        _open_create_form(page)  # folded away once the shared stack has boards
        page.fill("#admin-token", admin)
        page.select_option("#demo-preset", "clans")
        expect(page.locator("#preset-hint")).to_contain_text(CLANS)
        expect(page.locator("#preset-hint")).to_contain_text("one shard")
        expect(page.locator("#demo-shards")).to_be_disabled()  # no teams on a sharded board
        page.click("#create-demo")
        expect(page.locator("#create-result")).to_have_attribute("data-status", "201")
        expect(page.locator("#board")).to_have_value(CLANS)
        status, board = _http(stack, "GET", f"/boards/{CLANS}", None, None)
        assert status == 200, board
        assert (board["teams"], board["mode"], board["periods"], board["shards"]) == (
            "sum",
            "increment",
            ["all-time", "daily", "weekly"],
            1,
        ), board
        expect(page.locator("#team-field")).to_be_visible()
        expect(page.locator("label[for=team]")).to_contain_text("Team")
        players_button, teams_button = page.locator("#view-players"), page.locator("#view-teams")
        expect(page.locator("#view-switch")).to_be_visible()
        expect(players_button).to_have_attribute("aria-pressed", "true")
        mode = page.locator("#live-mode")
        expect(mode).to_have_attribute("data-mode", "websocket")
        expect(mode).to_have_attribute("data-channel", f"/leaderboards/{CLANS}/all-time")

        # Dee plays for blue, then for red: each team keeps what she added to it.
        post("bob", 30, "red", "NA")
        post("cy", 70, "blue", "EU")
        post("dee", 20, "blue")
        post("dee", 15, "red")
        post("eve", 10, None)  # no team: counts for no team
        page.fill("#token", server)
        page.fill("#player", "ada")
        page.fill("#score", "50")
        page.fill("#team", "red")
        page.select_option("#submit-region", "EU")
        page.fill("#name", "Ada")
        page.click("#submit")
        expect(page.locator("#result")).to_have_attribute("data-status", "200")
        expect(page.locator("#result")).to_contain_text("ada: applied")
        expect(page.locator("#result")).to_contain_text("team red")
        rows = page.locator("#entries tbody tr")
        expect(rows.locator("td.player")).to_have_text(["cy", "ada", "dee", "bob", "eve"])
        expect(rows.locator("td.score")).to_have_text(["70", "50", "35", "30", "10"])

        # The team ranking: the sums of the members' contributions.
        teams_button.click()
        expect(teams_button).to_have_attribute("aria-pressed", "true")
        expect(players_button).to_have_attribute("aria-pressed", "false")
        expect(page.locator("#entries thead th")).to_have_text(["Rank", "Team", "Score"])
        team_rows = page.locator("#entries tbody tr[data-testid=team-row]")
        expect(team_rows.locator("td.team")).to_have_text(["red", "blue"])
        expect(team_rows.locator("td.rank")).to_have_text(["1", "2"])
        expect(team_rows.locator("td.score")).to_have_text(["95", "90"])
        expect(page.locator("#entries-total-label")).to_have_text("Teams")
        expect(page.locator("#entries-total")).to_have_text("2")
        expect(page.locator("#entries caption")).to_contain_text("Teams: Demo Clan Wars")
        assert "view=teams" in page.url, page.url
        # Paging, one team a page; a region ranks what was scored there.
        page.fill("#limit", "1")
        page.press("#limit", "Tab")
        expect(team_rows.locator("td.team")).to_have_text(["red"])
        expect(page.locator("#page-info")).to_have_text("1\u20131 of 2")
        page.click("#next")
        expect(team_rows.locator("td.team")).to_have_text(["blue"])
        expect(team_rows.locator("td.rank")).to_have_text(["2"])
        expect(page.locator("#next")).to_be_disabled()
        page.fill("#limit", "10")
        page.press("#limit", "Tab")
        page.select_option("#region", "EU")
        expect(team_rows.locator("td.team")).to_have_text(["blue", "red"])
        expect(team_rows.locator("td.score")).to_have_text(["70", "50"])
        page.select_option("#region", "")
        expect(team_rows.locator("td.team")).to_have_text(["red", "blue"])

        # A team's members, ranked by what each added to it (dee: 15 of her 35).
        page.click("#entries tbody button[data-team=red]")
        expect(page.locator("#team-nav")).to_be_visible()
        expect(page.locator("#team-name")).to_have_text("red")
        expect(page.locator("#back-to-teams")).to_be_focused()
        expect(page.locator("#entries thead th")).to_have_text(
            ["Rank", "Player", "Contribution", "Name"]
        )
        members = page.locator("#entries tbody tr[data-testid=member-row]")
        expect(members.locator("td.player")).to_have_text(["ada", "bob", "dee"])
        expect(members.locator("td.rank")).to_have_text(["1", "2", "3"])
        expect(members.locator("td.score")).to_have_text(["50", "30", "15"])
        expect(members.locator("td.name")).to_have_text(["Ada", "", ""])
        expect(page.locator("#entries-total-label")).to_have_text("Members")
        expect(page.locator("#entries-total")).to_have_text("3")
        assert "team=red" in page.url, page.url

        # A reload shows the same view, from the URL.
        page.reload()
        expect(page.locator("#team-name")).to_have_text("red")
        expect(members.locator("td.player")).to_have_text(["ada", "bob", "dee"])
        expect(teams_button).to_have_attribute("aria-pressed", "true")
        expect(mode).to_have_attribute("data-mode", "websocket")
        expect(mode).to_have_attribute("data-channel", f"/leaderboards/{CLANS}/all-time")
        page.evaluate("window.__sameDocument = true")

        # Live: a message names players only; the members shown are read again.
        post("bob", 40, "red")
        answered = time.monotonic()
        expect(members.locator("td.player")).to_have_text(["bob", "ada", "dee"])
        expect(members.locator("td.score")).to_have_text(["70", "50", "15"])
        assert any("team=red" in url for url in watch.entries_since(answered))

        # Back to the teams, the team's link focused; a live message re-ranks them.
        page.click("#back-to-teams")
        expect(page.locator("#team-nav")).to_be_hidden()
        expect(team_rows.locator("td.team")).to_have_text(["red", "blue"])
        expect(team_rows.locator("td.score")).to_have_text(["135", "90"])
        expect(page.locator("#entries tbody button[data-team=red]")).to_be_focused()
        assert "team=" not in page.url and "view=teams" in page.url, page.url
        post("cy", 60, "blue")
        answered = time.monotonic()
        expect(team_rows.locator("td.team")).to_have_text(["blue", "red"])
        expect(team_rows.locator("td.score")).to_have_text(["150", "135"])
        assert any("by=team" in url for url in watch.entries_since(answered))
        assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"

        # And the players again.
        players_button.click()
        expect(page.locator("#view-bar")).to_be_visible()
        expect(rows.locator("td.player")).to_have_text(["cy", "bob", "ada", "dee", "eve"])
        expect(page.locator("#entries-total-label")).to_have_text("Entries")
        assert "view=" not in page.url, page.url
        assert watch.errors == [], watch.errors
    assert time.monotonic() - started < 40


SEASONS = "demo-seasons"


def test_the_demo_page_ends_a_season_and_shows_its_event(
    chromium: str, shared_stack: LocalStack
) -> None:
    """Issue 24: the page creates a board of seasons (custom periods on a Berlin Sunday-evening
    schedule, with reward tiers), ends the current season with its admin button, and shows the
    period.ended event the stack's rollover then emits, as the stack's webhook receiver got
    it, signature checked."""
    from playwright.sync_api import expect

    stack = shared_stack

    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    server = tokens.mint(secret, "demo-server", "leaderboard/server")
    with _open_page(chromium, stack.url + "/") as (page, watch):
        expect(page.locator("#events-panel")).to_be_visible()  # the local stack's receiver
        _open_create_form(page)  # folded away once the shared stack has boards
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


def test_the_demo_page_shows_a_recurring_tournaments_window(
    chromium: str, shared_stack: LocalStack
) -> None:
    """The cup preset makes a recurring tournament: the tournament panel shows the window
    GET /tournaments shows (open now, or the next) and the recurrence; other boards hide it."""
    from playwright.sync_api import expect

    stack = shared_stack
    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "demo-admin", "leaderboard/admin")
    with _open_page(chromium, stack.url + "/") as (page, _):
        _open_create_form(page)
        page.fill("#admin-token", admin)
        page.select_option("#demo-preset", "cup")
        expect(page.locator("#preset-hint")).to_contain_text("A tournament keeps one shard.")
        page.click("#create-demo")
        expect(page.locator("#create-result")).to_have_attribute("data-status", "201")
        expect(page.locator("#board")).to_have_value("demo-cup")
        panel = page.locator("#tournament-panel")
        expect(panel).to_be_visible()
        status, body = _http(stack, "GET", "/tournaments", None, None)
        assert status == 200, body
        (cup,) = [t for t in body["tournaments"] if t["board_id"] == "demo-cup"]
        assert cup["recurrence"]["cron"] == "*/10 * * * *"
        shown = page.locator("#tournament-window")
        # the window may turn over between the two reads: the page's is this one or the next
        expect(shown).to_have_attribute("data-status", re.compile("open|upcoming"))
        period = shown.get_attribute("data-period") or ""
        assert period >= cup["period"], (period, cup)
        expect(page.locator("#tournament-rules")).to_contain_text("*/10 * * * *")
        expect(page.locator("#tournament-rules")).to_contain_text("5 minutes each")
        # a board that is no tournament hides the panel
        others = page.locator("#board option").evaluate_all(
            "options => options.map(o => o.value).filter(v => v && v !== 'demo-cup')"
        )
        if others:
            page.select_option("#board", others[0])
            expect(panel).to_be_hidden()
