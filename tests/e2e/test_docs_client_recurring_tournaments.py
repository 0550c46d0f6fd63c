"""Recurring tournaments, as an outside client reads the documents.

Every expected value here comes from docs/API.md ("Tournaments", "Recurring tournaments",
`POST /boards/{board_id}/join`, `GET /tournaments`, "Periods", `GET .../periods`, "Period-end
events and webhooks"), docs/openapi.json and the README, and from this file's own model: a small
cron evaluator (the schedules' daylight-saving rules as API.md states them), the windows it
opens, and the standings of the scores this file submits. Nothing is taken from the
implementation. Where the documents are ambiguous or silent, a comment marked GAP says which
reading is tested.

The stack is the suite's `make_run` fixture (`make run` on a free port, LOCAL_SCHEDULE_SCALE=0.1:
the rollover's every-minute run comes every 6 s).

Timeline of the live scenario (the `live` fixture), all in wall-clock time, computed at start:
a recurring tournament whose cron (in Asia/Kolkata, UTC+05:30, so the cron's minutes are not
the UTC minutes) fires at F1, a minute boundary before the board is created (the series'
`starts_at` is F1), and at F2 a minute or two later, with a duration that closes W1 about 25 s
after creation. So W1 is open while the board is made and played, then a gap of 12-70 s with
nothing open, then W2 opens; the series' `ends_at` is F2 + 30 s, so W2 is its last window. The
fixture only records what the service answers in each phase; the tests judge the records, so
they may run in any order. The whole module takes 1.5-2.5 minutes.
"""

from __future__ import annotations

import functools
import json
import math
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.e2e

ADMIN = "leaderboard/admin"
SERVER = "leaderboard/server"
# API.md "Period-end events and webhooks": the event's id is a UUID v5 in this namespace.
EVENT_NAMESPACE = uuid.UUID("6f0e3a52-5d0b-4c1e-9a57-3f1d2c8b7e41")
# API.md "Periods", Rollover: a tournament's window is archived "within a minute of its end" by a
# run every minute; LOCAL_SCHEDULE_SCALE=0.1 makes that every 6 s. Allow several runs.
ARCHIVE_DEADLINE = 40.0
WEBHOOK_DEADLINE = ARCHIVE_DEADLINE + 10
# Seconds of W1 left after the board's creation for the in-window steps, and the shortest gap.
W1_SECONDS = 25
GAP_MIN_SECONDS = 12
LIVE_ZONE = "Asia/Kolkata"


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------


@dataclass
class Answer:
    request: str
    status: int
    headers: dict[str, str]
    raw: bytes
    sent: float = 0.0  # wall clock (time.time()) before the request and after the answer
    received: float = 0.0

    @property
    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None

    def __repr__(self) -> str:
        return f"<{self.request} -> {self.status} {self.raw[:900]!r}>"


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
        headers: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
    ) -> Answer:
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + target, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        label = f"{method} {target} {json.dumps(body) if body is not None else ''}".rstrip()
        sent = time.time()
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                status, head, content = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, head, content = error.code, error.headers, error.read()
        received = time.time()
        return Answer(
            label, status, {k.lower(): v for k, v in head.items()}, content, sent, received
        )

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
    """An error as API.md "Errors" describes it: `message`, and the service's `code`,
    `field`/`fields`, and for tournaments `reason`."""
    want = " ".join(str(x) for x in (status, code, field, fields, reason) if x)
    assert answer.status == status, f"expected {want}: {answer!r}"
    body = answer.json
    assert isinstance(body, dict) and isinstance(body.get("message"), str), answer
    for name, value in (("code", code), ("field", field), ("fields", fields), ("reason", reason)):
        if value is not None:
            assert body.get(name) == value, f"expected {name} {value!r} ({want}): {answer!r}"
    return body


def concurrently(calls: list[Callable[[], Answer]]) -> list[Answer]:
    """Run the calls from threads released together by a barrier; answers in call order."""
    barrier = threading.Barrier(len(calls))

    def run(fn: Callable[[], Answer]) -> Answer:
        barrier.wait()
        return fn()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


# --------------------------------------------------------------------------------------------
# The model: cron fires (API.md "Custom periods", The cron and Daylight saving), windows
# (API.md "Recurring tournaments", Windows), the window a listing shows (API.md GET /tournaments)
# --------------------------------------------------------------------------------------------

MINUTE = timedelta(minutes=1)
MONTHS = "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC"
MONTH_NAMES = {m: i + 1 for i, m in enumerate(MONTHS.split(" "))}
DAY_NAMES = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}


def _cron_field(text: str, lo: int, hi: int, names: dict[str, int]) -> set[int] | None:
    """The values a field allows; None for `*` (unrestricted, for the day-field rule)."""
    if text == "*":
        return None

    def value(token: str) -> int:
        return names[token.upper()] if token.upper() in names else int(token)

    values: set[int] = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/")
            step = int(step_text)
        if part == "*":
            first, last = lo, hi
        elif "-" in part:
            a, b = part.split("-")
            first, last = value(a), value(b)
        else:
            first = value(part)
            last = hi if step != 1 else first
        values.update(range(first, last + 1, step))
    return values


@dataclass(frozen=True)
class Cron:
    minutes: set[int] | None
    hours: set[int] | None
    days: set[int] | None
    months: set[int] | None
    weekdays: set[int] | None

    @classmethod
    def parse(cls, text: str) -> Cron:
        m, h, dom, mon, dow = text.split(" ")
        weekdays = _cron_field(dow, 0, 7, DAY_NAMES)
        if weekdays is not None:
            weekdays = {d % 7 for d in weekdays}  # 0 and 7 are both Sunday
        return cls(
            _cron_field(m, 0, 59, {}),
            _cron_field(h, 0, 23, {}),
            _cron_field(dom, 1, 31, {}),
            _cron_field(mon, 1, 12, MONTH_NAMES),
            weekdays,
        )

    def matches(self, local: datetime) -> bool:
        def has(allowed: set[int] | None, v: int) -> bool:
            return allowed is None or v in allowed

        if not (has(self.minutes, local.minute) and has(self.hours, local.hour)):
            return False
        if not has(self.months, local.month):
            return False
        dow = (local.weekday() + 1) % 7  # Python: Monday 0; cron: Sunday 0
        if self.days is not None and self.weekdays is not None:  # both restricted: either one
            return local.day in self.days or dow in self.weekdays
        return has(self.days, local.day) and has(self.weekdays, dow)


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


@functools.lru_cache(maxsize=256)
def next_fire(
    cron: str, zone_name: str, at_or_after: datetime, until: datetime | None = None
) -> datetime | None:
    """The first fire at or after an instant (None: none before `until`): "a schedule fires at
    the first instant the local clock reaches or passes a matching time" (a skipped wall time
    fires at the jump, a time shown twice fires the first time). Walks UTC minutes, keeping the
    latest wall time seen."""
    rule, zone = Cron.parse(cron), ZoneInfo(zone_name)
    u = at_or_after.astimezone(UTC)
    if u.second or u.microsecond:
        u = u.replace(second=0, microsecond=0) + MINUTE
    seen = _wall(u - MINUTE, zone)
    end = until if until is not None else u + timedelta(days=400)
    while u <= end:
        wall = _wall(u, zone)
        if wall > seen:
            passed = wall - seen
            if passed == MINUTE:
                hit = rule.matches(wall)
            else:  # the clock jumped forward: every wall time it passed
                steps = int(passed / MINUTE)
                hit = any(rule.matches(seen + k * MINUTE) for k in range(1, steps + 1))
            if hit:
                return u
            seen = wall
        u += MINUTE
    if until is not None:
        return None
    raise AssertionError(f"model: {cron!r} in {zone_name} does not fire within 400 days")


@dataclass(frozen=True)
class Series:
    cron: str
    zone: str
    duration: int
    starts_at: datetime  # the series' start (the board's creation when sent as null)
    ends_at: datetime | None

    def window_of(self, fire: datetime) -> tuple[datetime, datetime]:
        """[F, min(F + duration, next fire))."""
        end = fire + timedelta(seconds=self.duration)
        following = next_fire(self.cron, self.zone, fire + timedelta(seconds=1), end)
        return fire, end if following is None else min(end, following)

    def windows(self) -> Iterable[tuple[datetime, datetime]]:
        fire = next_fire(self.cron, self.zone, self.starts_at)
        while fire is not None and (self.ends_at is None or fire < self.ends_at):
            yield self.window_of(fire)
            fire = next_fire(self.cron, self.zone, fire + timedelta(seconds=1), self.ends_at)

    def shown(self, t: datetime) -> tuple[str, datetime, datetime]:
        """GET /tournaments: the window open now, else the next one, else the last one."""
        last = None
        for start, end in self.windows():
            if t < start:
                return "upcoming", start, end
            if t < end:
                return "open", start, end
            last = (start, end)
        assert last is not None, "model: a series without a window"
        return "ended", *last


def iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pid(t: datetime) -> str:
    """A custom period's id: its start in UTC to the second (API.md "Custom periods", Ids)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H%M%SZ")


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ranked(scores: dict[str, float]) -> list[dict[str, Any]]:
    """A `desc` board with `ties: shared`: rank = 1 + strictly better; ties by id descending."""
    by_id = sorted(scores.items(), key=lambda kv: kv[0].encode(), reverse=True)
    order = sorted(by_id, key=lambda kv: -kv[1])  # stable: equal scores keep ids descending
    return [
        {"rank": 1 + sum(1 for s in scores.values() if s > score), "player_id": p, "score": score}
        for p, score in order
    ]


def entries_of(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ("rank", "player_id", "score")} for e in page["entries"]]


def listing_view(item: dict[str, Any]) -> tuple[str, str, str, str]:
    return item["status"], item["period"], item["starts_at"], item["ends_at"]


def check_listing_order(items: list[dict[str, Any]]) -> None:
    """API.md GET /tournaments: open ones first (ending soonest first), then upcoming ones
    (starting soonest first), then ended ones (the latest `ends_at` first).
    GAP: the order among equal instants is not given; equal keys are allowed in any order."""
    rank = {"open": 0, "upcoming": 1, "ended": 2}

    def key(item: dict[str, Any]) -> tuple[int, float]:
        s = item["status"]
        if s == "open":
            return 0, parse_ts(item["ends_at"]).timestamp()
        if s == "upcoming":
            return 1, parse_ts(item["starts_at"]).timestamp()
        return 2, -parse_ts(item["ends_at"]).timestamp()

    assert all(i["status"] in rank for i in items), items
    keys = [key(i) for i in items]
    for n in range(1, len(keys)):
        assert keys[n - 1] <= keys[n], (
            f"GET /tournaments out of order at {n}: {items[n - 1]} before {items[n]}"
        )


# --------------------------------------------------------------------------------------------
# The environment
# --------------------------------------------------------------------------------------------


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

    def put_board(self, board_id: str, settings: dict[str, Any]) -> Answer:
        return self.api.put(f"/boards/{board_id}", token=self.admin, body=settings)

    def submit(
        self, board_id: str, player_id: str, score: float, key: str = "", **more: Any
    ) -> Answer:
        headers = {"Idempotency-Key": key} if key else None
        body = {"player_id": player_id, "score": score, **more}
        return self.api.post(
            f"/boards/{board_id}/scores", token=self.server, body=body, headers=headers
        )

    def join(self, board_id: str, player_id: str, *, as_player: bool = False) -> Answer:
        """A server names the player; a player token signs itself up with no body."""
        if as_player:
            return self.api.post(f"/boards/{board_id}/join", token=self.player(player_id))
        return self.api.post(
            f"/boards/{board_id}/join", token=self.server, body={"player_id": player_id}
        )

    def tournaments(self, status: str | None = None) -> Answer:
        return self.api.get("/tournaments", query={"status": status} if status else None)

    def mine(self, answer: Answer) -> dict[str, dict[str, Any]]:
        items = ok(answer)["tournaments"]
        return {i["board_id"]: i for i in items if i["board_id"].endswith(self.run)}


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


def sleep_until(instant: float) -> None:
    delay = instant - time.time()
    if delay > 0:
        time.sleep(delay)


# --------------------------------------------------------------------------------------------
# The live scenario: W1 open, the gap, W2 open, W1 archived
# --------------------------------------------------------------------------------------------


@dataclass
class Live:
    board: str  # join_required, max_participants 5, max_attempts 2
    free_board: str  # join_required false, max_participants 2, no attempt cap
    series: Series
    f1: datetime
    e1: datetime
    f2: datetime
    e2: datetime
    settings: dict[str, Any]
    created: Answer
    rec: dict[str, Any] = field(default_factory=dict)
    phase_end: dict[str, float] = field(default_factory=dict)  # the last answer of each phase

    @property
    def w1(self) -> str:
        return pid(self.f1)

    @property
    def w2(self) -> str:
        return pid(self.f2)

    def within(self, phase: str, lo: datetime, hi: datetime) -> None:
        """Every request of a phase was sent and answered inside [lo, hi): else the machine was
        too slow for this timeline, and the phase's records say nothing about the service."""
        first = self.rec[f"{phase}:first"]
        last = self.phase_end[phase]
        if not (lo.timestamp() <= first and last < hi.timestamp()):
            pytest.fail(
                f"timing: phase {phase} ran {at(first)}..{at(last)}, outside {lo}..{hi}: "
                "the environment was too slow for this timeline (not a service failure)"
            )


def plan(now: float) -> tuple[datetime, datetime, datetime, int]:
    """F1 (a minute boundary in the past), E1 (W1's end), F2 (a minute boundary after the
    gap), the duration E1 - F1 (60-119 s)."""
    t0 = math.ceil(now) + 1
    e1 = t0 + W1_SECONDS
    f1 = (e1 - 60) // 60 * 60
    f2 = math.ceil((e1 + GAP_MIN_SECONDS) / 60) * 60
    return at(f1), at(e1), at(f2), e1 - f1


@pytest.fixture(scope="module")
def live(env: Env) -> Live:
    f1, e1, f2, duration = plan(time.time())
    zone = ZoneInfo(LIVE_ZONE)
    minutes = [f1.astimezone(zone).minute, f2.astimezone(zone).minute]
    cron = f"{minutes[0]},{minutes[1]} * * * *"
    series_end = f2 + timedelta(seconds=30)
    series = Series(cron, LIVE_ZONE, duration, f1, series_end)
    windows = list(series.windows())
    # the model's own check of the plan: two windows, W1 = [F1, E1), W2 = [F2, F2 + duration)
    e2 = f2 + timedelta(seconds=duration)
    assert windows == [(f1, e1), (f2, e2)], (windows, f1, e1, f2)

    tournament = {
        "recurrence": {"cron": cron, "timezone": LIVE_ZONE, "duration_seconds": duration},
        "starts_at": iso(f1),
        "ends_at": iso(series_end),
        "join_required": True,
        "max_participants": 5,
        "max_attempts": 2,
    }
    settings = {"title": "Minute Sprint", "mode": "best", "tournament": tournament}
    board, free_board = env.board("rt-live"), env.board("rt-free")
    created = env.put_board(board, settings)
    live = Live(board, free_board, series, f1, e1, f2, e2, settings, created)
    rec = live.rec
    free_settings = {
        "mode": "best",
        "tournament": {
            **tournament,
            "join_required": False,
            "max_participants": 2,
            "max_attempts": None,
        },
    }
    rec["free_created"] = env.put_board(free_board, free_settings)
    if created.status != 201 or rec["free_created"].status != 201:
        pytest.fail(f"the live boards were not created: {created!r} {rec['free_created']!r}")

    # ---- W1: open now ------------------------------------------------------------------------
    rec["w1:first"] = time.time()
    rec["w1_board"] = env.api.get(f"/boards/{board}")
    rec["w1_list"] = env.tournaments()
    rec["w1_list_open"] = env.tournaments("open")
    rec["w1_list_upcoming"] = env.tournaments("upcoming")
    rec["w1_periods_empty"] = env.api.get(f"/boards/{board}/periods")
    rec["w1_custom_empty"] = env.api.get(f"/boards/{board}/entries", query={"period": "custom"})
    rec["w1_submit_unjoined"] = env.submit(board, "p1", 10)
    rec["w1_join_p1"] = env.join(board, "p1", as_player=True)  # a player signs itself up
    rec["w1_join_other"] = env.api.post(  # a player naming another: 403
        f"/boards/{board}/join", token=env.player("p1"), body={"player_id": "p2"}
    )
    crowd = ["p2", "p3", "p4", "p5", "x1", "x2", "x3"]  # 7 for the 4 places left
    rec["w1_join_crowd"] = dict(
        zip(crowd, concurrently([lambda p=p: env.join(board, p) for p in crowd]), strict=True)
    )
    joined = [p for p in crowd if rec["w1_join_crowd"][p].status == 200]
    turned_away = [p for p in crowd if p not in joined]
    rec["w1_joined"], rec["w1_turned_away"] = joined, turned_away
    if len(joined) != 4:
        rec["w1:abort"] = f"4 of 7 concurrent joins expected to pass, got {joined}"
    roles = (joined + ["?"] * 4)[:4]
    burst, top, regioned, idle = roles
    rec["roles"] = {"burst": burst, "top": top, "regioned": regioned, "idle": idle}
    rec["w1_join_again"] = env.join(board, "p1", as_player=True)
    rec["w1_join_again_full"] = env.join(board, idle)
    if turned_away:
        rec["w1_refused_submit"] = env.submit(board, turned_away[0], 99)
        rec["w1_refused_join_again"] = env.join(board, turned_away[0])
    # attempts: p1 two accepted (the second does not improve), the third refused; a replay free
    rec["w1_p1_first"] = env.submit(board, "p1", 50, key=f"p1-a-{env.run}")
    rec["w1_p1_second"] = env.submit(board, "p1", 40, key=f"p1-b-{env.run}")
    rec["w1_p1_third"] = env.submit(board, "p1", 60, key=f"p1-c-{env.run}")
    rec["w1_p1_replay"] = env.submit(board, "p1", 50, key=f"p1-a-{env.run}")
    # six attempts at once from one player with max_attempts 2
    rec["w1_burst"] = concurrently(
        [lambda s=s: env.submit(board, burst, s, key=f"burst-{s}-{env.run}") for s in range(11, 17)]
    )
    rec["w1_top"] = env.submit(board, top, 70)
    # a refused submission costs no attempt: a region on a board without regions is 422
    rec["w1_regioned_422"] = env.submit(board, regioned, 35, region="EU")
    rec["w1_regioned"] = [env.submit(board, regioned, s) for s in (30, 31, 32)]
    # the free board: no sign-up, cap 2 counted by first accepted submissions, four at once
    quad = ["q1", "q2", "q3", "q4"]
    rec["w1_free_quad"] = dict(
        zip(
            quad,
            concurrently(
                [lambda p=p, n=n: env.submit(free_board, p, 100 + n) for n, p in enumerate(quad)]
            ),
            strict=True,
        )
    )
    rec["w1_free_join"] = env.join(free_board, "q9")  # a sign-up is beyond the cap too
    rec["w1_entries"] = env.api.get(f"/boards/{board}/entries", query={"period": "custom"})
    rec["w1_entries_by_id"] = env.api.get(f"/boards/{board}/entries", query={"period": live.w1})
    rec["w1_player"] = env.api.get(f"/boards/{board}/players/p1", query={"period": "custom"})
    rec["w1_standings"] = env.api.get(f"/boards/{board}/players/p1/standings")
    rec["w1_periods"] = env.api.get(f"/boards/{board}/periods")
    changed = {"tournament": {**tournament, "max_attempts": 3}}
    rec["w1_change_rules"] = env.put_board(board, changed)
    rec["w1_end_by_hand"] = env.api.post(f"/boards/{board}/periods/end", token=env.admin)
    live.phase_end["w1"] = time.time()

    # ---- between W1 and W2 -------------------------------------------------------------------
    sleep_until(e1.timestamp() + 1.0)
    rec["gap:first"] = time.time()
    rec["gap_submit_p1"] = env.submit(board, "p1", 55)
    rec["gap_join_p1"] = env.join(board, "p1", as_player=True)
    second = turned_away[0] if turned_away else "x1"
    rec["gap_join_second"] = env.join(board, second)
    rec["gap_submit_joined"] = env.submit(board, "p1", 56)
    free_refused = [p for p in quad if rec["w1_free_quad"][p].status != 200]
    rec["w1_free_refused"] = free_refused
    rec["gap_free_submit"] = env.submit(free_board, free_refused[0] if free_refused else "q1", 1)
    rec["gap_list"] = env.tournaments()
    rec["gap_list_open"] = env.tournaments("open")
    rec["gap_list_upcoming"] = env.tournaments("upcoming")
    rec["gap_periods"] = env.api.get(f"/boards/{board}/periods")
    rec["gap_custom"] = env.api.get(f"/boards/{board}/entries", query={"period": "custom"})
    rec["gap_w2_by_id"] = env.api.get(f"/boards/{board}/entries", query={"period": live.w2})
    live.phase_end["gap"] = time.time()
    watch = ArchiveWatch(env, live)
    watch.poll(until=f2.timestamp() - 1.0)  # the rest of the gap: W1's archive and its event

    # ---- W2 ----------------------------------------------------------------------------------
    sleep_until(f2.timestamp() + 1.0)
    rec["w2:first"] = time.time()
    rec["w2_list"] = env.tournaments()
    rec["w2_p1"] = [env.submit(board, "p1", s) for s in (20, 25, 26)]
    rec["w2_second"] = env.submit(board, second, 90)
    rec["w2_top_unjoined"] = env.submit(board, top, 75)
    newcomers = ["y1", "y2", "y3", "y4", "y5"]  # 5 for the 3 places left in W2
    rec["w2_join_crowd"] = dict(
        zip(
            newcomers,
            concurrently([lambda p=p: env.join(board, p) for p in newcomers]),
            strict=True,
        )
    )
    rec["w2_free"] = {p: env.submit(free_board, p, 200 + n) for n, p in enumerate(free_refused)}
    rec["w2_free_newcomer"] = env.submit(free_board, "q8", 300)
    rec["w2_entries"] = env.api.get(f"/boards/{board}/entries", query={"period": "custom"})
    rec["w2_w1_by_id"] = env.api.get(f"/boards/{board}/entries", query={"period": live.w1})
    rec["w2_standings"] = env.api.get(f"/boards/{board}/players/p1/standings")
    rec["w2_periods"] = env.api.get(f"/boards/{board}/periods")
    live.phase_end["w2"] = time.time()

    # ---- W1's archive and its period.ended, polled until both are seen -----------------------
    watch.poll(until=max(e1.timestamp() + WEBHOOK_DEADLINE, time.time() + 10))
    rec["archived_periods"] = watch.last_periods
    rec["free_periods"] = watch.last_free
    rec["archived_entries"] = env.api.get(f"/boards/{board}/entries", query={"period": live.w1})
    rec["archived_history"] = env.api.get(
        f"/boards/{board}/players/p1/history", query={"kind": "custom"}
    )
    return live


class ArchiveWatch:
    """Polls W1's status on both live boards (GET .../periods) and the local receiver for W1's
    period.ended (API.md "Trying webhooks locally"), recording when each was first seen."""

    def __init__(self, env: Env, live: Live) -> None:
        self.env, self.live = env, live
        self.statuses: list[tuple[float, str | None, str | None]] = []
        self.event_id = str(uuid.uuid5(EVENT_NAMESPACE, f"{live.board}\n{live.w1}"))
        self.webhook: dict[str, Any] | None = None
        self.webhook_seen: float | None = None
        self.last_periods: Answer | None = None
        self.last_free: Answer | None = None
        live.rec["archive"] = self

    def _status(self, answer: Answer) -> str | None:
        if answer.status != 200:
            return None
        return next(
            (p["status"] for p in answer.json["periods"] if p["period"] == self.live.w1), None
        )

    @property
    def archived(self) -> bool:
        return bool(self.statuses) and self.statuses[-1][1:] == ("archived", "archived")

    @property
    def first_archived(self) -> float | None:
        """Seconds after W1's end at which both boards first said `archived`."""
        return next((t for t, a, b in self.statuses if (a, b) == ("archived", "archived")), None)

    def poll(self, until: float) -> None:
        e1 = self.live.e1.timestamp()
        while True:
            if not self.archived:
                self.last_periods = self.env.api.get(f"/boards/{self.live.board}/periods")
                self.last_free = self.env.api.get(f"/boards/{self.live.free_board}/periods")
                self.statuses.append(
                    (
                        round(time.time() - e1, 1),
                        self._status(self.last_periods),
                        self._status(self.last_free),
                    )
                )
            if self.webhook is None:
                events = self.env.api.get("/local/webhook-events")
                if events.status == 200:
                    self.webhook = next(
                        (r for r in events.json["events"] if r["event"].get("id") == self.event_id),
                        None,
                    )
                    if self.webhook is not None:
                        self.webhook_seen = round(time.time() - e1, 1)
            if (self.archived and self.webhook is not None) or time.time() + 1.0 > until:
                return
            time.sleep(1.0)


def w1_scores(live: Live) -> dict[str, float]:
    """The model's W1 standings: best scores of the accepted submissions."""
    rec, roles = live.rec, live.rec["roles"]
    burst = [a.json["standings"][0]["score"] for a in rec["w1_burst"] if a.status == 200]
    scores = {"p1": 50, roles["top"]: 70, roles["regioned"]: 31}
    if burst:
        scores[roles["burst"]] = max(burst)
    return scores


# --------------------------------------------------------------------------------------------
# Creating recurring tournaments: validation (API.md "Recurring tournaments", "Errors",
# PUT /boards/{board_id} Validation)
# --------------------------------------------------------------------------------------------

BASE = {"cron": "0 18 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}


def _t(recurrence: Any = None, **more: Any) -> dict[str, Any]:
    return {"tournament": {"recurrence": BASE if recurrence is None else recurrence, **more}}


VALIDATION = [
    # 400: what the route's schema refuses (Recurrence: cron pattern, duration 60..31622400)
    ("dur-59", _t({**BASE, "duration_seconds": 59}), 400, "tournament.recurrence.duration_seconds"),
    (
        "dur-big",
        _t({**BASE, "duration_seconds": 31622401}),
        400,
        "tournament.recurrence.duration_seconds",
    ),
    (
        "dur-str",
        _t({**BASE, "duration_seconds": "3600"}),
        400,
        "tournament.recurrence.duration_seconds",
    ),
    (
        "dur-frac",
        _t({**BASE, "duration_seconds": 3600.5}),
        400,
        "tournament.recurrence.duration_seconds",
    ),
    ("dur-missing", _t({"cron": "0 18 * * *"}), 400, "tournament.recurrence.duration_seconds"),
    ("cron-missing", _t({"duration_seconds": 3600}), 400, "tournament.recurrence.cron"),
    ("cron-4", _t({**BASE, "cron": "0 18 * *"}), 400, "tournament.recurrence.cron"),
    ("cron-2sp", _t({**BASE, "cron": "0  18 * * *"}), 400, "tournament.recurrence.cron"),
    ("cron-num", _t({**BASE, "cron": 5}), 400, "tournament.recurrence.cron"),
    ("tz-shape", _t({**BASE, "timezone": "Europe/Ber lin"}), 400, "tournament.recurrence.timezone"),
    ("start-shape", _t(starts_at="2027-01-01"), 400, "tournament.starts_at"),
    # a body with a malformed field and a broken rule is 400 (checked whole first)
    (
        "mixed",
        _t({**BASE, "cron": "0 0 30 2 *", "duration_seconds": 10}),
        400,
        "tournament.recurrence.duration_seconds",
    ),
    # 422: the right shape, naming nothing
    ("cron-never", _t({**BASE, "cron": "0 0 30 2 *"}), 422, "tournament.recurrence.cron"),
    ("cron-hour24", _t({**BASE, "cron": "0 24 * * *"}), 422, "tournament.recurrence.cron"),
    ("cron-min60", _t({**BASE, "cron": "60 * * * *"}), 422, "tournament.recurrence.cron"),
    ("cron-name", _t({**BASE, "cron": "0 0 * * FOO"}), 422, "tournament.recurrence.cron"),
    ("tz-unknown", _t({**BASE, "timezone": "Mars/Olympus"}), 422, "tournament.recurrence.timezone"),
    ("start-1969", _t(starts_at="1969-12-31T23:00:00Z"), 422, "tournament.starts_at"),
    ("start-9000", _t(starts_at="9000-01-01T00:00:00Z"), 422, "tournament.starts_at"),
    (
        "end-9000",
        _t(starts_at="2027-01-01T00:00:00Z", ends_at="9000-01-01T00:00:00Z"),
        422,
        "tournament.ends_at",
    ),
    ("start-feb30", _t(starts_at="2027-02-30T00:00:00Z"), 422, "tournament.starts_at"),
    # bounds that no fire falls between: 422 on tournament.ends_at
    (
        "no-fire",
        _t(starts_at="2027-01-01T00:00:00Z", ends_at="2027-01-01T12:00:00Z"),
        422,
        "tournament.ends_at",
    ),
    # GAP: "ends_at: after starts_at" (recurring table) names no field for ends_at <= starts_at;
    # the one-shot rule and the field-of-the-broken-rule sentence say tournament.ends_at.
    (
        "end-before",
        _t(starts_at="2027-01-02T00:00:00Z", ends_at="2027-01-01T00:00:00Z"),
        422,
        "tournament.ends_at",
    ),
]


@pytest.mark.parametrize(
    ("case", "body", "status", "field_name"), VALIDATION, ids=[v[0] for v in VALIDATION]
)
def test_create_recurring_validation(
    env: Env, case: str, body: dict[str, Any], status: int, field_name: str
) -> None:
    board = env.board(f"rt-bad-{case}")
    code = "bad_request" if status == 400 else "unprocessable"
    refused(env.put_board(board, body), status, code, field=field_name)
    refused(env.api.get(f"/boards/{board}"), 404, "not_found")  # nothing was created


def test_create_recurring_rules_between_fields(env: Env) -> None:
    """API.md PUT Validation: a tournament with other periods than ["custom"], a schedule or
    more than one shard is 422; an unknown field inside `recurrence` is 400 with its dotted
    path in `fields`; a one-shot tournament (no recurrence) without its bounds is 400 (openapi:
    the Tournament anyOf). GAP: the docs name no `field` for the between-fields 422s."""
    cases = [
        ({**_t(), "periods": ["all-time", "custom"]}, 422),
        ({**_t(), "schedule": {"cron": "0 0 * * *", "timezone": "UTC"}}, 422),
        ({**_t(), "shards": 2}, 422),
    ]
    for n, (body, status) in enumerate(cases):
        refused(env.put_board(env.board(f"rt-mix{n}"), body), status, "unprocessable")
    refused(
        env.put_board(env.board("rt-unk"), _t({**BASE, "every": "day"})),
        400,
        "bad_request",
        fields=["tournament.recurrence.every"],
    )
    refused(
        env.put_board(env.board("rt-noone"), {"tournament": {"join_required": True}}),
        400,
        "bad_request",
    )


def test_create_recurring_accepts_and_shows_as_sent(env: Env) -> None:
    """The board object shows `starts_at`/`ends_at` as sent (null when left out) and `recurrence`
    as sent, with its `timezone` (default UTC); `periods` is ["custom"], `schedule` null, one
    shard. The 366-day limit is the one-shot window's: a recurring series may run for years.
    `duration_seconds` 3600.0 is 3600 (API.md Conventions: integral numbers)."""
    board = env.board("rt-years")
    body = {
        "tournament": {
            "recurrence": {"cron": "0 12 * * MON", "duration_seconds": 3600.0},
            "starts_at": "2027-01-01T00:00:00Z",
            "ends_at": "2031-01-01T00:00:00Z",
        }
    }
    created = ok(env.put_board(board, body), 201)
    assert created["periods"] == ["custom"] and created["schedule"] is None
    assert created["shards"] == 1
    assert created["tournament"] == {
        "starts_at": "2027-01-01T00:00:00Z",
        "ends_at": "2031-01-01T00:00:00Z",
        "join_required": False,
        "max_participants": None,
        "max_attempts": None,
        "recurrence": {"cron": "0 12 * * MON", "timezone": "UTC", "duration_seconds": 3600},
    }, created
    assert ok(env.api.get(f"/boards/{board}")) == created


def test_join_on_a_board_that_is_no_tournament(env: Env) -> None:
    """API.md POST join: 409 `conflict` for a board that is not a tournament; 404 unknown."""
    board = env.board("rt-plain")
    ok(env.put_board(board, {}), 201)
    refused(env.join(board, "ada"), 409, "conflict")
    refused(env.join(env.board("rt-nosuch"), "ada"), 404, "not_found")


# --------------------------------------------------------------------------------------------
# Upcoming, ended, and windows after a daylight-saving change (read from the listing)
# --------------------------------------------------------------------------------------------


def next_transitions(zone_name: str, after: datetime) -> tuple[datetime, datetime]:
    """The zone's next spring-forward and fall-back instants (UTC) after `after`."""
    zone = ZoneInfo(zone_name)
    t = after.replace(minute=0, second=0, microsecond=0)
    offset = t.astimezone(zone).utcoffset()
    spring = fall = None
    while spring is None or fall is None:
        n = t + timedelta(hours=1)
        o = n.astimezone(zone).utcoffset()
        assert o is not None and offset is not None
        if o > offset and spring is None:
            spring = n
        if o < offset and fall is None:
            fall = n
        t, offset = n, o
    return spring, fall


@dataclass
class Planned:
    board: str
    settings: dict[str, Any]
    created: dict[str, Any]
    series: Series | None  # None: a one-shot tournament
    one_shot: tuple[datetime, datetime] | None = None

    def expected(self, t: datetime) -> tuple[str, str, str, str]:
        if self.series is not None:
            status, start, end = self.series.shown(t)
        else:
            assert self.one_shot is not None
            start, end = self.one_shot
            status = "upcoming" if t < start else "open" if t < end else "ended"
        return status, pid(start), iso(start), iso(end)  # type: ignore[return-value]


@pytest.fixture(scope="module")
def planned(env: Env) -> dict[str, Planned]:
    now = datetime.now(UTC)
    spring, fall = next_transitions("Europe/Berlin", now + timedelta(days=2))
    boards: dict[str, Planned] = {}

    def make(
        name: str, tournament: dict[str, Any], series: Series | None, one_shot=None, **more: Any
    ) -> None:
        board = env.board(f"rt-{name}")
        settings = {"title": name, "mode": "best", "tournament": tournament, **more}
        created = ok(env.put_board(board, settings), 201)
        if series is not None and tournament.get("starts_at") is None:
            series = Series(
                series.cron,
                series.zone,
                series.duration,
                parse_ts(created["created_at"]),
                series.ends_at,
            )
        boards[name] = Planned(board, settings, created, series, one_shot)

    # Spring forward: 02:30 local does not exist that night; it fires at the jump (API.md
    # "Daylight saving"). starts_at is sent with an offset: local midnight, CET.
    day = spring.astimezone(ZoneInfo("Europe/Berlin")).date()
    rec = {"cron": "30 2 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}
    start = f"{day.isoformat()}T00:00:00+01:00"
    make(
        "spring",
        {"recurrence": rec, "starts_at": start, "ends_at": None, "join_required": True},
        Series(rec["cron"], rec["timezone"], 3600, parse_ts(start), None),
    )
    # Fall back: 02:30 is shown twice; it fires the first time. Two hours of absolute time.
    day = fall.astimezone(ZoneInfo("Europe/Berlin")).date()
    rec = {"cron": "30 2 * * *", "timezone": "Europe/Berlin", "duration_seconds": 7200}
    start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(hours=2)
    end = start + timedelta(days=3)
    make(
        "fall",
        {"recurrence": rec, "starts_at": iso(start), "ends_at": iso(end), "max_attempts": 5},
        Series(rec["cron"], rec["timezone"], 7200, start, end),
    )
    # 18:00 in Berlin: 17:00 UTC in winter, 16:00 UTC in summer. The series starts after the
    # last winter fire (the day before the change, 17:30 UTC): its next window is in summer time.
    rec = {"cron": "0 18 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}
    start = spring.replace(hour=17, minute=30) - timedelta(days=1)
    make(
        "summer",
        {"recurrence": rec, "starts_at": iso(start), "max_participants": 100},
        Series(rec["cron"], rec["timezone"], 3600, start, None),
    )
    # A window ends at the next fire when that comes first: every 10 minutes, an hour long.
    rec = {"cron": "*/10 * * * *", "timezone": "UTC", "duration_seconds": 3600}
    start = (now + timedelta(days=20)).replace(minute=3, second=0, microsecond=0)
    make(
        "trunc",
        {"recurrence": rec, "starts_at": iso(start)},
        Series(rec["cron"], "UTC", 3600, start, None),
    )
    # Defaults: no timezone (UTC), no starts_at (the board's creation), yearly.
    rec = {"cron": "0 0 1 1 *", "duration_seconds": 86400}
    make("yearly", {"recurrence": rec}, Series(rec["cron"], "UTC", 86400, now, None))
    # A series already over: hourly windows, bounds three and one hours ago.
    hour = now.replace(minute=0, second=0, microsecond=0)
    rec = {"cron": "0 * * * *", "timezone": "UTC", "duration_seconds": 60}
    s, e = hour - timedelta(hours=3), hour - timedelta(minutes=30)
    make(
        "over",
        {"recurrence": rec, "starts_at": iso(s), "ends_at": iso(e)},
        Series(rec["cron"], "UTC", 60, s, e),
    )
    # A one-shot tournament over two days ago, for the order of ended ones.
    s, e = hour - timedelta(days=3), hour - timedelta(days=2)
    make("oneshot", {"starts_at": iso(s), "ends_at": iso(e)}, None, (s, e))
    return boards


def test_upcoming_windows_across_daylight_saving(env: Env, planned: dict[str, Planned]) -> None:
    """GET /tournaments shows each upcoming series by its next window, as the model computes it:
    the fire in the series' zone (skipped time at the jump, repeated time the first time),
    the duration in absolute seconds, cut at the next fire."""
    answer = env.tournaments()
    t0, t1 = at(answer.sent), at(answer.received)
    mine = env.mine(answer)
    problems = []
    for name in ("spring", "fall", "summer", "trunc", "yearly"):
        p = planned[name]
        item = mine.get(p.board)
        assert item is not None, f"{p.board} not listed: {answer!r}"
        want = p.expected(t0)
        assert p.expected(t1) == want
        if listing_view(item) != want:
            problems.append(
                f"{name} ({p.settings['tournament']}): listed {listing_view(item)}, model {want}"
            )
        tournament = p.settings["tournament"]
        rec = {"timezone": "UTC", **tournament["recurrence"]}
        assert item["recurrence"] == rec, item
        assert item["title"] == name
        assert item["join_required"] == tournament.get("join_required", False)
        assert item["max_participants"] == tournament.get("max_participants")
        assert item["max_attempts"] == tournament.get("max_attempts")
        assert p.series is not None
        assert item["series_starts_at"] == iso(p.series.starts_at), (name, item)
        assert item["series_ends_at"] == iso(p.series.ends_at), (name, item)
    assert not problems, "\n".join(problems)
    # the model's expectations spelled out for the DST cases (a reader's check of the model)
    spring = planned["spring"].expected(t0)
    assert spring[2].endswith("T01:00:00Z") and spring[3].endswith("T02:00:00Z"), spring
    fall = planned["fall"].expected(t0)
    assert fall[2].endswith("T00:30:00Z") and fall[3].endswith("T02:30:00Z"), fall
    assert planned["summer"].expected(t0)[2].endswith("T16:00:00Z")
    trunc = planned["trunc"].expected(t0)
    assert parse_ts(trunc[3]) - parse_ts(trunc[2]) == timedelta(minutes=10)


def test_board_object_shows_bounds(env: Env, planned: dict[str, Planned]) -> None:
    """The board object: `starts_at`/`ends_at` as sent, null when left out; `recurrence` with
    its timezone. GAP: "as sent" vs "kept to the second, in UTC (shown as ...Z)" (openapi
    Tournament.starts_at): a bound sent with an offset (+01:00) is expected back in UTC."""
    spring = planned["spring"]
    got = ok(env.api.get(f"/boards/{spring.board}"))["tournament"]
    assert got["starts_at"] == iso(parse_ts(spring.settings["tournament"]["starts_at"])), got
    assert got["ends_at"] is None
    yearly = ok(env.api.get(f"/boards/{planned['yearly'].board}"))["tournament"]
    assert yearly["starts_at"] is None and yearly["ends_at"] is None, yearly
    assert yearly["recurrence"] == {
        "cron": "0 0 1 1 *",
        "timezone": "UTC",
        "duration_seconds": 86400,
    }


def test_before_the_first_window(env: Env, planned: dict[str, Planned]) -> None:
    """Before the first window: a sign-up is for it (`period` its id); a submission is 409
    `not_started`; `period=custom` is 404 (no entries yet); GET .../periods lists it as
    `upcoming` with 0 entries."""
    p = planned["spring"]
    status, window, start, end = p.expected(datetime.now(UTC))
    assert status == "upcoming"
    joined = ok(env.join(p.board, "ada", as_player=True))
    assert joined == {
        "board_id": p.board,
        "player_id": "ada",
        "period": window,
        "joined": True,
        "participants": 1,
    }, joined
    refused(env.submit(p.board, "ada", 5), 409, "tournament_rules", reason="not_started")
    refused(env.api.get(f"/boards/{p.board}/entries", query={"period": "custom"}), 404)
    periods = ok(env.api.get(f"/boards/{p.board}/periods"))["periods"]
    assert {
        "period": window,
        "kind": "custom",
        "starts_at": start,
        "ends_at": end,
        "status": "upcoming",
        "entries": 0,
    } in periods, periods
    assert not [q for q in periods if q["status"] in ("open", "closed", "archived")], periods


def test_after_the_series(env: Env, planned: dict[str, Planned]) -> None:
    """A series over: listed `ended` by its last window; sign-ups and submissions 409 `ended`
    (API.md: "after the series both are 409 ended"); a one-shot tournament over: the same.
    GAP: which windows no one played GET .../periods lists is not said (openapi requires at
    least one item); any listed is `closed` ("a period no one played in stays closed")."""
    answer = env.tournaments()
    mine = env.mine(answer)
    for name in ("over", "oneshot"):
        p = planned[name]
        want = p.expected(at(answer.sent))
        assert want[0] == "ended"
        assert listing_view(mine[p.board]) == want, (name, mine[p.board])
        refused(env.join(p.board, "ada"), 409, "tournament_rules", reason="ended")
        refused(env.submit(p.board, "ada", 5), 409, "tournament_rules", reason="ended")
    over = planned["over"]
    assert mine[over.board]["series_ends_at"] == over.settings["tournament"]["ends_at"]
    periods = ok(env.api.get(f"/boards/{over.board}/periods"))["periods"]
    assert all(
        q["kind"] == "custom" and q["status"] == "closed" and q["entries"] == 0 for q in periods
    ), periods
    refused(env.api.get(f"/boards/{over.board}/entries", query={"period": "custom"}), 404)


def test_tournaments_order_and_status_filter(
    env: Env, planned: dict[str, Planned], live: Live
) -> None:
    """GET /tournaments: open first (ending soonest first), upcoming (starting soonest first),
    ended (latest ends_at first); `?status=` keeps one kind, anything else is 400."""
    answer = env.tournaments()
    items = ok(answer)["tournaments"]
    check_listing_order(items)
    t0, t1 = at(answer.sent), at(answer.received)
    expected = {
        p.board: p.expected(t0) for p in planned.values() if p.expected(t1) == p.expected(t0)
    }
    live_view = live.series.shown(t0)
    if live.series.shown(t1) == live_view:
        expected[live.board] = (
            live_view[0],
            pid(live_view[1]),
            iso(live_view[1]),
            iso(live_view[2]),
        )
    mine = [i for i in items if i["board_id"] in expected]
    assert {i["board_id"]: listing_view(i) for i in mine} == expected
    for status in ("open", "upcoming", "ended"):
        kept = ok(env.tournaments(status))["tournaments"]
        assert all(i["status"] == status for i in kept), (status, kept)
        check_listing_order(kept)
        want = {b for b, v in expected.items() if v[0] == status}
        got = {i["board_id"] for i in kept}
        assert want <= got, (status, want - got)
        assert not ({b for b in expected if b not in want} & got), status
    for bad in ("OPEN", "closed", "", "open,ended"):
        refused(
            env.api.get("/tournaments", query={"status": bad}), 400, "bad_request", field="status"
        )
    refused(
        env.api.get("/tournaments", query={"state": "open"}), 400, "bad_request", fields=["state"]
    )


# --------------------------------------------------------------------------------------------
# The live series: W1, the gap, W2
# --------------------------------------------------------------------------------------------


def test_live_created_and_listed_open(env: Env, live: Live) -> None:
    """While W1 is open: the board object as sent; GET /tournaments shows W1 (`open`, its id,
    bounds, the series' bounds, the rules); `?status=open` keeps it, `upcoming` does not;
    GET .../periods lists W1 `open`; `period=custom` with no entries is 200 and empty (API.md
    "Periods": the current period with no data)."""
    live.within("w1", live.f1, live.e1)
    rec = live.rec
    board = ok(live.created, 201)
    assert board["periods"] == ["custom"] and board["schedule"] is None and board["shards"] == 1
    assert board["tournament"] == live.settings["tournament"], board["tournament"]
    assert ok(rec["w1_board"]) == board
    item = env.mine(rec["w1_list"])[live.board]
    t = live.settings["tournament"]
    assert item == {
        "board_id": live.board,
        "title": "Minute Sprint",
        "status": "open",
        "period": live.w1,
        "starts_at": iso(live.f1),
        "ends_at": iso(live.e1),
        "join_required": True,
        "max_participants": 5,
        "max_attempts": 2,
        "recurrence": t["recurrence"],
        "series_starts_at": t["starts_at"],
        "series_ends_at": t["ends_at"],
        # read before anyone joined or played W1; attempts are counted (max_attempts is set)
        "participants": 0,
        "attempts": 0,
    }, item
    assert live.board in env.mine(rec["w1_list_open"])
    assert live.board not in env.mine(rec["w1_list_upcoming"])
    periods = ok(rec["w1_periods_empty"])["periods"]
    # GAP: whether the next window is listed (upcoming) while one is open is not said.
    w1 = [p for p in periods if p["period"] == live.w1]
    assert w1 == [
        {
            "period": live.w1,
            "kind": "custom",
            "starts_at": iso(live.f1),
            "ends_at": iso(live.e1),
            "status": "open",
            "entries": 0,
        }
    ], periods
    assert not [p for p in periods if p["status"] in ("closed", "archived")], periods
    empty = ok(rec["w1_custom_empty"])
    assert empty["period"] == live.w1 and empty["total"] == 0 and empty["entries"] == [], empty


def test_live_join_cap_is_atomic(env: Env, live: Live) -> None:
    """join_required: a submission before signing up is 409 `not_joined`. Sign-ups: a player
    signs itself up (403 naming another); 7 concurrent sign-ups for the 4 places left: 4 pass,
    3 are 409 `full`; repeating a sign-up changes nothing (`joined` false), even when full.
    GAP: `participants` is "the players signed up for this window now, the caller included";
    under concurrency the test reads it as the count right after the caller's own sign-up, so
    the answers carry 2, 3, 4, 5 once each."""
    live.within("w1", live.f1, live.e1)
    rec = live.rec
    assert "w1:abort" not in rec, rec.get("w1:abort")
    refused(rec["w1_submit_unjoined"], 409, "tournament_rules", reason="not_joined")
    assert ok(rec["w1_join_p1"]) == {
        "board_id": live.board,
        "player_id": "p1",
        "period": live.w1,
        "joined": True,
        "participants": 1,
    }
    refused(rec["w1_join_other"], 403)
    passed = {p: a.json for p, a in rec["w1_join_crowd"].items() if a.status == 200}
    for p, a in rec["w1_join_crowd"].items():
        if p not in passed:
            refused(a, 409, "tournament_rules", reason="full")
    assert len(passed) == 4, rec["w1_join_crowd"]
    assert sorted(j["participants"] for j in passed.values()) == [2, 3, 4, 5], passed
    assert all(j["period"] == live.w1 and j["joined"] is True for j in passed.values()), passed
    again = ok(rec["w1_join_again"])
    assert again["joined"] is False and again["participants"] == 5 and again["period"] == live.w1
    again = ok(rec["w1_join_again_full"])
    assert again["joined"] is False and again["participants"] == 5, again
    # a turned-away player: not signed up, so a submission is `not_joined` (before `full`)
    refused(rec["w1_refused_submit"], 409, "tournament_rules", reason="not_joined")
    refused(rec["w1_refused_join_again"], 409, "tournament_rules", reason="full")


def test_live_attempts_per_window(env: Env, live: Live) -> None:
    """max_attempts 2: an attempt is an accepted submission, improving or not; the third is 409
    `attempts_exhausted`; a replay with the same Idempotency-Key answers the stored response
    and is no attempt; six attempts at once: exactly two pass; a refused submission (422, a
    region on a board without regions) costs none."""
    live.within("w1", live.f1, live.e1)
    rec = live.rec
    first = ok(rec["w1_p1_first"])
    assert first["applied"] is True
    # GAP: a tournament board keeps only `custom`; the docs list standings "within each,
    # all-time, daily, weekly, monthly" and do not name `custom`. Read: one standing, the window.
    assert [
        (s["period"], s["region"], s["score"], s["rank"], s["previous_score"], s["previous_rank"])
        for s in first["standings"]
    ] == [(live.w1, None, 50, 1, None, None)], first
    second = ok(rec["w1_p1_second"])
    assert second["applied"] is False and second["standings"][0]["score"] == 50, second
    refused(rec["w1_p1_third"], 409, "tournament_rules", reason="attempts_exhausted")
    replay = ok(rec["w1_p1_replay"])
    assert rec["w1_p1_replay"].headers.get("idempotent-replayed") == "true"
    assert replay["event_id"] == first["event_id"] and replay["version"] == first["version"]
    burst = rec["w1_burst"]
    accepted = [a for a in burst if a.status == 200]
    assert len(accepted) == 2, burst
    for a in burst:
        if a.status != 200:
            refused(a, 409, "tournament_rules", reason="attempts_exhausted")
    ok(rec["w1_top"])
    refused(rec["w1_regioned_422"], 422, "unprocessable", field="region")
    a, b, c = rec["w1_regioned"]
    ok(a), ok(b)
    refused(c, 409, "tournament_rules", reason="attempts_exhausted")


def test_live_cap_without_sign_up(env: Env, live: Live) -> None:
    """join_required false: "the first accepted submission joins", and max_participants counts
    the players who played: four new players at once on a cap of 2: two accepted, two 409
    `full`; a sign-up beyond the cap is `full` too."""
    live.within("w1", live.f1, live.e1)
    rec = live.rec
    quad = rec["w1_free_quad"]
    accepted = [p for p, a in quad.items() if a.status == 200]
    assert len(accepted) == 2, quad
    for p, a in quad.items():
        if p not in accepted:
            refused(a, 409, "tournament_rules", reason="full")
    refused(rec["w1_free_join"], 409, "tournament_rules", reason="full")


def test_live_reads_in_window(env: Env, live: Live) -> None:
    """Reads of W1 while open: `period=custom` and W1's id agree with the model; standings list
    the current custom period; GET .../periods counts W1's entries; the rules cannot change once
    the board has entries (409); a window cannot be ended by hand (409)."""
    live.within("w1", live.f1, live.e1)
    rec = live.rec
    model = ranked(w1_scores(live))
    page = ok(rec["w1_entries"])
    assert page["period"] == live.w1 and page["total"] == len(model), page
    assert entries_of(page) == model, (entries_of(page), model)
    assert ok(rec["w1_entries_by_id"]) == page
    me = ok(rec["w1_player"])
    want = next(e for e in model if e["player_id"] == "p1")
    assert (me["period"], me["rank"], me["score"], me["total"]) == (
        live.w1,
        want["rank"],
        50,
        len(model),
    )
    assert me["top_percent"] == round(100 * want["rank"] / len(model), 4)
    standings = ok(rec["w1_standings"])["standings"]
    assert [(s["period"], s["kind"], s["rank"], s["score"], s["total"]) for s in standings] == [
        (live.w1, "custom", want["rank"], 50, len(model))
    ], standings
    w1 = [p for p in ok(rec["w1_periods"])["periods"] if p["period"] == live.w1]
    assert [(p["status"], p["entries"]) for p in w1] == [("open", len(model))], w1
    refused(rec["w1_change_rules"], 409, "conflict")
    refused(rec["w1_end_by_hand"], 409)


def test_between_windows(env: Env, live: Live) -> None:
    """Between W1 and W2: a submission is 409 `not_started`, even from a player signed up for
    the next window; a sign-up is for W2 (`period`), counted from 1; GET /tournaments shows W2
    `upcoming` (kept by `?status=upcoming`, not by `open`); GET .../periods lists W1 (closed or
    archived, its entries) and W2 `upcoming`, newest first; `period=custom` reads W1's final
    standings ("the last window that started"); W2 by id is 404 before it starts."""
    live.within("gap", live.e1, live.f2)
    rec = live.rec
    refused(rec["gap_submit_p1"], 409, "tournament_rules", reason="not_started")
    assert ok(rec["gap_join_p1"]) == {
        "board_id": live.board,
        "player_id": "p1",
        "period": live.w2,
        "joined": True,
        "participants": 1,
    }
    second = ok(rec["gap_join_second"])
    assert (second["period"], second["joined"], second["participants"]) == (live.w2, True, 2), (
        second
    )
    refused(rec["gap_submit_joined"], 409, "tournament_rules", reason="not_started")
    refused(rec["gap_free_submit"], 409, "tournament_rules", reason="not_started")
    item = env.mine(rec["gap_list"])[live.board]
    assert listing_view(item) == ("upcoming", live.w2, iso(live.f2), iso(live.e2)), item
    assert (item["series_starts_at"], item["series_ends_at"]) == (
        iso(live.f1),
        iso(live.f2 + timedelta(seconds=30)),
    )
    assert live.board in env.mine(rec["gap_list_upcoming"])
    assert live.board not in env.mine(rec["gap_list_open"])
    model = ranked(w1_scores(live))
    periods = ok(rec["gap_periods"])["periods"]
    ours = [(p["period"], p["status"], p["starts_at"], p["ends_at"], p["entries"]) for p in periods]
    assert len(ours) == 2, periods
    assert ours[0] == (live.w2, "upcoming", iso(live.f2), iso(live.e2), 0), periods
    assert ours[1][0] == live.w1 and ours[1][1] in ("closed", "archived"), periods
    assert ours[1][2:] == (iso(live.f1), iso(live.e1), len(model)), periods
    page = ok(rec["gap_custom"])
    assert page["period"] == live.w1 and entries_of(page) == model, page
    refused(rec["gap_w2_by_id"], 404)


def test_next_window_starts_fresh(env: Env, live: Live) -> None:
    """W2: its own sign-ups, cap and attempts. p1 (exhausted in W1, signed up for W2 in the gap)
    has two attempts again; the player turned away `full` in W1 plays; a player signed up for W1
    only is `not_joined`; W2's cap: 2 signed up, 5 newcomers at once, 3 pass; the free board's
    players refused `full` in W1 play W2, a third newcomer is `full`. `period=custom` reads W2,
    W1 by id is unchanged; GET /tournaments shows W2 open."""
    live.within("w2", live.f2, live.e2)
    rec = live.rec
    item = env.mine(rec["w2_list"])[live.board]
    assert listing_view(item) == ("open", live.w2, iso(live.f2), iso(live.e2)), item
    a, b, c = rec["w2_p1"]
    first = ok(a)
    assert [
        (s["period"], s["score"], s["rank"], s["previous_score"]) for s in first["standings"]
    ] == [(live.w2, 20, 1, None)], first
    ok(b)
    refused(c, 409, "tournament_rules", reason="attempts_exhausted")
    ok(rec["w2_second"])
    refused(rec["w2_top_unjoined"], 409, "tournament_rules", reason="not_joined")
    crowd = rec["w2_join_crowd"]
    passed = {p: x.json for p, x in crowd.items() if x.status == 200}
    for p, x in crowd.items():
        if p not in passed:
            refused(x, 409, "tournament_rules", reason="full")
    assert len(passed) == 3 and sorted(j["participants"] for j in passed.values()) == [3, 4, 5], (
        crowd
    )
    assert all(j["period"] == live.w2 for j in passed.values())
    assert len(rec["w1_free_refused"]) == 2
    for p, x in rec["w2_free"].items():
        assert ok(x)["standings"][0]["period"] == live.w2, (p, x)
    refused(rec["w2_free_newcomer"], 409, "tournament_rules", reason="full")
    second = rec["w1_turned_away"][0]
    page = ok(rec["w2_entries"])
    assert page["period"] == live.w2
    assert entries_of(page) == ranked({"p1": 25, second: 90}), page
    old = ok(rec["w2_w1_by_id"])
    assert old["period"] == live.w1 and entries_of(old) == ranked(w1_scores(live)), old
    standings = ok(rec["w2_standings"])["standings"]
    assert [(s["period"], s["kind"], s["score"], s["rank"], s["total"]) for s in standings] == [
        (live.w2, "custom", 25, 2, 2)
    ], standings
    periods = ok(rec["w2_periods"])["periods"]
    assert [p["period"] for p in periods] == [live.w2, live.w1], periods
    assert (periods[0]["status"], periods[0]["entries"]) == ("open", 2), periods
    assert periods[1]["status"] in ("closed", "archived") and periods[1]["entries"] == 4, periods


def test_window_archived_within_a_minute(env: Env, live: Live) -> None:
    """API.md: each window's end is archived by the rollover within a minute (every 6 s here):
    GET .../periods says `archived`; W1's standings read by id are the same after the archive;
    `history?kind=custom` lists the player's W1 result. The free board's W1 is archived too."""
    rec = live.rec
    watch = rec["archive"]
    first = watch.first_archived
    assert first is not None and first <= ARCHIVE_DEADLINE, (
        f"W1 not archived on both boards {ARCHIVE_DEADLINE} s after its end "
        f"(seconds after the end, status, free board's status): {watch.statuses}"
    )
    model = ranked(w1_scores(live))
    page = ok(rec["archived_entries"])
    assert page["period"] == live.w1 and page["total"] == 4 and entries_of(page) == model, page
    history = ok(rec["archived_history"])
    rank = next(e["rank"] for e in model if e["player_id"] == "p1")
    assert history["kind"] == "custom" and history["next"] is None, history
    assert [
        {k: r[k] for k in ("period", "rank", "score", "total", "top_percent")}
        for r in history["results"]
    ] == [
        {
            "period": live.w1,
            "rank": rank,
            "score": 50,
            "total": 4,
            "top_percent": round(100 * rank / 4, 4),
        }
    ], history
    free = {p["period"]: p for p in ok(rec["free_periods"])["periods"]}
    assert free[live.w1]["status"] == "archived" and free[live.w1]["entries"] == 2, free


def test_window_period_ended_event(env: Env, live: Live, planned: dict[str, Planned]) -> None:
    """API.md "Period-end events": one `period.ended` per window, reason `tournament`, the
    window's bounds, `time` its end, the final top (default `rewards.top` 10), its id a UUID v5
    of the board and the period. A series no one played emits nothing.
    GAP: `data.tiers` on a board without reward tiers is read as an empty list."""
    watch = live.rec["archive"]
    found = watch.webhook
    assert found is not None, f"no period.ended {watch.event_id} for {live.board} {live.w1}"
    assert watch.webhook_seen is not None and watch.webhook_seen <= WEBHOOK_DEADLINE, (
        watch.webhook_seen
    )
    event = found["event"]
    assert found["verified"] is True, found
    assert event["type"] == "period.ended" and event["time"] == iso(live.e1), event
    data = event["data"]
    assert data["board_id"] == live.board and data["reason"] == "tournament", data
    assert data["period"] == {
        "id": live.w1,
        "kind": "custom",
        "starts_at": iso(live.f1),
        "ends_at": iso(live.e1),
    }
    assert data["total_entries"] == 4
    assert data["top"] == ranked(w1_scores(live)), data["top"]
    assert data.get("tiers", []) == [], data
    events = ok(env.api.get("/local/webhook-events"))["events"]
    over = planned["over"].board
    assert not [r for r in events if r["event"].get("data", {}).get("board_id") == over]
