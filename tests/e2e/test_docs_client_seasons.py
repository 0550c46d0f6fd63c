"""Seasons, tournaments and period.ended webhooks, as an outside client reads the documents.

Every expected value here comes from docs/API.md (sections cited in each test), docs/openapi.json
and the READMEs, and from a small model of the scores this file submits: nothing is taken from
the implementation. Where the documents are ambiguous, a comment says which reading is tested.

The stack is `make run` with LOCAL_SCHEDULE_SCALE=0.1 (the rollover's every-minute run comes every
6 s) and WEBHOOK_RETRY_BASE_SECONDS=1, as the suite's `make_run` fixture starts it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.e2e

ADMIN = "leaderboard/admin"
SERVER = "leaderboard/server"

# API.md "Periods", Rollover: a custom period or tournament is archived "within a minute of its
# end" by a run every minute, which LOCAL_SCHEDULE_SCALE=0.1 makes every 6 s. Two runs and some
# slack for the archive; then the webhook's way (bus, queue, delivery function) on top.
ROLLOVER_SECONDS = 60 * 0.1
ARCHIVE_DEADLINE = 2 * ROLLOVER_SECONDS + 4
WEBHOOK_DEADLINE = ARCHIVE_DEADLINE + 8
# API.md "Custom periods", Writes and reads: "reads of period=custom within 5 seconds".
CUSTOM_READ_DEADLINE = 5 + 1.5


# --------------------------------------------------------------------------------------------
# HTTP and assertions
# --------------------------------------------------------------------------------------------


@dataclass
class Answer:
    request: str  # "METHOD /path?query", for assertion messages
    status: int
    headers: dict[str, str]  # names in lower case (header names are case-insensitive)
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None

    def __repr__(self) -> str:
        return f"<{self.request} -> {self.status} {self.raw[:700]!r}>"


class Client:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: Any = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
    ) -> Answer:
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + target, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        label = f"{method} {target} {body if body is not None else ''}".rstrip()
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                status, head, content = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, head, content = error.code, error.headers, error.read()
        return Answer(label, status, {k.lower(): v for k, v in head.items()}, content)

    def get(self, path: str, **kw: Any) -> Answer:
        return self.call("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Answer:
        return self.call("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> Answer:
        return self.call("PUT", path, **kw)


def ok(answer: Answer, status: int = 200) -> Any:
    assert answer.status == status, f"expected {status}: {answer!r}"
    return answer.json


def refused(
    answer: Answer,
    status: int,
    code: str | None = None,
    *,
    field: str | None = None,
    fields: list[str] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """An error as API.md "Errors" describes it: a `message`, and the service's `code` (the
    gateway's 401/403 carry only `message`), `field`/`fields`, and `reason` for tournaments."""
    want = f"{status} {code or ''} {field or fields or ''} {reason or ''}".strip()
    assert answer.status == status, f"expected {want}: {answer!r}"
    body = answer.json
    assert isinstance(body, dict) and isinstance(body.get("message"), str), answer
    for name, value in (("code", code), ("field", field), ("fields", fields), ("reason", reason)):
        if value is not None:
            assert body.get(name) == value, f"expected {name} {value!r} ({want}): {answer!r}"
    return body


def poll(check: Any, deadline: float, what: str) -> Any:
    """Call `check` until it returns something truthy; fail saying `what` after `deadline` s."""
    end = time.monotonic() + max(deadline, 0.5)
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"{what}: not within {deadline:.1f} s")
        time.sleep(0.25)


def parse_ts(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def ts(moment: datetime | float) -> str:
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text: str) -> float:
    return parse_ts(text).timestamp()


def custom_id(starts_at: str) -> str:
    """API.md "Custom periods", Ids: a custom period's id is its start in UTC to the second."""
    return parse_ts(starts_at).strftime("%Y-%m-%dT%H%M%SZ")


def iso_in_zone(seconds: float, offset_hours: int) -> str:
    """An ISO 8601 instant written with another zone offset than UTC."""
    zone = timezone(timedelta(hours=offset_hours))
    return datetime.fromtimestamp(seconds, zone).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------
# The model: ranking (API.md "The board object", Ties) and cron (API.md "Custom periods")
# --------------------------------------------------------------------------------------------


def ranked(scores: Mapping[str, float]) -> list[dict[str, Any]]:
    """A `desc`, `ties: shared` board: rank = 1 + the entries strictly better (1, 2, 2, 4);
    tied entries listed by player id in the direction of the sort (descending)."""
    order = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return [
        {"rank": 1 + sum(s > score for s in scores.values()), "player_id": p, "score": score}
        for p, score in order
    ]


def rows(entries: list[dict[str, Any]]) -> list[tuple[int, str, float]]:
    return [(e["rank"], e["player_id"], e["score"]) for e in entries]


def top_percent(rank: int, total: int) -> float:
    """API.md "GET .../players/{player_id}": 100 x rank / total, rounded to 4 decimals."""
    return round(100 * rank / total, 4)


_NAMES = {
    "month": ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
    "dow": ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
}


def _cron_field(text: str, low: int, high: int, kind: str = "") -> set[int]:
    """`*`, lists, ranges, steps and names, as API.md "Custom periods", The cron, lists them."""
    values: set[int] = set()
    for item in text.split(","):
        part, _, step = item.partition("/")
        for i, name in enumerate(_NAMES.get(kind, [])):
            part = part.replace(name, str(i + (1 if kind == "month" else 0)))
        if part == "*":
            start, stop = low, high
        elif "-" in part:
            start, stop = (int(x) for x in part.split("-"))
        else:
            start, stop = int(part), high if step else int(part)
        values.update(range(start, stop + 1, int(step or 1)))
    return values


class Cron:
    """Minute, hour, day of month, month, day of week, read in `zone`; 0 and 7 are Sunday;
    when both day fields are restricted, either matches."""

    def __init__(self, expr: str, zone: str) -> None:
        minute, hour, dom, month, dow = expr.upper().split()
        self.minute, self.hour = _cron_field(minute, 0, 59), _cron_field(hour, 0, 23)
        self.dom, self.month = _cron_field(dom, 1, 31), _cron_field(month, 1, 12, "month")
        self.dow = {d % 7 for d in _cron_field(dow, 0, 7, "dow")}
        self.either_day = dom != "*" and dow != "*"
        self.zone = ZoneInfo(zone)

    def fires_at(self, moment: datetime) -> bool:
        local = moment.astimezone(self.zone)
        if local.minute not in self.minute or local.hour not in self.hour:
            return False
        day = local.day in self.dom, (local.weekday() + 1) % 7 in self.dow
        return local.month in self.month and (any(day) if self.either_day else all(day))

    def _scan(self, moment: datetime, step: timedelta) -> datetime:
        for _ in range(60 * 24 * 40):
            if self.fires_at(moment):
                return moment
            moment += step
        raise AssertionError("the cron model found no fire within 40 days")

    def last_fire_at_or_before(self, moment: datetime) -> datetime:
        return self._scan(moment.replace(second=0), timedelta(minutes=-1))

    def next_fire_after(self, moment: datetime) -> datetime:
        return self._scan(moment.replace(second=0) + timedelta(minutes=1), timedelta(minutes=1))


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@dataclass
class Env:
    api: Client
    run: str
    admin: str
    server: str
    server_sub: str
    make_run: Any

    def player(self, player_id: str) -> str:
        return self.make_run.token(player_id)

    def board(self, prefix: str) -> str:
        return f"{prefix}-{self.run}"

    def put_board(self, board_id: str, settings: dict[str, Any]) -> Any:
        return ok(self.api.put(f"/boards/{board_id}", token=self.admin, body=settings), 201)

    def submit(
        self, board_id: str, player_id: str, score: Any, key: str = "", **more: Any
    ) -> Answer:
        """A server's submission (API.md "POST /boards/{board_id}/scores")."""
        headers = {"Idempotency-Key": key} if key else None
        body = {"player_id": player_id, "score": score, **more}
        return self.api.post(
            f"/boards/{board_id}/scores", token=self.server, body=body, headers=headers
        )

    def join(self, board_id: str, token: str, player_id: str | None = None) -> Answer:
        body = None if player_id is None else {"player_id": player_id}
        return self.api.post(f"/boards/{board_id}/join", token=token, body=body)

    def deliveries(self, board_id: str, period_id: str) -> list[dict[str, Any]]:
        """What the local receiver got for one board and period (API.md "Trying webhooks
        locally": the last 50, newest last)."""
        events = ok(self.api.get("/local/webhook-events"))["events"]
        return [
            record
            for record in events
            if record["event"].get("data", {}).get("board_id") == board_id
            and record["event"]["data"].get("period", {}).get("id") == period_id
        ]


@pytest.fixture(scope="module")
def env(make_run: Any) -> Env:
    run = uuid.uuid4().hex[:8]
    server_sub = f"game-server-{run}"
    return Env(
        api=Client(make_run.url),
        run=run,
        admin=make_run.token(f"admin-{run}", ADMIN),
        server=make_run.token(server_sub, SERVER),
        server_sub=server_sub,
        make_run=make_run,
    )


SEASON_REWARDS = {
    "top": 2,
    "tiers": [
        {"name": "winner", "ranks": [1, 1]},
        {"name": "podium", "ranks": [2, 4]},
        {"name": "fifth", "ranks": [5, 6]},
        {"name": "top30pct", "top_percent": 30},
        {"name": "nobody", "ranks": [20, 30]},
    ],
}
# Season 1 on a `best` board, in submission order: ada's second score is better (applied),
# eve's second is not (applied false). Season 2: after the end by hand.
SEASON1 = [("ada", 60), ("bob", 90), ("cy", 90), ("dee", 80), ("eve", 70), ("fay", 70)]
SEASON1 += [("gus", 60), ("hal", 50), ("ada", 100), ("eve", 65)]
SEASON2 = [("ivy", 40), ("ada", 10)]


def best_of(submissions: Sequence[tuple[str, float]]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for player, score in submissions:
        scores[player] = max(scores.get(player, score), score)
    return scores


@pytest.fixture(scope="module")
def season(env: Env) -> dict[str, Any]:
    """A season board (`custom` periods, a schedule without cron) played over three seasons:
    season 1 played and ended by hand; season 2 played once it began, followed by
    `period=custom`, then ended by hand a second later; season 3 left open (API.md "Custom
    periods: any schedule, and seasons", "POST /boards/{board_id}/periods/end")."""
    board_id = env.board("season")
    path = f"/boards/{board_id}"
    settings: dict[str, Any] = {"title": "Season", "mode": "best"}
    settings |= {"periods": ["all-time", "custom"], "schedule": {"timezone": "UTC"}}
    settings["rewards"] = SEASON_REWARDS
    out: dict[str, Any] = {"board_id": board_id, "created": env.put_board(board_id, settings)}
    out["periods_before"] = ok(env.api.get(f"{path}/periods"))
    out["season1"] = ok(env.api.get(f"{path}/entries", query={"period": "custom"}))["period"]
    out["season1_answers"] = [(p, s, ok(env.submit(board_id, p, s))) for p, s in SEASON1]

    before = time.time()
    out["end"] = ok(env.api.post(f"{path}/periods/end", token=env.admin))
    out["end_window"] = (before, time.time())
    # At once: a second end (the current period started less than a second ago, or has not
    # started yet), and the new season read by its id.
    out["end_again"] = env.api.post(f"{path}/periods/end", token=env.admin)
    season2 = out["season2"] = out["end"]["current"]["period"]
    out["new_by_id"] = env.api.get(f"{path}/entries", query={"period": season2})

    # Writes from the end on go to the new season: wait for that documented instant.
    end1 = epoch(out["end"]["ended"]["ends_at"])
    time.sleep(max(0.0, end1 - time.time() + 0.05))
    out["season2_answers"] = [(p, s, ok(env.submit(board_id, p, s))) for p, s in SEASON2]

    def follows() -> Any:
        body = ok(env.api.get(f"{path}/entries", query={"period": "custom"}))
        return body if body["period"] == season2 else None

    deadline = end1 + CUSTOM_READ_DEADLINE - time.time()
    out["custom_follows"] = poll(follows, deadline, "period=custom on the new season")
    out["standings_in_season2"] = ok(env.api.get(f"{path}/players/ada/standings"))

    time.sleep(max(0.0, end1 + 1.05 - time.time()))  # a second end needs a second's season
    out["end2"] = ok(env.api.post(f"{path}/periods/end", token=env.admin))
    out["season1_scores"] = best_of(SEASON1)
    out["season2_scores"] = best_of(SEASON2)
    out["all_time"] = best_of(SEASON1 + SEASON2)
    return out


@pytest.fixture(scope="module")
def season_archived(env: Env, season: dict[str, Any]) -> dict[str, Any]:
    """Waits until `GET .../periods` says both ended seasons are `archived` (API.md
    "Periods", Rollover)."""
    board_id = season["board_id"]
    ended = {season["season1"], season["season2"]}

    def archived() -> Any:
        listing = ok(env.api.get(f"/boards/{board_id}/periods"))["periods"]
        done = {p["period"] for p in listing if p["status"] == "archived"}
        return listing if ended <= done else None

    deadline = epoch(season["end2"]["ended"]["ends_at"]) + ARCHIVE_DEADLINE - time.time()
    listing = poll(archived, deadline, f"seasons {sorted(ended)} of {board_id} archived")
    return {**season, "periods_archived": listing}


# name: (start, end relative to now in s, join_required, max_participants, max_attempts, more)
TOURNAMENTS: dict[str, tuple[int, int, bool, int | None, int | None, dict[str, Any]]] = {
    # open; sign-up, a cap of 2, 2 attempts, and a rate limit that is also used up by then
    "open": (-60, 3600, True, 2, 2, {"rate_limit_per_minute": 2}),
    # open, ending sooner than "open" (listed before it); increment scores up to 100
    "open2": (-60, 1800, False, 2, None, {"mode": "increment", "max_score": 100}),
    "upcoming": (3600, 7200, True, 2, None, {}),
    "upcoming2": (7200, 9000, False, None, None, {}),
    "ended": (-3 * 3600, -3600, True, None, None,
              {"mode": "increment", "max_increment": 50, "max_score": 30}),
    "ended2": (-4 * 3600, -2 * 3600, False, None, None, {}),
    # ends 5 s from now, after two submissions: its period.ended has reason "tournament"
    "short": (-60, 5, False, None, None,
              {"rewards": {"top": 5, "tiers": [{"name": "champion", "ranks": [1, 1]}]}}),
}  # fmt: skip


@pytest.fixture(scope="module")
def tournaments(env: Env) -> dict[str, Any]:
    """The tournaments of TOURNAMENTS, made now (API.md "Tournaments"). The "open" one gives
    its window with a +02:00 offset, which the service keeps in UTC."""
    now = int(time.time())
    made: dict[str, Any] = {}
    for name, (start, end, join, cap, attempts, more) in TOURNAMENTS.items():
        offset = 2 if name == "open" else 0
        window = {
            "starts_at": iso_in_zone(now + start, offset),
            "ends_at": iso_in_zone(now + end, offset),
        }
        rules = {"join_required": join, "max_participants": cap, "max_attempts": attempts}
        settings = {"title": f"Cup {name}", "mode": "best", "tournament": window | rules, **more}
        board_id = env.board(f"cup-{name}")
        made[name] = {
            "board_id": board_id,
            "board": env.put_board(board_id, settings),
            "settings": settings,
            "rules": rules,
            "starts_at": ts(now + start),
            "ends_at": ts(now + end),
            "period": custom_id(ts(now + start)),
        }
    short = made["short"]["board_id"]
    ok(env.submit(short, "ada", 7))
    ok(env.submit(short, "bob", 9))
    return made


# --------------------------------------------------------------------------------------------
# 1. Seasons
# --------------------------------------------------------------------------------------------


def test_season_board_starts_its_first_season_at_creation(season: dict[str, Any]) -> None:
    """API.md "Custom periods": without a cron the first season starts when the board is
    created and has no `ends_at`; `period=custom` names it by its start. "The board object":
    the schedule, `ended_by_hand` empty, `rewards` as given. "GET .../periods": all-time first,
    the current custom period listed even when empty."""
    board = season["created"]
    assert board["periods"] == ["all-time", "custom"]
    assert board["schedule"]["timezone"] == "UTC" and board["schedule"].get("cron") is None
    assert (board["ended_by_hand"], board["rewards"], board["tournament"]) == (
        [],
        SEASON_REWARDS,
        None,
    )

    listing = season["periods_before"]["periods"]
    assert [p["kind"] for p in listing] == ["all-time", "custom"], listing
    assert listing[0] == {
        "period": "all-time",
        "kind": "all-time",
        "starts_at": None,
        "ends_at": None,
        "status": "open",
        "entries": 0,
    }
    first = listing[1]
    assert (first["status"], first["ends_at"], first["entries"]) == ("open", None, 0), first
    # "the first starts when the board is created": created_at, to within the second (neither
    # document says how the fraction of a second is rounded).
    assert abs(epoch(first["starts_at"]) - epoch(board["created_at"])) <= 1, (first, board)
    assert first["period"] == custom_id(first["starts_at"]) == season["season1"]


def test_season_writes_land_in_the_current_season(season: dict[str, Any]) -> None:
    """API.md "Custom periods", Writes and reads, and "POST .../scores": each submission's
    `standings` has one item per leaderboard written (all-time, and the current season by its
    id) with the model's score and rank, `previous_score`/`previous_rank`, and `applied`."""
    season1, scores = season["season1"], dict[str, float]()
    for player, score, answer in season["season1_answers"]:
        before, scores = scores, best_of([*scores.items(), (player, score)])
        rank = {e["player_id"]: e["rank"] for e in ranked(scores)}
        previous = {e["player_id"]: e["rank"] for e in ranked(before)}
        assert [s["period"] for s in answer["standings"]] == ["all-time", season1], answer
        assert answer["applied"] is (player not in before or score > before[player]), answer
        for standing in answer["standings"]:
            assert standing == {
                "period": standing["period"],
                "region": None,
                "score": scores[player],
                "rank": rank[player],
                "previous_score": before.get(player),
                "previous_rank": previous.get(player),
            }, (player, score, answer)


def test_season_end_answer(env: Env, season: dict[str, Any]) -> None:
    """API.md "POST /boards/{board_id}/periods/end": the end is the next whole second; `ended`
    is the season, `closed` at that end; `current` starts there, `open`, with no `ends_at`
    without a cron; ending it again within the second is 409, a second later it ends. "The
    board object": `ended_by_hand` lists the ends, oldest first."""
    board_id, answer = season["board_id"], season["end"]
    before, after = season["end_window"]
    assert set(answer) == {"board_id", "ended", "current"} and answer["board_id"] == board_id
    ended, current = answer["ended"], answer["current"]
    assert math.floor(before) + 1 <= epoch(ended["ends_at"]) <= math.floor(after) + 1, answer
    assert ended == {
        "period": season["season1"],
        "kind": "custom",
        "starts_at": season["periods_before"]["periods"][1]["starts_at"],
        "ends_at": ended["ends_at"],
        "status": "closed",
    }
    assert current == {
        "period": custom_id(ended["ends_at"]),
        "kind": "custom",
        "starts_at": ended["ends_at"],
        "ends_at": None,
        "status": "open",
    }
    refused(season["end_again"], 409, "conflict")

    second = season["end2"]
    assert second["ended"] == current | {"ends_at": second["ended"]["ends_at"], "status": "closed"}
    assert second["current"]["starts_at"] == second["ended"]["ends_at"], second
    assert epoch(second["ended"]["ends_at"]) >= epoch(ended["ends_at"]) + 1, second

    # "the newest 16 instants an admin ended the current custom period at, oldest first": read
    # as the ends themselves (the next whole second), which is what `ended.ends_at` says.
    board = ok(env.api.get(f"/boards/{board_id}"))
    assert board["ended_by_hand"] == [ended["ends_at"], second["ended"]["ends_at"]], board


def test_season_new_season_reads_at_once(season: dict[str, Any]) -> None:
    """API.md "Custom periods", Writes and reads: "Reads by id are exact at any time: the new
    season's id (`current.period` in the answer) reads at once" (an open period without data:
    200, empty, total 0; read right after the end's answer)."""
    first = ok(season["new_by_id"])
    assert (first["period"], first["entries"], first["total"]) == (season["season2"], [], 0)


def test_season_reads_after_the_end(env: Env, season: dict[str, Any]) -> None:
    """API.md "Custom periods", Writes and reads: writes from the end on go to the new season;
    `period=custom` follows within 5 s; ended seasons read by id with their final standings;
    all-time is untouched by the ends. "GET .../standings": the current season is one of the
    current periods (the list there names the fixed kinds only: read as every kind kept)."""
    board_id, season1, season2 = season["board_id"], season["season1"], season["season2"]
    path = f"/boards/{board_id}"

    written: list[tuple[str, float]] = []
    for player, score, answer in season["season2_answers"]:
        written.append((player, score))
        rank = {e["player_id"]: e["rank"] for e in ranked(best_of(written))}[player]
        assert [s["period"] for s in answer["standings"]] == ["all-time", season2], answer
        assert (answer["standings"][1]["score"], answer["standings"][1]["rank"]) == (score, rank)

    expected2 = ranked(season["season2_scores"])
    assert rows(season["custom_follows"]["entries"]) == rows(expected2), season["custom_follows"]
    standings = season["standings_in_season2"]["standings"]
    assert [(s["period"], s["kind"], s["rank"], s["score"]) for s in standings] == [
        ("all-time", "all-time", 1, season["all_time"]["ada"]),
        (season2, "custom", 2, season["season2_scores"]["ada"]),
    ], standings

    for period, scores in (
        (season1, season["season1_scores"]),
        (season2, season["season2_scores"]),
    ):
        final = ranked(scores)
        old = ok(env.api.get(f"{path}/entries", query={"period": period, "limit": "100"}))
        assert (old["period"], old["total"], rows(old["entries"])) == (
            period,
            len(final),
            rows(final),
        ), old
    bob = ok(env.api.get(f"{path}/players/bob", query={"period": season1}))
    assert (bob["rank"], bob["score"], bob["total"]) == (2, 90, len(season["season1_scores"]))
    assert bob["top_percent"] == top_percent(2, len(season["season1_scores"]))

    all_time = ok(env.api.get(f"{path}/entries", query={"limit": "100"}))
    assert rows(all_time["entries"]) == rows(ranked(season["all_time"])), all_time


def test_season_periods_listing_and_archive(env: Env, season_archived: dict[str, Any]) -> None:
    """API.md "GET /boards/{board_id}/periods": all-time first, then the custom periods newest
    first, with bounds, status and entries on the global board; the ended seasons turn
    `archived` within the rollover's run (6 s here) and read the same from their archive."""
    season = season_archived
    board_id = season["board_id"]
    first, second = season["end"]["ended"], season["end2"]["ended"]
    third = season["end2"]["current"]
    assert season["periods_archived"] == [
        {
            "period": "all-time",
            "kind": "all-time",
            "starts_at": None,
            "ends_at": None,
            "status": "open",
            "entries": len(season["all_time"]),
        },
        {
            "period": third["period"],
            "kind": "custom",
            "starts_at": third["starts_at"],
            "ends_at": None,
            "status": "open",
            "entries": 0,
        },
        second | {"status": "archived", "entries": len(season["season2_scores"])},
        first | {"status": "archived", "entries": len(season["season1_scores"])},
    ]
    for period, scores in ((first, season["season1_scores"]), (second, season["season2_scores"])):
        query = {"period": period["period"], "limit": "100"}
        old = ok(env.api.get(f"/boards/{board_id}/entries", query=query))
        assert rows(old["entries"]) == rows(ranked(scores)), old
        assert old["total"] == len(scores), old


def _result(period: str, scores: Mapping[str, float], player: str) -> dict[str, Any]:
    """A history item: the player's final standing in an archived period."""
    rank = {e["player_id"]: e["rank"] for e in ranked(scores)}[player]
    total = len(scores)
    return {
        "period": period,
        "rank": rank,
        "score": scores[player],
        "total": total,
        "top_percent": top_percent(rank, total),
    }


def test_season_history_after_archive(env: Env, season_archived: dict[str, Any]) -> None:
    """API.md "GET .../players/{player_id}/history" and "Custom periods", Archive and history:
    archived seasons are listed by `history?kind=custom`, newest first, with the player's final
    rank, score, total and top percent; pages follow `next` (`before`, exclusive) without gap
    or duplicate; a player of no archived season has no result."""
    season = season_archived
    board_id, season1, season2 = season["board_id"], season["season1"], season["season2"]
    played = {season1: season["season1_scores"], season2: season["season2_scores"]}
    for player in sorted(season["all_time"]):
        history = ok(
            env.api.get(f"/boards/{board_id}/players/{player}/history", query={"kind": "custom"})
        )
        results = [
            _result(period, scores, player)
            for period, scores in ((season2, played[season2]), (season1, played[season1]))
            if player in scores
        ]
        assert history == {
            "board_id": board_id,
            "player_id": player,
            "kind": "custom",
            "region": None,
            "results": results,
            "next": None,
        }, history

    path = f"/boards/{board_id}/players/ada/history"
    page1 = ok(env.api.get(path, query={"kind": "custom", "limit": "1"}))
    assert page1["results"] == [_result(season2, played[season2], "ada")], page1
    assert page1["next"] == season2, page1
    page2 = ok(env.api.get(path, query={"kind": "custom", "limit": "1", "before": season2}))
    assert page2["results"] == [_result(season1, played[season1], "ada")], page2
    assert page2["next"] is None, page2
    nobody = ok(env.api.get(f"/boards/{board_id}/players/zed/history", query={"kind": "custom"}))
    assert (nobody["results"], nobody["next"]) == ([], None), nobody


def test_cron_board_first_period_and_end_by_hand(env: Env) -> None:
    """API.md "Custom periods": with a cron, the first period starts at the cron's last fire
    before the board was created, read in its time zone, and ends at its next fire.
    "POST .../periods/end": the period begun by hand ends at the schedule's next fire."""
    for expr, zone in (("0 18 * * SUN", "Europe/Berlin"), ("7,37 */2 * * *", "Asia/Kolkata")):
        board_id = env.board(f"cron-{zone.split('/')[1].lower()}")
        schedule = {"cron": expr, "timezone": zone}
        board = env.put_board(board_id, {"periods": ["custom"], "schedule": schedule})
        assert board["schedule"] == schedule
        cron = Cron(expr, zone)
        start = cron.last_fire_at_or_before(parse_ts(board["created_at"]))
        first = {
            "period": custom_id(ts(start)),
            "kind": "custom",
            "starts_at": ts(start),
            "ends_at": ts(cron.next_fire_after(start)),
            "status": "open",
            "entries": 0,
        }
        listing = ok(env.api.get(f"/boards/{board_id}/periods"))["periods"]
        assert listing == [first], (expr, zone, listing)
        custom = ok(env.api.get(f"/boards/{board_id}/entries", query={"period": "custom"}))
        assert (custom["period"], custom["total"]) == (first["period"], 0), custom

        answer = ok(env.api.post(f"/boards/{board_id}/periods/end", token=env.admin))
        stop = parse_ts(answer["ended"]["ends_at"])
        assert (answer["ended"]["period"], answer["ended"]["starts_at"]) == (
            first["period"],
            first["starts_at"],
        )
        assert answer["current"] == {
            "period": custom_id(ts(stop)),
            "kind": "custom",
            "starts_at": ts(stop),
            "ends_at": ts(cron.next_fire_after(stop)),
            "status": "open",
        }, (expr, zone, answer)


# --------------------------------------------------------------------------------------------
# 2. Tournaments
# --------------------------------------------------------------------------------------------


def test_tournament_board_object(tournaments: dict[str, Any]) -> None:
    """API.md "Tournaments": `periods` is set to `["custom"]`, no schedule, one shard; the
    window is kept to the second in UTC (a +02:00 offset converted); the rules as given."""
    for name, t in tournaments.items():
        board = t["board"]
        assert (board["periods"], board["schedule"], board["shards"]) == (["custom"], None, 1)
        window = {"starts_at": t["starts_at"], "ends_at": t["ends_at"]}
        one_shot = {"recurrence": None}  # "Recurring tournaments": null on a one-shot one
        assert board["tournament"] == window | t["rules"] | one_shot, (name, t["settings"], board)


def test_tournament_join_cap_and_attempts(env: Env, tournaments: dict[str, Any]) -> None:
    """API.md "Tournaments" and "POST /boards/{board_id}/join", on an open tournament with
    `join_required`, `max_participants` 2 and `max_attempts` 2: sign-ups by a player token and
    by a server token naming the player, a repeat (`joined` false), `full`, `not_joined`
    before `full`; attempts are accepted submissions (a replay is none, a refused one costs
    none, `applied` false counts); `attempts_exhausted` before the rate limit (429); an
    `Idempotency-Key` replay or conflict before the tournament's rules; standings in the
    tournament's period; no end by hand (409)."""
    t = tournaments["open"]
    board_id, path = t["board_id"], f"/boards/{t['board_id']}"
    ada = env.player("ada")

    refused(env.submit(board_id, "ada", 10), 409, "tournament_rules", reason="not_joined")
    # A player signs up only itself ("As for a submission": read as 403 for another id).
    refused(env.join(board_id, env.player("cy"), "ada"), 403)
    joined = {
        "board_id": board_id,
        "player_id": "ada",
        "period": t["period"],  # the window signed up for: a one-shot tournament's one
        "joined": True,
        "participants": 1,
    }
    assert ok(env.join(board_id, ada)) == joined
    assert ok(env.join(board_id, ada, "ada")) == joined | {"joined": False}
    assert ok(env.join(board_id, env.server, "bob")) == joined | {
        "player_id": "bob",
        "participants": 2,
    }
    refused(env.join(board_id, env.server, "cy"), 409, "tournament_rules", reason="full")
    refused(env.submit(board_id, "cy", 5), 409, "tournament_rules", reason="not_joined")

    first = ok(env.submit(board_id, "ada", 10, key=f"k1-{env.run}"))
    assert first["standings"] == [
        {
            "period": t["period"],
            "region": None,
            "score": 10,
            "rank": 1,
            "previous_score": None,
            "previous_rank": None,
        }
    ]
    second = ok(env.submit(board_id, "ada", 30, key=f"k2-{env.run}"))
    # ada's third: her 2 attempts and her 2 submissions a minute are both used up.
    refused(env.submit(board_id, "ada", 20), 409, "tournament_rules", reason="attempts_exhausted")
    replay = env.submit(board_id, "ada", 30, key=f"k2-{env.run}")
    assert replay.status == 200 and replay.headers.get("idempotent-replayed") == "true", replay
    assert replay.json["event_id"] == second["event_id"]
    refused(env.submit(board_id, "ada", 31, key=f"k2-{env.run}"), 409, "conflict")

    refused(env.submit(board_id, "bob", 25, region="EU"), 422, "unprocessable")
    ok(env.submit(board_id, "bob", 25))
    assert ok(env.submit(board_id, "bob", 5))["applied"] is False
    refused(env.submit(board_id, "bob", 40), 409, "tournament_rules", reason="attempts_exhausted")

    entries = ok(env.api.get(f"{path}/entries", query={"period": "custom"}))
    assert entries["period"] == t["period"]
    assert rows(entries["entries"]) == rows(ranked({"ada": 30, "bob": 25})), entries
    listing = ok(env.api.get(f"{path}/periods"))["periods"]
    assert listing == [
        {
            "period": t["period"],
            "kind": "custom",
            "starts_at": t["starts_at"],
            "ends_at": t["ends_at"],
            "status": "open",
            "entries": 2,
        }
    ]
    refused(env.api.post(f"{path}/periods/end", token=env.admin), 409)


def test_tournament_sign_up_by_submission_and_server_subject(
    env: Env, tournaments: dict[str, Any]
) -> None:
    """API.md "POST .../join": a server token without `player_id` signs up its own subject;
    without `join_required` the first accepted submission joins; a new player beyond
    `max_participants` is `full` (submission or sign-up), before an increment that would leave
    the bounds (422), which a participant gets."""
    t = tournaments["open2"]
    board_id = t["board_id"]
    joined = {
        "board_id": board_id,
        "player_id": env.server_sub,
        "period": t["period"],
        "joined": True,
        "participants": 1,
    }
    assert ok(env.join(board_id, env.server)) == joined
    ok(env.submit(board_id, "ada", 50))
    again = joined | {"player_id": "ada", "joined": False, "participants": 2}
    assert ok(env.join(board_id, env.server, "ada")) == again
    refused(env.submit(board_id, "bob", 500), 409, "tournament_rules", reason="full")
    refused(env.join(board_id, env.player("bob")), 409, "tournament_rules", reason="full")
    refused(env.submit(board_id, "ada", 60), 422, "unprocessable")  # 110 > max_score 100


def test_tournament_refusal_precedence_outside_the_window(
    env: Env, tournaments: dict[str, Any]
) -> None:
    """API.md "Tournaments", When several apply: a malformed request (400), then the rules that
    need no state (422: a region, `max_increment`), then `not_started` / `ended` before
    `not_joined` and before an increment's bounds. "POST .../join": open from the
    tournament's creation (before its start) until its end (then `ended`)."""
    up = tournaments["upcoming"]["board_id"]
    refused(env.submit(up, "ada", 5), 409, "tournament_rules", reason="not_started")
    refused(env.submit(up, "ada", 5, region="EU"), 422, "unprocessable")
    refused(env.submit(up, "ada", "5"), 400, "bad_request", field="score")
    assert ok(env.join(up, env.player("ada")))["joined"] is True

    past = tournaments["ended"]["board_id"]
    refused(env.submit(past, "ada", 60), 422, "unprocessable")  # beyond max_increment 50
    refused(env.submit(past, "ada", 40), 409, "tournament_rules", reason="ended")
    refused(env.join(past, env.player("ada")), 409, "tournament_rules", reason="ended")


def test_tournament_upcoming_reads(env: Env, tournaments: dict[str, Any]) -> None:
    """API.md "Tournaments", One period, its window: before `starts_at`, `period=custom` is 404
    (as any future period: by id too) and `GET .../periods` lists the window as `upcoming`."""
    t = tournaments["upcoming2"]
    path = f"/boards/{t['board_id']}"
    refused(env.api.get(f"{path}/entries", query={"period": "custom"}), 404, "not_found")
    refused(env.api.get(f"{path}/entries", query={"period": t["period"]}), 404, "not_found")
    listing = ok(env.api.get(f"{path}/periods"))["periods"]
    assert listing == [
        {
            "period": t["period"],
            "kind": "custom",
            "starts_at": t["starts_at"],
            "ends_at": t["ends_at"],
            "status": "upcoming",
            "entries": 0,
        }
    ], listing


def _status_at(item: dict[str, Any], now: float) -> str:
    if now < epoch(item["starts_at"]):
        return "upcoming"
    return "open" if now < epoch(item["ends_at"]) else "ended"


def _list_order(item: dict[str, Any]) -> tuple[int, float]:
    """API.md "GET /tournaments": open (ending soonest first), upcoming (starting soonest
    first), ended (the latest `ends_at` first)."""
    if item["status"] == "open":
        return 0, epoch(item["ends_at"])
    if item["status"] == "upcoming":
        return 1, epoch(item["starts_at"])
    return 2, -epoch(item["ends_at"])


def test_tournament_list_order_and_filter(env: Env, tournaments: dict[str, Any]) -> None:
    """API.md "GET /tournaments": every tournament with its documented fields, in the documented
    order, each with the status its window gives; `?status=` keeps one kind; any other status,
    or another query parameter, is 400."""
    mine = {t["board_id"]: name for name, t in tournaments.items() if name != "short"}
    started = time.time()
    listing = ok(env.api.get("/tournaments"))["tournaments"]
    finished = time.time()
    order = [_list_order(item) for item in listing]
    assert order == sorted(order), [(i["board_id"], i["status"]) for i in listing]
    for item in listing:
        if _status_at(item, started) == _status_at(item, finished):  # not at a border
            assert item["status"] == _status_at(item, started), item

    names = [mine[i["board_id"]] for i in listing if i["board_id"] in mine]
    assert names == ["open2", "open", "upcoming", "upcoming2", "ended", "ended2"], names
    for item in listing:
        if item["board_id"] in mine:
            t = tournaments[mine[item["board_id"]]]
            # the window's counts follow what other tests here played; their model is
            # test_docs_client_tournament_counts.py's
            counts = {k: item.pop(k) for k in ("participants", "attempts")}
            assert all(v is None or (isinstance(v, int) and v >= 0) for v in counts.values())
            assert item == {
                "board_id": t["board_id"],
                "title": t["settings"]["title"],
                "status": item["status"],
                "period": t["period"],
                "starts_at": t["starts_at"],
                "ends_at": t["ends_at"],
                **t["rules"],
                # a one-shot tournament: no recurrence, its series is its one window
                "recurrence": None,
                "series_starts_at": t["starts_at"],
                "series_ends_at": t["ends_at"],
            }

    expected = {
        "open": ["open2", "open"],
        "upcoming": ["upcoming", "upcoming2"],
        "ended": ["ended", "ended2"],
    }
    for status, kept_names in expected.items():
        kept = ok(env.api.get("/tournaments", query={"status": status}))["tournaments"]
        assert {i["status"] for i in kept} <= {status}, (status, kept)
        assert [mine[i["board_id"]] for i in kept if i["board_id"] in mine] == kept_names
    refused(
        env.api.get("/tournaments", query={"status": "finished"}),
        400,
        "bad_request",
        field="status",
    )
    refused(
        env.api.get("/tournaments", query={"state": "open"}), 400, "bad_request", fields=["state"]
    )


# --------------------------------------------------------------------------------------------
# 3. period.ended events and webhooks
# --------------------------------------------------------------------------------------------


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    return {"player_id": e["player_id"], "rank": e["rank"], "score": e["score"]}


def expected_event(
    board_id: str, period: dict[str, Any], reason: str, scores: Mapping[str, float], rewards: Any
) -> dict[str, Any]:
    """API.md "The event" and "Reward tiers", from the model of the final standings: `top` is
    every entry ranked up to `rewards.top` (ties included); a `ranks` tier covers its range, a
    `top_percent` tier ranks 1 to ceil(total x p / 100); `time` is the period's `ends_at`."""
    final = ranked(scores)
    tiers = []
    for tier in rewards.get("tiers", []):
        low, high = tier.get("ranks") or (1, math.ceil(len(final) * tier["top_percent"] / 100))
        tiers.append(
            {
                "name": tier["name"],
                "from_rank": low,
                "to_rank": high,
                "players": [_entry(e) for e in final if low <= e["rank"] <= high],
                "truncated": False,
            }
        )
    data: dict[str, Any] = {"board_id": board_id, "period": period, "reason": reason}
    data |= {"total_entries": len(final), "tiers": tiers}
    data["top"] = [_entry(e) for e in final if e["rank"] <= rewards.get("top", 10)]
    return {"type": "period.ended", "time": period["ends_at"], "data": data}


def _same_in_rank_order(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    """ "in rank order": the order within one rank is left open (the event example lists ties
    by ascending id, the reads list them in the sort's direction: descending here)."""
    ranks = [e["rank"] for e in got]

    def key(e: dict[str, Any]) -> tuple[int, str]:
        return e["rank"], e["player_id"]

    return ranks == sorted(ranks) and sorted(got, key=key) == sorted(want, key=key)


def check_envelope(event: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(event) == {"id", "type", "time", "data"}, event
    assert str(uuid.UUID(event["id"])) == event["id"], f"the id is a UUID: {event['id']}"
    assert (event["type"], event["time"]) == (want["type"], want["time"]), event
    data, wanted = event["data"], want["data"]
    assert set(data) == set(wanted), data
    for name in ("board_id", "period", "reason", "total_entries"):
        assert data[name] == wanted[name], (name, data[name], wanted[name])
    assert _same_in_rank_order(data["top"], wanted["top"]), (data["top"], wanted["top"])
    assert [t["name"] for t in data["tiers"]] == [t["name"] for t in wanted["tiers"]], data
    for got, tier in zip(data["tiers"], wanted["tiers"], strict=True):
        bounds = ("name", "from_rank", "to_rank", "truncated")
        assert {k: got.get(k) for k in bounds} == {k: tier[k] for k in bounds}, (got, tier)
        assert set(got) == set(tier), got
        assert _same_in_rank_order(got["players"], tier["players"]), (got, tier)


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """API.md "Verifying a delivery", step 2: v1= + hex(HMAC-SHA256(secret, ts + "." + body))."""
    return "v1=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def _event_period(bounds: dict[str, Any]) -> dict[str, Any]:
    """`data.period` of an event, from a period as `POST .../periods/end` answers it."""
    return {k: bounds[k] for k in ("kind", "starts_at", "ends_at")} | {"id": bounds["period"]}


def test_season_end_webhook(env: Env, season_archived: dict[str, Any]) -> None:
    """API.md "Period-end events and webhooks": each season ended by hand emits one
    `period.ended` (reason `manual`) when the rollover archives it, delivered to the local
    receiver (`GET /local/webhook-events`): the envelope matches the model of the final
    standings; every copy carries the event's id and the same body, verified; the two seasons'
    ids differ (derived from the board and the period)."""
    season = season_archived
    board_id = season["board_id"]
    seasons = (
        (season["end"]["ended"], season["season1_scores"]),
        (season["end2"]["ended"], season["season2_scores"]),
    )
    ids = []
    for ended, scores in seasons:
        want = expected_event(board_id, _event_period(ended), "manual", scores, SEASON_REWARDS)
        records = poll(
            lambda ended=ended: env.deliveries(board_id, ended["period"]),
            epoch(ended["ends_at"]) + WEBHOOK_DEADLINE - time.time(),
            f"a period.ended delivery for {board_id} {ended['period']}",
        )
        event = records[0]["event"]
        check_envelope(event, want)
        assert all(r["event_id"] == event["id"] and r["event"] == event for r in records)
        assert all(r["verified"] is True and 200 <= int(r["answered"]) < 300 for r in records)
        assert (int(records[0]["attempt"]), records[0]["duplicate"]) == (1, False), records
        ids.append(event["id"])
    assert ids[0] != ids[1], ids


def test_webhook_signature_recipe_and_duplicates(env: Env, season_archived: dict[str, Any]) -> None:
    """API.md "Verifying a delivery" and "Duplicates": the season's event, delivered again as
    the service would (the envelope as compact JSON with sorted keys), signed by the documented
    recipe with the local secret (`webhook-secret` in the data folder), a stale value first in
    `Leaderboard-Signature` as during a rotation: the local receiver verifies it, answers 2xx,
    and marks it a duplicate of the id it already had."""
    board_id, ended = season_archived["board_id"], season_archived["end"]["ended"]
    records = poll(
        lambda: env.deliveries(board_id, ended["period"]),
        epoch(ended["ends_at"]) + WEBHOOK_DEADLINE - time.time(),
        f"a period.ended delivery for {board_id} {ended['period']}",
    )
    event = records[0]["event"]
    secret = (Path(env.make_run.stack.data_dir) / "webhook-secret").read_bytes().strip()
    body = json.dumps(event, sort_keys=True, separators=(",", ":")).encode()
    stamp = str(int(time.time()))
    headers = {
        "Leaderboard-Event-Id": event["id"],
        "Leaderboard-Timestamp": stamp,
        "Leaderboard-Signature": f"{sign(b'stale', stamp, body)}, {sign(secret, stamp, body)}",
        "Leaderboard-Delivery-Attempt": "2",
    }
    answer = env.api.post("/local/webhook", raw=body, headers=headers)
    assert 200 <= answer.status < 300, answer
    copies = env.deliveries(board_id, ended["period"])
    assert len(copies) == len(records) + 1, copies
    assert copies[-1]["event_id"] == event["id"] and copies[-1]["event"] == event, copies[-1]
    assert (copies[-1]["verified"], copies[-1]["duplicate"]) == (True, True), copies[-1]


def test_tournament_end_webhook(env: Env, tournaments: dict[str, Any]) -> None:
    """API.md "Tournaments", The end: at `ends_at` the rollover archives the final standings
    and emits one `period.ended` with reason `tournament`; then submissions and sign-ups are
    `ended`, `period=custom` reads the final standings, `GET .../periods` says `archived`, and
    `GET /tournaments` says `ended`."""
    t = tournaments["short"]
    board_id, path = t["board_id"], f"/boards/{t['board_id']}"
    period = {"id": t["period"], "kind": "custom", "starts_at": t["starts_at"]}
    period["ends_at"] = t["ends_at"]
    scores = {"ada": 7, "bob": 9}
    want = expected_event(board_id, period, "tournament", scores, t["settings"]["rewards"])
    records = poll(
        lambda: env.deliveries(board_id, t["period"]),
        epoch(t["ends_at"]) + WEBHOOK_DEADLINE - time.time(),
        f"a period.ended delivery for the tournament {board_id}",
    )
    check_envelope(records[0]["event"], want)
    assert all(r["event"] == records[0]["event"] and r["verified"] is True for r in records)

    refused(env.submit(board_id, "cy", 1), 409, "tournament_rules", reason="ended")
    refused(env.join(board_id, env.server, "cy"), 409, "tournament_rules", reason="ended")
    final = ok(env.api.get(f"{path}/entries", query={"period": "custom"}))
    assert final["period"] == t["period"] and rows(final["entries"]) == rows(ranked(scores))

    # API.md: the event is sent just before the period is marked archived; the listing may say
    # `closed` for a moment (under a second) after the webhook arrived.
    def listed_past_closed() -> list[dict[str, Any]] | None:
        periods = ok(env.api.get(f"{path}/periods"))["periods"]
        return None if any(p["status"] == "closed" for p in periods) else periods

    listing = poll(listed_past_closed, 2.0, f"{board_id}'s period no longer `closed`")
    assert [(p["period"], p["status"], p["entries"]) for p in listing] == [
        (t["period"], "archived", 2)
    ], listing
    listed = ok(env.api.get("/tournaments", query={"status": "ended"}))["tournaments"]
    assert board_id in [i["board_id"] for i in listed]


# --------------------------------------------------------------------------------------------
# 4. Validation on these routes
# --------------------------------------------------------------------------------------------


def test_schedule_tournament_and_rewards_validation(env: Env) -> None:
    """API.md "Errors" (400 or 422: one rule on every route), "PUT /boards/{board_id}",
    "Custom periods", "Tournaments" and "Reward tiers": what the schema refuses is 400
    `bad_request`, first, even beside a broken rule; a well-formed value that names nothing,
    or a rule between fields, is 422 `unprocessable`. None of them creates the board."""
    now, day = int(time.time()), 86400
    window = {"starts_at": ts(now + day), "ends_at": ts(now + 2 * day)}
    custom = {"periods": ["custom"]}
    bad, unprocessable = (400, "bad_request"), (422, "unprocessable")
    tier = [{"name": "x", "ranks": [1, 1]}]
    cases: list[tuple[dict[str, Any], tuple[int, str]]] = [
        ({"periods": ["all-time", "custom"]}, unprocessable),  # custom without a schedule
        ({"schedule": {"timezone": "UTC"}}, unprocessable),  # a schedule without custom
        (custom | {"schedule": {"cron": "0 0 30 2 *"}}, unprocessable),  # never fires
        (custom | {"schedule": {"cron": "61 0 * * *"}}, unprocessable),  # out of its range
        (custom | {"schedule": {"cron": "0 0 * *"}}, bad),  # four fields
        (custom | {"schedule": {"timezone": "Mars/Olympus"}}, unprocessable),  # no such zone
        (custom | {"schedule": {"cron": "0 0 30 2 *"}, "live_top": 0}, bad),  # 400 comes first
        (custom | {"schedule": {"timezone": "UTC", "every": "week"}}, bad),  # unknown field
        ({"tournament": {"starts_at": window["ends_at"], "ends_at": window["starts_at"]}},
         unprocessable),
        ({"tournament": {"starts_at": ts(now), "ends_at": ts(now + 367 * day)}}, unprocessable),
        ({"tournament": {"starts_at": "2027-02-30T00:00:00Z", "ends_at": "2027-03-05T00:00:00Z"}},
         unprocessable),
        ({"tournament": {"starts_at": "2027-02-01", "ends_at": "2027-03-05T00:00:00Z"}}, bad),
        ({"tournament": {"starts_at": window["starts_at"]}}, bad),  # no ends_at
        ({"tournament": window | {"max_participants": 0}}, bad),
        ({"tournament": window | {"max_attempts": 1000001}}, bad),
        ({"tournament": window, "periods": ["all-time"]}, unprocessable),
        ({"tournament": window, "schedule": {"timezone": "UTC"}, **custom}, unprocessable),
        ({"tournament": window, "shards": 2}, unprocessable),
        ({"rewards": {"tiers": tier * 11}}, bad),  # 11 tiers (before their names clash)
        ({"rewards": {"tiers": [{"name": "x", "ranks": [1, 2], "top_percent": 5}]}}, bad),
        ({"rewards": {"tiers": [{"name": "x", "ranks": [0, 5]}]}}, bad),
        ({"rewards": {"tiers": [{"name": "x", "top_percent": 0}]}}, bad),
        ({"rewards": {"top": 1001}}, bad),
        ({"rewards": {"tiers": [{"name": "x", "ranks": [5, 2]}]}}, unprocessable),
        ({"rewards": {"tiers": [*tier, {"name": "x", "top_percent": 5}]}}, unprocessable),
    ]  # fmt: skip
    path = f"/boards/{env.board('invalid')}"
    for body, (status, code) in cases:
        refused(env.api.put(path, token=env.admin, body=body), status, code)
    refused(env.api.get(path), 404, "not_found")


def test_period_reads_validation(env: Env, season: dict[str, Any]) -> None:
    """API.md "Periods": a `period` of no known shape is 400, an id of a known shape naming no
    period 422, a custom id at which no period starts 404, a kind the board does not keep 404;
    `GET .../periods` takes no query parameter (400 with `fields`) and is 404 for an unknown
    board. "GET .../history": a malformed `before` or `kind` 400, a `before` of another kind 422."""
    board_id = season["board_id"]
    entries = f"/boards/{board_id}/entries"
    refused(env.api.get(entries, query={"period": "2026-1-5"}), 400, "bad_request", field="period")
    refused(env.api.get(entries, query={"period": "Custom"}), 400, "bad_request", field="period")
    refused(env.api.get(entries, query={"period": "2026-02-30"}), 422, "unprocessable")
    refused(env.api.get(entries, query={"period": "2020-01-01T000000Z"}), 404, "not_found")
    refused(env.api.get(entries, query={"period": "weekly"}), 404, "not_found")
    periods = f"/boards/{board_id}/periods"
    refused(env.api.get(periods, query={"limit": "5"}), 400, "bad_request", fields=["limit"])
    refused(env.api.get(f"/boards/nope-{env.run}/periods"), 404, "not_found")

    history = f"/boards/{board_id}/players/ada/history"
    week = {"kind": "custom", "before": "2026-W05"}
    refused(env.api.get(history, query=week), 422, "unprocessable")
    last = {"kind": "custom", "before": "last"}
    refused(env.api.get(history, query=last), 400, "bad_request", field="before")
    refused(env.api.get(history, query={"kind": "yearly"}), 400, "bad_request", field="kind")


def test_end_and_join_validation(env: Env, tournaments: dict[str, Any]) -> None:
    """API.md "POST .../periods/end" (admin scope, 404 unknown board, 409 without custom
    periods), "POST .../join" (409 `conflict` for a board that is not a tournament, 404, a
    malformed `player_id` or an unknown body field 400 as "Conventions" says: names in
    `fields`), "Authentication" (401 without a token; the gateway's 403 for a missing scope),
    and "The board object" (`schedule` cannot change once the board has entries: 409)."""
    plain = env.board("plain")
    env.put_board(plain, {"periods": ["all-time"]})
    end = f"/boards/{plain}/periods/end"
    refused(env.api.post(end, token=env.admin), 409, "conflict")
    refused(env.api.post(f"/boards/nope-{env.run}/periods/end", token=env.admin), 404, "not_found")
    refused(env.api.post("/boards/Not_Valid!/periods/end", token=env.admin), 400, "bad_request")
    forbidden = env.api.post(end, token=env.server)
    assert (forbidden.status, forbidden.json) == (403, {"message": "Forbidden"}), forbidden
    unauthorized = env.api.post(end)
    assert (unauthorized.status, unauthorized.json) == (401, {"message": "Unauthorized"})

    refused(env.join(plain, env.player("ada")), 409, "conflict")
    refused(env.join(f"nope-{env.run}", env.player("ada")), 404, "not_found")
    cup = tournaments["upcoming2"]["board_id"]
    refused(env.join(cup, env.server, "no spaces"), 400, "bad_request", field="player_id")
    extra = env.api.post(
        f"/boards/{cup}/join", token=env.server, body={"player_id": "ada", "team": "x"}
    )
    refused(extra, 400, "bad_request", fields=["team"])
    assert env.api.post(f"/boards/{cup}/join").status == 401

    seasons = env.board("immutable")
    env.put_board(seasons, {"periods": ["custom"], "schedule": {"timezone": "UTC"}})
    ok(env.submit(seasons, "ada", 1))
    change = {"schedule": {"timezone": "Europe/Berlin"}}
    refused(env.api.put(f"/boards/{seasons}", token=env.admin, body=change), 409, "conflict")
