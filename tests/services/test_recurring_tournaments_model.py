"""Recurring tournaments against an independent model (real Valkey and PostgreSQL, a fake
clock). Random recurrences (daily or hourly crons in Berlin, New York or UTC, around a
daylight-saving change; windows shorter and longer than the gap between fires; series bounds
or none), random caps, and random sequences of sign-ups, submissions, reads of `custom`,
rollover runs, and races of concurrent first writes (threads) for a window's last slots.

The model knows nothing of the service's calendar: its windows come from the schedules'
minute-by-minute reference (tests/domain/test_schedules.py), each [F, min(F + duration, next
fire)). It checks every accept and refusal and its reason, the window each sign-up and
submission went to, the caps per window (its `joined:<id>`/`attempts:<id>` keys held exactly,
the cap never passed by a race), every window's standings, and at each rollover run the
windows archived (one `period.ended` each, reason `tournament`, the window's bounds and top)
and the sign-up and attempt keys removed once a window is over."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import pairwise
from zoneinfo import ZoneInfo

from hypothesis import event, given, settings
from hypothesis import strategies as st

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import NotFound, TournamentRefused, Unprocessable
from leaderboard.domain.periods import custom_period_id
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.aws.event_bus import ListSink as EventListSink
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from tests.domain.test_schedules import Expression, reference_fires
from tests.services.test_tournaments import _together
from tests.support.boards import ListSink, MovableClock
from tests.support.examples import examples

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
# Each a day and a half before a change of its zone's clocks (UTC, 2026), and one in UTC
BASES = {
    "Europe/Berlin": ("2026-03-27T19:00", "2026-10-23T19:00"),
    "America/New_York": ("2026-03-07T01:00", "2026-10-30T18:00"),
    "UTC": ("2026-06-01T00:00",),
}
SPAN = timedelta(days=3)  # what the operations' instants cover
PLAYERS = ("p0", "p1", "p2", "p3")
FREQUENT = ("p0", "p0", "p1", *PLAYERS)  # a few play often: attempts and caps are reached


@dataclass(frozen=True)
class Window:
    id: str
    start: datetime
    end: datetime


@dataclass
class Model:
    """The tournament as the rules say it should be: its windows, and per window who joined,
    their attempts and best scores, and which were archived."""

    windows: list[Window]
    join_required: bool
    max_participants: int | None
    max_attempts: int | None
    joined: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    attempts: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    best: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    archived: set[str] = field(default_factory=set)
    dropped: set[str] = field(default_factory=set)

    def target(self, at: datetime) -> Window:
        """A write's window: the one open at `at`, else the next, else the last."""
        for window in self.windows:
            if window.start <= at < window.end or at < window.start:
                return window
        return self.windows[-1]

    def shown(self, at: datetime) -> Window:
        """What a read of `custom` shows: the last window started by `at`, else the first."""
        started = [w for w in self.windows if w.start <= at]
        return started[-1] if started else self.windows[0]

    def room(self, window: Window) -> int | None:
        if self.max_participants is None:
            return None
        return max(0, self.max_participants - len(self.joined[window.id]))

    def submit(self, at: datetime, player: str, score: int) -> tuple[str, Window]:
        window = self.target(at)
        if at < window.start:
            return "not_started", window
        if at >= window.end:
            return "ended", window
        if player not in self.joined[window.id]:
            if self.join_required:
                return "not_joined", window
            if self.room(window) == 0:
                return "full", window
        used = self.attempts[window.id].get(player, 0)
        if self.max_attempts is not None and used >= self.max_attempts:
            return "attempts_exhausted", window
        self.joined[window.id].add(player)
        self.attempts[window.id][player] = used + 1
        best = self.best[window.id]
        best[player] = max(score, best.get(player, score))
        return "", window

    def join(self, at: datetime, player: str) -> tuple[str, Window, bool]:
        window = self.target(at)
        if at >= window.end:
            return "ended", window, False
        if player in self.joined[window.id]:
            return "", window, False
        if self.room(window) == 0:
            return "full", window, False
        self.joined[window.id].add(player)
        return "", window, True

    def ranked(self, window_id: str) -> list[tuple[int, str, int]]:
        scores = self.best[window_id]
        return sorted(
            (1 + sum(s > score for s in scores.values()), player, score)
            for player, score in scores.items()
        )


def model_windows(
    expr: Expression, zone: str, duration: int, since: datetime, until: datetime | None
) -> list[Window]:
    per_day = len(expr.minutes) * (24 if expr.hours is None else len(expr.hours))
    fires = reference_fires(expr, ZoneInfo(zone), since - timedelta(seconds=1), per_day * 5 + 2)
    windows = []
    for start, following in pairwise(fires):
        if until is not None and start >= until:
            break
        end = min(start + timedelta(seconds=duration), following)
        windows.append(Window(custom_period_id(start), start, end))
    return windows


expressions = st.builds(
    Expression,
    minutes=st.sampled_from([(0,), (30,), (0, 30)]),
    # daily at the hours clocks change at, in the evening, or every hour
    hours=st.none()
    | st.sets(st.sampled_from([1, 2, 3, 18, 23]), min_size=1, max_size=2).map(
        lambda s: tuple(sorted(s))
    ),
    weekdays=st.none(),
)


@cache
def _database(url: str) -> Database:
    """One connection for every example (each would otherwise keep its own open)."""
    return Database(url)


@settings(max_examples=examples(5))
@given(
    expr=expressions,
    zone_base=st.sampled_from([(z, i) for z, bases in BASES.items() for i in range(len(bases))]),
    duration=st.sampled_from([60, 1800, 3600, 3 * 3600, 26 * 3600]),
    start_hours=st.none() | st.integers(0, 30),
    length_hours=st.none() | st.integers(1, 60),
    join_required=st.booleans(),
    max_participants=st.none() | st.integers(1, 3),
    max_attempts=st.none() | st.integers(1, 2),
    data=st.data(),
)
def test_recurring_tournaments_match_the_model(
    session_index,
    database_url,
    expr,
    zone_base,
    duration,
    start_hours,
    length_hours,
    join_required,
    max_participants,
    max_attempts,
    data,
):
    zone, base_number = zone_base
    base = datetime.fromisoformat(BASES[zone][base_number]).replace(tzinfo=UTC)
    since = base if start_hours is None else base + timedelta(hours=start_hours)
    until = None if length_hours is None else since + timedelta(hours=length_hours)
    tournament = {
        "recurrence": {"cron": expr.text, "timezone": zone, "duration_seconds": duration},
        "starts_at": None if start_hours is None else since.isoformat(),
        "ends_at": None if until is None else until.isoformat(),
        "join_required": join_required,
        "max_participants": max_participants,
        "max_attempts": max_attempts,
    }
    board_id = f"rt-{uuid.uuid4().hex[:12]}"
    clock = MovableClock(base)  # the board is made at the base: its series' default start
    db = _database(database_url)
    index = session_index
    admin = BoardAdminService(db, index, clock)
    windows = model_windows(expr, zone, duration, since, until)
    if not windows:  # bounds that hold no fire: refused when made
        try:
            admin.put_board(board_id, {"mode": "best", "tournament": tournament}, ADMIN)
        except Unprocessable as refused:
            assert refused.details["field"] == "tournament.ends_at"
            return
        raise AssertionError("a series without a window was accepted")
    admin.put_board(board_id, {"mode": "best", "tournament": tournament}, ADMIN)
    model = Model(windows, join_required, max_participants, max_attempts)
    sink, events = ListSink(), EventListSink()
    scores = ScoreService(index, sink, clock)
    reads = ReadService(index, clock)
    rollover = Rollover(db, index, clock, sink=events)
    recorded = 0
    keys = f"lb:{{{board_id}}}:"
    racers = iter(f"r{n}" for n in range(1000))

    near = [w for w in windows if w.start < base + SPAN] or windows[:1]

    def instant() -> datetime:
        """In or at the edge of one of the first windows (most ops: caps and attempts are
        reached there), of any window of the span, or anywhere in the span."""
        first = data.draw(st.integers(0, min(len(near), 3) - 1))
        window = data.draw(
            st.sampled_from([near[first], near[first], data.draw(st.sampled_from(near))])
        )
        return data.draw(
            st.sampled_from(
                [
                    window.start,
                    window.end - timedelta(milliseconds=1),
                    window.end,
                    window.start + (window.end - window.start) / 2,
                    window.start + (window.end - window.start) / 3,
                    base + timedelta(minutes=data.draw(st.integers(0, 3 * 24 * 60))),
                ]
            )
        )

    def run_rollover(at: datetime) -> None:
        """A run (of the boards due), after the record has every event so far: the windows
        over and played are archived, once, each with its period.ended; the sign-ups and
        attempts of every window over are gone."""
        nonlocal recorded
        StandingsStore(db).write(sink.events[recorded:])
        recorded = len(sink.events)
        before = len(events.events)
        report = rollover.run(board_ids={board_id}, due=True)
        over = [w for w in windows if w.end <= at]
        due = sorted(w.id for w in over if model.best[w.id] and w.id not in model.archived)
        assert report.archived == [f"{board_id}/{w}" for w in due], at
        assert report.differences == 0
        for ended, window_id in zip(events.events[before:], due, strict=True):
            body = ended.envelope()["data"]
            window = next(w for w in windows if w.id == window_id)
            assert body["reason"] == "tournament"
            assert body["period"]["id"] == window_id
            assert (body["period"]["starts_at"], body["period"]["ends_at"]) == (
                window.start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                window.end.strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
            top = [(e["rank"], e["player_id"], e["score"]) for e in body["top"]]
            ranked = model.ranked(window_id)
            assert len(top) == min(10, len(ranked)) and set(top) <= set(ranked)
            assert [t[0] for t in top] == sorted(t[0] for t in top)
        assert len(events.events) == before + len(due)  # one event per window, no other
        model.archived.update(due)
        model.dropped.update(w.id for w in over if model.joined[w.id])
        event(f"rollover: {len(due)} window(s) archived")

    def check_keys(at: datetime) -> None:
        for window in windows:
            if window.id in model.dropped:
                assert index.client.exists(f"{keys}joined:{window.id}") == 0, window
                assert index.client.exists(f"{keys}attempts:{window.id}") == 0, window
                continue
            held = index.client.smembers(f"{keys}joined:{window.id}")
            assert held == model.joined[window.id], (window, at)
            counted = index.client.hgetall(f"{keys}attempts:{window.id}")
            expected = dict(model.attempts[window.id]) if max_attempts is not None else {}
            if expected:  # and the window's total, which GET /tournaments shows
                expected["~"] = sum(expected.values())
            assert {p: int(n) for p, n in counted.items()} == expected, (window, at)
        assert index.client.exists(keys + "joined") == 0  # a one-shot tournament's keys: none

    times = sorted(instant() for _ in range(data.draw(st.integers(4, 16))))
    for at in times:
        clock.now = at
        op = data.draw(st.sampled_from(["submit", "submit", "join", "race", "read", "rollover"]))
        if op == "submit":
            player, score = data.draw(st.sampled_from(FREQUENT)), data.draw(st.integers(0, 9))
            reason, window = model.submit(at, player, score)
            event(f"submit: {reason or 'accepted'}")
            try:
                got = scores.submit(board_id, {"player_id": player, "score": score}, SERVER, None)
            except TournamentRefused as refused:
                assert refused.details["reason"] == reason, (at, player, window)
            else:
                assert reason == "", (at, player, window)
                (standing,) = got.body["standings"]
                best = model.best[window.id]
                rank = 1 + sum(s > best[player] for s in best.values())
                assert (standing["period"], standing["rank"]) == (window.id, rank)
        elif op == "join":
            player = data.draw(st.sampled_from(PLAYERS))
            reason, window, fresh = model.join(at, player)
            event(f"join: {reason or 'accepted'}")
            try:
                got = scores.join(board_id, {"player_id": player}, SERVER)
            except TournamentRefused as refused:
                assert refused.details["reason"] == reason, (at, player, window)
            else:
                assert reason == "", (at, player, window)
                assert (got["period"], got["joined"]) == (window.id, fresh)
                assert got["participants"] == len(model.joined[window.id])
        elif op == "race":  # new players at once, for a window's last slots (or all refused)
            window = model.target(at)
            room = model.room(window)
            count = (room if room is not None else 0) + data.draw(st.integers(1, 3))
            names = [next(racers) for _ in range(count)]
            if join_required:
                got = _together(
                    [lambda p=p: scores.join(board_id, {"player_id": p}, SERVER) for p in names]
                )
            else:
                got = _together(
                    [
                        lambda p=p, n=n: scores.submit(
                            board_id, {"player_id": p, "score": n}, SERVER, None
                        )
                        for n, p in enumerate(names)
                    ]
                )
            winners = [p for p, r in zip(names, got, strict=True) if not isinstance(r, str)]
            event(f"race: {len(winners)} of {len(names)} won")
            refusals = {r for r in got if isinstance(r, str)}
            open_now = window.start <= at < window.end or (join_required and at < window.end)
            if not open_now:
                expected = "not_started" if at < window.start else "ended"
                assert (winners, refusals) == ([], {expected}), (at, window)
            else:
                allowed = len(names) if room is None else min(room, len(names))
                assert len(winners) == allowed, (at, window, got)  # the cap, exactly
                assert refusals <= {"full"}, (at, window, got)
                for n, player in enumerate(names):
                    if player in winners:  # the model takes the winners the race chose
                        if join_required:
                            model.join(at, player)
                        else:
                            assert model.submit(at, player, n)[0] == ""
        elif op == "read":
            shown = model.shown(at)
            try:
                got = reads.entries(board_id, {"period": "custom", "limit": "100"})
            except NotFound:
                event("read: 404")
                assert not model.best[shown.id] and not shown.start <= at < shown.end, at
            else:
                event("read: standings")
                assert got["period"] == shown.id
                ranked = sorted((e["rank"], e["player_id"], e["score"]) for e in got["entries"])
                assert ranked == model.ranked(shown.id), at
        else:
            run_rollover(at)
        check_keys(at)

    # the last run, once every window played or signed up for is over
    touched = [w for w in windows if model.joined[w.id]]
    if touched:
        clock.now = max([*(w.end for w in touched), times[-1]]) + timedelta(seconds=1)
        run_rollover(clock.now)
        check_keys(clock.now)
        assert index.client.exists(keys + "windows") == 0  # no window's keys left behind
    # every window's standings, by its id
    for window in windows:
        if model.best[window.id]:
            got = reads.entries(board_id, {"period": window.id, "limit": "100"})
            ranked = sorted((e["rank"], e["player_id"], e["score"]) for e in got["entries"])
            assert ranked == model.ranked(window.id), window
    index.rollover_due_at(board_id, None)  # leave the shared due list as found
