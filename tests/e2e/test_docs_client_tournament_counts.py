"""`GET /tournaments`, its `participants` and `attempts`, as an outside client reads the docs.

Written from the documents only: docs/API.md ("Tournaments", `POST /boards/{board_id}/join`,
`GET /tournaments`, `POST /boards/{board_id}/scores`, "Errors"), docs/openapi.json
(`TournamentList`, `Tournament`), the README and the client READMEs. Nothing is taken from the
implementation; the HTTP helpers and the `env` fixture (the suite's `make_run` stack, its tokens)
come from the recurring tournaments' docs-only client.

The model: five one-shot tournaments, all far from their bounds so the run is deterministic:

- `A` open, `join_required`, `max_participants` 3, `max_attempts` 2;
- `B` open, no sign-up, `max_participants` 2, no attempt cap;
- `C` open, no sign-up, no participant cap, `max_attempts` 1;
- `D` upcoming (tomorrow), `join_required`, `max_participants` 2, `max_attempts` 3;
- `E` ended (yesterday), no sign-up, `max_attempts` 2, no title.

A script of sign-ups and submissions (accepted, replayed and refused: `full`, `not_joined`,
`attempts_exhausted`, `not_started`, `ended`, a 422) runs against them; after each step the
listing is read, and every one of the five items is compared whole to the model's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.e2e.test_docs_client_recurring_tournaments import (
    Answer,
    Env,
    at,
    check_listing_order,
    env,  # noqa: F401 (the fixture)
    iso,
    ok,
    pid,
    refused,
)

pytestmark = pytest.mark.e2e

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


# --------------------------------------------------------------------------------------------
# The model (API.md "Tournaments", `POST .../join`, `GET /tournaments`)
# --------------------------------------------------------------------------------------------


@dataclass
class Cup:
    key: str
    title: str | None
    starts: datetime
    ends: datetime
    join_required: bool
    max_participants: int | None
    max_attempts: int | None
    board_id: str = ""
    # the window's participants: signed up (join_required) or who played (without)
    participants: set[str] = field(default_factory=set)
    used: dict[str, int] = field(default_factory=dict)  # accepted submissions per player
    attempts: int = 0  # the window's accepted submissions (a replay is none)
    keys: dict[str, Any] = field(default_factory=dict)  # Idempotency-Key -> body of its success

    def settings(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "mode": "best",
            "tournament": {
                "starts_at": iso(self.starts),
                "ends_at": iso(self.ends),
                "join_required": self.join_required,
                "max_participants": self.max_participants,
                "max_attempts": self.max_attempts,
            },
        }
        if self.title is not None:
            body["title"] = self.title
        return body

    def status(self, now: datetime) -> str:
        if now < self.starts:
            return "upcoming"
        return "open" if now < self.ends else "ended"

    def full(self) -> bool:
        return self.max_participants is not None and len(self.participants) >= (
            self.max_participants
        )

    def join(self, player: str, now: datetime) -> tuple[str, Any]:
        """("ok", (joined, participants)) or ("409", reason). Sign-ups are open from the
        creation until the end; a repeat changes nothing; the cap counts sign-ups."""
        if now >= self.ends:
            return "409", "ended"
        if player in self.participants:
            return "ok", (False, len(self.participants))
        if self.full():
            return "409", "full"
        self.participants.add(player)
        return "ok", (True, len(self.participants))

    def submit(self, player: str, body: dict[str, Any], key: str, now: datetime) -> tuple[str, Any]:
        """("ok", None), ("replay", None), ("422", None) or ("409", reason), in the documented
        order: a replay, the board's stateless rules (422), then not_started, ended, not_joined,
        full, attempts_exhausted."""
        if key and key in self.keys:
            assert self.keys[key] == body, "model: a key reused with another body"
            return "replay", None
        if "region" in body:  # these boards have no regions
            return "422", None
        if now < self.starts:
            return "409", "not_started"
        if now >= self.ends:
            return "409", "ended"
        if self.join_required and player not in self.participants:
            return "409", "not_joined"
        if not self.join_required and player not in self.participants and self.full():
            return "409", "full"
        if self.max_attempts is not None and self.used.get(player, 0) >= self.max_attempts:
            return "409", "attempts_exhausted"
        if not self.join_required:
            self.participants.add(player)  # "the first accepted submission joins"
        self.used[player] = self.used.get(player, 0) + 1
        self.attempts += 1
        if key:
            self.keys[key] = body
        return "ok", None

    def listed(self, now: datetime) -> dict[str, Any]:
        return {
            "board_id": self.board_id,
            "title": self.title,
            "status": self.status(now),
            "period": pid(self.starts),
            "starts_at": iso(self.starts),
            "ends_at": iso(self.ends),
            "join_required": self.join_required,
            "max_participants": self.max_participants,
            "max_attempts": self.max_attempts,
            "recurrence": None,
            "series_starts_at": iso(self.starts),
            "series_ends_at": iso(self.ends),
            # GAP: on a board without join_required, whether a sign-up by POST .../join (below
            # the cap) counts among `participants` ("signed up (with join_required), or who
            # played it (without)") is not said; the script signs up on such boards only when
            # the cap refuses it.
            "participants": len(self.participants),
            "attempts": self.attempts if self.max_attempts is not None else None,
        }


def cups(t0: datetime) -> dict[str, Cup]:
    return {
        "A": Cup("A", "Cup A", t0 - HOUR, t0 + 2 * HOUR, True, 3, 2),
        "B": Cup("B", "Cup B", t0 - HOUR, t0 + 3 * HOUR, False, 2, None),
        "C": Cup("C", "Cup C", t0 - HOUR / 2, t0 + HOUR, False, None, 1),
        "D": Cup("D", "Cup D", t0 + DAY, t0 + 2 * DAY, True, 2, 3),
        # GAP: the documents set no rule against creating a one-shot tournament whose window
        # is already over; it is taken as created and listed `ended`. Whether the rollover
        # does anything to an ended window no one played is not said beyond "a tournament no
        # one played has none" (no standings): its counts are read as 0.
        "E": Cup("E", None, t0 - 2 * DAY, t0 - DAY, False, None, 2),
    }


# --------------------------------------------------------------------------------------------
# The script: (label, cup, action, player, score, extra, intended outcome)
# The intended outcome is this file's reading; the model must agree with it (a model check).
# --------------------------------------------------------------------------------------------

JOIN, JOIN_SELF, SUBMIT = "join", "join-self", "submit"

SCRIPT: list[tuple[str, str, str, str, float, dict[str, Any], tuple[str, Any]]] = [
    ("A-join-p1-self", "A", JOIN_SELF, "p1", 0, {}, ("ok", (True, 1))),
    ("A-join-p2", "A", JOIN, "p2", 0, {}, ("ok", (True, 2))),
    ("A-join-p1-again", "A", JOIN_SELF, "p1", 0, {}, ("ok", (False, 2))),
    ("A-join-p3", "A", JOIN, "p3", 0, {}, ("ok", (True, 3))),
    ("A-join-p4-full", "A", JOIN, "p4", 0, {}, ("409", "full")),
    ("D-join-u1-upcoming", "D", JOIN, "u1", 0, {}, ("ok", (True, 1))),
    ("E-join-ended", "E", JOIN, "e1", 0, {}, ("409", "ended")),
    ("A-p1-first", "A", SUBMIT, "p1", 50, {}, ("ok", None)),
    ("A-p1-second-not-better", "A", SUBMIT, "p1", 40, {}, ("ok", None)),
    ("A-p1-third-exhausted", "A", SUBMIT, "p1", 60, {}, ("409", "attempts_exhausted")),
    ("A-p2-keyed", "A", SUBMIT, "p2", 30, {"key": "k-p2"}, ("ok", None)),
    ("A-p2-replay", "A", SUBMIT, "p2", 30, {"key": "k-p2"}, ("replay", None)),
    # A is full (3 of 3) and p4 never signed up: not_joined comes before full
    ("A-p4-not-joined", "A", SUBMIT, "p4", 10, {}, ("409", "not_joined")),
    ("A-p3-region-422", "A", SUBMIT, "p3", 35, {"region": "EU"}, ("422", None)),
    ("A-p3-first", "A", SUBMIT, "p3", 35, {}, ("ok", None)),
    ("B-q1", "B", SUBMIT, "q1", 10, {}, ("ok", None)),
    ("B-q2", "B", SUBMIT, "q2", 20, {}, ("ok", None)),
    ("B-q3-full", "B", SUBMIT, "q3", 30, {}, ("409", "full")),
    ("B-join-q3-full", "B", JOIN, "q3", 0, {}, ("409", "full")),
    ("B-q1-again", "B", SUBMIT, "q1", 15, {}, ("ok", None)),
    ("C-c1", "C", SUBMIT, "c1", 5, {}, ("ok", None)),
    ("C-c1-exhausted", "C", SUBMIT, "c1", 7, {}, ("409", "attempts_exhausted")),
    ("C-c2", "C", SUBMIT, "c2", 6, {}, ("ok", None)),
    ("C-c3-region-422", "C", SUBMIT, "c3", 8, {"region": "EU"}, ("422", None)),
    ("D-u1-not-started", "D", SUBMIT, "u1", 1, {}, ("409", "not_started")),
    # not_started comes before not_joined
    ("D-u2-not-started", "D", SUBMIT, "u2", 1, {}, ("409", "not_started")),
    ("E-e1-ended", "E", SUBMIT, "e1", 1, {}, ("409", "ended")),
]
LABELS = ["created"] + [s[0] for s in SCRIPT]


@dataclass
class Step:
    label: str
    cup: Cup | None
    action: str
    expected: tuple[str, Any]
    answer: Answer | None
    listing: Answer
    listed_at: datetime  # the listing's request time
    model: dict[str, dict[str, Any]]  # the model's items for that instant


@dataclass
class Run:
    env: Env
    cups: dict[str, Cup]
    created: dict[str, Answer]
    steps: dict[str, Step]
    first_answer: dict[str, Answer] = field(default_factory=dict)  # key -> first success
    filtered: dict[str, Answer] = field(default_factory=dict)


def snapshot(cs: dict[str, Cup], now: datetime) -> dict[str, dict[str, Any]]:
    return {c.board_id: c.listed(now) for c in cs.values()}


@pytest.fixture(scope="module")
def run(env: Env) -> Run:  # noqa: F811
    t0 = at(int(time.time()))
    cs = cups(t0)
    created = {}
    for c in cs.values():
        c.board_id = env.board(f"tc-{c.key.lower()}")
        created[c.key] = env.put_board(c.board_id, c.settings())
    if any(a.status != 201 for a in created.values()):
        pytest.fail(f"the tournaments were not created: {created}")
    r = Run(env, cs, created, {})

    def listing(label: str, cup: Cup | None, action: str, expected: Any, answer: Any) -> None:
        now = at(time.time())
        model = snapshot(cs, now)
        r.steps[label] = Step(label, cup, action, expected, answer, env.tournaments(), now, model)

    listing("created", None, "", ("ok", None), None)
    for label, key, action, player, score, extra, intended in SCRIPT:
        cup = cs[key]
        now = at(time.time())
        if action in (JOIN, JOIN_SELF):
            expected = cup.join(player, now)
            answer = env.join(cup.board_id, player, as_player=action == JOIN_SELF)
        else:
            more = {k: v for k, v in extra.items() if k != "key"}
            body = {"player_id": player, "score": score, **more}
            expected = cup.submit(player, body, extra.get("key", ""), now)
            answer = env.submit(cup.board_id, player, score, key=extra.get("key", ""), **more)
            if expected[0] == "ok" and extra.get("key"):
                r.first_answer[extra["key"]] = answer
        if expected != intended:
            pytest.fail(f"model check: {label}: the model says {expected}, intended {intended}")
        listing(label, cup, action, expected, answer)
    for status in ("open", "upcoming", "ended"):
        r.filtered[status] = env.tournaments(status)
    r.filtered["bogus"] = env.tournaments("closed")
    return r


# --------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------


def test_created_as_sent(run: Run) -> None:
    """PUT /boards: 201, the board object's tournament as sent (UTC, to the second), one
    period `custom`."""
    for key, answer in run.created.items():
        cup = run.cups[key]
        board = ok(answer, 201)
        assert board["periods"] == ["custom"], answer
        t = board["tournament"]
        assert {k: t[k] for k in cup.settings()["tournament"]} == cup.settings()["tournament"], (
            answer
        )
        assert t["recurrence"] is None, answer


@pytest.mark.parametrize("label", [s[0] for s in SCRIPT])
def test_step_answer(run: Run, label: str) -> None:
    """Each sign-up and submission answers as the model says: a join's `period`, `joined` and
    `participants`; a submission's 200 (its standings on the window's period), the replay's
    stored answer, 422, or 409 `tournament_rules` with the model's `reason`."""
    step = run.steps[label]
    cup, answer = step.cup, step.answer
    assert cup is not None and answer is not None
    kind, detail = step.expected
    if kind == "409":
        refused(answer, 409, "tournament_rules", reason=detail)
    elif kind == "422":
        refused(answer, 422, "unprocessable")
    elif step.action in (JOIN, JOIN_SELF):
        joined, participants = detail
        body = ok(answer)
        player = next(s[3] for s in SCRIPT if s[0] == label)
        assert body == {
            "board_id": cup.board_id,
            "player_id": player,
            "period": pid(cup.starts),
            "joined": joined,
            "participants": participants,
        }, answer
    elif kind == "replay":
        first = run.first_answer[next(s[5]["key"] for s in SCRIPT if s[0] == label)]
        assert ok(answer) == ok(first), (answer, first)
        assert answer.headers.get("idempotent-replayed") == "true", answer.headers
    else:
        body = ok(answer)
        assert [s["period"] for s in body["standings"]] == [pid(cup.starts)], answer


@pytest.mark.parametrize("label", LABELS)
def test_listing_after_step(run: Run, label: str) -> None:
    """After each step, GET /tournaments lists each of the five tournaments exactly as the model
    has it (every field: the window, the rules, `participants`, `attempts`), in the documented
    order: open ones by `ends_at` (C, A, B), then upcoming (D), then ended (E)."""
    step = run.steps[label]
    items = ok(step.listing)["tournaments"]
    check_listing_order(items)
    mine = [i for i in items if i["board_id"] in step.model]
    assert {i["board_id"]: i for i in mine} == step.model, f"{label}: {step.listing!r}"
    order = [run.cups[k].board_id for k in "CABDE"]
    assert [i["board_id"] for i in mine] == order, f"{label}: {[i['board_id'] for i in mine]}"


def test_listing_by_status(run: Run) -> None:
    """`?status=` keeps one kind, the same items; anything else is 400."""
    final = run.steps[LABELS[-1]].model
    want = {"open": "CAB", "upcoming": "D", "ended": "E"}
    for status, keys in want.items():
        items = ok(run.filtered[status])["tournaments"]
        assert all(i["status"] == status for i in items), run.filtered[status]
        mine = [i for i in items if i["board_id"] in final]
        assert [i["board_id"] for i in mine] == [run.cups[k].board_id for k in keys]
        assert all(i == final[i["board_id"]] for i in mine), run.filtered[status]
    refused(run.filtered["bogus"], 400, "bad_request")


def test_final_counts(run: Run) -> None:
    """The end state, spelled out (the model's own totals, a check of the model too):
    A 3 signed up, 4 accepted attempts; B 2 players, attempts null; C 2 players, 2 attempts;
    D 1 signed up, 0 attempts; E nothing."""
    final = run.steps[LABELS[-1]].model
    counts = {
        k: (final[c.board_id]["participants"], final[c.board_id]["attempts"])
        for k, c in run.cups.items()
    }
    assert counts == {"A": (3, 4), "B": (2, None), "C": (2, 2), "D": (1, 0), "E": (0, 0)}
    items = {i["board_id"]: i for i in ok(run.steps[LABELS[-1]].listing)["tournaments"]}
    got = {
        k: (items[c.board_id]["participants"], items[c.board_id]["attempts"])
        for k, c in run.cups.items()
        if c.board_id in items
    }
    assert got == counts
