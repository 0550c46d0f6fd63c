"""clients/python without a server: the retry policy's bounds, how answers become typed
errors, how calls are built, the player channel's renewal rule, the sync and asyncio clients
offering the same methods, and what a submission's result adds to the answer (`replayed`,
`idempotency_key`) through both transports against a scripted HTTP server. In `make
test-fast`."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from leaderboard_client import (
    AsyncLeaderboardClient,
    BadRequest,
    HookUnavailable,
    LeaderboardClient,
    LeaderboardError,
    LiveConfig,
    NotFound,
    RateLimited,
    RejectedByHook,
    RetryPolicy,
    ServerError,
    TournamentRules,
    Unauthorized,
    _core,
    _live,
    _routes,
    aio,
)
from leaderboard_client.errors import error_for


def test_retry_policy_and_retry_after() -> None:
    policy = RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=4)
    for _ in range(50):
        assert 0 <= (policy.delay(1, None) or 0) <= 0.5  # full jitter, doubling
        assert 0 <= (policy.delay(2, None) or 0) <= 1.0
        assert 2 <= (policy.delay(1, 2.0) or 0) <= 2.5  # Retry-After, plus jitter
    assert policy.delay(3, None) is None  # attempts used up
    assert policy.delay(1, 5.0) is None  # longer than it waits
    assert _core.retry_after({"retry-after": "7"}) == 7
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (_core.retry_after({"retry-after": soon}) or 0) <= 30
    assert _core.retry_after({}) is None and _core.retry_after({"retry-after": "soon"}) is None


def test_a_renewal_moves_nothing_the_messages_go_on_from_the_last_one() -> None:
    """A renewal keeps the watch's chain (docs/API.md): a change just before it is still told by
    a message whose previous_rank is the last rank a message said, so the answer is no update
    and does not move the last rank seen."""
    live = LiveConfig("ws://127.0.0.1:1/event/realtime", "127.0.0.1:2", "key")
    follower = _live.PlayerFollower(
        live,
        "token",
        "b",
        "ada",
        period="all-time",
        region=None,
        top_n=None,
        friends=None,
        ttl_seconds=60,
        renew_every=None,
    )
    assert follower.renew_every == 30  # half the time to live
    watch: dict[str, Any] = {"channel": "/players/Pabc", "rank": 1, "score": 5}
    follower.prepared(watch)
    assert follower.subscribed(None).kind == "watched" and follower.last_rank == 1
    assert follower.renewed(dict(watch)) is None
    # a renewal keeps the chain: its answer's rank is not the last one a message said
    assert follower.renewed(dict(watch, rank=3)) is None and follower.last_rank == 1
    message = {
        "type": "player.standing_changed",
        "board_id": "b",
        "player_id": "ada",
        "period_kind": "all-time",
        "region": None,
        "rank": 3,
        "previous_rank": 1,
    }
    assert follower.gap_read(message) is None  # no gap: the chain went on through the renewal
    assert follower.gap_read(dict(message, previous_rank=2)) is not None  # a missed message
    assert follower.gap_read(dict(message, board_id="other")) is False  # another watch's


def test_async_client_has_the_same_methods() -> None:
    def public(cls: type) -> dict[str, list[str]]:
        return {
            name: list(inspect.signature(member).parameters)
            for name, member in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_") and name not in ("close", "aclose")
        }

    sync, asynchronous = public(LeaderboardClient), public(AsyncLeaderboardClient)
    assert sync == asynchronous
    for name in sync:
        if name not in ("subscribe_board", "subscribe_player", "with_token", "with_retry"):
            assert inspect.iscoroutinefunction(getattr(AsyncLeaderboardClient, name)), name


def test_the_readme_lists_every_method() -> None:
    """clients/python/README.md's Methods table names every public method of the clients."""
    readme = (Path(__file__).parents[2] / "clients" / "python" / "README.md").read_text()
    table = readme.split("## Methods", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(\w+)\(", table))
    methods = {
        name
        for name, _ in inspect.getmembers(LeaderboardClient, inspect.isfunction)
        if not name.startswith("_") and name != "close"
    }
    assert methods - listed == set(), "methods the README does not list"
    assert listed - methods == set(), "the README lists methods that are not there"


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (400, {"message": "m", "code": "bad_request", "field": "limit"}, BadRequest),
        (401, {"message": "Unauthorized"}, Unauthorized),
        (404, {"message": "Not Found"}, NotFound),
        (409, {"message": "m", "code": "tournament_rules", "reason": "full"}, TournamentRules),
        (422, {"message": "no", "code": "rejected_by_hook"}, RejectedByHook),
        (429, {"message": "m", "code": "rate_limited"}, RateLimited),
        (503, {"message": "m", "code": "hook_unavailable"}, HookUnavailable),
        (500, {"message": "Internal Server Error"}, ServerError),
        (418, {}, LeaderboardError),
    ],
)
def test_answers_become_typed_errors(status: int, body: dict[str, Any], kind: type) -> None:
    call = _routes.get_board("arena")
    answer = _core.Answer(status, {"retry-after": "3"}, json.dumps(body).encode())
    with pytest.raises(LeaderboardError) as raised:
        _core.outcome(call, answer)
    assert type(raised.value) is kind and raised.value.status == status
    assert raised.value.code == body.get("code") and raised.value.retry_after == 3
    assert raised.value.body == body


def test_error_fields() -> None:
    error = error_for(400, {"message": "unknown", "code": "bad_request", "fields": ["x", "y"]})
    assert error.fields == ["x", "y"] and error.field is None and str(error) == "unknown"
    item = error_for(429, {"message": "slow down", "code": "rate_limited", "retry_after": 4})
    assert item.retry_after == 4  # a batch item's error carries it in the body


def test_calls_encode_paths_and_queries() -> None:
    call = _routes.get_players(
        "my_board", ["a@b", "c"], period="weekly", region=None, viewer=None, by=None, team=None
    )
    assert call.target() == "/boards/my_board/players?ids=a%40b%2Cc&period=weekly"
    around = _routes.get_around(
        "b", "x/y", period=None, region="EU", count=3, viewer=None, by=None, team=None
    )
    assert around.target() == "/boards/b/players/x%2Fy/around?region=EU&count=3"
    submit = _routes.submit_score(
        "b",
        5,
        player_id=None,
        region=None,
        metadata=None,
        tiebreakers=None,
        team_id=None,
        idempotency_key=None,
    )
    assert submit.body == {"score": 5} and submit.idempotency_key
    assert submit.headers("t", "ua")["Idempotency-Key"] == submit.idempotency_key
    assert not _routes.end_period("b").resend and _routes.submit_scores("b", []).resend
    with pytest.raises(TypeError):
        _routes.get_players("b", "a,b", period=None, region=None, viewer=None, by=None, team=None)
    league = _routes.get_league("b", season=None)
    assert league.target() == "/boards/b/league"
    mine = _routes.get_league_player("b", "a@b", season="2026-11-30T000000Z", viewer="a@b")
    assert mine.target() == (
        "/boards/b/league/players/a%40b?season=2026-11-30T000000Z&viewer=a%40b"
    )
    group = _routes.get_league_group("b", "gold-3", season=None, viewer=None)
    assert group.target() == "/boards/b/league/groups/gold-3"


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        (b'HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{"a":1}', b'{"a":1}'),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'3\r\n{"a\r\n4;x=y\r\n":1}\r\n0\r\nTrailer: z\r\n\r\n',
            b'{"a":1}',
        ),
        (b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"a":1}', b'{"a":1}'),
        (b"HTTP/1.1 204 No Content\r\n\r\n", b""),
    ],
)
def test_the_asyncio_transport_reads_each_framing(raw: bytes, body: bytes) -> None:
    async def read() -> _core.Answer:
        reader = asyncio.StreamReader()
        reader.feed_data(raw)
        reader.feed_eof()
        return await aio._read_answer(reader, "GET")

    answer = asyncio.run(read())
    assert answer.body == body and answer.status in (200, 204)


class _Submissions(BaseHTTPRequestHandler):
    """POST .../scores answered as the service does: the first answer to a key again, with
    `Idempotent-Replayed: true`, when the key comes back; a batch answered item by item."""

    answers: dict[str, dict[str, Any]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers: dict[str, str] = {}
        if self.path.endswith("/scores/batch"):
            answer: dict[str, Any] = {
                "board_id": "b",
                "results": [{"status": 200, "replayed": False} for _ in body["submissions"]],
            }
        else:
            key = self.headers["Idempotency-Key"]
            if key in self.answers:
                headers["Idempotent-Replayed"] = "true"
            else:
                self.answers[key] = {
                    "board_id": "b",
                    "player_id": body["player_id"],
                    "event_id": f"e{len(self.answers)}",
                    "applied": True,
                    "version": len(self.answers) + 1,
                    "standings": [],
                }
            answer = self.answers[key]
        data = json.dumps(answer).encode()
        self.send_response(200)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def submissions_url() -> Iterator[str]:
    _Submissions.answers = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Submissions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_submission_says_whether_it_was_replayed_and_its_key(submissions_url: str) -> None:
    sync = LeaderboardClient(submissions_url, "t")
    first = sync.submit_score("b", 5, player_id="ada")
    assert first["replayed"] is False and first["event_id"] == "e0"
    key = first["idempotency_key"]
    assert len(key) == 32 and int(key, 16) >= 0  # made by the client (uuid4 hex)
    again = sync.submit_score("b", 5, player_id="ada", idempotency_key=key)
    assert again["replayed"] is True and again["event_id"] == "e0"
    assert again["idempotency_key"] == key
    other = sync.submit_score("b", 6, player_id="ada", idempotency_key="mine-1")
    assert (other["replayed"], other["idempotency_key"]) == (False, "mine-1")
    # A batch's items carry the service's own `replayed`; nothing is added to the batch.
    batch = sync.submit_scores("b", [{"player_id": "ada", "score": 1}])
    assert set(batch) == {"board_id", "results"}

    async def asynchronous() -> None:
        client = AsyncLeaderboardClient(submissions_url, "t")
        first = await client.submit_score("b", 7, player_id="bob", idempotency_key="mine-2")
        assert (first["replayed"], first["idempotency_key"]) == (False, "mine-2")
        again = await client.submit_score("b", 7, player_id="bob", idempotency_key="mine-2")
        assert (again["replayed"], again["idempotency_key"]) == (True, "mine-2")
        assert again["event_id"] == first["event_id"]
        made = await client.submit_score("b", 8, player_id="bob")
        assert made["replayed"] is False and len(made["idempotency_key"]) == 32

    asyncio.run(asynchronous())
