"""Player channels ("you were overtaken"), tested as an outside client that knows the service
only from its public documents: docs/API.md ("Player channels", "Live updates", "Hidden
players", "Admin"), docs/openapi.json (`WatchRequest`, `WatchResult`, `PlayerChannelMessage`),
README.md and the client READMEs.

Every expected value below comes from those documents and from this file's own model of the
board (ranks by the board's `ties` rule, hidden players left out), never from the service's code.

How ticks are made deterministic: the publisher coalesces a board's changes per tick
(`LIVE_PUBLISH_RATE`, 4 a second). Each step of a scenario is one request (a batch of writes, a
removal, a hiding) and the next step starts only once that step's messages have arrived, so a
step's changes fall in a tick of their own. The board channel `<live_channel>/all-time` is the
clock: its message with `version` >= the step's last version says which writes its tick held
(API.md "Messages": "A message with version v includes every submission acknowledged with a
version <= v"). A batch that a tick cut in two is modelled as the two ticks it became.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import hashlib
import hmac
import json
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Set as AbstractSet
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect
from websockets.typing import Subprotocol

pytestmark = pytest.mark.e2e

SEED = 20261127
SERVER = "leaderboard/server"
ADMIN = "leaderboard/admin"

# "A player can be told, within about a second" (API.md, Player channels). "About" gets half a
# second of slack for a loaded CI machine; the silence checks wait the bound itself, once.
ABOUT_A_SECOND = 1.0
DEADLINE = ABOUT_A_SECOND + 0.5
# "A new board ... writes made in its first second ... arrive in the first message once the
# publisher has found the board" and "the publisher re-reads the boards every second".
NEW_BOARD_EXTRA = 1.0
LIVE_PUBLISH_RATE = 4

MESSAGE_FIELDS = {
    "type",
    "player_id",
    "board_id",
    "period_kind",
    "period",
    "region",
    "version",
    "rank",
    "previous_rank",
    "score",
    "top_n",
    "events",
    "passed_by",
    "passed_by_truncated",
    "published_at",
}
WATCH_FIELDS = {
    "board_id",
    "player_id",
    "period_kind",
    "period",
    "region",
    "top_n",
    "friends",
    "channel",
    "expires_at",
    "rank",
    "score",
}
PASSED_BY_FIELDS = {"rank", "player_id", "score", "metadata", "friend"}
NO_BODY = object()


# --------------------------------------------------------------------------- HTTP and tokens


@dataclasses.dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


class Api:
    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")

    def call(
        self,
        method: str,
        path: str,
        body: Any = NO_BODY,
        token: str | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        data = raw if raw is not None else None if body is NO_BODY else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return Reply(response.status, _json(response.read()), _headers(response.headers))
        except urllib.error.HTTPError as error:
            return Reply(error.code, _json(error.read()), _headers(error.headers))

    def ok(
        self,
        method: str,
        path: str,
        body: Any = NO_BODY,
        token: str | None = None,
        status: int = 200,
    ) -> Any:
        reply = self.call(method, path, body, token)
        assert reply.status == status, f"{method} {path} {body!r}: {reply.status} {reply.body!r}"
        return reply.body


def _headers(headers: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def _json(raw: bytes) -> Any:
    return json.loads(raw) if raw else None


class Tokens:
    """`make token SUB=... SCOPE=...` tokens, minted once per subject and scope."""

    def __init__(self, make_run: Any) -> None:
        self._make_run = make_run
        self._cache: dict[tuple[str, str], str] = {}

    def __call__(self, subject: str, scope: str = "") -> str:
        key = (subject, scope)
        if key not in self._cache:
            self._cache[key] = self._make_run.token(subject, scope)
        return self._cache[key]


def hs256_token(secret: bytes, claims: dict[str, Any]) -> str:
    """A local token as API.md "Authentication" describes it: HS256 with the local secret."""

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


def player_channel(player_id: str) -> str:
    """API.md "The player's channel": `P` + the first 40 hex digits of sha256(player id)."""
    return "/players/P" + hashlib.sha256(player_id.encode()).hexdigest()[:40]


def parse_instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --------------------------------------------------------------------------- the WebSocket


class LiveSocket:
    """One AppSync Events connection (API.md "Connecting and authorizing"), read by a thread
    that timestamps every frame on arrival."""

    def __init__(self, live: dict[str, str]) -> None:
        self.live = live
        auth = {"host": live["http_host"], "x-api-key": live["api_key"]}
        header = base64.urlsafe_b64encode(json.dumps(auth).encode()).decode().rstrip("=")
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(
            connect(
                live["realtime_url"],
                subprotocols=[Subprotocol("aws-appsync-event-ws"), Subprotocol(f"header-{header}")],
                open_timeout=10,
            )
        )
        self.ws.send(json.dumps({"type": "connection_init"}))
        ack = json.loads(self.ws.recv(timeout=5))
        assert ack == {"type": "connection_ack", "connectionTimeoutMs": 300000}, ack
        self.frames: list[tuple[float, dict[str, Any]]] = []  # (arrival, wall clock), frame
        self.cond = threading.Condition()
        self.closed = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self.ws:
                frame = json.loads(raw)
                if frame.get("type") == "data":
                    frame["event"] = json.loads(frame["event"])  # "parse event a second time"
                with self.cond:
                    self.frames.append((time.time(), frame))
                    self.cond.notify_all()
        except Exception:
            pass
        finally:
            with self.cond:
                self.closed = True
                self.cond.notify_all()

    def close(self) -> None:
        self._stack.close()
        self._thread.join(timeout=5)

    def api_key_auth(self) -> dict[str, str]:
        return {"host": self.live["http_host"], "x-api-key": self.live["api_key"]}

    def bearer_auth(self, token: str) -> dict[str, str]:
        return {"host": self.live["http_host"], "Authorization": f"Bearer {token}"}

    def wait_for(self, predicate, timeout: float) -> bool:
        """Wait until predicate(frames) holds; False at the deadline."""
        end = time.monotonic() + timeout
        with self.cond:
            while not predicate(self.frames):
                left = end - time.monotonic()
                if left <= 0 or self.closed:
                    return predicate(self.frames)
                self.cond.wait(left)
            return True

    def subscribe(self, channel: str, authorization: dict[str, str] | None) -> dict[str, Any]:
        """Send `subscribe` and return its answer (`subscribe_success` or `subscribe_error`)."""
        sub_id = str(uuid.uuid4())
        message: dict[str, Any] = {"type": "subscribe", "id": sub_id, "channel": channel}
        if authorization is not None:
            message["authorization"] = authorization
        self.ws.send(json.dumps(message))

        def answered(frames):
            return any(
                f.get("id") == sub_id and f["type"].startswith("subscribe") for _, f in frames
            )

        assert self.wait_for(answered, 5), f"no answer to subscribe {channel}"
        with self.cond:
            return next(
                f
                for _, f in self.frames
                if f.get("id") == sub_id and f["type"].startswith("subscribe")
            )

    def data(self, sub_id: str | None = None) -> list[tuple[float, dict[str, Any]]]:
        """(arrival, event) of every data frame so far, optionally of one subscription."""
        with self.cond:
            return [
                (t, f["event"])
                for t, f in self.frames
                if f["type"] == "data" and (sub_id is None or f["id"] == sub_id)
            ]


def assert_subscribed(answer: dict[str, Any], what: str) -> str:
    assert answer["type"] == "subscribe_success", (
        f"{what}: expected subscribe_success, got {answer}"
    )
    return answer["id"]


def assert_refused(answer: dict[str, Any], what: str) -> None:
    """API.md "Who may subscribe": subscribe_error with an UnauthorizedException."""
    assert answer["type"] == "subscribe_error", f"{what}: expected subscribe_error, got {answer}"
    errors = answer.get("errors")
    assert errors and errors[0].get("errorType") == "UnauthorizedException", f"{what}: {answer}"


# --------------------------------------------------------------------------- the model


class BoardModel:
    """The board as API.md "The board object" (modes, ties) and "Hidden players" define it."""

    def __init__(self, mode: str, ties: str, sort: str = "desc") -> None:
        self.mode, self.ties, self.sort = mode, ties, sort
        self.sign = -1 if sort == "desc" else 1  # sort key: smaller is better
        self.entries: dict[str, list[float]] = {}  # player -> [score, version it reached it at]
        self.metadata: dict[str, Any] = {}
        self.hidden: set[str] = set()
        self.version = 0

    def copy(self) -> BoardModel:
        return copy.deepcopy(self)

    def write(self, player: str, score: float, metadata: Any, version: int) -> bool:
        """Apply one submission; True when the stored score changed."""
        old = self.entries.get(player)
        if self.mode == "set":
            new = score
        elif self.mode == "best":
            new = score if old is None else (max if self.sort == "desc" else min)(old[0], score)
        else:
            new = score + (0 if old is None else old[0])
        changed = old is None or new != old[0]
        if changed:  # ties=first: "the entry that reached that score earlier ranks higher"
            self.entries[player] = [new, version]
        if metadata is not None:  # stored whenever the player has an entry after the write
            self.metadata[player] = metadata
        self.version = max(self.version, version)
        return changed

    def remove(self, player: str) -> None:
        self.entries.pop(player, None)
        self.metadata.pop(player, None)

    def visible(self, player: str) -> bool:
        return player in self.entries and player not in self.hidden

    def ahead(self, q: str, p: str) -> bool:
        """q is ahead of p in the public board's order (on shared boards a tie is not)."""
        if not (self.visible(q) and self.visible(p)):
            return False
        (sq, vq), (sp, vp) = self.entries[q], self.entries[p]
        if self.ties == "shared":
            return self.sign * sq < self.sign * sp
        return (self.sign * sq, vq) < (self.sign * sp, vp)

    def rank(self, p: str) -> int | None:
        if not self.visible(p):
            return None
        return 1 + sum(1 for q in self.entries if q != p and self.ahead(q, p))

    def score(self, p: str) -> float | None:
        return self.entries[p][0] if p in self.entries else None

    def public_order(self) -> list[tuple[int | None, str, float]]:
        players = [p for p in self.entries if self.visible(p)]
        if self.ties == "shared":  # tied entries by player id in the direction of the sort
            players.sort(
                key=lambda p: (self.sign * self.entries[p][0], [self.sign * ord(c) for c in p])
            )
        else:
            players.sort(key=lambda p: (self.sign * self.entries[p][0], self.entries[p][1]))
        return [(self.rank(p), p, self.entries[p][0]) for p in players]


@dataclasses.dataclass
class Watch:
    player: str
    top_n: int
    friends: list[str]
    last_rank: int | None  # previous_rank of the next message: last said, or the watch's answer


class Ambiguous(Exception):
    """A tick where the documents do not say what a watch is told."""


def expect_message(
    watch: Watch, before: BoardModel, after: BoardModel, changed: set[str], version: int
) -> dict[str, Any] | None:
    """What API.md "Messages on a player channel" says this watch is told for one tick.

    `before` is the board "when the tick began" (steps start after the previous one was told,
    and after any watch they create), `after` the board once the tick's changes are applied.
    """
    p = watch.player
    if p in after.hidden:
        return None  # "while a board hides a player, that player's own watch of it is silent"
    rank_before, rank_now = before.rank(p), after.rank(p)
    own = p in changed
    passers = [
        q
        for q in changed
        if q != p and rank_now is not None and after.ahead(q, p) and not before.ahead(q, p)
    ]
    worse = rank_before is not None and rank_now is not None and rank_now > rank_before
    if passers and (own or not worse):
        # The player's own change and a pass in one tick, or a pass while the rank did not get
        # worse (someone ahead fell behind in the same tick): the documents do not say.
        raise Ambiguous(p)
    assert own or not worse or passers, f"model: {p}'s rank got worse with nobody passing"
    passed = bool(passers)
    events = []
    if passed:
        events.append("passed")
        if any(q in watch.friends for q in passers):
            events.append("friend_passed")
    if (
        rank_now is not None
        and rank_now <= watch.top_n
        and (rank_before is None or rank_before > watch.top_n)
    ):
        events.append("entered_top")
    if (
        rank_before is not None
        and rank_before <= watch.top_n
        and (rank_now is None or rank_now > watch.top_n)
    ):
        events.append("left_top")
    if not events:
        return None  # "A tick with no change" of a listed kind tells nothing
    # "nearest first, friends always listed first; at most 10"
    ordered = sorted(passers, key=lambda q: (q not in watch.friends, -(after.rank(q) or 0)))
    passed_by = [
        {
            "rank": after.rank(q),
            "player_id": q,
            "score": after.score(q),
            "metadata": after.metadata.get(q),
            "friend": q in watch.friends,
        }
        for q in ordered
    ]
    return {
        "type": "player.standing_changed",
        "player_id": p,
        "period_kind": "all-time",
        "period": "all-time",
        "region": None,
        "version": version,
        "rank": rank_now,
        "previous_rank": watch.last_rank,
        "score": after.score(p),
        "top_n": watch.top_n,
        "events": events,
        "passed_by": passed_by,
        "passed_by_truncated": len(passed_by) > 10,
    }


def check_message(
    actual: dict[str, Any], expected: dict[str, Any], board_id: str, where: str
) -> None:
    """Field by field, as the documents promise them."""
    who = f"{where}: watch of {expected['player_id']}"
    assert set(actual) == MESSAGE_FIELDS, f"{who}: fields {sorted(actual)}"
    for field in ("type", "player_id", "period_kind", "period", "region", "top_n", "version"):
        assert actual[field] == expected[field], (
            f"{who}: {field} {actual[field]!r} != {expected[field]!r}"
        )
    assert actual["board_id"] == board_id
    assert (actual["rank"], actual["score"]) == (expected["rank"], expected["score"]), (
        f"{who}: rank/score {actual['rank']}/{actual['score']}, expected "
        f"{expected['rank']}/{expected['score']}"
    )
    assert actual["previous_rank"] == expected["previous_rank"], (
        f"{who}: previous_rank {actual['previous_rank']}, but the previous message (or the "
        f"watch) said {expected['previous_rank']}"
    )
    assert len(actual["events"]) == len(set(actual["events"])), f"{who}: {actual['events']}"
    assert set(actual["events"]) == set(expected["events"]), (
        f"{who}: events {actual['events']}, expected {expected['events']} "
        f"(rank {expected['previous_rank']} -> {expected['rank']}, top_n {expected['top_n']}, "
        f"passed_by expected {[e['player_id'] for e in expected['passed_by']]})"
    )
    want = expected["passed_by"]
    got = actual["passed_by"]
    shown = want[:10]
    assert len(got) == len(shown), (
        f"{who}: passed_by {[(e['player_id'], e['rank']) for e in got]}, expected "
        f"{[(e['player_id'], e['rank']) for e in want]}"
    )
    for i, (entry, slot) in enumerate(zip(got, shown, strict=True)):
        assert set(entry) == PASSED_BY_FIELDS, f"{who}: passed_by[{i}] fields {sorted(entry)}"
        # Equal (friend, rank): the documents give no order within a shared rank.
        same_slot = {
            e["player_id"]: e
            for e in want
            if (e["friend"], e["rank"]) == (slot["friend"], slot["rank"])
        }
        assert entry["player_id"] in same_slot, (
            f"{who}: passed_by[{i}] is {entry['player_id']} (rank {entry['rank']}), "
            f"expected one of {sorted(same_slot)} (rank {slot['rank']}, friend {slot['friend']}); "
            f"full expected order {[(e['player_id'], e['rank'], e['friend']) for e in want]}, got "
            f"{[(e['player_id'], e['rank'], e['friend']) for e in got]}"
        )
        assert entry == same_slot[entry["player_id"]], (
            f"{who}: passed_by[{i}] {entry} != {same_slot[entry['player_id']]}"
        )
    assert len({e["player_id"] for e in got}) == len(got), f"{who}: a passer listed twice: {got}"
    assert actual["passed_by_truncated"] is expected["passed_by_truncated"], (
        f"{who}: passed_by_truncated {actual['passed_by_truncated']}, {len(want)} passed"
    )


# --------------------------------------------------------------------------- a scenario


class Scenario:
    """One board, its watches and the messages they get, step by step against the model."""

    def __init__(
        self,
        api: Api,
        tokens: Tokens,
        sock: LiveSocket,
        board: dict[str, Any],
        model: BoardModel,
        label: str,
    ) -> None:
        self.api, self.tokens, self.sock, self.model, self.label = api, tokens, sock, model, label
        self.board_id = board["board_id"]
        self.board_sub = assert_subscribed(
            sock.subscribe(f"{board['live_channel']}/all-time", sock.api_key_auth()),
            "board channel",
        )
        self.watches: dict[str, Watch] = {}
        self.subscribed: dict[str, str] = {}  # channel -> this scenario's subscription id
        self.consumed: set[int] = set()  # ids of the event dicts already accounted for
        self.board_versions_seen: set[int] = set()
        self.first_tick = True
        self.steps = 0
        self.stats: Counter[str] = Counter()
        self.problems: list[str] = []
        self.published: dict[str, list[float]] = {}

    # ---- helpers
    @property
    def server(self) -> str:
        return self.tokens("channel-test-server", SERVER)

    def _player_events(self) -> list[tuple[float, dict[str, Any]]]:
        events = [
            (t, e)
            for sub_id in self.subscribed.values()
            for t, e in self.sock.data(sub_id)
            if e.get("type") == "player.standing_changed" and e.get("board_id") == self.board_id
        ]
        return sorted(events, key=lambda item: item[0])

    def _board_events(self) -> list[tuple[float, dict[str, Any]]]:
        return [(t, e) for t, e in self.sock.data(self.board_sub)]

    def _where(self, what: str) -> str:
        return f"[{self.label} seed={SEED} step {self.steps}: {what}]"

    def check_entries(self) -> None:
        """The model's public board is what `GET .../entries` answers (ranks "as in entries")."""
        page = self.api.ok("GET", f"/boards/{self.board_id}/entries?limit=100")
        got = [(e["rank"], e["player_id"], e["score"]) for e in page["entries"]]
        want = self.model.public_order()
        if self.model.ties == "shared":  # tied order is compared as a set per rank
            got, want = sorted(got), sorted(want)
        assert got == want, f"{self._where('entries')} entries {got} != model {want}"

    # ---- steps
    def watch(self, player: str, top_n: int, friends: list[str]) -> None:
        """PUT .../watch (by the game server) and subscribe to the player's channel."""
        self.steps += 1
        answer = self.api.ok(
            "PUT",
            f"/boards/{self.board_id}/players/{player}/watch",
            {"top_n": top_n, "friends": friends},
            self.server,
        )
        assert set(answer) == WATCH_FIELDS, answer
        expected = {
            "board_id": self.board_id,
            "player_id": player,
            "period_kind": "all-time",
            "period": "all-time",
            "region": None,
            "top_n": top_n,
            "friends": friends,
            "channel": player_channel(player),
            "rank": self.model.rank(player),
            "score": self.model.score(player),
        }
        assert {k: answer[k] for k in expected} == expected, self._where(f"watch {player}")
        self.watches[player] = Watch(player, top_n, friends, answer["rank"])
        if answer["channel"] not in self.subscribed:
            self.subscribed[answer["channel"]] = assert_subscribed(
                self.sock.subscribe(answer["channel"], self.sock.bearer_auth(self.server)),
                f"server on {player}'s channel",
            )

    def renew(self, player: str) -> None:
        """A renewal answers the standing now, keeps the friends, and does not restart the chain."""
        self.steps += 1
        watch = self.watches[player]
        answer = self.api.ok(
            "PUT",
            f"/boards/{self.board_id}/players/{player}/watch",
            {"top_n": watch.top_n},
            self.server,
        )
        assert answer["friends"] == watch.friends, self._where(
            f"renewal of {player} keeps its friends"
        )
        assert (answer["rank"], answer["score"]) == (
            self.model.rank(player),
            self.model.score(player),
        ), self._where(f"renewal of {player}: {answer}")
        assert answer["top_n"] == watch.top_n

    def writes(self, group: list[tuple[str, float, Any]]) -> None:
        """One batch of writes; its tick(s) told exactly as the model says."""
        self.steps += 1
        submissions = []
        for player, score, metadata in group:
            item: dict[str, Any] = {"player_id": player, "score": score}
            if metadata is not None:
                item["metadata"] = metadata
            submissions.append(item)
        result = self.api.ok(
            "POST",
            f"/boards/{self.board_id}/scores/batch",
            {"submissions": submissions},
            self.server,
        )
        ack = time.time()
        versions = []
        for item, answer in zip(submissions, result["results"], strict=True):
            assert answer["status"] == 200, f"{self._where('batch')} {item}: {answer}"
            versions.append(answer["result"]["version"])
        last = versions[-1]
        extra = NEW_BOARD_EXTRA if self.first_tick else 0.0

        # The board channel says which writes each tick held.
        def covered(_frames):
            return any(e["version"] >= last for _, e in self._board_events())

        assert self.sock.wait_for(covered, DEADLINE + extra), (
            f"{self._where('writes')} no board-channel message with version >= {last} within "
            f"{DEADLINE + extra} s of the write"
        )
        cuts = sorted(
            {
                e["version"]
                for _, e in self._board_events()
                if versions[0] <= e["version"] and e["version"] not in self.board_versions_seen
            }
        )
        cuts = [v for v in cuts if v < last] + [max(v for v in cuts if v >= last)]
        self.board_versions_seen.update(e["version"] for _, e in self._board_events())
        if len(cuts) > 1:
            self.stats["batch split over ticks"] += 1
        ticks = []
        pending = list(zip(group, versions, strict=True))
        for cut in cuts:
            before = self.model.copy()
            changed = set()
            while pending and pending[0][1] <= cut:
                (player, score, metadata), version = pending.pop(0)
                if self.model.write(player, score, metadata, version):
                    changed.add(player)
            ticks.append((before, self.model.copy(), changed, cut))
        self.model.version = last
        self._settle(ticks, ack, extra)
        self.first_tick = False

    def remove(self, player: str) -> None:
        """DELETE /boards/{id}/players/{player}: "told like a write, on the next tick"."""
        self.steps += 1
        before = self.model.copy()
        self.api.ok(
            "DELETE",
            f"/boards/{self.board_id}/players/{player}",
            token=self.tokens("channel-test-admin", ADMIN),
            status=204,
        )
        ack = time.time()
        self.model.remove(player)
        self.model.version += 1  # "every submission ... and every player removal" takes a version
        # Nothing to tell (the player was outside its top N, nobody behind crosses a top N):
        # "otherwise nothing changed that a message tells", so wait the bound once for silence.
        self._settle(
            [(before, self.model.copy(), {player}, self.model.version)], ack, 0.0, silence=True
        )

    def hide(self, player: str) -> None:
        """PUT /boards/{id}/hidden/{player}: "a hidden player leaving moves the others up"."""
        self.steps += 1
        before = self.model.copy()
        self.api.ok(
            "PUT",
            f"/boards/{self.board_id}/hidden/{player}",
            {},
            self.tokens("channel-test-admin", ADMIN),
            status=201,
        )
        ack = time.time()
        self.model.hidden.add(player)

        # The board channel reports the hidden player as removed ("Messages", `changed`); the
        # documents do not say whether hiding takes a version, so take the message's.
        def gone(_frames):
            return any(
                any(c["player_id"] == player and c.get("removed") for c in e["changed"])
                for _, e in self._board_events()
            )

        assert self.sock.wait_for(gone, DEADLINE), (
            f"{self._where('hide')} no board message removing {player}"
        )
        version = next(
            e["version"]
            for _, e in self._board_events()
            if any(c["player_id"] == player and c.get("removed") for c in e["changed"])
        )
        self.board_versions_seen.update(e["version"] for _, e in self._board_events())
        assert version >= self.model.version
        self.model.version = version
        self._settle([(before, self.model.copy(), {player}, version)], ack, 0.0)

    def silent_writes(self, group: list[tuple[str, float, Any]]) -> None:
        """Writes of hidden players only: "a hidden player's own submissions publish nothing"
        and they pass nobody, so nothing may arrive within the bound."""
        self.steps += 1
        for player, _, _ in group:
            assert player in self.model.hidden
        version_before = self.model.version
        result = self.api.ok(
            "POST",
            f"/boards/{self.board_id}/scores/batch",
            {"submissions": [{"player_id": p, "score": s} for p, s, _ in group]},
            self.server,
        )
        for (player, score, metadata), answer in zip(group, result["results"], strict=True):
            assert answer["status"] == 200, answer
            self.model.write(player, score, metadata, answer["result"]["version"])
        self.sock.wait_for(lambda _f: False, ABOUT_A_SECOND)
        self._account([], "hidden players' writes")
        new_board = [e for _, e in self._board_events() if e["version"] > version_before]
        assert not new_board, f"{self._where('hidden writes')} board channel published {new_board}"

    # ---- checking a step's messages
    def _settle(self, ticks, ack: float, extra: float, silence: bool = False) -> None:
        expected: list[dict[str, Any]] = []
        lenient: set[str] = set()
        for before, after, changed, version in ticks:
            for watch in self.watches.values():
                if watch.player in lenient:
                    continue
                try:
                    message = expect_message(watch, before, after, changed, version)
                except Ambiguous:
                    # Only when a tick cut a batch in two (group draws avoid it otherwise): this
                    # watch's messages of the step are not checked; its chain goes on from them.
                    lenient.add(watch.player)
                    self.stats["watch left unchecked in a cut batch"] += 1
                    continue
                if message is not None:
                    expected.append(message)
                    watch.last_rank = message["rank"]
        expected = [m for m in expected if m["player_id"] not in lenient]
        keys = {(m["player_id"], m["version"]) for m in expected}
        if (not keys and silence) or lenient:
            self.sock.wait_for(lambda _f: False, ABOUT_A_SECOND)

        def arrived(_frames):
            got = {
                (e["player_id"], e["version"])
                for _, e in self._player_events()
                if id(e) not in self.consumed
            }
            return keys <= got

        if not self.sock.wait_for(arrived, DEADLINE + extra):
            got = {
                (e["player_id"], e["version"])
                for _, e in self._player_events()
                if id(e) not in self.consumed
            }
            missing = sorted(keys - got, key=str)
            details = {
                k: next(m for m in expected if (m["player_id"], m["version"]) == k) for k in missing
            }
            raise AssertionError(
                f"{self._where('messages')} not told within {DEADLINE + extra} s: "
                + "; ".join(
                    f"{p} at version {v}: expected {d['events']} "
                    f"rank {d['previous_rank']}->{d['rank']}"
                    for (p, v), d in details.items()
                )
                + f"; arrived instead: {sorted(got, key=str)}"
            )
        for message in expected:
            self.stats[f"{self.label}: " + "+".join(sorted(message["events"]))] += 1
            for event in message["events"]:
                self.stats[event] += 1
            if len(message["passed_by"]) > 1:
                self.stats["several passers in one message"] += 1
            if message["previous_rank"] is None:
                self.stats["message with previous_rank null"] += 1
        self._count_ties(ticks)
        self._account(expected, "step", ack, lenient)

    def _count_ties(self, ticks) -> None:
        for before, after, changed, _ in ticks:
            for watch in self.watches.values():
                p = watch.player
                for q in changed:
                    if (
                        q != p
                        and after.visible(q)
                        and after.visible(p)
                        and after.score(q) == after.score(p)
                        and not before.ahead(q, p)
                        and not after.ahead(q, p)
                    ):
                        self.stats["changed player tied a watcher from behind: no pass"] += 1

    def _account(
        self,
        expected: list[dict[str, Any]],
        what: str,
        ack: float | None = None,
        lenient: AbstractSet[str] = frozenset(),
    ) -> None:
        """Every message not yet accounted for must be one of `expected`, and each expected one
        must have come exactly once: one message per watch per tick, silence otherwise."""
        fresh = [(t, e) for t, e in self._player_events() if id(e) not in self.consumed]
        want = {(m["player_id"], m["version"]): m for m in expected}
        seen: set[tuple[str, int]] = set()
        for arrival, event in fresh:
            key = (event["player_id"], event["version"])
            if event["player_id"] in lenient and event["version"] <= self.model.version:
                self.watches[event["player_id"]].last_rank = event["rank"]
                self.consumed.add(id(event))
                continue
            assert key in want, (
                f"{self._where(what)} unexpected message for {event['player_id']} (version "
                f"{event['version']}, rank {event['previous_rank']}->{event['rank']}, events "
                f"{event['events']}, passed_by {[e['player_id'] for e in event['passed_by']]}); "
                f"expected only {sorted(want, key=str)}"
            )
            assert key not in seen, (
                f"{self._where(what)} two messages for one watch in one tick: {event}"
            )
            seen.add(key)
            try:
                check_message(event, want[key], self.board_id, self._where(what))
            except AssertionError as error:
                # A wrong field is collected and the scenario goes on (the model, not the
                # message, carries the state), so one run reports every disagreement.
                self.problems.append(
                    f"{error}\n  message: {json.dumps(event)}\n  model now (rank, player, score): "
                    f"{self.model.public_order()}"
                )
            published = parse_instant(event["published_at"])
            assert published <= arrival + 0.5, f"published_at {event['published_at']} after arrival"
            if ack is not None:
                latency = arrival - ack
                self.stats["max latency ms"] = max(
                    self.stats["max latency ms"], int(latency * 1000)
                )
            self.published.setdefault(event["player_id"], []).append(published)
            self.consumed.add(id(event))
        assert seen == set(want), f"{self._where(what)} missing {set(want) - seen}"

    def check_rate(self) -> None:
        """At most LIVE_PUBLISH_RATE messages per watch in any second (by published_at)."""
        for player, instants in self.published.items():
            instants.sort()
            for i, start in enumerate(instants):
                within = [t for t in instants[i:] if t < start + 1.0]
                assert len(within) <= LIVE_PUBLISH_RATE, (
                    f"{player}: {len(within)} messages in one second"
                )


# --------------------------------------------------------------------------- random sequences


def draw_group(
    rng: random.Random, scenario: Scenario, pool: list[str], low: int, high: int
) -> list:
    """A random batch of 1-4 writes whose tick the documents describe without ambiguity and
    whose last write changes the public board (so a board-channel message marks the tick that
    ends the batch, even if a tick cuts it in two)."""
    model = scenario.model
    for _ in range(200):
        group = []
        for _ in range(rng.randint(1, 4)):
            player = rng.choice(pool)
            metadata = {"name": f"{player}-{rng.randint(1, 99)}"} if rng.random() < 0.3 else None
            group.append((player, rng.randint(low, high), metadata))
        before, after = model.copy(), model.copy()
        changed = set()
        last_changed_public = False
        for i, (player, score, metadata) in enumerate(group):
            last_changed_public = after.write(player, score, metadata, model.version + 1 + i)
            if last_changed_public:
                changed.add(player)
            last_changed_public = last_changed_public and after.visible(player)
        if not last_changed_public:
            continue
        try:
            for watch in scenario.watches.values():
                expect_message(watch, before, after, changed, 0)
        except Ambiguous:
            continue
        return group
    raise AssertionError("no unambiguous group found")


def run_random_board(
    api: Api,
    tokens: Tokens,
    sock: LiveSocket,
    board: dict[str, Any],
    low: int,
    high: int,
    rng: random.Random,
) -> Scenario:
    mode, ties, sort = board["mode"], board["ties"], board["sort"]
    scenario = Scenario(
        api, tokens, sock, board, BoardModel(mode, ties, sort), f"{ties}/{mode}/{sort}"
    )
    pool = ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "jon"]

    def random_writes(n: int) -> None:
        for _ in range(n):
            scenario.writes(draw_group(rng, scenario, pool, low, high))
            scenario.check_entries()

    # Watchers with no entry yet; friends set by the game server.
    scenario.watch("ada", top_n=3, friends=["bob", "fay"])
    scenario.watch("bob", top_n=5, friends=["ada", "gus", "eve"])
    random_writes(5)
    # Watches made after some writes: "writes made before a watch pass nobody on it".
    scenario.watch("cy", top_n=2, friends=["ada", "hal"])
    scenario.watch("dee", top_n=10, friends=[])
    random_writes(4)
    scenario.renew("bob")
    random_writes(2)
    # An admin removes a watcher inside its top N (told left_top, rank and score null).
    target = next(
        (
            w.player
            for w in scenario.watches.values()
            if (scenario.model.rank(w.player) or w.top_n + 1) <= w.top_n
        ),
        None,
    )
    assert target is not None, "seed gives no watcher in its top N to remove"
    scenario.remove(target)
    scenario.check_entries()
    # And one outside its top N (if the seed has one): its watch is told nothing.
    outside = next(
        (
            w.player
            for w in scenario.watches.values()
            if (scenario.model.rank(w.player) or 0) > w.top_n
        ),
        None,
    )
    if outside is not None:
        scenario.stats["removed a watcher outside its top N"] += 1
        scenario.remove(outside)
        scenario.check_entries()
    random_writes(3)
    # Hide the non-watcher ahead of most watchers: the others move up.
    outsiders = [p for p in pool if p not in scenario.watches and scenario.model.visible(p)]
    assert outsiders, "seed gives no non-watcher with an entry to hide"
    hidden = min(outsiders, key=lambda p: (scenario.model.rank(p), p))
    scenario.hide(hidden)
    scenario.check_entries()
    random_writes(2)
    # Hide a watcher with an entry: its own watch is silent from now on.
    hidden_watcher = next(p for p in ("dee", "cy", "bob", "ada") if scenario.model.visible(p))
    scenario.hide(hidden_watcher)
    scenario.check_entries()
    random_writes(2)
    scenario.silent_writes([(hidden, high * 5, None), (hidden_watcher, high * 5, None)])
    scenario.check_rate()
    return scenario


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def api(make_run) -> Api:
    return Api(make_run.url)


@pytest.fixture(scope="module")
def tokens(make_run) -> Tokens:
    return Tokens(make_run)


@pytest.fixture
def sock(make_run):
    socket = LiveSocket(make_run.live)
    yield socket
    socket.close()


def new_board(api: Api, tokens: Tokens, **settings: Any) -> dict[str, Any]:
    board_id = f"pc-{uuid.uuid4().hex[:12]}"
    return api.ok(
        "PUT", f"/boards/{board_id}", settings, tokens("channel-test-admin", ADMIN), status=201
    )


def wait_board_version(
    sock: LiveSocket, sub_id: str, version: int, timeout: float = DEADLINE + NEW_BOARD_EXTRA
) -> None:
    ok = sock.wait_for(
        lambda _f: any(e["version"] >= version for _, e in sock.data(sub_id)), timeout
    )
    assert ok, f"no board-channel message with version >= {version} within {timeout} s"


# --------------------------------------------------------------------------- tests: watching


def test_watch_answer_defaults_and_fields(api: Api, tokens: Tokens) -> None:
    """API.md `PUT .../watch`: `{}` (or no body) takes the defaults; the answer has exactly the
    documented fields; every body field is taken and answered; `rank`/`score` are the standing
    now (null without an entry); `channel` is `/players/P` + sha256(player)[:40]."""
    board = new_board(api, tokens, mode="best", regions=["EU"], periods=["all-time", "weekly"])
    b = board["board_id"]
    ada = tokens("ada")
    before = time.time()
    answer = api.ok("PUT", f"/boards/{b}/players/ada/watch", {}, ada)
    assert set(answer) == WATCH_FIELDS, answer
    assert {k: v for k, v in answer.items() if k != "expires_at"} == {
        "board_id": b,
        "player_id": "ada",
        "period_kind": "all-time",
        "period": "all-time",
        "region": None,
        "top_n": 10,
        "friends": [],
        "channel": player_channel("ada"),
        "rank": None,
        "score": None,
    }
    assert abs(parse_instant(answer["expires_at"]) - (before + 3600)) < 5, answer["expires_at"]
    # No body at all: the defaults too (openapi `WatchRequest`: "`{}` (or no body)").
    no_body = api.call("PUT", f"/boards/{b}/players/ada/watch", token=ada)
    assert no_body.status == 200 and no_body.body["top_n"] == 10, no_body.body

    # Every field, at the ends of its range.
    server = tokens("channel-test-server", SERVER)
    api.ok("POST", f"/boards/{b}/scores", {"player_id": "bob", "score": 50, "region": "EU"}, server)
    api.ok("POST", f"/boards/{b}/scores", {"player_id": "ada", "score": 40, "region": "EU"}, server)
    weekly = next(
        p["period"]
        for p in api.ok("GET", f"/boards/{b}/periods")["periods"]
        if p["kind"] == "weekly" and p["status"] == "open"
    )
    friends = [f"f{i:03d}" for i in range(100)]
    before = time.time()
    answer = api.ok(
        "PUT",
        f"/boards/{b}/players/ada/watch",
        {
            "period": "weekly",
            "region": "EU",
            "top_n": 1000,
            "friends": friends,
            "ttl_seconds": 86400,
        },
        ada,
    )
    assert (answer["period_kind"], answer["period"], answer["region"], answer["top_n"]) == (
        "weekly",
        weekly,
        "EU",
        1000,
    )
    assert answer["friends"] == friends
    assert (answer["rank"], answer["score"]) == (2, 40), "the standing now on the EU weekly board"
    assert abs(parse_instant(answer["expires_at"]) - (before + 86400)) < 5, answer["expires_at"]
    before = time.time()
    answer = api.ok(
        "PUT",
        f"/boards/{b}/players/ada/watch",
        {"top_n": 1, "ttl_seconds": 60, "region": None},
        ada,
    )
    assert (answer["top_n"], answer["region"], answer["rank"], answer["score"]) == (1, None, 2, 40)
    assert abs(parse_instant(answer["expires_at"]) - (before + 60)) < 5, answer["expires_at"]
    # "Integer fields take integral numbers: 5 and 5.0 are the same value" (Conventions).
    assert api.ok("PUT", f"/boards/{b}/players/ada/watch", {"top_n": 5.0}, ada)["top_n"] == 5
    # The channel is the same for all of this player's watches.
    assert answer["channel"] == player_channel("ada")
    # A percent-encoded id in the path is the decoded player (Conventions, "Identifiers").
    encoded = api.ok("PUT", f"/boards/{b}/players/a%40b/watch", {}, server)
    assert (encoded["player_id"], encoded["channel"]) == ("a@b", player_channel("a@b"))


def test_watch_replaces_top_n_keeps_friends_and_delete(api: Api, tokens: Tokens) -> None:
    """API.md `PUT .../watch`: one watch per board, period kind and region; a PUT replaces
    `top_n` and `ttl_seconds` and `friends` only when given (a server sets them, the client
    renews without them); `DELETE` ends the watch (204, also when there was none) and a `PUT`
    after it starts afresh."""
    board = new_board(api, tokens, periods=["all-time", "weekly"])
    b = board["board_id"]
    server, ada = tokens("channel-test-server", SERVER), tokens("ada")
    path = f"/boards/{b}/players/ada/watch"
    assert api.ok("PUT", path, {"friends": ["bob", "cy"], "top_n": 3}, server)["friends"] == [
        "bob",
        "cy",
    ]
    renewed = api.ok("PUT", path, {}, ada)
    assert renewed["friends"] == ["bob", "cy"], "friends omitted are kept"
    assert renewed["top_n"] == 10, "a PUT replaces top_n (omitted: the default)"
    assert api.ok("PUT", path, {"friends": []}, ada)["friends"] == []
    api.ok("PUT", path, {"friends": ["cy"]}, server)
    # Another period kind is another watch, with friends of its own.
    weekly = api.ok("PUT", path, {"period": "weekly"}, ada)
    assert weekly["period_kind"] == "weekly" and weekly["friends"] == []
    assert api.ok("PUT", path, {}, ada)["friends"] == ["cy"]

    reply = api.call("DELETE", path, token=ada)
    assert (reply.status, reply.body) == (204, None)
    assert api.call("DELETE", path, token=ada).status == 204, "also when there was none"
    assert api.call("DELETE", path + "?period=weekly", token=server).status == 204
    assert (
        api.call(
            "DELETE", path + "?period=weekly&region=", token=tokens("channel-test-admin", ADMIN)
        ).status
        == 204
    )
    fresh = api.ok("PUT", path, {}, ada)
    assert fresh["friends"] == [], "after a DELETE a PUT starts afresh (no current friends)"


def test_watch_authorization(api: Api, tokens: Tokens) -> None:
    """API.md `PUT`/`DELETE .../watch` auth: the player's own token, a server or an admin token
    may; another player's token is 403; none or an invalid one is 401 (Authentication:
    `{"message": "Unauthorized"}` with `WWW-Authenticate: Bearer`)."""
    b = new_board(api, tokens)["board_id"]
    path = f"/boards/{b}/players/ada/watch"
    for who, token in [
        ("own", tokens("ada")),
        ("server", tokens("channel-test-server", SERVER)),
        ("admin", tokens("channel-test-admin", ADMIN)),
    ]:
        assert api.call("PUT", path, {}, token).status == 200, who
        assert api.call("DELETE", path, token=token).status == 204, who
    for method in ("PUT", "DELETE"):
        body = {} if method == "PUT" else NO_BODY
        other = api.call(method, path, body, tokens("bob"))
        assert other.status == 403, (
            f"{method} with another player's token: {other.status} {other.body}"
        )
        assert other.body.get("message"), other.body
        for bad in (None, "garbage", tokens("ada") + "x"):
            reply = api.call(method, path, body, bad)
            assert reply.status == 401, f"{method} token={bad!r:.20}: {reply.status}"
            assert reply.body == {"message": "Unauthorized"}, reply.body
            assert reply.headers.get("www-authenticate") == "Bearer", reply.headers


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"period": "hourly"}, "period"),
        ({"period": 5}, "period"),
        ({"period": None}, "period"),
        ({"region": ""}, "region"),
        ({"region": "eu"}, "region"),
        ({"region": 5}, "region"),
        ({"top_n": 0}, "top_n"),
        ({"top_n": 1001}, "top_n"),
        ({"top_n": "5"}, "top_n"),
        ({"top_n": 5.5}, "top_n"),
        ({"top_n": True}, "top_n"),
        ({"top_n": None}, "top_n"),
        ({"friends": "bob"}, "friends"),
        ({"friends": ["bob", "bob"]}, "friends"),
        ({"friends": ["b b"]}, "friends"),
        ({"friends": [f"f{i}" for i in range(101)]}, "friends"),
        ({"friends": None}, "friends"),
        ({"friends": [5]}, "friends"),
        ({"ttl_seconds": 59}, "ttl_seconds"),
        ({"ttl_seconds": 86401}, "ttl_seconds"),
        ({"ttl_seconds": "60"}, "ttl_seconds"),
        ({"ttl_seconds": None}, "ttl_seconds"),
    ],
)
def test_watch_400_names_the_field(api: Api, tokens: Tokens, body: dict, field: str) -> None:
    """API.md `PUT .../watch`: 400 `bad_request` naming the `field` for a value of the wrong type
    or out of its range, `friends` listing an id twice, and `null` anywhere but `region`."""
    b = _shared_board(api, tokens)
    reply = api.call("PUT", f"/boards/{b}/players/ada/watch", body, tokens("ada"))
    assert reply.status == 400, f"{body}: {reply.status} {reply.body}"
    assert reply.body.get("code") == "bad_request" and reply.body.get("field") == field, (
        f"{body}: {reply.body}"
    )


_BOARDS: dict[str, str] = {}


def _shared_board(api: Api, tokens: Tokens) -> str:
    if "shared" not in _BOARDS:
        _BOARDS["shared"] = new_board(api, tokens, regions=["EU"])["board_id"]
    return _BOARDS["shared"]


def test_watch_other_errors(api: Api, tokens: Tokens) -> None:
    """API.md `PUT .../watch`: 400 for a body that is no JSON object and for an unknown field
    (Conventions: "with the offending names in `fields`"); 404 unknown board; 422
    `unprocessable` naming `friends` (the player itself), `period` (a kind the board does not
    keep), `region` (one it does not have), and for a sharded board. `DELETE`: 400 for a bad
    `period` or an unknown query parameter, 404 for an unknown board."""
    b = _shared_board(api, tokens)
    ada = tokens("ada")
    path = f"/boards/{b}/players/ada/watch"
    for raw in (b"[]", b'"x"', b"{bad json", b"null"):
        reply = api.call("PUT", path, token=ada, raw=raw)
        assert reply.status == 400 and reply.body.get("code") == "bad_request", (
            f"{raw!r}: {reply.body}"
        )
    bad_id = api.call(
        "PUT", f"/boards/{b}/players/a%20b/watch", {}, tokens("channel-test-server", SERVER)
    )
    assert bad_id.status == 400 and bad_id.body.get("code") == "bad_request", bad_id.body
    unknown = api.call("PUT", f"/boards/nope-{uuid.uuid4().hex[:8]}/players/ada/watch", {}, ada)
    assert unknown.status == 404 and unknown.body.get("code") == "not_found", unknown.body
    for body, field in [
        ({"friends": ["bob", "ada"]}, "friends"),
        ({"period": "daily"}, "period"),
        ({"period": "custom"}, "period"),
        ({"region": "NA"}, "region"),
    ]:
        reply = api.call("PUT", path, body, ada)
        assert reply.status == 422, f"{body}: {reply.status} {reply.body}"
        assert reply.body.get("code") == "unprocessable" and reply.body.get("field") == field, (
            f"{body}: {reply.body}"
        )
    sharded = new_board(api, tokens, shards=2)["board_id"]
    reply = api.call("PUT", f"/boards/{sharded}/players/ada/watch", {}, ada)
    assert reply.status == 422 and reply.body.get("code") == "unprocessable", reply.body

    reply = api.call("DELETE", path + "?period=hourly", token=ada)
    assert reply.status == 400 and reply.body.get("field") == "period", reply.body
    reply = api.call("DELETE", path + "?foo=1", token=ada)
    assert reply.status == 400 and reply.body.get("fields") == ["foo"], reply.body
    reply = api.call("DELETE", f"/boards/nope-{uuid.uuid4().hex[:8]}/players/ada/watch", token=ada)
    assert reply.status == 404, reply.body

    # Conventions: "An unknown body field ... is 400, with the offending names in `fields`.
    # This holds on every route."
    reply = api.call("PUT", path, {"top_n": 3, "colour": "red"}, ada)
    assert reply.status == 400 and reply.body.get("code") == "bad_request", reply.body
    assert reply.body.get("fields") == ["colour"], f"unknown field: {reply.body}"


# --------------------------------------------------------------------------- tests: subscribing


def test_who_may_subscribe(api: Api, tokens: Tokens, sock: LiveSocket, make_run) -> None:
    """API.md "The player's channel", "Who may subscribe": a player's own token, a server's or an
    admin's (also `/players/*`) subscribe; another player's token, a player on `/players/*`, the
    API key alone, no authorization, a garbage or an expired token get `subscribe_error`
    (`UnauthorizedException`) and the connection stays open. Messages reach exactly the
    subscriptions that succeeded."""
    board = new_board(api, tokens, mode="set", periods=["all-time"])
    b = board["board_id"]
    ada_channel = api.ok("PUT", f"/boards/{b}/players/ada/watch", {}, tokens("ada"))["channel"]
    bob_channel = api.ok("PUT", f"/boards/{b}/players/bob/watch", {}, tokens("bob"))["channel"]
    assert ada_channel == player_channel("ada")
    board_sub = assert_subscribed(
        sock.subscribe(f"{board['live_channel']}/all-time", sock.api_key_auth()), "board"
    )

    secret = (Path(make_run.stack.data_dir) / "jwt-secret").read_bytes().strip()
    now = int(time.time())
    claims = {"sub": "ada", "iss": "leaderboard-local", "aud": "leaderboard"}
    fresh = hs256_token(secret, {**claims, "iat": now - 10, "exp": now + 600})
    assert api.call("PUT", f"/boards/{b}/players/ada/watch", {}, fresh).status == 200, (
        "a token signed as API.md 'Authentication' says (the secret in the data dir) is valid"
    )
    expired = hs256_token(secret, {**claims, "iat": now - 600, "exp": now - 60})

    refused = [
        ("another player's token", ada_channel, sock.bearer_auth(tokens("bob"))),
        ("a player's token on /players/*", "/players/*", sock.bearer_auth(tokens("ada"))),
        ("the API key alone", ada_channel, sock.api_key_auth()),
        ("no authorization", ada_channel, None),
        ("a garbage token", ada_channel, sock.bearer_auth("garbage")),
        ("an expired token", ada_channel, sock.bearer_auth(expired)),
    ]
    for what, channel, authorization in refused:
        assert_refused(sock.subscribe(channel, authorization), what)
    # "the connection stays open": subscriptions after the refusals still succeed.
    allowed = {
        "own": assert_subscribed(
            sock.subscribe(ada_channel, sock.bearer_auth(tokens("ada"))), "own token"
        ),
        "server": assert_subscribed(
            sock.subscribe(ada_channel, sock.bearer_auth(tokens("channel-test-server", SERVER))),
            "server",
        ),
        "admin": assert_subscribed(
            sock.subscribe(ada_channel, sock.bearer_auth(tokens("channel-test-admin", ADMIN))),
            "admin",
        ),
        "server *": assert_subscribed(
            sock.subscribe("/players/*", sock.bearer_auth(tokens("channel-test-server", SERVER))),
            "server /players/*",
        ),
        "admin *": assert_subscribed(
            sock.subscribe("/players/*", sock.bearer_auth(tokens("channel-test-admin", ADMIN))),
            "admin /players/*",
        ),
        "bob own": assert_subscribed(
            sock.subscribe(bob_channel, sock.bearer_auth(tokens("bob"))), "bob's own"
        ),
    }
    result = api.ok("POST", f"/boards/{b}/scores", {"score": 7}, tokens("ada"))
    wait_board_version(sock, board_sub, result["version"])

    def ada_told(sub_id):
        return [
            e for _, e in sock.data(sub_id) if e.get("board_id") == b and e["player_id"] == "ada"
        ]

    for name in ("own", "server", "admin", "server *", "admin *"):
        assert sock.wait_for(lambda _f, n=name: ada_told(allowed[n]), DEADLINE), (
            f"{name}: ada's entered_top not received"
        )
    # bob has no entry: nothing changed that bob's watch tells; wait the bound once.
    sock.wait_for(lambda _f: False, ABOUT_A_SECOND)
    for name, sub_id in allowed.items():
        told = [e for _, e in sock.data(sub_id) if e.get("board_id") == b]
        if name == "bob own":
            assert told == [], f"bob's channel carried {told}"
        else:
            assert len(told) == 1 and told[0]["events"] == ["entered_top"], f"{name}: {told}"
            assert (told[0]["rank"], told[0]["previous_rank"], told[0]["score"]) == (1, None, 7)


# --------------------------------------------------------------------------- tests: messages


def test_renewal_keeps_the_chain_and_delete_starts_afresh(
    api: Api, tokens: Tokens, sock: LiveSocket
) -> None:
    """API.md `PUT .../watch`, renewal: a renewal answers the standing now but does not restart
    the watch's messages (a pass not told yet is still told; `previous_rank` is what the last
    message said, not the renewal's answer); a `PUT` after a `DELETE` starts afresh from the
    answer's rank, and writes made before a watch pass nobody on it."""
    board = new_board(api, tokens, mode="set", periods=["all-time"])
    b = board["board_id"]
    server, ada = tokens("channel-test-server", SERVER), tokens("ada")
    board_sub = assert_subscribed(
        sock.subscribe(f"{board['live_channel']}/all-time", sock.api_key_auth()), "board"
    )
    path = f"/boards/{b}/players/ada/watch"

    def write(player, score):
        return api.ok("POST", f"/boards/{b}/scores", {"player_id": player, "score": score}, server)[
            "version"
        ]

    v = api.ok(
        "POST",
        f"/boards/{b}/scores/batch",
        {
            "submissions": [
                {"player_id": "ada", "score": 50},
                {"player_id": "bob", "score": 40},
                {"player_id": "cy", "score": 30},
            ]
        },
        server,
    )["results"][-1]["result"]["version"]
    wait_board_version(sock, board_sub, v)
    watch = api.ok("PUT", path, {}, ada)
    assert (watch["rank"], watch["score"]) == (1, 50)
    sub_id = assert_subscribed(sock.subscribe(watch["channel"], sock.bearer_auth(ada)), "own token")

    def told(n: int, what: str) -> dict[str, Any]:
        assert sock.wait_for(lambda _f: len(sock.data(sub_id)) >= n, DEADLINE), f"not told: {what}"
        return sock.data(sub_id)[n - 1][1]

    # A pass, then at once a renewal: the pass is still told, chained to the watch's rank.
    v1 = write("dee", 60)
    renewal = api.ok("PUT", path, {}, ada)
    assert (renewal["rank"], renewal["score"]) == (2, 50), "a renewal answers the standing now"
    m1 = told(1, "dee passed ada")
    assert (m1["version"], m1["rank"], m1["previous_rank"], m1["events"]) == (
        v1,
        2,
        1,
        ["passed"],
    ), m1
    assert [e["player_id"] for e in m1["passed_by"]] == ["dee"]

    # dee falls behind (ada back to rank 1, nothing to tell), then a renewal answers rank 1.
    wait_board_version(sock, board_sub, write("dee", 10))
    assert api.ok("PUT", path, {}, ada)["rank"] == 1
    v3 = write("eve", 70)
    m2 = told(2, "eve passed ada")
    assert (m2["version"], m2["rank"], m2["previous_rank"]) == (v3, 2, 2), (
        f"previous_rank must be the rank the last message said (2), not the renewal's (1): {m2}"
    )
    assert [e["player_id"] for e in m2["passed_by"]] == ["eve"]

    # DELETE ends the watch; fay's pass while unwatched is never told, not even to the new watch.
    assert api.call("DELETE", path, token=ada).status == 204
    write("fay", 80)
    fresh = api.ok("PUT", path, {}, ada)
    assert (fresh["rank"], fresh["score"]) == (3, 50)
    v5 = write("gus", 90)
    m3 = told(3, "gus passed ada")
    assert (m3["version"], m3["rank"], m3["previous_rank"]) == (v5, 4, 3), (
        f"a PUT after a DELETE starts afresh from the answer's rank (3): {m3}"
    )
    assert [e["player_id"] for e in m3["passed_by"]] == ["gus"], (
        "writes before a watch pass nobody on it"
    )
    sock.wait_for(lambda _f: False, ABOUT_A_SECOND)
    assert len(sock.data(sub_id)) == 3, f"unexpected messages: {sock.data(sub_id)[3:]}"


def _told_once(
    api: Api, tokens: Tokens, sock: LiveSocket, friends: list[str], batch: list[dict[str, Any]]
) -> dict[str, Any]:
    """zed (100 points, rank 1) watches a `ties: shared` `best` board; one batch of others
    follows; returns the one message zed's watch is told (and checks it is told once)."""
    board = new_board(api, tokens, mode="best", periods=["all-time"])
    b = board["board_id"]
    server = tokens("channel-test-server", SERVER)
    board_sub = assert_subscribed(
        sock.subscribe(f"{board['live_channel']}/all-time", sock.api_key_auth()), "board"
    )
    first = api.ok("POST", f"/boards/{b}/scores", {"player_id": "zed", "score": 100}, server)[
        "version"
    ]
    wait_board_version(sock, board_sub, first)
    watch = api.ok(
        "PUT", f"/boards/{b}/players/zed/watch", {"friends": friends, "top_n": 10}, server
    )
    assert watch["rank"] == 1
    sub_id = assert_subscribed(sock.subscribe(watch["channel"], sock.bearer_auth(server)), "server")
    result = api.ok("POST", f"/boards/{b}/scores/batch", {"submissions": batch}, server)
    version = result["results"][-1]["result"]["version"]
    wait_board_version(sock, board_sub, version, DEADLINE)
    assert sock.wait_for(lambda _f: sock.data(sub_id), DEADLINE), "zed not told it was passed"
    sock.wait_for(lambda _f: False, ABOUT_A_SECOND)
    told = [e for _, e in sock.data(sub_id)]
    assert len(told) == 1, f"one message per watch per tick: {told}"
    assert told[0]["version"] == version
    return told[0]


def test_passed_by_nearest_first_truncated_and_ties(
    api: Api, tokens: Tokens, sock: LiveSocket
) -> None:
    """API.md "Messages on a player channel": `passed_by` lists friends first, then nearest
    first, at most 10, and `passed_by_truncated` is true when more passed; on a `ties: shared`
    board an equal score is no pass; each item is an entry (`rank`, `player_id`, `score`,
    `metadata`) plus `friend`; one message can carry passed, friend_passed and left_top."""
    passers = [
        {"player_id": f"n{i:02d}", "score": 100 + i, "metadata": {"n": i}} for i in range(1, 12)
    ]
    batch = [
        {"player_id": "tie", "score": 100},
        *passers,
        {"player_id": "far-friend", "score": 200, "metadata": {"name": "Far"}},
    ]
    message = _told_once(api, tokens, sock, ["far-friend"], batch)
    # 12 ahead now (the tie is not ahead): rank 13, out of the top 10.
    assert (message["rank"], message["previous_rank"], message["score"]) == (13, 1, 100), message
    assert set(message["events"]) == {"passed", "friend_passed", "left_top"}, message["events"]
    expected = [
        {
            "rank": 1,
            "player_id": "far-friend",
            "score": 200,
            "metadata": {"name": "Far"},
            "friend": True,
        }
    ]
    expected += [
        {
            "rank": 13 - i,
            "player_id": f"n{i:02d}",
            "score": 100 + i,
            "metadata": {"n": i},
            "friend": False,
        }
        for i in range(1, 10)
    ]
    assert message["passed_by"] == expected
    assert message["passed_by_truncated"] is True


def test_passed_by_friends_nearest_first(api: Api, tokens: Tokens, sock: LiveSocket) -> None:
    """API.md "Messages on a player channel": `passed_by` is "nearest first, friends always
    listed first": the friends come first, and among them, too, the nearest first."""
    batch = [
        {"player_id": "far-friend", "score": 300},
        {"player_id": "stranger", "score": 200},
        {"player_id": "near-friend", "score": 150},
    ]
    message = _told_once(api, tokens, sock, ["far-friend", "near-friend"], batch)
    got = [(e["player_id"], e["rank"], e["friend"]) for e in message["passed_by"]]
    assert got == [("near-friend", 3, True), ("far-friend", 1, True), ("stranger", 2, False)], (
        f"friends first, each group nearest first: got {got}"
    )
    assert (message["rank"], message["previous_rank"]) == (4, 1)
    assert set(message["events"]) == {"passed", "friend_passed"}


def test_each_watch_is_told_on_its_own(api: Api, tokens: Tokens, sock: LiveSocket) -> None:
    """API.md `PUT .../watch` and "Messages on a player channel": a player has one watch per
    board, period kind and region, all on the same channel; each watch is told about its own
    board (`period_kind`, `period` id, `region`), so a global-only write leaves the regional
    watch silent."""
    board = new_board(api, tokens, mode="best", periods=["all-time", "weekly"], regions=["EU"])
    b = board["board_id"]
    server, ada = tokens("channel-test-server", SERVER), tokens("ada")
    board_sub = assert_subscribed(
        sock.subscribe(f"{board['live_channel']}/all-time", sock.api_key_auth()), "board"
    )
    first = api.ok(
        "POST",
        f"/boards/{b}/scores/batch",
        {
            "submissions": [
                {"player_id": "ada", "score": 10, "region": "EU"},
                {"player_id": "bob", "score": 5},
            ]
        },
        server,
    )
    wait_board_version(sock, board_sub, first["results"][-1]["result"]["version"])
    path = f"/boards/{b}/players/ada/watch"
    global_watch = api.ok("PUT", path, {}, ada)
    eu_watch = api.ok("PUT", path, {"period": "weekly", "region": "EU", "top_n": 1}, ada)
    assert global_watch["channel"] == eu_watch["channel"] == player_channel("ada")
    assert (global_watch["rank"], eu_watch["rank"]) == (1, 1)
    week = eu_watch["period"]
    sub_id = assert_subscribed(
        sock.subscribe(global_watch["channel"], sock.bearer_auth(ada)), "own token"
    )

    v1 = api.ok(
        "POST", f"/boards/{b}/scores", {"player_id": "cy", "score": 20, "region": "EU"}, server
    )["version"]
    assert sock.wait_for(lambda _f: len(sock.data(sub_id)) >= 2, DEADLINE), (
        f"two watches, two messages: {sock.data(sub_id)}"
    )
    by_watch = {(e["period_kind"], e["region"]): e for _, e in sock.data(sub_id)}
    assert set(by_watch) == {("all-time", None), ("weekly", "EU")}, by_watch
    glob, eu = by_watch[("all-time", None)], by_watch[("weekly", "EU")]
    assert (
        glob["period"],
        glob["version"],
        glob["rank"],
        glob["previous_rank"],
        glob["events"],
    ) == ("all-time", v1, 2, 1, ["passed"]), glob
    assert (eu["period"], eu["version"], eu["rank"], eu["previous_rank"], eu["top_n"]) == (
        week,
        v1,
        2,
        1,
        1,
    ), eu
    assert set(eu["events"]) == {"passed", "left_top"}, eu
    assert (
        [e["player_id"] for e in glob["passed_by"]]
        == [e["player_id"] for e in eu["passed_by"]]
        == ["cy"]
    )

    v2 = api.ok("POST", f"/boards/{b}/scores", {"player_id": "dee", "score": 30}, server)["version"]
    assert sock.wait_for(lambda _f: len(sock.data(sub_id)) >= 3, DEADLINE), (
        "dee passed ada on the global board"
    )
    third = sock.data(sub_id)[2][1]
    assert (
        third["period_kind"],
        third["region"],
        third["version"],
        third["rank"],
        third["previous_rank"],
    ) == ("all-time", None, v2, 3, 2), third
    sock.wait_for(lambda _f: False, ABOUT_A_SECOND)
    assert len(sock.data(sub_id)) == 3, f"the EU watch saw no change: {sock.data(sub_id)[3:]}"


def test_trimmed_by_max_entries(api: Api, tokens: Tokens, sock: LiveSocket) -> None:
    """API.md "Messages on a player channel": `rank` and `score` are null when the player has no
    entry any more ("trimmed by `max_entries`") and `left_top` covers "no entry"; the next
    message chains from that null (`previous_rank` null) and says `entered_top`."""
    board = new_board(api, tokens, mode="best", periods=["all-time"], max_entries=3)
    b = board["board_id"]
    server = tokens("channel-test-server", SERVER)
    board_sub = assert_subscribed(
        sock.subscribe(f"{board['live_channel']}/all-time", sock.api_key_auth()), "board"
    )
    seeded = api.ok(
        "POST",
        f"/boards/{b}/scores/batch",
        {
            "submissions": [
                {"player_id": "a", "score": 30},
                {"player_id": "b", "score": 20},
                {"player_id": "w", "score": 10},
            ]
        },
        server,
    )
    wait_board_version(sock, board_sub, seeded["results"][-1]["result"]["version"])
    watch = api.ok("PUT", f"/boards/{b}/players/w/watch", {"top_n": 5}, server)
    assert (watch["rank"], watch["score"]) == (3, 10)
    sub_id = assert_subscribed(sock.subscribe(watch["channel"], sock.bearer_auth(server)), "server")
    v1 = api.ok("POST", f"/boards/{b}/scores", {"player_id": "x", "score": 15}, server)["version"]
    assert sock.wait_for(lambda _f: sock.data(sub_id), DEADLINE), "w trimmed out: not told"
    trimmed = sock.data(sub_id)[0][1]
    assert (trimmed["version"], trimmed["rank"], trimmed["score"], trimmed["previous_rank"]) == (
        v1,
        None,
        None,
        3,
    ), trimmed
    assert "left_top" in trimmed["events"], trimmed
    v2 = api.ok("POST", f"/boards/{b}/scores", {"player_id": "w", "score": 40}, server)["version"]
    assert sock.wait_for(lambda _f: len(sock.data(sub_id)) >= 2, DEADLINE), (
        "w back at rank 1: not told"
    )
    back = sock.data(sub_id)[1][1]
    assert (
        back["version"],
        back["rank"],
        back["score"],
        back["previous_rank"],
        back["events"],
    ) == (v2, 1, 40, None, ["entered_top"]), back


def test_publishing_on_a_player_channel_is_refused(tokens: Tokens, sock: LiveSocket) -> None:
    """API.md "Connecting and authorizing" and "The player's channel": only the publisher can
    publish; a client's `publish` gets `publish_error` (`UnauthorizedException`), even with a
    server token that may subscribe there."""
    channel = player_channel("ada")
    pub_id = str(uuid.uuid4())
    sock.ws.send(
        json.dumps(
            {
                "type": "publish",
                "id": pub_id,
                "channel": channel,
                "events": [json.dumps({"type": "player.standing_changed", "player_id": "ada"})],
                "authorization": sock.bearer_auth(tokens("channel-test-server", SERVER)),
            }
        )
    )
    assert sock.wait_for(lambda frames: any(f.get("id") == pub_id for _, f in frames), 5), (
        "no answer to publish"
    )
    answer = next(f for _, f in sock.frames if f.get("id") == pub_id)
    assert answer["type"] == "publish_error", answer
    assert answer["errors"][0]["errorType"] == "UnauthorizedException", answer


def test_random_sequences_follow_the_model(api: Api, tokens: Tokens, sock: LiveSocket) -> None:
    """API.md "Messages on a player channel", "Hidden players", `DELETE .../players/{id}`: random
    writes by several players on a `ties: shared` board (`set`) and two `ties: first` boards
    (`increment`; `set` with `sort: asc`), with friends, watchers without an entry, watches
    made after some writes, a renewal, an admin removing watchers, hidden players; every
    message checked field by field against this file's model (events, rank, previous_rank
    chaining, score, passed_by, truncation, version, within about a second), one per watch per
    tick, and silence otherwise."""
    rng = random.Random(SEED)
    print(f"random seed {SEED}")
    # Made up front, so the publisher has found them ("re-reads the boards every second").
    boards = [
        new_board(api, tokens, ties=ties, mode=mode, sort=sort, periods=["all-time"])
        for ties, mode, sort in (
            ("shared", "set", "desc"),
            ("first", "increment", "desc"),
            ("first", "set", "asc"),
        )
    ]
    scenarios = [
        run_random_board(api, tokens, sock, boards[0], 1, 8, rng),
        run_random_board(api, tokens, sock, boards[1], 1, 4, rng),
        run_random_board(api, tokens, sock, boards[2], 1, 8, rng),
    ]
    stats: Counter[str] = Counter()
    for scenario in scenarios:
        stats += scenario.stats
    stats["max latency ms"] = max(scenario.stats["max latency ms"] for scenario in scenarios)
    print("coverage:", dict(sorted(stats.items())))
    # The seed must exercise what the test claims to check.
    for what in (
        "passed",
        "friend_passed",
        "entered_top",
        "left_top",
        "several passers in one message",
        "removed a watcher outside its top N",
        "message with previous_rank null",
        "changed player tied a watcher from behind: no pass",
    ):
        assert stats[what] > 0, f"seed {SEED} never produced {what!r}: {dict(stats)}"
    for scenario in scenarios:
        assert scenario.stats["changed player tied a watcher from behind: no pass"] > 0, (
            scenario.label
        )
    problems = [problem for scenario in scenarios for problem in scenario.problems]
    assert not problems, f"{len(problems)} messages differ from the documents:\n" + "\n".join(
        problems
    )
