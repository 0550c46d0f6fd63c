"""Hostile and odd credentials over real HTTP: the local gateway (devstack.gateway.HttpGateway on
a socket, the handlers and the embedded stores behind it) refuses every token API Gateway's JWT
authorizer would refuse with the documented 401, refuses missing scopes with 403, and answers
oversized heads with 431: never a 5xx, never a function call, never a change. On the read
routes, which have no authorizer, the same tokens reach the read function, which refuses them
with the same 401 (a token is optional there, but one that is sent must be valid).

What is refused and why is in docs/API.md, "Authentication".
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jwt
import pytest

from devstack import tokens
from devstack.gateway import MAX_HEAD, HttpGateway, LocalApi
from devstack.runtime import EventLoopThread, Invocation
from tests.support import hostile_tokens as hostile
from tests.support.openapi_contract import check_response

SUBMIT = "/boards/{board_id}/scores"


@dataclass
class Gateway:
    host: str
    port: int
    board: str
    secret: str
    calls: list[str] = field(default_factory=list)  # functions the gateway invoked

    def request(
        self, method: str, path: str, headers: list[tuple[str, str]], body: Any = None
    ) -> tuple[int, dict[str, str], bytes]:
        """One request on a fresh connection; `headers` may repeat a name."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            payload = b"" if body is None else json.dumps(body).encode()
            connection.putrequest(method, path)
            for name, value in [*headers, ("Content-Type", "application/json")]:
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(payload)))
            connection.endheaders(payload)
            response = connection.getresponse()
            headers_in = {k.lower(): v for k, v in response.getheaders()}
            return response.status, headers_in, response.read()
        finally:
            connection.close()

    def submit(self, authorization: list[str], player: str = "p-1") -> tuple[int, dict, bytes]:
        path = f"/boards/{self.board}/scores"
        headers = [("Authorization", value) for value in authorization]
        return self.request("POST", path, headers, {"player_id": player, "score": 5})

    def score(self, player: str) -> Any:
        status, _, body = self.request("GET", f"/boards/{self.board}/players/{player}", [])
        return json.loads(body).get("score") if status == 200 else None


@pytest.fixture(scope="module")
def gateway(api: Any) -> Iterator[Gateway]:
    """The gateway on a socket in front of the real handlers (in this process, the session's
    embedded stores), with one board that has a score for p-1."""
    board = f"auth-{int(time.time() * 1000) % 10**9}"
    admin = api.token("ops", "leaderboard/admin")
    assert api.call("PUT", f"/boards/{board}", {"title": "Auth edges"}, token=admin).status == 201
    server = api.token("game-server", "leaderboard/server")
    body = {"player_id": "p-1", "score": 10}
    assert api.call("POST", f"/boards/{board}/scores", body, token=server).status == 200

    loop = EventLoopThread("test-auth-edges")
    state = Gateway("", 0, board, api.SECRET)

    async def ainvoke(function: str, event: dict[str, Any]) -> Invocation:
        state.calls.append(function)
        started = time.perf_counter()
        result = await asyncio.to_thread(api.api.invoke, function, event)
        return Invocation(result, (time.perf_counter() - started) * 1000)

    server_ = HttpGateway(LocalApi(api.template, api.api.invoke, api.SECRET, ainvoke=ainvoke))
    state.host, state.port = asyncio.run_coroutine_threadsafe(
        server_.start("127.0.0.1", 0), loop.loop
    ).result()
    yield state
    asyncio.run_coroutine_threadsafe(server_.close(), loop.loop).result(5)
    loop.stop()


def _assert_unauthorized(gateway: Gateway, reply: tuple[int, dict[str, str], bytes]) -> None:
    status, headers, body = reply
    assert status == 401, (status, body[:300])
    assert json.loads(body) == {"message": "Unauthorized"}
    assert headers["www-authenticate"] == "Bearer"
    check_response("POST", SUBMIT, status, headers, body)


@pytest.mark.parametrize("case", hostile.BAD_TOKENS)
def test_a_bad_token_is_401_and_reaches_no_function(case: str, gateway: Gateway) -> None:
    token = hostile.bad_tokens(gateway.secret)[case]
    score = gateway.score("p-1")
    before = len(gateway.calls)
    _assert_unauthorized(gateway, gateway.submit([f"Bearer {token}"]))
    assert len(gateway.calls) == before  # refused at the gateway
    assert gateway.score("p-1") == score


@pytest.mark.parametrize("case", hostile.BAD_HEADERS)
def test_an_authorization_header_not_exactly_bearer_token_is_401(
    case: str, gateway: Gateway
) -> None:
    """Lowercase schemes, extra spaces and repeated headers included: API Gateway joins repeated
    headers with a comma, and a joined value is no token (it must not pick the valid one)."""
    score = gateway.score("p-1")
    before = len(gateway.calls)
    _assert_unauthorized(gateway, gateway.submit(hostile.bad_headers(gateway.secret)[case]))
    assert len(gateway.calls) == before  # refused at the gateway
    assert gateway.score("p-1") == score


# --- what is accepted ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"aud": ["another-api", tokens.audience()]},
        {"scope": ""},
        {"scope": "profile email"},
        {"nbf": -60, "exp": 60.5},  # seconds from when the test runs, not from collection
    ],
    ids=["plain", "aud-list-with-ours", "scope-empty", "unknown-scopes", "nbf-past-float-exp"],
)
def test_a_valid_player_token_submits_for_itself(claims: dict, gateway: Gateway) -> None:
    now = int(time.time())
    claims = {k: now + v if k in ("nbf", "exp") else v for k, v in claims.items()}
    token = jwt.encode(hostile.claims(sub="p-ok", **claims), gateway.secret, algorithm="HS256")
    status, _, body = gateway.submit([f"Bearer {token}"], player="p-ok")
    assert status == 200, body[:300]
    assert json.loads(body)["player_id"] == "p-ok"


def test_surrounding_whitespace_is_not_part_of_the_header(gateway: Gateway) -> None:
    token = tokens.mint(gateway.secret, "p-ws")
    status, _, body = gateway.submit([f"Bearer {token}  "], player="p-ws")
    assert status == 200, body[:300]


def test_a_valid_token_for_a_subject_that_is_no_player_id_is_a_400(gateway: Gateway) -> None:
    """The authorizer does not judge `sub` (a server's may be anything); a player token whose
    subject is no valid player_id is refused by the handler when it submits for itself."""
    for sub in ["x" * 300, "a b", "ünï", "p/1"]:
        token = tokens.mint(gateway.secret, sub)
        path = f"/boards/{gateway.board}/scores"
        status, headers, body = gateway.request(
            "POST", path, [("Authorization", f"Bearer {token}")], {"score": 1}
        )
        assert status == 400, (sub, status, body[:300])
        check_response("POST", SUBMIT, status, headers, body)


# --- reads: a token is optional, and a token that is sent must be valid ---------------------
# The read routes have no authorizer (API Gateway cannot make one optional): the gateway checks
# nothing there and hands the header on, and the read function refuses what the authorizer
# would have refused, with the same 401.
READ = "/boards/{board_id}/players/{player_id}"


def _read(gateway: Gateway, authorization: list[str]) -> tuple[int, dict[str, str], bytes]:
    headers = [("Authorization", value) for value in authorization]
    return gateway.request("GET", f"/boards/{gateway.board}/players/p-1", headers)


def _assert_read_unauthorized(gateway: Gateway, authorization: list[str]) -> None:
    before = len(gateway.calls)
    status, headers, body = _read(gateway, authorization)
    assert status == 401, (status, body[:300])
    assert json.loads(body) == {"message": "Unauthorized"}
    assert headers["www-authenticate"] == "Bearer"
    check_response("GET", READ, status, headers, body)
    assert gateway.calls[before:] == ["ApiReadFunction"], "the function judged it, not the gateway"


@pytest.mark.parametrize("case", hostile.BAD_TOKENS)
def test_a_bad_token_on_a_read_is_401(case: str, gateway: Gateway) -> None:
    _assert_read_unauthorized(gateway, [f"Bearer {hostile.bad_tokens(gateway.secret)[case]}"])


@pytest.mark.parametrize("case", [c for c in hostile.BAD_HEADERS if c != "no-header"])
def test_an_authorization_header_not_exactly_bearer_token_on_a_read_is_401(
    case: str, gateway: Gateway
) -> None:
    _assert_read_unauthorized(gateway, hostile.bad_headers(gateway.secret)[case])


@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"scope": "leaderboard/server"},
        {"scope": "leaderboard/admin"},
        {"aud": ["another-api", tokens.audience()]},
        {"nbf": -60, "exp": 60.5},  # seconds from when the test runs, not from collection
    ],
    ids=["player", "server", "admin", "aud-list-with-ours", "nbf-past-float-exp"],
)
def test_a_read_with_a_valid_token_is_200(claims: dict, gateway: Gateway) -> None:
    now = int(time.time())
    claims = {k: now + v if k in ("nbf", "exp") else v for k, v in claims.items()}
    token = jwt.encode(hostile.claims(sub="reader", **claims), gateway.secret, algorithm="HS256")
    status, headers, body = _read(gateway, [f"Bearer {token}  "])
    assert status == 200, body[:300]
    assert json.loads(body)["score"] == 10
    check_response("GET", READ, status, headers, body)


def test_a_read_without_a_token_is_200(gateway: Gateway) -> None:
    status, _, body = _read(gateway, [])
    assert status == 200 and json.loads(body)["score"] == 10


# --- scopes: 403 -----------------------------------------------------------------------------


ADMIN_ROUTES = [
    ("PUT", "/boards/{board}", {"title": "hijacked"}, "/boards/{board_id}"),
    ("DELETE", "/boards/{board}/players/p-1", None, "/boards/{board_id}/players/{player_id}"),
    ("POST", "/boards/{board}/rebuild", None, "/boards/{board_id}/rebuild"),
]


@pytest.mark.parametrize("who", ["player", "server", "lookalike"])
@pytest.mark.parametrize("method,path,body,template", ADMIN_ROUTES, ids=["put", "del", "rebuild"])
def test_a_token_without_the_admin_scope_is_403_on_admin_routes(
    who: str, method: str, path: str, body: Any, template: str, gateway: Gateway
) -> None:
    scopes = {
        "player": "",
        "server": "leaderboard/server",
        "lookalike": "leaderboard/admins leaderboard/admin:read LEADERBOARD/ADMIN",
    }[who]
    token = tokens.mint(gateway.secret, "p-1", scopes)
    score = gateway.score("p-1")
    before = len(gateway.calls)
    status, headers, reply = gateway.request(
        method, path.format(board=gateway.board), [("Authorization", f"Bearer {token}")], body
    )
    assert (status, json.loads(reply)) == (403, {"message": "Forbidden"})
    check_response(method, template, status, headers, reply)
    assert len(gateway.calls) == before  # refused at the gateway
    assert gateway.score("p-1") == score


def test_a_player_token_submitting_for_another_player_is_403(gateway: Gateway) -> None:
    token = tokens.mint(gateway.secret, "p-2")
    score = gateway.score("p-1")
    status, headers, body = gateway.submit([f"Bearer {token}"], player="p-1")
    assert status == 403 and json.loads(body)["code"] == "forbidden"
    check_response("POST", SUBMIT, status, headers, body)
    assert gateway.score("p-1") == score


# --- oversized heads: 431 --------------------------------------------------------------------


def _raw(gateway: Gateway, head: bytes, chunk: int = 1 << 16) -> tuple[int, bytes]:
    """Send a request head (in `chunk`-sized writes) and read the answer to the end."""
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as sock:
        try:
            for start in range(0, len(head), chunk):
                sock.sendall(head[start : start + chunk])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading: its answer is waiting
        answer = b""
        while chunk_in := sock.recv(65536):
            answer += chunk_in
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2]


def _head(target: str, *lines: str) -> bytes:
    return "\r\n".join([f"GET {target} HTTP/1.1", "Host: x", *lines, "", ""]).encode()


@pytest.mark.parametrize(
    "what",
    ["token-100KiB", "other-header-64KiB", "many-headers", "url-64KiB", "endless-header"],
)
def test_an_oversized_head_is_431_and_closes(what: str, gateway: Gateway) -> None:
    board = gateway.board
    target = f"/boards/{board}/scores"
    head, chunk = {
        "token-100KiB": (_head(target, "Authorization: Bearer " + "a" * 100 * 1024), 1 << 16),
        "other-header-64KiB": (_head(f"/boards/{board}", "X-Pad: " + "p" * 64 * 1024), 1 << 16),
        "many-headers": (_head("/health", *[f"X-H{n}: {'v' * 100}" for n in range(200)]), 4096),
        "url-64KiB": (_head(f"/boards/{board}/entries?x=" + "q" * 64 * 1024), 1 << 16),
        # one header that never ends, trickling in: refused once it is over the limit (waiting
        # for its end would wait forever, and buffer whatever the client sends)
        "endless-header": (_head("/health")[:-2] + b"X-Endless: " + b"s" * 3 * MAX_HEAD, 512),
    }[what]
    before = len(gateway.calls)
    status, body = _raw(gateway, head, chunk)
    assert (status, json.loads(body)) == (431, {"message": "Request Header Fields Too Large"})
    assert len(gateway.calls) == before
    assert gateway.request("GET", "/health", [])[0] == 200  # and the gateway goes on


def test_a_head_just_under_the_limit_is_served(gateway: Gateway) -> None:
    pad = MAX_HEAD - 200
    status, _, _ = gateway.request("GET", "/health", [("X-Pad", "p" * pad)])
    assert status == 200
