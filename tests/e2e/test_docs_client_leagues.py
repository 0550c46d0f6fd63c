"""Leagues and score tiers, as an outside client reads the documents.

Written from docs/API.md ("Leagues", "Score tiers", "Reading", "Players' reads", "Hidden
players", "Custom periods", "Period-end events and webhooks", "Live updates"), docs/openapi.json
and the READMEs only. Every expected value comes from the small models below, which follow the
documents' rules; nothing is asked of the service to compute what it should answer. Where the
documents are ambiguous or silent, a comment marked GAP says which reading is tested.

The stack is `make run` started by the suite's `make_run` fixture (LOCAL_SCHEDULE_SCALE=0.1: the
rollover's every-minute run comes every 6 s; WEBHOOK_RETRY_BASE_SECONDS=1). Everything goes over
HTTP (and the live WebSocket); tokens are minted as `make token` mints them.

What this file found against the documents when written, and how each was settled: a
`promotion_line` of 0 where nobody is promoted (now null); a `relegation_line` inside the
promoted ranks or past the last one (now below them, and null past the last rank; API.md now
gives the rule and says a line may fall where nobody stands); `promote` above `group_size`
answered 400 (now 422, a rule between fields); and two places where the documents disagreed
or were silent, now written down in API.md: a hidden player's own submission answers the rank
they would hold, and a season's `status` on the league route is `open` or `closed` (the
archive is `GET .../periods`' to say).
"""

from __future__ import annotations

import base64
import json
import math
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.e2e

ADMIN = "leaderboard/admin"
SERVER = "leaderboard/server"

# API.md "Periods", Rollover: a custom period is archived "within a minute of its end" by a run
# every minute, every 6 s with LOCAL_SCHEDULE_SCALE=0.1. Generous slack on a busy machine.
ARCHIVE_DEADLINE = 45.0
WEBHOOK_DEADLINE = 30.0
# API.md "Custom periods": reads of period=custom follow an end "within 5 seconds".
CUSTOM_READ_LAG = 5.5
# API.md "Period-end events", The event: the namespace of the event ids.
EVENT_NAMESPACE = uuid.UUID("6f0e3a52-5d0b-4c1e-9a57-3f1d2c8b7e41")


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------


@dataclass
class Answer:
    request: str
    status: int
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None

    def __str__(self) -> str:
        return f"{self.request} -> {self.status} {self.raw[:1500].decode(errors='replace')}"


class Client:
    def __init__(self, url: str) -> None:
        self.url = url

    def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        query: dict[str, Any] | None = None,
    ) -> Answer:
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        shown = f"{method} {path}" + (f" {json.dumps(body)[:300]}" if body is not None else "")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return Answer(shown, response.status, response.read())
        except urllib.error.HTTPError as error:
            return Answer(shown, error.code, error.read())

    def get(self, path: str, token: str | None = None, **query: Any) -> Answer:
        return self.call("GET", path, token, query=query or None)


def ok(answer: Answer, status: int = 200) -> Any:
    assert answer.status == status, f"expected {status}: {answer}"
    return answer.json


def refused(answer: Answer, status: int, code: str | None = None) -> dict[str, Any]:
    assert answer.status == status, f"expected {status}: {answer}"
    body = answer.json
    assert isinstance(body, dict) and isinstance(body.get("message"), str), str(answer)
    if code is not None:
        assert body.get("code") == code, f"expected code {code}: {answer}"
    return body


class Checks:
    """Collects every difference from the model before failing, so that one wrong field does
    not hide the rest."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def equal(self, got: Any, expected: Any, label: str) -> None:
        if got != expected:
            self.failures.append(f"{label}: {diff(got, expected)}")

    def true(self, condition: bool, label: str) -> None:
        if not condition:
            self.failures.append(label)

    def done(self) -> None:
        shown = "\n".join(self.failures[:40])
        assert not self.failures, f"{len(self.failures)} differences from the model:\n{shown}"


def diff(got: Any, expected: Any) -> str:
    if isinstance(got, dict) and isinstance(expected, dict):
        keys = sorted(set(got) | set(expected))
        parts = []
        for key in keys:
            if got.get(key, "<absent>") != expected.get(key, "<absent>"):
                inner = diff(got.get(key, "<absent>"), expected.get(key, "<absent>"))
                parts.append(f"{key}: {inner}")
        return "{" + "; ".join(parts) + "}"
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        return (
            "["
            + "; ".join(
                f"#{i} {diff(g, e)}"
                for i, (g, e) in enumerate(zip(got, expected, strict=True))
                if g != e
            )
            + "]"
        )
    return f"got {json.dumps(got)} expected {json.dumps(expected)}"


@dataclass
class Env:
    api: Client
    run: str
    admin: str
    server: str
    make_run: Any

    def player(self, player_id: str) -> str:
        return self.make_run.token(player_id)

    def board(self, prefix: str) -> str:
        return f"{prefix}-{self.run}"

    def put_board(self, board_id: str, settings: dict[str, Any], status: int = 201) -> Any:
        return ok(self.api.call("PUT", f"/boards/{board_id}", self.admin, settings), status)

    def submit(self, board_id: str, player_id: str, score: Any, **more: Any) -> Answer:
        body = {"player_id": player_id, "score": score, **more}
        return self.api.call("POST", f"/boards/{board_id}/scores", self.server, body)

    def webhook_events(self) -> list[dict[str, Any]]:
        # GAP: API.md "Trying webhooks locally" lists each record's fields but not the body's
        # top-level shape; a list, or an object holding one list, are both read here.
        body = ok(self.api.get("/local/webhook-events"))
        if isinstance(body, list):
            return body
        lists = [value for value in body.values() if isinstance(value, list)]
        assert len(lists) == 1, f"unexpected /local/webhook-events shape: {str(body)[:300]}"
        return lists[0]


@pytest.fixture(scope="module")
def env(make_run: Any) -> Env:
    run = uuid.uuid4().hex[:8]
    return Env(
        api=Client(make_run.url),
        run=run,
        admin=make_run.token(f"admin-{run}", ADMIN),
        server=make_run.token(f"game-server-{run}", SERVER),
        make_run=make_run,
    )


def wait_for(what: str, deadline_s: float, probe: Any) -> Any:
    """Polls probe() until it returns something truthy (a test waits on the event it expects)."""
    deadline = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"timed out after {deadline_s} s waiting for {what}; last: {last}")


def period_id(instant: datetime) -> str:
    """API.md "Custom periods", Ids: the start in UTC to the second, 2026-11-22T170000Z."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H%M%SZ")


def iso(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wait_archived(env: Env, board_id: str, season: str) -> None:
    def archived() -> bool:
        periods = ok(env.api.get(f"/boards/{board_id}/periods"))["periods"]
        return any(p["period"] == season and p["status"] == "archived" for p in periods)

    wait_for(f"{board_id} {season} archived", ARCHIVE_DEADLINE, archived)


def wait_until(instant: datetime) -> None:
    delay = (instant - datetime.now(UTC)).total_seconds()
    if delay > 0:
        time.sleep(delay)


# --------------------------------------------------------------------------------------------
# The ranking model (API.md "The board object", Ties: shared)
# --------------------------------------------------------------------------------------------


def ranked(scores: dict[str, float], sort: str = "desc") -> list[tuple[int, str, float]]:
    """(rank, player, score), best first: rank = 1 + entries strictly better; tied entries by
    player id (byte order) in the direction of the sort."""
    order = sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=sort == "desc")
    out = []
    for player, score in order:
        better = sum(1 for s in scores.values() if (s > score if sort == "desc" else s < score))
        out.append((better + 1, player, score))
    return out


def num(value: float) -> float | int:
    """API.md Conventions: integral scores come back as JSON integers."""
    return int(value) if float(value).is_integer() else value


# --------------------------------------------------------------------------------------------
# The league model (API.md "Leagues")
# --------------------------------------------------------------------------------------------


@dataclass
class LeagueRules:
    tiers: list[str]
    group_size: int
    promote: int | None = None
    promote_percent: float | None = None
    relegate: int | None = None
    relegate_percent: float | None = None
    inactive: str = "stay"
    start_tier: str | None = None

    @property
    def start(self) -> str:
        return self.start_tier or self.tiers[0]

    def counts(self, n: int) -> tuple[int, int]:
        """P and R for a group of n visible players: a count, or floor(n x percent / 100)."""

        def one(count: int | None, percent: float | None) -> int:
            if count is not None:
                return count
            return math.floor(n * Fraction(str(percent)) / 100)

        return one(self.promote, self.promote_percent), one(self.relegate, self.relegate_percent)


def group_view(rules: LeagueRules, tier: str, scores: dict[str, float]) -> dict[str, Any]:
    """A group's standings of its visible players, each entry's zone, and the two lines.

    Ranks 1..P go up, ranks above n - R go down (shared ranks: tied players at a line are on
    its better side), nobody above the top tier or below the lowest, and a player in both
    ranges is promoted. promotion_line: min(P, n), null in the top tier or when 0;
    relegation_line: n - R + 1 but below the promoted ranks, null in the lowest tier, when R is
    0 or when it passes the last rank (API.md: a line may fall where nobody stands)."""
    rows = ranked(scores)
    n = len(rows)
    promote, relegate = rules.counts(n)
    top, lowest = tier == rules.tiers[-1], tier == rules.tiers[0]
    promoted = {p for rank, p, _ in rows if not top and rank <= promote}
    relegated = {p for rank, p, _ in rows if not lowest and rank > n - relegate} - promoted
    zones = {
        p: "promotion" if p in promoted else "relegation" if p in relegated else "safe"
        for _, p, _ in rows
    }
    promotion_line = None if top else (min(promote, n) or None)
    relegation_line = None
    if not lowest and relegate > 0:
        first = max(n - relegate + 1, (promotion_line or 0) + 1)
        relegation_line = first if first <= n else None
    return {
        "players": n,
        "promotion_line": promotion_line,
        "relegation_line": relegation_line,
        "entries": [
            {"rank": r, "player_id": p, "score": num(s), "metadata": None, "zone": zones[p]}
            for r, p, s in rows
        ],
        "zones": zones,
        "promoted": promoted,
        "relegated": relegated,
    }


@dataclass
class LeagueModel:
    rules: LeagueRules
    season: str = ""
    tier_of: dict[str, str] = field(default_factory=dict)  # league players, settled tiers
    groups: dict[str, list[str]] = field(default_factory=dict)  # this season, placement order
    group_of: dict[str, str] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)  # this season's scores
    hidden: set[str] = field(default_factory=set)

    def tier_groups(self, tier: str) -> list[str]:
        return [g for g in self.groups if g.rsplit("-", 1)[0] == tier]

    def place(self, player: str) -> str:
        """Groups of the player's tier fill in order, first come first served."""
        tier = self.tier_of.setdefault(player, self.rules.start)
        mine = self.tier_groups(tier)
        if not mine or len(self.groups[mine[-1]]) >= self.rules.group_size:
            mine.append(f"{tier}-{len(mine) + 1}")
            self.groups[mine[-1]] = []
        self.groups[mine[-1]].append(player)
        self.group_of[player] = mine[-1]
        return mine[-1]

    def visible_scores(self, group_id: str) -> dict[str, float]:
        return {p: self.scores[p] for p in self.groups[group_id] if p not in self.hidden}

    def view(self, group_id: str) -> dict[str, Any]:
        return group_view(self.rules, group_id.rsplit("-", 1)[0], self.visible_scores(group_id))

    def write(self, player: str, delta: float) -> dict[str, Any]:
        """An accepted increment; the submission's expected `league` object (API.md Leagues,
        "What a submission answers": the group, no rank: a write ranks no group)."""
        placed = player not in self.group_of
        group_id = self.place(player) if placed else self.group_of[player]
        self.scores[player] = self.scores.get(player, 0) + delta
        return {
            "season": self.season,
            "tier": group_id.rsplit("-", 1)[0],
            "group_id": group_id,
            "placed": placed,
        }

    def tier_counts(self) -> list[dict[str, Any]]:
        return [
            {
                "tier": tier,
                "groups": len(self.tier_groups(tier)),
                "players": sum(len(self.groups[g]) for g in self.tier_groups(tier)),
            }
            for tier in self.rules.tiers
        ]

    def end_season(self, next_season: str) -> list[dict[str, Any]]:
        """Every league player's move, by player id; then the next season starts empty."""
        tiers = self.rules.tiers
        moves: list[dict[str, Any]] = []
        for player in sorted(self.tier_of):
            tier = self.tier_of[player]
            index = tiers.index(tier)
            if player in self.group_of:
                group_id = self.group_of[player]
                if player in self.hidden:  # keeps their tier, not counted
                    move, rank = "stayed", None
                else:
                    view = self.view(group_id)
                    rank = next(e["rank"] for e in view["entries"] if e["player_id"] == player)
                    move = (
                        "promoted"
                        if player in view["promoted"]
                        else "relegated"
                        if player in view["relegated"]
                        else "stayed"
                    )
                played = True
            else:
                group_id, rank, played = None, None, False
                # GAP: a drop for inactivity read as the move "relegated".
                move = "relegated" if self.rules.inactive == "drop" and index > 0 else "stayed"
            to = (
                tiers[index + 1]
                if move == "promoted"
                else tiers[index - 1]
                if move == "relegated"
                else tier
            )
            moves.append(
                {
                    "player_id": player,
                    "move": move,
                    "from_tier": tier,
                    "to_tier": to,
                    "group_id": group_id,
                    "rank": rank,
                    "played": played,
                }
            )
        for m in moves:
            self.tier_of[m["player_id"]] = m["to_tier"]
        self.season, self.groups, self.group_of, self.scores = next_season, {}, {}, {}
        return moves

    def remove(self, player: str) -> None:
        """An admin removal: out of the league (they start again in start_tier)."""
        assert player not in self.group_of, "the test removes only a player not placed this season"
        self.tier_of.pop(player, None)


def expected_group(model: LeagueModel, board_id: str, group_id: str) -> dict[str, Any]:
    view = model.view(group_id)
    return {
        "board_id": board_id,
        "season": model.season,
        "tier": group_id.rsplit("-", 1)[0],
        "group_id": group_id,
        "players": view["players"],
        "promotion_line": view["promotion_line"],
        "relegation_line": view["relegation_line"],
        "entries": view["entries"],
    }


def expected_player(model: LeagueModel, board_id: str, player: str) -> dict[str, Any]:
    group_id = model.group_of[player]
    body = expected_group(model, board_id, group_id)
    entry = next(e for e in body["entries"] if e["player_id"] == player)
    return body | {"player_id": player, "rank": entry["rank"], "zone": entry["zone"]}


# --------------------------------------------------------------------------------------------
# Leagues: validation and the routes' errors
# --------------------------------------------------------------------------------------------

SEASON_CRON = {"cron": "0 0 1 1 *", "timezone": "Europe/Berlin"}  # a season a year, open now


def league_board(league: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "mode": "increment",
        "periods": ["all-time", "custom"],
        "schedule": SEASON_CRON,
        "league": league,
    } | more


BASE = {"tiers": ["bronze", "silver", "gold"], "group_size": 4, "promote": 1, "relegate": 1}


@pytest.mark.parametrize(
    ("name", "settings", "status", "why"),
    [
        # 400: what the schema states (API.md Errors, "400 or 422"; League table, openapi League)
        ("both-promote", league_board(BASE | {"promote_percent": 10}), 400, "both promote forms"),
        (
            "no-relegate",
            league_board({k: v for k, v in BASE.items() if k != "relegate"}),
            400,
            "neither relegate form",
        ),
        ("one-tier", league_board(BASE | {"tiers": ["solo"]}), 400, "tiers 2-20"),
        (
            "21-tiers",
            league_board(BASE | {"tiers": [f"t{i}" for i in range(21)]}),
            400,
            "tiers 2-20",
        ),
        ("tier-name", league_board(BASE | {"tiers": ["Bronze", "silver"]}), 400, "tier pattern"),
        ("group-1", league_board(BASE | {"group_size": 1}), 400, "group_size 2-1000"),
        ("group-1001", league_board(BASE | {"group_size": 1001}), 400, "group_size 2-1000"),
        (
            "percent-101",
            league_board(
                {**{k: v for k, v in BASE.items() if k != "promote"}, "promote_percent": 101}
            ),
            400,
            "percentage 0-100",
        ),
        ("inactive", league_board(BASE | {"inactive": "kick"}), 400, "stay or drop"),
        ("unknown-field", league_board(BASE | {"colour": "red"}), 400, "unknown field"),
        # 422: rules the schema cannot state
        # GAP: API.md says repeated tier names are 422, while openapi's League.tiers has
        # uniqueItems (which the 400/422 rule would make 400); API.md's explicit 422 is tested.
        (
            "repeat-tier",
            league_board(BASE | {"tiers": ["bronze", "bronze"]}),
            422,
            "no repeats (422)",
        ),
        (
            "start-tier",
            league_board(BASE | {"start_tier": "platinum"}),
            422,
            "start_tier one of tiers",
        ),
        (
            "promote-gt-size",
            league_board(BASE | {"promote": 5}),
            422,
            "a count from 0 to group_size",
        ),
        (
            "no-custom",
            {"mode": "increment", "periods": ["all-time"], "league": BASE},
            422,
            "needs custom periods and a schedule",
        ),
        ("shards", league_board(BASE, shards=2), 422, "one shard"),
        ("teams", league_board(BASE, teams="sum"), 422, "no teams"),
        ("max-entries", league_board(BASE, max_entries=100), 422, "no max_entries"),
    ],
)
def test_league_config_validation(
    env: Env, name: str, settings: dict[str, Any], status: int, why: str
) -> None:
    board_id = env.board(f"lv-{name}")
    answer = env.api.call("PUT", f"/boards/{board_id}", env.admin, settings)
    refused(answer, status, "bad_request" if status == 400 else "unprocessable")
    # nothing was created
    refused(env.api.get(f"/boards/{board_id}"), 404)


def test_league_routes_on_other_boards(env: Env) -> None:
    plain = env.board("lplain")
    env.put_board(plain, {"mode": "best"})
    ok(env.submit(plain, "ann", 5))
    # API.md "GET .../league": 409 conflict for a board that is no league; 404 unknown board.
    # GAP: API.md states the 409 for `/league` only; openapi lists 409 on the player and group
    # routes too, which is tested here as the reasonable reading.
    for path in ("/league", "/league/players/ann", "/league/groups/gold-1"):
        refused(env.api.get(f"/boards/{plain}{path}"), 409, "conflict")
        refused(env.api.get(f"/boards/{env.board('lnone')}{path}"), 404, "not_found")


# --------------------------------------------------------------------------------------------
# Leagues: a season of placements, the responses and every read
# --------------------------------------------------------------------------------------------

RULES = LeagueRules(
    tiers=["bronze", "silver", "gold"],
    group_size=4,
    promote=1,
    relegate=1,
    inactive="drop",
    start_tier="silver",
)
# p01..p04 one after another, p05..p10 at once from threads: 10 players, groups of 4.
SEQUENTIAL = [f"p{i:02d}" for i in range(1, 5)]
CONCURRENT = [f"p{i:02d}" for i in range(5, 11)]
# The season's scores each group is brought to, by placement order within the group:
# silver-1: a shared rank 2 in the middle; silver-2: ties on both lines (the better side);
# silver-3: two players, the better one hidden later (one visible: in both ranges).
TARGETS = {"silver-1": [50, 30, 30, 10], "silver-2": [40, 40, 20, 20], "silver-3": [25, 15]}


@dataclass
class League:
    board_id: str
    model: LeagueModel
    created_at: datetime
    responses: list[tuple[str, float, dict[str, Any]]]  # (player, delta, body), as sent
    hidden_player: str = ""
    expected: dict[int, dict[str, Any]] = field(default_factory=dict)  # by version


def expected_first_season(created_at: datetime) -> tuple[str, datetime, datetime]:
    """API.md Custom periods: the first period starts at the cron's last fire at or before
    created_at; "0 0 1 1 *" in Europe/Berlin fires at local midnight on 1 January."""
    berlin = ZoneInfo("Europe/Berlin")
    local = created_at.astimezone(berlin)
    start = datetime(local.year, 1, 1, tzinfo=berlin)
    end = datetime(local.year + 1, 1, 1, tzinfo=berlin)
    return period_id(start), start.astimezone(UTC), end.astimezone(UTC)


@pytest.fixture(scope="module")
def league(env: Env) -> League:
    board_id = env.board("league")
    board = env.put_board(
        board_id,
        league_board(
            {
                "tiers": RULES.tiers,
                "group_size": 4,
                "promote": 1,
                "relegate": 1,
                "inactive": "drop",
                "start_tier": "silver",
            },
            max_increment=100,
        ),
    )
    created_at = parse_iso(board["created_at"])
    model = LeagueModel(RULES, season=expected_first_season(created_at)[0])
    responses: list[tuple[str, float, dict[str, Any]]] = []

    def record(player: str, delta: float, answer: Answer) -> None:
        responses.append((player, delta, ok(answer)))

    for player in SEQUENTIAL:
        record(player, 10, env.submit(board_id, player, 10))

    barrier = threading.Barrier(len(CONCURRENT))
    lock = threading.Lock()
    errors: list[str] = []

    def concurrent(player: str) -> None:
        token = env.player(player)  # a player's own token: player_id defaults to its sub
        barrier.wait()
        answer = env.api.call("POST", f"/boards/{board_id}/scores", token, {"score": 10})
        with lock:
            if answer.status == 200:
                responses.append((player, 10, answer.json))
            else:
                errors.append(str(answer))

    threads = [threading.Thread(target=concurrent, args=(p,)) for p in CONCURRENT]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors

    # Shape each group's scores now that its members are known (from the answers).
    placed_by_version = sorted(responses, key=lambda r: r[2]["version"])
    members: dict[str, list[str]] = {}
    for player, _, body in placed_by_version:
        members.setdefault(body["league"]["group_id"], []).append(player)
    for group_id, targets in TARGETS.items():
        for player, target in zip(members.get(group_id, []), targets, strict=False):
            record(player, target - 10, env.submit(board_id, player, target - 10))
    league = League(board_id, model, created_at, responses)
    # the model's replay of every accepted write, in version order (the placement order)
    for player, delta, body in sorted(responses, key=lambda r: r[2]["version"]):
        league.expected[body["version"]] = model.write(player, delta)
    return league


def test_league_board_object_and_rules(env: Env, league: League) -> None:
    board = ok(env.api.get(f"/boards/{league.board_id}"))
    # API.md Leagues: "The board object shows every rule (inactive and start_tier included)".
    assert board["league"] == {
        "tiers": ["bronze", "silver", "gold"],
        "group_size": 4,
        "promote": 1,
        "relegate": 1,
        "inactive": "drop",
        "start_tier": "silver",
    }, board


def test_league_submission_responses_follow_the_model(env: Env, league: League) -> None:
    """Every accepted write, in version order, against the model's replay: the `league` object
    of each answer; placements first come first served; no group over group_size."""
    model = league.model
    checks = Checks()
    by_version = sorted(league.responses, key=lambda r: r[2]["version"])
    assert len({b["version"] for _, _, b in by_version}) == len(by_version), "versions repeat"
    for player, delta, body in by_version:
        label = f"{player} +{delta} (version {body['version']})"
        checks.equal(body["player_id"], player, label)
        checks.equal(body["applied"], delta != 0, f"{label} applied")
        checks.equal(body.get("league"), league.expected[body["version"]], label)
        # the season is one of the standings written (API.md Submitting: resolved period ids)
        periods = [(s["period"], s["region"]) for s in body["standings"]]
        checks.true((model.season, None) in periods, f"{label}: no season standing {periods}")
    # From the answers alone: the placing writes, in version order, fill groups in order
    placed = [(b["version"], p, b["league"]) for p, _, b in by_version if b["league"]["placed"]]
    assert sorted(p for _, p, _ in placed) == sorted(SEQUENTIAL + CONCURRENT), placed
    groups: dict[str, list[str]] = {}
    for _, player, place in placed:
        groups.setdefault(place["group_id"], []).append(player)
    checks.equal(
        [place["group_id"] for _, _, place in placed],
        [f"silver-{i // RULES.group_size + 1}" for i in range(len(placed))],
        "groups fill in order, first come first served",
    )
    checks.true(all(len(m) <= RULES.group_size for m in groups.values()), f"over size {groups}")
    checks.equal(groups.get("silver-1"), SEQUENTIAL, "the sequential writers came first")
    checks.done()


def test_league_reads(env: Env, league: League) -> None:
    model, board_id = league.model, league.board_id
    season, starts, ends = expected_first_season(league.created_at)
    checks = Checks()

    body = ok(env.api.get(f"/boards/{board_id}/league"))
    checks.equal(
        body,
        {
            "board_id": board_id,
            "season": {
                "period": season,
                "kind": "custom",
                "starts_at": iso(starts),
                "ends_at": iso(ends),
                "status": "open",
            },
            "league": {
                "tiers": RULES.tiers,
                "group_size": 4,
                "promote": 1,
                "relegate": 1,
                "inactive": "drop",
                "start_tier": "silver",
            },
            "tiers": model.tier_counts(),
        },
        "GET league",
    )
    assert model.tier_counts() == [
        {"tier": "bronze", "groups": 0, "players": 0},
        {"tier": "silver", "groups": 3, "players": 10},
        {"tier": "gold", "groups": 0, "players": 0},
    ]

    for group_id in model.groups:
        got = ok(env.api.get(f"/boards/{board_id}/league/groups/{group_id}"))
        checks.equal(got, expected_group(model, board_id, group_id), f"group {group_id}")
        by_id = ok(env.api.get(f"/boards/{board_id}/league/groups/{group_id}", season=season))
        checks.equal(by_id, got, f"group {group_id} ?season=")
        for player in model.groups[group_id]:
            got = ok(env.api.get(f"/boards/{board_id}/league/players/{player}"))
            checks.equal(got, expected_player(model, board_id, player), f"player {player}")

    # the model's own expectations for these shapes, spelled out once
    s1 = expected_group(model, board_id, "silver-1")
    assert [(e["rank"], e["zone"]) for e in s1["entries"]] == [
        (1, "promotion"),
        (2, "safe"),
        (2, "safe"),
        (4, "relegation"),
    ]
    assert (s1["promotion_line"], s1["relegation_line"]) == (1, 4)
    s2 = expected_group(model, board_id, "silver-2")
    assert [(e["rank"], e["zone"]) for e in s2["entries"]] == [
        (1, "promotion"),
        (1, "promotion"),
        (3, "safe"),
        (3, "safe"),
    ]
    # ranks 1, 1, 3, 3 with R 1: the relegation line falls at 4, where nobody stands (API.md)
    assert (s2["promotion_line"], s2["relegation_line"]) == (1, 4)

    # A player with no write this season: group, rank and zone null, no entries, the start tier.
    # GAP: `players` and the lines are required by openapi but not given for this case; they
    # are not asserted.
    got = ok(env.api.get(f"/boards/{board_id}/league/players/nobody-yet"))
    keys = ("board_id", "season", "player_id", "tier", "group_id", "rank", "zone", "entries")
    checks.equal(
        {k: got.get(k) for k in keys},
        dict(
            zip(keys, (board_id, season, "nobody-yet", "silver", None, None, None, []), strict=True)
        ),
        "a player with no write this season",
    )

    # A refused write places nobody (API.md Leagues, Groups): beyond max_increment is 422.
    refused(env.submit(board_id, "refused-one", 500), 422, "unprocessable")
    got = ok(env.api.get(f"/boards/{board_id}/league/players/refused-one"))
    checks.equal((got["group_id"], got["tier"]), (None, "silver"), "refused write: not placed")
    tiers = ok(env.api.get(f"/boards/{board_id}/league"))["tiers"]
    checks.equal(tiers, model.tier_counts(), "tier counts after a refused write")
    checks.done()


def test_league_group_errors(env: Env, league: League) -> None:
    board_id = league.board_id
    # API.md GET .../league/groups/{group_id}: 400 wrong shape, 422 unknown tier, 404 unopened.
    for bad in (
        "silver",
        "silver-0",
        "silver-01",
        "Silver-1",
        "silver-x",
        "-1",
        "a-b-1",
        "silver-1234567890",
        "x" * 33 + "-1",
    ):
        refused(
            env.api.get(f"/boards/{board_id}/league/groups/{urllib.parse.quote(bad)}"),
            400,
            "bad_request",
        )
    refused(env.api.get(f"/boards/{board_id}/league/groups/platinum-1"), 422, "unprocessable")
    refused(env.api.get(f"/boards/{board_id}/league/groups/silver-4"), 404, "not_found")
    refused(env.api.get(f"/boards/{board_id}/league/groups/gold-1"), 404, "not_found")
    # the common read rules: an unknown parameter, a malformed season (openapi Season pattern)
    refused(env.api.get(f"/boards/{board_id}/league", colour="red"), 400, "bad_request")
    refused(env.api.get(f"/boards/{board_id}/league", season="last-week"), 400, "bad_request")
    refused(env.api.get(f"/boards/{board_id}/league/players/bad%20id"), 400, "bad_request")
    # GAP: changing `league` once the board has entries: "cannot change" (board table); the
    # status is not given; 409 read from "Immutable once the board has entries" (409).
    answer = env.api.call(
        "PUT",
        f"/boards/{board_id}",
        env.admin,
        {"league": {"tiers": ["a", "b"], "group_size": 9, "promote": 1, "relegate": 1}},
    )
    refused(answer, 409, "conflict")


def test_league_hidden_player(env: Env, league: League) -> None:
    model, board_id = league.model, league.board_id
    checks = Checks()
    # silver-3 before the hiding: two visible players, ranks 1 and 2
    two = expected_group(model, board_id, "silver-3")
    assert (two["players"], two["promotion_line"], two["relegation_line"]) == (2, 1, 2)
    got = ok(env.api.get(f"/boards/{board_id}/league/groups/silver-3"))
    checks.equal(got, two, "silver-3 before the hiding")

    best = two["entries"][0]["player_id"]
    other = two["entries"][1]["player_id"]
    ok(env.api.call("PUT", f"/boards/{board_id}/hidden/{best}", env.admin, {}), 201)
    model.hidden.add(best)
    league.hidden_player = best

    # one visible player left: in both ranges, so promoted (API.md Leagues, The season's end)
    one = expected_group(model, board_id, "silver-3")
    assert (one["players"], one["promotion_line"], one["relegation_line"]) == (1, 1, None)
    assert one["entries"][0]["zone"] == "promotion"
    got = ok(env.api.get(f"/boards/{board_id}/league/groups/silver-3"))
    checks.equal(got, one, "silver-3 after the hiding")
    got = ok(env.api.get(f"/boards/{board_id}/league/players/{other}"))
    checks.equal(got, expected_player(model, board_id, other), f"player {other} after the hiding")
    # a place once taken stays taken: the tier still counts the hidden player
    tiers = ok(env.api.get(f"/boards/{board_id}/league"))["tiers"]
    checks.equal(tiers, model.tier_counts(), "tier counts with a hidden player")

    # GAP: what an anonymous read of the hidden player's own group view holds is not spelled
    # out; openapi says `rank` is null "hidden from this reader". Only that is asserted.
    anon = ok(env.api.get(f"/boards/{board_id}/league/players/{best}"))
    checks.true(
        anon["rank"] is None and best not in [e["player_id"] for e in anon["entries"]],
        f"anonymous read of the hidden player: {anon}",
    )
    # The hidden player reading as themselves (a server with viewer=): their own entry, marked
    # hidden for a server reader, not counted in `players`.
    own = ok(env.api.get(f"/boards/{board_id}/league/players/{best}", env.server, viewer=best))
    mine = [e for e in own["entries"] if e["player_id"] == best]
    checks.true(
        len(mine) == 1 and mine[0].get("hidden") is True and own["players"] == 1,
        f"the hidden player's own view: {own}",
    )
    checks.done()


@pytest.mark.parametrize(
    ("name", "league_rules", "scores", "tier", "lines"),
    [
        # percentages round down: of 5, 40 % is 2 and 20 % is 1; lowest tier: nobody relegated
        (
            "pct5",
            {
                "tiers": ["iron", "steel"],
                "group_size": 5,
                "promote_percent": 40,
                "relegate_percent": 20,
            },
            [50, 40, 30, 20, 10],
            "iron",
            (2, None),
        ),
        # of 3, 40 % is 1 (1.2 rounded down)
        (
            "pct3",
            {
                "tiers": ["iron", "steel"],
                "group_size": 5,
                "promote_percent": 40,
                "relegate_percent": 20,
            },
            [50, 40, 30],
            "iron",
            (1, None),
        ),
        # the top tier as start tier: nobody promoted; relegate 2 of 3
        (
            "top",
            {
                "tiers": ["low", "top"],
                "group_size": 3,
                "promote": 1,
                "relegate": 2,
                "start_tier": "top",
            },
            [30, 20, 10],
            "top",
            (None, 2),
        ),
        # promote 0: nobody is promoted, the line is null; a middle tier
        (
            "zero",
            {
                "tiers": ["a", "b", "c"],
                "group_size": 3,
                "promote": 0,
                "relegate": 1,
                "start_tier": "b",
            },
            [30, 20, 10],
            "b",
            (None, 3),
        ),
    ],
)
def test_league_lines(
    env: Env,
    name: str,
    league_rules: dict[str, Any],
    scores: list[int],
    tier: str,
    lines: tuple[int | None, int | None],
) -> None:
    board_id = env.board(f"llines-{name}")
    board = env.put_board(board_id, league_board(league_rules))
    rules = LeagueRules(**league_rules)
    model = LeagueModel(rules, season=expected_first_season(parse_iso(board["created_at"]))[0])
    checks = Checks()
    for i, score in enumerate(scores):
        player = f"m{i}"
        league_place = ok(env.submit(board_id, player, score))["league"]
        checks.equal(league_place, model.write(player, score), f"write {i + 1}: {player} {score}")
    group_id = f"{tier}-1"
    expected = expected_group(model, board_id, group_id)
    assert (expected["promotion_line"], expected["relegation_line"]) == lines
    got = ok(env.api.get(f"/boards/{board_id}/league/groups/{group_id}"))
    checks.equal(got, expected, f"group {group_id}")
    for i in range(len(scores)):
        got = ok(env.api.get(f"/boards/{board_id}/league/players/m{i}"))
        checks.equal(got, expected_player(model, board_id, f"m{i}"), f"player m{i}")
    league_body = ok(env.api.get(f"/boards/{board_id}/league"))
    # GAP: how a percentage league echoes its rules (promote null beside promote_percent?) is
    # not shown; the rules given and the defaults must be there.
    shown = league_body["league"]
    defaults = {"inactive": "stay", "start_tier": rules.start}
    checks.equal(
        {k: shown.get(k) for k in (*league_rules, *defaults)}, defaults | league_rules, "rules"
    )
    checks.equal(league_body["tiers"], model.tier_counts(), "tier counts")
    checks.done()


# --------------------------------------------------------------------------------------------
# Leagues: ending seasons by hand, the moves
# --------------------------------------------------------------------------------------------


def end_season(env: Env, board_id: str, season: str) -> tuple[str, datetime]:
    """POST .../periods/end; the ended season's and the next one's bounds (API.md)."""
    answer = env.api.call("POST", f"/boards/{board_id}/periods/end", env.admin)
    for _ in range(3):  # 409 when the current period started less than a second ago
        if answer.status != 409:
            break
        time.sleep(1.1)
        answer = env.api.call("POST", f"/boards/{board_id}/periods/end", env.admin)
    body = ok(answer)
    assert body["ended"]["period"] == season and body["ended"]["status"] == "closed", body
    ends_at = parse_iso(body["ended"]["ends_at"])
    assert body["current"]["period"] == period_id(ends_at), body
    assert body["current"]["starts_at"] == body["ended"]["ends_at"], body
    return body["current"]["period"], ends_at


def league_event(env: Env, board_id: str, season: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        for record in env.webhook_events():
            event = record.get("event") or {}
            data = event.get("data") or {}
            if data.get("board_id") == board_id and (data.get("period") or {}).get("id") == season:
                return event
        return None

    return wait_for(f"period.ended of {board_id} {season}", WEBHOOK_DEADLINE, find)


def check_event(
    checks: Checks, event: dict[str, Any], board_id: str, season: str, moves: list[Any]
) -> None:
    label = f"period.ended of {season}"
    checks.equal(event["type"], "period.ended", label)
    checks.equal(event["id"], str(uuid.uuid5(EVENT_NAMESPACE, f"{board_id}\n{season}")), label)
    checks.equal(event["data"]["reason"], "manual", label)
    league = event["data"].get("league") or {}
    checks.equal({k: league.get(k) for k in ("part", "parts")}, {"part": 1, "parts": 1}, label)
    got = {m["player_id"]: m for m in league.get("moves", [])}
    checks.equal(
        [m["player_id"] for m in league.get("moves", [])],
        [m["player_id"] for m in moves],
        f"{label}: the moves' players, in order",
    )
    for move in moves:
        checks.equal(got.get(move["player_id"]), move, f"{label}: move of {move['player_id']}")


def test_league_seasons_end_and_players_move(env: Env, league: League) -> None:
    model, board_id = league.model, league.board_id
    assert model.groups and league.hidden_player, "the earlier league tests set the season up"
    checks = Checks()
    season1 = model.season
    final_groups = {g: expected_group(model, board_id, g) for g in model.groups}

    # -- season 1 ends by hand --------------------------------------------------------------
    season2, ends_at = end_season(env, board_id, season1)
    moves1 = model.end_season(season2)
    by_player = {m["player_id"]: m for m in moves1}
    s1 = final_groups["silver-1"]["entries"]
    top1, last1 = s1[0]["player_id"], s1[-1]["player_id"]
    assert by_player[top1]["move"] == "promoted" and by_player[last1]["move"] == "relegated"
    assert by_player[league.hidden_player] == {
        "player_id": league.hidden_player,
        "move": "stayed",
        "from_tier": "silver",
        "to_tier": "silver",
        "group_id": "silver-3",
        "rank": None,
        "played": True,
    }

    # A first write right after the end, maybe before the rollover applied the moves: placed
    # by the same rule (API.md Leagues, "A first write that comes before the rollover...").
    wait_until(ends_at + timedelta(seconds=0.2))
    body = ok(env.submit(board_id, top1, 10))
    expected = model.write(top1, 10)
    checks.equal(body["league"], expected, f"first write of {top1} in the next season")
    assert expected["tier"] == "gold" and expected["group_id"] == "gold-1"

    wait_archived(env, board_id, season1)
    check_event(checks, league_event(env, board_id, season1), board_id, season1, moves1)

    # the closed season's groups stay readable by id until its keys are freed
    for group_id, expected in final_groups.items():
        got = ok(env.api.get(f"/boards/{board_id}/league/groups/{group_id}", season=season1))
        checks.equal(got, expected, f"{group_id} of the closed season")

    # API.md: the league route's `season.status` is open or closed (the archive is
    # GET .../periods' to say, checked below); an end by hand reaches reads within 5 s
    # (Custom periods)
    def past_closed() -> Any:
        body = ok(env.api.get(f"/boards/{board_id}/league", season=season1))
        return body if body["season"]["status"] == "closed" else None

    try:
        past = wait_for("the closed season's status closed", CUSTOM_READ_LAG, past_closed)
    except AssertionError:
        past = ok(env.api.get(f"/boards/{board_id}/league", season=season1))
    checks.equal([t["players"] for t in past["tiers"]], [0, 10, 0], "closed season's tiers")
    checks.equal(
        (past["season"]["period"], past["season"]["status"]), (season1, "closed"), "season"
    )

    # every league player not placed yet this season: the tier the last season left them in
    wait_until(ends_at + timedelta(seconds=CUSTOM_READ_LAG))
    for move in moves1:
        player = move["player_id"]
        got = ok(env.api.get(f"/boards/{board_id}/league/players/{player}"))
        checks.equal(
            (got["season"], got["tier"], got["group_id"] if player != top1 else None),
            (season2, move["to_tier"], None),
            f"{player} in season 2 before writing",
        )

    # An admin removal takes a player out of the league: they start again in start_tier.
    gold_idle = sorted(p for p, m in by_player.items() if m["to_tier"] == "gold" and p != top1)[0]
    ok(env.api.call("DELETE", f"/boards/{board_id}/players/{gold_idle}", env.admin), 204)
    model.remove(gold_idle)
    got = ok(env.api.get(f"/boards/{board_id}/league/players/{gold_idle}"))
    checks.equal((got["tier"], got["group_id"]), ("silver", None), f"{gold_idle} removed")

    # -- season 2: some play --------------------------------------------------------------
    gold_second = sorted(
        p for p, m in by_player.items() if m["to_tier"] == "gold" and p not in (top1, gold_idle)
    )[0]
    silver_player = sorted(
        p for p, m in by_player.items() if m["to_tier"] == "silver" and p != league.hidden_player
    )[0]
    for player, delta in ((gold_second, 5), (league.hidden_player, 7), (silver_player, 3)):
        body = ok(env.submit(board_id, player, delta))
        expected = model.write(player, delta)
        checks.equal(body["league"], expected, f"season 2 write of {player}")
    tiers = ok(env.api.get(f"/boards/{board_id}/league"))["tiers"]
    checks.equal(tiers, model.tier_counts(), "season 2 tier counts")
    gold = ok(env.api.get(f"/boards/{board_id}/league/groups/gold-1"))
    expected = expected_group(model, board_id, "gold-1")
    assert (expected["promotion_line"], expected["relegation_line"]) == (None, 2)  # top tier
    checks.equal(gold, expected, "gold-1 in season 2")

    # -- season 2 ends: the inactive drop a tier (not below the lowest) ------------------------
    season3, ends_at = end_season(env, board_id, season2)
    moves2 = model.end_season(season3)
    by_player2 = {m["player_id"]: m for m in moves2}
    assert gold_idle not in by_player2
    assert by_player2[last1] == {
        "player_id": last1,
        "move": "stayed",
        "from_tier": "bronze",
        "to_tier": "bronze",
        "group_id": None,
        "rank": None,
        "played": False,
    }
    wait_archived(env, board_id, season2)
    check_event(checks, league_event(env, board_id, season2), board_id, season2, moves2)
    wait_until(ends_at + timedelta(seconds=CUSTOM_READ_LAG))
    for move in moves2:
        got = ok(env.api.get(f"/boards/{board_id}/league/players/{move['player_id']}"))
        checks.equal(
            (got["season"], got["tier"], got["group_id"]),
            (season3, move["to_tier"], None),
            f"{move['player_id']} in season 3",
        )
    # the first season's status, read again well after its archive (tens of seconds later)
    for path in (f"/boards/{board_id}/league", f"/boards/{board_id}/periods"):
        body = ok(
            env.api.get(path, season=season1) if path.endswith("/league") else env.api.get(path)
        )
        status = (
            body["season"]["status"]
            if path.endswith("/league")
            else next(p["status"] for p in body["periods"] if p["period"] == season1)
        )
        want = "closed" if path.endswith("/league") else "archived"
        checks.equal(status, want, f"later: {path} says of {season1}")
    checks.done()


# --------------------------------------------------------------------------------------------
# Score tiers (API.md "Score tiers")
# --------------------------------------------------------------------------------------------


def score_tier(tiers: list[dict[str, Any]], sort: str, score: float) -> str | None:
    for tier in tiers:
        bound = tier.get("score")
        if bound is None or (score >= bound if sort == "desc" else score <= bound):
            return tier["name"]
    return None


def percentile_tier(tiers: list[dict[str, Any]], rank: int, total: int) -> str | None:
    for tier in tiers:
        percent = tier.get("top_percent")
        if percent is None:
            return tier["name"]
        if rank <= max(1, math.ceil(total * Fraction(str(percent)) / 100)):
            return tier["name"]
    return None


@dataclass
class TierModel:
    """A board's expected standings per (period kind, region): scores; and its tiers."""

    sort: str
    spec: dict[str, Any] | None
    boards: dict[tuple[str, str | None], dict[str, float]] = field(default_factory=dict)

    def put(self, player: str, score: float, region: str | None, kinds: list[str]) -> None:
        for kind in kinds:  # mode "set": every period kept, the global and the region's board
            self.boards.setdefault((kind, None), {})[player] = score
            if region:
                self.boards.setdefault((kind, region), {})[player] = score

    def tier(self, rank: int, score: float, total: int) -> str | None:
        assert self.spec is not None
        if self.spec["by"] == "score":
            return score_tier(self.spec["tiers"], self.sort, score)
        return percentile_tier(self.spec["tiers"], rank, total)

    def entries(
        self, kind: str, region: str | None, hidden: frozenset[str] | set[str] = frozenset()
    ) -> list[Any]:
        scores = {p: s for p, s in self.boards.get((kind, region), {}).items() if p not in hidden}
        rows = ranked(scores, self.sort)
        out = []
        for rank, player, score in rows:
            entry = {"rank": rank, "player_id": player, "score": num(score), "metadata": None}
            if self.spec is not None:
                entry["tier"] = self.tier(rank, score, len(rows))
            out.append(entry)
        return out


def check_entry_reads(
    env: Env,
    board_id: str,
    model: TierModel,
    kind: str,
    region: str | None,
    hidden: frozenset[str] | set[str] = frozenset(),
) -> None:
    """Every read kind of API.md "Reading" and "Players' reads" on one period and region."""
    expected = model.entries(kind, region, hidden)
    total = len(expected)
    query: dict[str, Any] = {"period": kind}
    if region:
        query["region"] = region
    base = f"/boards/{board_id}"
    # pages
    page = ok(env.api.get(f"{base}/entries", limit=100, **query))
    assert page["total"] == total and page["entries"] == expected, page
    for offset in range(0, total, 3):
        page = ok(env.api.get(f"{base}/entries", limit=3, offset=offset, **query))
        assert page["entries"] == expected[offset : offset + 3], (offset, page)
    # windows around a rank: limit 3 starts one before, clamped to the ends
    for position in range(1, total + 1):
        start = min(max(position - 1 - 1, 0), max(total - 3, 0))
        page = ok(env.api.get(f"{base}/entries", limit=3, around_rank=position, **query))
        assert page["entries"] == expected[start : start + 3], (position, page)
    for index, entry in enumerate(expected):
        player = entry["player_id"]
        # one player
        one = ok(env.api.get(f"{base}/players/{player}", **query))
        assert one["total"] == total and one["rank"] == entry["rank"], one
        assert ("tier" in one) == (model.spec is not None), one
        if model.spec is not None:
            assert one["tier"] == entry["tier"], (player, one)
        # around the player
        start = min(max(index - 2, 0), max(total - 5, 0))
        around = ok(env.api.get(f"{base}/players/{player}/around", count=5, **query))
        assert around["entries"] == expected[start : start + 5], (player, around)
        assert around["player"] == entry, (player, around["player"])
    # chosen players, in board order, and the missing ones
    ids = [*[e["player_id"] for e in reversed(expected)][:5], "not-there"]
    chosen = ok(env.api.get(f"{base}/players", ids=",".join(ids), **query))
    assert chosen["entries"] == [e for e in expected if e["player_id"] in ids], chosen
    assert chosen["missing"] == ["not-there"] and chosen["total"] == total, chosen


def check_standings(
    env: Env,
    board_id: str,
    model: TierModel,
    player: str,
    kinds: list[tuple[str, str]],
    regions: list[str],
) -> None:
    """API.md standings: global first, then each region in the board's order; within each, the
    kinds in order; each item against its own total."""
    expected = []
    for region in [None, *regions]:
        for kind, period in kinds:
            rows = model.entries(kind, region)
            mine = [e for e in rows if e["player_id"] == player]
            if not mine:
                continue
            item = {
                "period": period,
                "kind": kind,
                "region": region,
                "rank": mine[0]["rank"],
                "score": mine[0]["score"],
                "total": len(rows),
            }
            if model.spec is not None:
                item["tier"] = mine[0]["tier"]
            expected.append(item)
    got = ok(env.api.get(f"/boards/{board_id}/players/{player}/standings"))["standings"]
    assert [
        {k: item.get(k) for k in ("period", "kind", "region", "rank", "score", "total", "tier")}
        for item in got
    ] == [
        {k: item.get(k) for k in ("period", "kind", "region", "rank", "score", "total", "tier")}
        for item in expected
    ], got
    assert all(("tier" in item) == (model.spec is not None) for item in got), got


def current_week() -> str:
    year, week, _ = datetime.now(UTC).isocalendar()
    return f"{year}-W{week:02d}"


BY_SCORE = {
    "by": "score",
    "tiers": [
        {"name": "gold", "score": 5000},
        {"name": "silver", "score": 1000},
        {"name": "bronze"},
    ],
}
SCORES = {  # player: (score, region)
    "s-a": (6000, "EU"),
    "s-b": (5000, "EU"),
    "s-c": (5000, "NA"),
    "s-d": (4999.5, "EU"),
    "s-e": (1000, "NA"),
    "s-f": (999.5, None),
    "s-g": (0, "EU"),
    "s-h": (-50, "NA"),
}


def live_message(env: Env, channel: str, write: Any, wanted_version: int | None = None) -> Any:
    """Subscribes as API.md "Live updates" describes, runs write(), returns the first message
    on the channel whose version reaches the write's."""
    from websockets.sync.client import connect

    live = env.make_run.live
    auth = {"host": live["http_host"], "x-api-key": live["api_key"]}
    header = base64.urlsafe_b64encode(json.dumps(auth).encode()).decode().rstrip("=")
    with connect(
        live["realtime_url"],
        subprotocols=["aws-appsync-event-ws", f"header-{header}"],  # type: ignore[list-item]
    ) as ws:
        ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(ws.recv(10))["type"] == "connection_ack"
        ws.send(
            json.dumps({"type": "subscribe", "id": "s1", "channel": channel, "authorization": auth})
        )
        while (frame := json.loads(ws.recv(10)))["type"] != "subscribe_success":
            assert frame["type"] == "ka", frame
        version = write()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frame = json.loads(ws.recv(max(deadline - time.monotonic(), 0.1)))
            if frame["type"] == "data":
                message = json.loads(frame["event"])
                if message["version"] >= version:
                    return message
    raise AssertionError("no live message")


def test_score_tiers_by_score(env: Env) -> None:
    board_id = env.board("tiers-score")
    kinds = ["all-time", "weekly"]
    board = env.put_board(
        board_id,
        {"mode": "set", "periods": kinds, "regions": ["EU", "NA"], "score_tiers": BY_SCORE},
    )
    assert board["score_tiers"] == BY_SCORE, board
    model = TierModel("desc", BY_SCORE)
    for player, (score, region) in SCORES.items():
        body = ok(env.submit(board_id, player, score, **({"region": region} if region else {})))
        # API.md Score tiers, Not tiered: a submission's response
        assert all("tier" not in s for s in body["standings"]), body
        model.put(player, score, region, kinds)
    names = {e["player_id"]: e["tier"] for e in model.entries("all-time", None)}
    assert names == {
        "s-a": "gold",
        "s-b": "gold",
        "s-c": "gold",
        "s-d": "silver",
        "s-e": "silver",
        "s-f": "bronze",
        "s-g": "bronze",
        "s-h": "bronze",
    }
    for kind in kinds:
        for region in (None, "EU", "NA"):
            check_entry_reads(env, board_id, model, kind, region)
    week = [("all-time", "all-time"), ("weekly", current_week())]
    for player in ("s-b", "s-f"):
        check_standings(env, board_id, model, player, week, ["EU", "NA"])

    # A view, not a record: new tiers, every bound given (a score below them all: null)
    bounded = {
        "by": "score",
        "tiers": [{"name": "elite", "score": 6000}, {"name": "good", "score": 999.5}],
    }
    env.put_board(board_id, {"score_tiers": bounded}, 200)
    model.spec = bounded
    check_entry_reads(env, board_id, model, "all-time", None)
    assert [e["tier"] for e in model.entries("all-time", None)][-2:] == [None, None]
    check_standings(env, board_id, model, "s-h", week, ["EU", "NA"])

    # Live messages: `top` and `changed` carry the tier, against the message's total
    def write() -> int:
        model.put("s-i", 7000, None, kinds)
        return ok(env.submit(board_id, "s-i", 7000))["version"]

    message = live_message(env, f"{board['live_channel']}/all-time", write)
    expected = model.entries("all-time", None)
    assert message["total"] == len(expected), message
    assert message["top"] == expected[:10], message["top"]
    changed = [c for c in message["changed"] if c["player_id"] == "s-i"]
    assert changed and changed[0]["tier"] == "elite", message["changed"]

    # Tiers removed: no `tier` anywhere, the responses exactly as before
    env.put_board(board_id, {"score_tiers": None}, 200)
    model.spec = None
    check_entry_reads(env, board_id, model, "all-time", "EU")
    check_standings(env, board_id, model, "s-a", week, ["EU", "NA"])


def test_score_tiers_ascending_and_validation(env: Env) -> None:
    board_id = env.board("tiers-asc")
    spec = {"by": "score", "tiers": [{"name": "fast", "score": 30}, {"name": "ok", "score": 60}]}
    env.put_board(
        board_id, {"sort": "asc", "mode": "best", "periods": ["all-time"], "score_tiers": spec}
    )
    model = TierModel("asc", spec)
    for player, score in {"r1": 20, "r2": 30, "r3": 45, "r4": 60, "r5": 61, "r6": 30}.items():
        ok(env.submit(board_id, player, score))
        model.put(player, score, None, ["all-time"])
    assert [e["tier"] for e in model.entries("all-time", None)] == [
        "fast",
        "fast",
        "fast",
        "ok",
        "ok",
        None,
    ]
    check_entry_reads(env, board_id, model, "all-time", None)

    # changing sort on an empty board whose tier scores would then run the wrong way: 422
    empty = env.board("tiers-asc-empty")
    env.put_board(empty, {"sort": "asc", "score_tiers": spec})
    body = refused(
        env.api.call("PUT", f"/boards/{empty}", env.admin, {"sort": "desc"}), 422, "unprocessable"
    )
    assert body.get("field") == "score_tiers.tiers[1].score", body

    bad = env.board("tiers-bad")
    cases = [
        ({"by": "score", "tiers": [{"name": "a", "top_percent": 5}]}, 400, None),
        ({"by": "score", "tiers": []}, 400, None),
        (
            {"by": "score", "tiers": [{"name": f"t{i}", "score": 100 - i} for i in range(17)]},
            400,
            None,
        ),
        ({"by": "score", "tiers": [{"name": "Gold", "score": 5}]}, 400, None),
        ({"by": "percentile", "tiers": [{"name": "a", "top_percent": 0}]}, 400, None),
        ({"by": "percentile", "tiers": [{"name": "a", "top_percent": 100.5}]}, 400, None),
        ({"by": "rank", "tiers": [{"name": "a"}]}, 400, None),
        (
            {"by": "score", "tiers": [{"name": "a", "score": 5}, {"name": "a"}]},
            422,
            "score_tiers.tiers[1].name",
        ),
        (
            {"by": "score", "tiers": [{"name": "a"}, {"name": "b", "score": 5}]},
            422,
            "score_tiers.tiers[0].score",
        ),
        (
            {"by": "score", "tiers": [{"name": "a", "score": 5}, {"name": "b", "score": 5}]},
            422,
            "score_tiers.tiers[1].score",
        ),
        (
            {
                "by": "percentile",
                "tiers": [{"name": "a", "top_percent": 10}, {"name": "b", "top_percent": 10}],
            },
            422,
            "score_tiers.tiers[1].top_percent",
        ),
    ]
    for spec_, status, where in cases:
        body = refused(
            env.api.call("PUT", f"/boards/{bad}", env.admin, {"score_tiers": spec_}),
            status,
            "bad_request" if status == 400 else "unprocessable",
        )
        # GAP: "each naming the field by its path" is tested on the 422s; for a bound left out
        # before the last tier the path is read as that tier's missing bound.
        if where is not None:
            assert body.get("field") == where, (spec_, body)


PERCENTILE = {
    "by": "percentile",
    "tiers": [
        {"name": "top1", "top_percent": 1},
        {"name": "top10", "top_percent": 10},
        {"name": "rest"},
    ],
}


def test_score_tiers_by_percentile_hidden_and_archive(env: Env) -> None:
    board_id = env.board("tiers-pct")
    kinds = ["all-time", "custom"]
    board = env.put_board(
        board_id,
        {
            "mode": "set",
            "periods": kinds,
            "regions": ["EU"],
            "schedule": {"timezone": "UTC"},
            "score_tiers": PERCENTILE,
        },
    )
    season = period_id(parse_iso(board["created_at"]))  # a season ended by hand: created_at
    model = TierModel("desc", PERCENTILE)
    scores = {"q01": 1000, "q02": 900, "q03": 900, "q04": 900}
    scores |= {f"q{i:02d}": 800 - (i - 5) * 10 for i in range(5, 21)}
    eu = {"q01", "q03", "q05", "q06", "q07"}
    for player, score in scores.items():
        region = "EU" if player in eu else None
        ok(env.submit(board_id, player, score, **({"region": region} if region else {})))
        model.put(player, score, region, kinds)
    # API.md's own example: of 20 entries top10 ends at rank 2, three sharing rank 2 are top10
    rows = model.entries("all-time", None)
    assert [(e["rank"], e["tier"]) for e in rows[:5]] == [
        (1, "top1"),
        (2, "top10"),
        (2, "top10"),
        (2, "top10"),
        (5, "rest"),
    ]
    assert [e["tier"] for e in model.entries("all-time", "EU")] == ["top1"] + ["rest"] * 4
    for kind in kinds:
        for region in (None, "EU"):
            check_entry_reads(env, board_id, model, kind, region)
    for player in ("q01", "q03", "q10"):
        check_standings(
            env, board_id, model, player, [("all-time", "all-time"), ("custom", season)], ["EU"]
        )

    # Hidden players are left out of N and ranks: of 19, the three at 900 are rank 1, top1
    ok(env.api.call("PUT", f"/boards/{board_id}/hidden/q01", env.admin, {}), 201)
    hidden = {"q01"}
    public = model.entries("all-time", None, hidden)
    assert [(e["rank"], e["tier"]) for e in public[:4]] == [
        (1, "top1"),
        (1, "top1"),
        (1, "top1"),
        (4, "rest"),
    ]
    check_entry_reads(env, board_id, model, "all-time", None, hidden)
    # ... except a hidden player reading their own view, which counts them (total one more)
    own_token = env.player("q01")
    own = ok(env.api.get(f"/boards/{board_id}/players/q01", own_token))
    assert (own["rank"], own["total"], own["tier"]) == (1, 20, "top1"), own
    other = ok(env.api.get(f"/boards/{board_id}/players/q02", own_token))
    assert (other["rank"], other["total"], other["tier"]) == (2, 20, "top10"), other

    # The season ends; the archive counts its own total (hidden players apart)
    ended = ok(env.api.call("POST", f"/boards/{board_id}/periods/end", env.admin))
    assert ended["ended"]["period"] == season, ended
    wait_archived(env, board_id, season)
    archived = {p: s for p, s in model.boards[("custom", None)].items() if p not in hidden}
    model.boards[("archive", None)] = archived
    expected = model.entries("archive", None)
    page = ok(env.api.get(f"/boards/{board_id}/entries", period=season, limit=100))
    assert page["total"] == 19 and page["entries"] == expected, page
    history = ok(env.api.get(f"/boards/{board_id}/players/q02/history", kind="custom"))
    assert [
        {k: r.get(k) for k in ("period", "rank", "total", "tier")} for r in history["results"]
    ] == [{"period": season, "rank": 1, "total": 19, "tier": "top1"}]

    # A view: new tiers name archived periods and history at the next read
    newer = {"by": "percentile", "tiers": [{"name": "top15", "top_percent": 15}, {"name": "rest"}]}
    env.put_board(board_id, {"score_tiers": newer}, 200)
    model.spec = newer
    expected = model.entries("archive", None)
    assert [e["tier"] for e in expected[:4]] == ["top15", "top15", "top15", "rest"]  # ceil(2.85)
    page = ok(env.api.get(f"/boards/{board_id}/entries", period=season, limit=100))
    assert page["entries"] == expected, page
    history = ok(env.api.get(f"/boards/{board_id}/players/q05/history", kind="custom"))
    assert [(r["rank"], r["tier"]) for r in history["results"]] == [(4, "rest")], history


def test_score_tiers_percentile_exact_decimal(env: Env) -> None:
    """API.md: 4.4 % of 750 entries ends at rank 33, never 34 by a rounding error."""
    board_id = env.board("tiers-exact")
    spec = {
        "by": "percentile",
        "tiers": [{"name": "a", "top_percent": 4.4}, {"name": "b", "top_percent": 50}],
    }
    env.put_board(board_id, {"mode": "set", "periods": ["all-time"], "score_tiers": spec})
    items: list[dict[str, Any]] = [
        {"player_id": f"x{i:03d}", "score": 751 - i} for i in range(1, 751)
    ]
    for chunk in (items[:500], items[500:]):
        body = ok(
            env.api.call(
                "POST", f"/boards/{board_id}/scores/batch", env.server, {"submissions": chunk}
            )
        )
        assert all(r["status"] == 200 for r in body["results"]), body["results"][:3]
    model = TierModel("desc", spec)
    for item in items:
        model.put(item["player_id"], item["score"], None, ["all-time"])
    expected = model.entries("all-time", None)
    assert [e["tier"] for e in expected[31:35]] == ["a", "a", "b", "b"]
    assert [e["tier"] for e in expected[373:377]] == ["b", "b", None, None]
    for rank in (33, 34, 375, 376, 750):
        page = ok(env.api.get(f"/boards/{board_id}/entries", around_rank=rank, limit=4))
        start = min(max(rank - 1 - 1, 0), 750 - 4)
        assert page["entries"] == expected[start : start + 4], (rank, page)
        one = ok(env.api.get(f"/boards/{board_id}/players/x{rank:03d}"))
        assert one["tier"] == expected[rank - 1]["tier"], one
