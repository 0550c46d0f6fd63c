"""clients/python against the local stack started as a newcomer starts it (`make run`): every
route through the sync client, each error type, retries honouring Retry-After, a board channel
that survives a cut socket and a missed message (one read, then on), a player channel, and the
asyncio client on a representative part of the same."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve
from websockets.typing import Subprotocol

from devstack import tokens
from devstack.servers import free_port
from leaderboard_client import (
    NO_RETRIES,
    AsyncLeaderboardClient,
    AsyncSubscription,
    BadRequest,
    BoardUpdate,
    Conflict,
    ConnectionFailed,
    Forbidden,
    HeaderTooLarge,
    HookUnavailable,
    LeaderboardClient,
    LeaderboardError,
    LiveConfig,
    NotFound,
    PayloadTooLarge,
    PlayerUpdate,
    RateLimited,
    ReconnectPolicy,
    RejectedByHook,
    RetryPolicy,
    Subscription,
    SubscriptionError,
    TournamentRules,
    Unauthorized,
    Unavailable,
    Unprocessable,
    _routes,
)
from tests.support.local_stack import RunningStack, Stack

pytestmark = pytest.mark.e2e

U = TypeVar("U")
QUICK = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=5.0)
# A reconnect in well under a second: the tests wait for it.
FAST_RECONNECT = ReconnectPolicy(base_delay=0.2, max_delay=1.0, poll_interval=2.0)


@dataclass
class Env:
    stack: Stack
    secret: str
    live: LiveConfig
    admin: LeaderboardClient
    server: LeaderboardClient
    public: LeaderboardClient

    def token(self, subject: str, scopes: str = "") -> str:
        return tokens.mint(self.secret, subject, scopes)

    def player(self, player_id: str, **options: Any) -> LeaderboardClient:
        return LeaderboardClient(self.stack.url, self.token(player_id), live=self.live, **options)


@pytest.fixture(scope="module")
def env(make_run: RunningStack) -> Env:
    """The clients against the worker's `make run` (each test on boards of its own)."""
    stack = make_run.stack
    secret = (stack.data_dir / "jwt-secret").read_text().strip()
    live = LiveConfig.from_stack_file(stack.data_dir / "stack.json")

    def client(token: str | None) -> LeaderboardClient:
        return LeaderboardClient(stack.url, token, live=live, retry=QUICK)

    return Env(
        stack=stack,
        secret=secret,
        live=live,
        admin=client(tokens.mint(secret, "admin", "leaderboard/admin")),
        server=client(tokens.mint(secret, "game-server", "leaderboard/server")),
        public=client(None),
    )


def next_where(sub: Subscription[U], match: Callable[[U], bool], timeout: float = 10.0) -> U:
    """The first update that matches, skipping others (messages of earlier writes)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        update = sub.get(timeout=left)
        if update is not None and match(update):
            return update
    raise AssertionError("no such update in time")


def has_player(player_id: str) -> Callable[[BoardUpdate], bool]:
    def match(update: BoardUpdate) -> bool:
        return update.message is not None and any(
            e["player_id"] == player_id for e in update.message["top"]
        )

    return match


class _ExampleDone(Exception):
    pass


def test_the_readme_example_runs(env: Env) -> None:
    """clients/python/README.md's example, as written, with this stack's URL and tokens."""
    readme = (Path(__file__).parents[2] / "clients" / "python" / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    values = {
        "ws://127.0.0.1:3001/event/realtime": env.live.realtime_url,
        "127.0.0.1:3002": env.live.http_host,
        "<live.api_key>": env.live.api_key,
        "http://127.0.0.1:3000": env.stack.url,
        "<SERVER_TOKEN>": env.server.token or "",
        "<ADMIN_TOKEN>": env.admin.token or "",
        '"arena"': f'"arena-{uuid.uuid4().hex[:8]}"',  # a board of this test's own
    }
    for placeholder in values:
        assert placeholder in code
    # In one pass: a value put in is never taken for a placeholder.
    code = re.sub("|".join(map(re.escape, values)), lambda found: values[found[0]], code)
    assert "from_stack_file" not in code, "the example works outside the service's clone"
    printed: list[tuple[Any, ...]] = []

    def record(*args: Any) -> None:
        printed.append(args)
        if args[0] == "subscribed":
            raise _ExampleDone  # the loop would follow the board for good

    with pytest.raises(_ExampleDone):
        exec(compile(code, "README.md", "exec"), {"print": record})
    assert printed[0] == ("rank", 1, "replayed", False)
    assert printed[1] == ([(1, "ada")],)
    assert printed[2][0] == "subscribed" and printed[2][1]["entries"][0]["player_id"] == "ada"


def test_the_readme_league_example_runs(env: Env) -> None:
    """clients/python/README.md's league read, as written, on a board of its own, with the
    `api` of the first example (a server token)."""
    readme = (Path(__file__).parents[2] / "clients" / "python" / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", readme, re.M | re.S)
    code = next(block for block in blocks if "get_league_player" in block)
    board = f"league-{uuid.uuid4().hex[:8]}"
    values = {"<ADMIN_TOKEN>": env.admin.token or "", '"weekly-league"': f'"{board}"'}
    for placeholder in values:
        assert placeholder in code
    code = re.sub("|".join(map(re.escape, values)), lambda found: values[found[0]], code)
    printed: list[tuple[Any, ...]] = []
    names = {"api": env.server, "print": lambda *args: printed.append(args)}
    exec(compile(code, "README.md", "exec"), names)
    assert printed == [
        ("bronze", "bronze-1", True),
        ("bronze", 1, "groups,", 1, "players"),
        ("silver", 0, "groups,", 0, "players"),
        ("gold", 0, "groups,", 0, "players"),
        (1, "promotion"),
        (1, "ada", 120, "promotion"),
        ("up to rank", 1, "go up; from rank", None, "down"),  # one player: rank 1
    ]
    assert names["group"]["entries"] == names["mine"]["entries"]


# Routes ----------------------------------------------------------------------------------


def test_board_routes(env: Env) -> None:
    created = env.admin.put_board("pyc-boards", {"mode": "best", "regions": ["EU", "NA"]})
    assert created["board_id"] == "pyc-boards" and created["regions"] == ["EU", "NA"]
    updated = env.admin.put_board("pyc-boards", {"title": "Py Boards"})
    assert updated["title"] == "Py Boards" and updated["mode"] == "best"  # merged
    assert env.public.get_board("pyc-boards") == updated
    assert "pyc-boards" in [b["board_id"] for b in env.public.list_boards()["boards"]]
    periods = env.public.list_periods("pyc-boards")["periods"]
    assert [p["kind"] for p in periods] == ["all-time", "weekly"]
    health = env.public.health()
    assert health["status"] == "ok" and health["unreachable"] == []


def test_submissions_and_reads(env: Env) -> None:
    board = "pyc-reads"
    env.admin.put_board(board, {"mode": "best", "regions": ["EU"]})
    first = env.server.submit_score(board, 120, player_id="ada", region="EU")
    assert first["applied"] and first["standings"][0]["rank"] == 1
    # The same key and body replays the first answer: what makes a client's retry safe.
    keyed = env.server.submit_score(board, 90, player_id="bob", idempotency_key="pyc-bob-1")
    again = env.server.submit_score(board, 90, player_id="bob", idempotency_key="pyc-bob-1")
    assert again["event_id"] == keyed["event_id"] and again["version"] == keyed["version"]
    # The result says which answer was a replay, and the key each was sent with.
    assert (keyed["replayed"], keyed["idempotency_key"]) == (False, "pyc-bob-1")
    assert (again["replayed"], again["idempotency_key"]) == (True, "pyc-bob-1")
    # Without a key each call makes its own: two calls are two submissions.
    one = env.server.submit_score(board, 50, player_id="cy")
    two = env.server.submit_score(board, 50, player_id="cy")
    assert one["event_id"] != two["event_id"]
    assert one["idempotency_key"] != two["idempotency_key"] and not two["replayed"]
    # The key made for a call retries it safely.
    retried = env.server.submit_score(
        board, 50, player_id="cy", idempotency_key=two["idempotency_key"]
    )
    assert retried["replayed"] and retried["event_id"] == two["event_id"]
    # A player token submits for itself (player_id left out).
    mine = env.player("dee").submit_score(board, 70, metadata={"name": "Dee"})
    assert mine["player_id"] == "dee"

    items: list[Any] = [
        {"player_id": "eve", "score": 40},
        {"player_id": "fay", "score": 30, "idempotency_key": "pyc-fay"},
        {"player_id": "gus", "score": 20, "region": "XX"},
    ]
    batch = env.server.submit_scores(board, items)
    assert [r["status"] for r in batch["results"]] == [200, 200, 422]
    replay = env.server.submit_scores(board, items[1:2])
    assert replay["results"][0]["replayed"] is True
    # Every item leaves with a key, so a batch resent after a lost answer replays.
    call = _routes.submit_scores(board, items)
    assert all(item["idempotency_key"] for item in call.body["submissions"])
    assert call.body["submissions"][1]["idempotency_key"] == "pyc-fay"

    page = env.public.get_entries(board, limit=3)
    assert page["total"] == 6
    assert [e["player_id"] for e in page["entries"]] == ["ada", "bob", "dee"]
    assert env.public.get_entries(board, around_rank=5, limit=1)["entries"][0]["player_id"] == (
        "eve"
    )
    assert env.public.get_entries(board, region="EU")["entries"][0]["player_id"] == "ada"
    player = env.public.get_player(board, "dee")
    assert (player["rank"], player["metadata"]) == (3, {"name": "Dee"})
    around = env.public.get_around(board, "cy", count=3)
    assert around["player"]["player_id"] == "cy"
    assert [e["player_id"] for e in around["entries"]] == ["dee", "cy", "eve"]
    chosen = env.public.get_players(board, ["fay", "ada", "nobody"])
    assert [e["player_id"] for e in chosen["entries"]] == ["ada", "fay"]
    assert chosen["missing"] == ["nobody"]
    standings = env.public.get_standings(board, "ada")["standings"]
    assert [(s["kind"], s["region"]) for s in standings] == [
        ("all-time", None),
        ("weekly", None),
        ("all-time", "EU"),
        ("weekly", "EU"),
    ]
    assert env.public.get_standings(board, "ada", region="EU")["standings"][-1]["region"] == "EU"
    history = env.public.get_history(board, "ada", kind="weekly", limit=5)
    assert history["results"] == [] and history["next"] is None
    # A read with a player's token reads as that player; `viewer` with a server's.
    assert env.player("ada").get_player(board, "ada")["rank"] == 1
    assert env.server.get_entries(board, viewer="ada", limit=1)["entries"][0]["rank"] == 1


def test_admin_routes(env: Env) -> None:
    board = "pyc-admin"
    env.admin.put_board(board, {"validation_hook": {"target": "no_negative"}})
    for player, score in (("ada", 10), ("bob", 20), ("cheat", 2_000_000)):
        env.server.submit_score(board, score, player_id=player)

    hidden = env.admin.hide_player(board, "cheat", reason="aimbot")
    assert hidden["hidden"] and hidden["reason"] == "aimbot"
    assert [p["player_id"] for p in env.admin.list_hidden(board)["players"]] == ["cheat"]
    assert "cheat" not in [e["player_id"] for e in env.public.get_entries(board)["entries"]]
    assert env.admin.unhide_player(board, "cheat") is None
    assert env.admin.list_hidden(board, limit=10)["players"] == []

    # The hook flagged the implausible score; the review lists it once the event is stored.
    deadline = time.monotonic() + 30
    while not (flags := env.admin.list_flags(board, verdict="flag")["flags"]):
        assert time.monotonic() < deadline, "the flagged submission was never listed"
        time.sleep(0.3)
    assert [f["player_id"] for f in flags] == ["cheat"]
    assert env.admin.list_flags(board, player_id="ada", limit=5)["flags"] == []

    assert env.admin.delete_player(board, "cheat") is None
    with pytest.raises(NotFound):
        env.public.get_player(board, "cheat")

    # Let the persister store the events, then rebuild the serving data from the record.
    deadline = time.monotonic() + 30
    while True:
        report = env.admin.rebuild_board(board)
        if report["players"] == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report["board_id"] == board and report["players"] == 2
    assert [e["player_id"] for e in env.public.get_entries(board)["entries"]] == ["bob", "ada"]


def test_custom_periods_and_tournaments(env: Env) -> None:
    season = "pyc-season"
    env.admin.put_board(season, {"periods": ["all-time", "custom"], "schedule": {}})
    env.server.submit_score(season, 5, player_id="ada")
    time.sleep(1.1)  # a period started less than a second ago cannot end yet (409)
    ended = env.admin.end_period(season)
    assert ended["ended"]["status"] == "closed" and ended["current"]["status"] == "open"
    assert ended["current"]["starts_at"] == ended["ended"]["ends_at"]
    assert "custom" in [p["kind"] for p in env.public.list_periods(season)["periods"]]

    cup = "pyc-cup"
    now = datetime.now(UTC).replace(microsecond=0)
    window = {
        "starts_at": (now - timedelta(minutes=1)).isoformat().replace("+00:00", "Z"),
        "ends_at": (now + timedelta(days=1)).isoformat().replace("+00:00", "Z"),
        "join_required": True,
    }
    env.admin.put_board(cup, {"mode": "best", "tournament": window})
    ada = env.player("ada")
    assert ada.join(cup)["joined"] is True
    assert ada.join(cup)["joined"] is False  # repeating it changes nothing
    assert env.server.join(cup, player_id="bob")["participants"] == 2
    assert ada.submit_score(cup, 10)["applied"]
    with pytest.raises(TournamentRules) as refused:
        env.player("cy").submit_score(cup, 10)
    assert refused.value.reason == "not_joined" and isinstance(refused.value, Conflict)
    listed = env.public.list_tournaments(status="open")["tournaments"]
    assert cup in [t["board_id"] for t in listed]


def test_leagues(env: Env) -> None:
    """A league board: a submission's place, the tiers with their groups, a player's group
    with the lines, a group by id, a player in no group; the asyncio client reads the same."""
    board = "pyc-league"
    rules = {
        "tiers": ["bronze", "silver", "gold"],
        "group_size": 4,
        "promote": 1,
        "relegate": 1,
        "start_tier": "silver",
    }
    created = env.admin.put_board(
        board,
        {"mode": "best", "periods": ["custom"], "schedule": {"timezone": "UTC"}, "league": rules},
    )
    assert created["league"] == {**rules, "inactive": "stay"}
    # Five players: the first four fill silver-1, the fifth opens silver-2.
    places = {
        player: env.server.submit_score(board, score, player_id=player)["league"]
        for player, score in (("ada", 50), ("bob", 40), ("cy", 30), ("dee", 20), ("eve", 10))
    }
    assert [(p["group_id"], p["placed"]) for p in places.values()] == [
        ("silver-1", True),
        ("silver-1", True),
        ("silver-1", True),
        ("silver-1", True),
        ("silver-2", True),
    ]
    season = places["ada"]["season"]
    later = env.server.submit_score(board, 45, player_id="dee")["league"]
    assert (later["group_id"], later["placed"]) == ("silver-1", False)
    assert set(later) == {"season", "tier", "group_id", "placed"}  # a write ranks no group

    league = env.public.get_league(board)
    assert league["season"]["period"] == season and league["league"] == created["league"]
    assert [(t["tier"], t["groups"], t["players"]) for t in league["tiers"]] == [
        ("bronze", 0, 0),
        ("silver", 2, 5),
        ("gold", 0, 0),
    ]
    assert env.public.get_league(board, season=season) == league

    mine = env.player("cy").get_league_player(board, "cy")
    assert (mine["group_id"], mine["tier"], mine["rank"], mine["zone"], mine["players"]) == (
        "silver-1",
        "silver",
        4,
        "relegation",
        4,
    )
    assert (mine["promotion_line"], mine["relegation_line"]) == (1, 4)
    assert [(e["rank"], e["player_id"], e["zone"]) for e in mine["entries"]] == [
        (1, "ada", "promotion"),
        (2, "dee", "safe"),
        (3, "bob", "safe"),
        (4, "cy", "relegation"),
    ]
    viewed = env.server.get_league_player(board, "cy", season=season, viewer="cy")
    assert viewed["entries"] == mine["entries"]
    group = env.public.get_league_group(board, "silver-1")
    assert group["entries"] == mine["entries"] and "player_id" not in group
    assert [e["player_id"] for e in env.public.get_league_group(board, "silver-2")["entries"]] == [
        "eve"
    ]
    with pytest.raises(NotFound):
        env.public.get_league_group(board, "silver-3")
    nobody = env.public.get_league_player(board, "nobody")
    assert (nobody["tier"], nobody["group_id"], nobody["rank"], nobody["entries"]) == (
        "silver",
        None,
        None,
        [],
    )
    env.admin.put_board("pyc-league-plain", {"mode": "best"})
    with pytest.raises(Conflict):  # a board that is no league
        env.public.get_league("pyc-league-plain")

    async def read_async() -> tuple[Any, Any, Any]:
        public = AsyncLeaderboardClient(env.stack.url)
        return (
            await public.get_league(board),
            await public.get_league_player(board, "cy"),
            await public.get_league_group(board, "silver-1", season=season),
        )

    tiers, player, by_id = asyncio.run(read_async())
    assert (tiers, player["entries"], by_id["entries"]) == (
        league,
        mine["entries"],
        group["entries"],
    )


def test_score_tiers(env: Env) -> None:
    """A board with score tiers: every standing read carries its `tier`; without, none does."""
    board = "pyc-tiers"
    tiers = {
        "by": "score",
        "tiers": [
            {"name": "gold", "score": 100},
            {"name": "silver", "score": 50},
            {"name": "bronze"},
        ],
    }
    created = env.admin.put_board(board, {"mode": "best", "score_tiers": tiers})
    assert created["score_tiers"] == tiers and created["league"] is None
    for player, score in (("ada", 120), ("bob", 50), ("cy", 49.5)):
        env.server.submit_score(board, score, player_id=player)
    page = env.public.get_entries(board)
    assert [(e["player_id"], e.get("tier")) for e in page["entries"]] == [
        ("ada", "gold"),
        ("bob", "silver"),
        ("cy", "bronze"),
    ]
    assert env.public.get_player(board, "bob").get("tier") == "silver"
    around = env.public.get_around(board, "cy", count=2)
    assert [e.get("tier") for e in around["entries"]] == ["silver", "bronze"]
    standings = env.public.get_standings(board, "ada")["standings"]
    assert {s.get("tier") for s in standings} == {"gold"}

    plain = "pyc-tiers-plain"
    env.admin.put_board(plain, {"mode": "best"})
    env.server.submit_score(plain, 120, player_id="ada")
    assert "tier" not in env.public.get_entries(plain)["entries"][0]
    assert "tier" not in env.public.get_player(plain, "ada")


# Errors and retries ----------------------------------------------------------------------


def test_each_error_type(env: Env) -> None:
    board = "pyc-errors"
    env.admin.put_board(board, {"regions": ["EU"], "validation_hook": {"target": "no_negative"}})
    env.server.submit_score(board, 1, player_id="ada", idempotency_key="pyc-err-1")

    cases: list[tuple[type[LeaderboardError], int, str | None, Callable[[], object]]] = [
        (BadRequest, 400, "bad_request", lambda: env.public.get_entries(board, limit=0)),
        (Unauthorized, 401, None, lambda: env.public.put_board(board, {})),
        (Forbidden, 403, None, lambda: env.player("ada").put_board(board, {})),
        (
            Forbidden,
            403,
            "forbidden",
            lambda: env.player("bob").submit_score(board, 1, player_id="ada"),
        ),
        (NotFound, 404, "not_found", lambda: env.public.get_board("pyc-no-such-board")),
        (
            Conflict,
            409,
            "conflict",
            lambda: env.server.submit_score(board, 2, player_id="ada", idempotency_key="pyc-err-1"),
        ),
        (
            PayloadTooLarge,
            413,
            "payload_too_large",
            lambda: env.admin.put_board(board, {"title": "x" * 20_000}),
        ),
        (
            Unprocessable,
            422,
            "unprocessable",
            lambda: env.server.submit_score(board, 1, player_id="ada", region="NA"),
        ),
        (
            RejectedByHook,
            422,
            "rejected_by_hook",
            lambda: env.server.submit_score(board, -1, player_id="ada"),
        ),
        (HeaderTooLarge, 431, None, lambda: env.public.with_token("x" * 20_000).get_board(board)),
    ]
    for kind, status, code, call in cases:
        with pytest.raises(kind) as raised:
            call()
        error = raised.value
        assert (type(error), error.status, error.code) == (kind, status, code), error
        assert error.message and isinstance(error.body, dict)
    assert issubclass(RejectedByHook, Unprocessable) and issubclass(HookUnavailable, Unavailable)

    # No answer at all: a port nothing listens on.
    nowhere = LeaderboardClient(f"http://127.0.0.1:{free_port()}", retry=NO_RETRIES)
    with pytest.raises(ConnectionFailed) as failed:
        nowhere.get_board(board)
    assert failed.value.status is None
    # The event API refuses a wrong key: no retry can help, so it is raised.
    wrong_key = LiveConfig(env.live.realtime_url, env.live.http_host, "da2-wrong")
    client = LeaderboardClient(env.stack.url, live=wrong_key)
    with client.subscribe_board(board) as sub, pytest.raises(SubscriptionError) as refused:
        sub.get(timeout=10)
    assert refused.value.code == "UnauthorizedException"


def test_503_is_retried_then_raised(env: Env) -> None:
    """A board whose hook fails closed answers 503 hook_unavailable with Retry-After: retried
    up to the policy's attempts, each after Retry-After, then raised as the typed error."""
    board = "pyc-closed-hook"
    env.admin.put_board(board, {"validation_hook": {"target": "broken", "on_failure": "closed"}})
    retries: list[tuple[int, int | None, float]] = []
    client = env.server.with_retry(RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=10))
    client.on_retry = lambda attempts, error, delay: retries.append((attempts, error.status, delay))
    with pytest.raises(HookUnavailable) as raised:
        client.submit_score(board, 1, player_id="ada")
    assert raised.value.status == 503 and raised.value.retry_after is not None
    assert [(a, s) for a, s, _ in retries] == [(1, 503), (2, 503)]
    assert all(delay >= raised.value.retry_after for *_, delay in retries)


def test_429_waits_for_retry_after(env: Env) -> None:
    board = "pyc-limited"
    env.admin.put_board(board, {"mode": "increment", "rate_limit_per_minute": 30})
    # One batch takes the player's 30 tokens; a token comes back every 2 s.
    items: list[Any] = [{"player_id": "ada", "score": 1} for _ in range(30)]
    assert {r["status"] for r in env.server.submit_scores(board, items)["results"]} == {200}

    with pytest.raises(RateLimited) as raised:
        env.server.with_retry(NO_RETRIES).submit_score(board, 1, player_id="ada")
    assert raised.value.status == 429 and 0 < (raised.value.retry_after or 0) <= 2
    # A Retry-After longer than the policy waits is raised at once, not slept through.
    impatient = env.server.with_retry(RetryPolicy(max_attempts=5, max_delay=0.1))
    started = time.monotonic()
    with pytest.raises(RateLimited):
        impatient.submit_score(board, 1, player_id="ada")
    assert time.monotonic() - started < 1

    retries: list[float] = []
    patient = env.server.with_retry(RetryPolicy(max_attempts=4, base_delay=0.05, max_delay=5))
    patient.on_retry = lambda attempts, error, delay: retries.append(delay)
    result = patient.submit_score(board, 1, player_id="ada")
    assert result["standings"][0]["score"] == 31  # counted once, though sent more than once
    assert retries and all(delay >= 1 for delay in retries)


# Live: board channels --------------------------------------------------------------------


def test_board_subscription_reconnects_and_reads_once_after_a_gap(env: Env) -> None:
    board = "pyc-live"
    env.admin.put_board(board, {"mode": "best"})
    env.server.submit_score(board, 10, player_id="p0")
    with env.public.subscribe_board(board, "all-time", reconnect=FAST_RECONNECT) as sub:
        first = sub.get(timeout=10)
        assert first is not None and first.kind == "subscribed"
        assert first.entries is not None and first.entries["entries"][0]["player_id"] == "p0"

        env.server.submit_score(board, 20, player_id="p1")
        update = next_where(sub, has_player("p1"))
        assert update.kind == "message" and not update.gap and update.entries is None

        # A reconnect: the socket is cut; the subscription connects, subscribes, reads again.
        sub.drop_connection()
        again = next_where(sub, lambda u: u.kind == "subscribed")
        assert sub.reconnects == 1 and again.entries is not None
        assert [e["player_id"] for e in again.entries["entries"]] == ["p1", "p0"]
        env.server.submit_score(board, 30, player_id="p2")
        update = next_where(sub, has_player("p2"))
        assert not update.gap and update.message is not None
        last_version = update.message["version"]

        # A gap: the next data frame is lost. The message after it names a previous version
        # that is not the last seen: one read of entries, then on as before.
        sub.drop_next_data_frames(1)
        env.server.submit_score(board, 40, player_id="p3")
        assert sub.get(timeout=2) is None  # its message was lost
        env.server.submit_score(board, 50, player_id="p4")
        update = next_where(sub, has_player("p4"))
        assert update.gap and update.message is not None and update.entries is not None
        assert update.message["previous_version"] != last_version
        assert [e["player_id"] for e in update.entries["entries"]][:2] == ["p4", "p3"]
        assert sub.refetches == 1
        env.server.submit_score(board, 60, player_id="p5")
        update = next_where(sub, has_player("p5"))
        assert not update.gap and update.entries is None
        assert sub.refetches == 1 and sub.reconnects == 1


@contextlib.contextmanager
def silent_event_api() -> Iterator[LiveConfig]:
    """An event API that acknowledges with a 300 ms connection timeout, confirms the
    subscription, then says nothing, not even a keep-alive."""

    def handler(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            ws.recv()  # connection_init
            ws.send(json.dumps({"type": "connection_ack", "connectionTimeoutMs": 300}))
            subscription = json.loads(ws.recv())
            ws.send(json.dumps({"type": "subscribe_success", "id": subscription["id"]}))
            for _ in ws:
                pass

    with serve(
        handler, "127.0.0.1", 0, subprotocols=[Subprotocol("aws-appsync-event-ws")]
    ) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.socket.getsockname()[1]
        yield LiveConfig(f"ws://127.0.0.1:{port}/event/realtime", f"127.0.0.1:{port}", "key")
        server.shutdown()
    thread.join(5)


def test_silence_past_the_connection_timeout_reconnects(env: Env) -> None:
    board = "pyc-silent"
    env.admin.put_board(board, {})
    with silent_event_api() as live:
        client = LeaderboardClient(env.stack.url, live=live)
        with client.subscribe_board(board, reconnect=FAST_RECONNECT) as sub:
            first = sub.get(timeout=5)
            assert first is not None and first.kind == "subscribed"
            started = time.monotonic()
            next_where(sub, lambda u: u.kind == "subscribed", timeout=5)
            assert time.monotonic() - started >= 0.3 and sub.reconnects == 1


def test_polls_entries_while_the_socket_cannot_connect(env: Env) -> None:
    board = "pyc-no-socket"
    env.admin.put_board(board, {})
    env.server.submit_score(board, 1, player_id="ada")
    nowhere = f"127.0.0.1:{free_port()}"
    live = LiveConfig(f"ws://{nowhere}/event/realtime", nowhere, "key")
    client = LeaderboardClient(env.stack.url, live=live)
    policy = ReconnectPolicy(base_delay=0.05, max_delay=0.2, poll_interval=0.5)
    with client.subscribe_board(board, reconnect=policy) as sub:
        polls = [sub.get(timeout=5) for _ in range(2)]
        assert [u.kind if u else None for u in polls] == ["polled", "polled"]
        assert polls[0] is not None and polls[0].entries is not None
        assert polls[0].entries["entries"][0]["player_id"] == "ada"
        assert sub.connections == 0


# Live: player channels -------------------------------------------------------------------


def test_watch_routes(env: Env) -> None:
    board = "pyc-watch-routes"
    env.admin.put_board(board, {"mode": "best", "periods": ["all-time", "weekly"]})
    env.server.submit_score(board, 10, player_id="ada")
    ada = env.player("ada")
    watch = ada.watch_player(board, "ada", period="weekly", top_n=3, friends=["bob"])
    assert watch["channel"].startswith("/players/P") and watch["period_kind"] == "weekly"
    assert (watch["rank"], watch["score"], watch["friends"]) == (1, 10, ["bob"])
    renewed = env.server.watch_player(board, "ada", period="weekly", ttl_seconds=120)
    assert renewed["friends"] == ["bob"]  # left out, the friends are kept
    assert ada.unwatch_player(board, "ada", period="weekly") is None
    with pytest.raises(Forbidden):
        env.player("bob").watch_player(board, "ada")
    with pytest.raises(Unprocessable):
        ada.watch_player(board, "ada", period="monthly")


def test_player_subscription(env: Env) -> None:
    board = "pyc-player-live"
    env.admin.put_board(board, {"mode": "best"})
    env.server.submit_score(board, 100, player_id="ada")
    env.server.submit_score(board, 50, player_id="bob")
    ada = env.player("ada")

    def about(rank: int) -> Callable[[PlayerUpdate], bool]:
        return lambda u: u.message is not None and u.message["rank"] == rank

    with ada.subscribe_player(
        board, "ada", friends=["bob"], ttl_seconds=60, reconnect=FAST_RECONNECT
    ) as sub:
        first = sub.get(timeout=10)
        assert first is not None and first.kind == "watched" and first.watch is not None
        assert first.watch["rank"] == 1

        env.server.submit_score(board, 150, player_id="bob")  # a friend passes ada
        update = next_where(sub, about(2))
        assert update.message is not None and not update.gap
        assert {"passed", "friend_passed"} <= set(update.message["events"])
        assert update.message["passed_by"][0]["player_id"] == "bob"
        assert update.message["passed_by"][0]["friend"] is True

        sub.drop_next_data_frames(1)
        env.server.submit_score(board, 200, player_id="cy")  # ada 3rd: this message is lost
        assert sub.get(timeout=2) is None
        env.server.submit_score(board, 300, player_id="dee")  # ada 4th, previous_rank 3
        update = next_where(sub, about(4))
        assert update.gap and update.standing is not None and update.standing["rank"] == 4
        env.server.submit_score(board, 400, player_id="eve")
        update = next_where(sub, about(5))
        assert not update.gap and sub.refetches == 1

        sub.drop_connection()
        again = next_where(sub, lambda u: u.kind == "watched")
        assert again.watch is not None and again.watch["rank"] == 5 and sub.reconnects == 1


def test_async_player_subscription(env: Env) -> None:
    board = "pyc-async-player"
    env.admin.put_board(board, {"mode": "best"})
    env.server.submit_score(board, 100, player_id="ada")

    async def scenario() -> None:
        ada = AsyncLeaderboardClient(env.stack.url, env.token("ada"), live=env.live)
        sub: AsyncSubscription[PlayerUpdate]
        async with ada.subscribe_player(board, "ada", top_n=1, renew_every=0.3) as sub:
            first = await sub.get(timeout=10)
            assert first is not None and first.watch is not None and first.watch["rank"] == 1
            # Renewals that find the rank unchanged tell nothing.
            assert await sub.get(timeout=1.0) is None
            assert sub.follower.renewals >= 2  # type: ignore[attr-defined]
            # Passed: a message says so, even when a renewal lands between the write and the
            # publisher's next tick (a renewal keeps the chain: no gap either).
            env.server.submit_score(board, 150, player_id="bob")
            update = await sub.get(timeout=10)
            assert update is not None and update.kind == "message" and update.message is not None
            assert {"passed", "left_top"} <= set(update.message["events"])
            assert update.message["rank"] == 2 and not update.gap
        with pytest.raises(Forbidden):
            await ada.watch_player(board, "bob")

    asyncio.run(scenario())


# The asyncio client ----------------------------------------------------------------------


def test_async_client(env: Env) -> None:
    board = "pyc-async"

    async def scenario() -> None:
        admin = AsyncLeaderboardClient(env.stack.url, env.admin.token, retry=QUICK)
        server = AsyncLeaderboardClient(env.stack.url, env.server.token, live=env.live)
        public = AsyncLeaderboardClient(env.stack.url, live=env.live)
        created = await admin.put_board(board, {"mode": "best"})
        assert created["live_channel"] == f"/leaderboards/{board.replace('_', 'U')}"
        assert (await public.get_board(board))["mode"] == "best"
        result = await server.submit_score(board, 10, player_id="a0", metadata={"n": 1})
        assert result["standings"][0]["rank"] == 1 and result["replayed"] is False
        key = result["idempotency_key"]
        again = await server.submit_score(
            board, 10, player_id="a0", metadata={"n": 1}, idempotency_key=key
        )
        assert again["replayed"] is True and again["event_id"] == result["event_id"]
        assert (await public.get_entries(board))["entries"][0]["metadata"] == {"n": 1}
        assert (await public.get_player(board, "a0"))["score"] == 10
        assert (await public.health())["status"] == "ok"
        batch = await server.submit_scores(board, [{"player_id": "a1", "score": 5}])
        assert batch["results"][0]["status"] == 200
        with pytest.raises(NotFound):
            await public.get_player(board, "nobody")
        with pytest.raises(Unauthorized):
            await public.put_board(board, {})
        with pytest.raises(BadRequest):
            await public.get_entries(board, limit=1000)

        sub: AsyncSubscription[BoardUpdate]
        async with public.subscribe_board(board, reconnect=FAST_RECONNECT) as sub:

            async def until(match: Callable[[BoardUpdate], bool]) -> BoardUpdate:
                async def wait() -> BoardUpdate:
                    async for update in sub:
                        if match(update):
                            return update
                    raise AssertionError("the subscription ended")

                return await asyncio.wait_for(wait(), 10)

            first = await until(lambda u: u.kind == "subscribed")
            assert first.entries is not None and first.entries["total"] == 2
            await server.submit_score(board, 20, player_id="a2")
            await until(has_player("a2"))
            sub.drop_connection()
            await until(lambda u: u.kind == "subscribed")
            assert sub.reconnects == 1
            await server.submit_score(board, 30, player_id="a3")
            assert not (await until(has_player("a3"))).gap
            sub.drop_next_data_frames(1)
            await server.submit_score(board, 40, player_id="a4")
            assert await sub.get(timeout=2) is None
            await server.submit_score(board, 50, player_id="a5")
            gap = await until(has_player("a5"))
            assert gap.gap and gap.entries is not None and sub.refetches == 1
            await server.submit_score(board, 60, player_id="a6")
            assert not (await until(has_player("a6"))).gap and sub.refetches == 1

    asyncio.run(scenario())
