"""Reads take an optional token, checked by the read function itself (its routes have no
authorizer): no token reads as before, a valid one makes the reader known to the service, and
a token that is sent but not valid is 401 on every read route, never a 5xx. Through the real
handler, behind the local gateway as API Gateway passes a read's headers (untouched): in the
local stack's HS256 mode, and in AWS's RS256 mode with the issuer's keys served over HTTP (a
key set that cannot be fetched is 503)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.runtime import module_name
from leaderboard.domain.auth import Caller
from leaderboard.settings import TokenSettings
from tests.support import hostile_tokens as hostile
from tests.support.jwks import AUDIENCE, ISSUER, Answer, JwksServer, public_jwk, rs256, rsa_key

READ_FUNCTION = "ApiReadFunction"
# Every read route, with the parameters that make it answer 200 on the board below.
READ_PATHS = {
    "GET /boards": "/boards",
    "GET /boards/{board_id}": "/boards/{board}",
    "GET /boards/{board_id}/periods": "/boards/{board}/periods",
    "GET /boards/{board_id}/entries": "/boards/{board}/entries",
    "GET /boards/{board_id}/players": "/boards/{board}/players?ids=p-1,p-2",
    "GET /boards/{board_id}/players/{player_id}": "/boards/{board}/players/p-1",
    "GET /boards/{board_id}/players/{player_id}/around": "/boards/{board}/players/p-1/around",
    "GET /boards/{board_id}/players/{player_id}/standings": (
        "/boards/{board}/players/p-1/standings"
    ),
    "GET /boards/{board_id}/players/{player_id}/history": "/boards/{board}/players/p-1/history",
    "GET /tournaments": "/tournaments",
    "GET /boards/{board_id}/league": "/boards/{board}-league/league",
    "GET /boards/{board_id}/league/players/{player_id}": (
        "/boards/{board}-league/league/players/p-1"
    ),
    "GET /boards/{board_id}/league/groups/{group_id}": "/boards/{board}-league/league/groups/b-1",
}
# A few of tests/support/hostile_tokens.py's cases on every route; the whole table is sent to
# one read route over HTTP in tests/devstack/test_auth_edges.py.
BAD = ["alg-none-unsigned", "rs256-really-signed", "hs256-another-key", "expired", "sub-empty"]


def test_every_read_route_is_covered(api: Any) -> None:
    routes = {r.route_key for r in api.template.routes if r.function == READ_FUNCTION}
    assert routes == set(READ_PATHS)


@pytest.fixture
def board(api: Any, admin_token: str, server_token: str, board_id: str) -> str:
    assert api.call("PUT", f"/boards/{board_id}", {"title": "T"}, token=admin_token).status == 201
    for player, score in (("p-1", 7), ("p-2", 9)):
        body = {"player_id": player, "score": score}
        reply = api.call("POST", f"/boards/{board_id}/scores", body, token=server_token)
        assert reply.status == 200, reply.body
    # a league board beside it, with p-1 in group b-1, for the league's reads
    league = {"tiers": ["b", "s"], "group_size": 5, "promote": 1, "relegate": 1}
    rules = {"periods": ["custom"], "schedule": {"cron": "0 0 * * MON"}, "league": league}
    assert api.call("PUT", f"/boards/{board_id}-league", rules, token=admin_token).status == 201
    body = {"player_id": "p-1", "score": 7}
    reply = api.call("POST", f"/boards/{board_id}-league/scores", body, token=server_token)
    assert reply.status == 200, reply.body
    return board_id


class Recording:
    """The real read service, with the `caller` each call was given written down."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.callers: list[Caller | None] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.service, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.callers.append(kwargs.get("caller"))
            return method(*args, **kwargs)

        return call


@pytest.fixture
def recorded(api: Any) -> Iterator[Recording]:
    module = sys.modules[module_name(api.template.functions[READ_FUNCTION])]
    real = module.reads
    module.reads = Recording(real)
    try:
        yield module.reads
    finally:
        module.reads = real


@pytest.mark.parametrize("route", sorted(READ_PATHS))
def test_a_read_without_a_token_is_anonymous(
    route: str, api: Any, board: str, recorded: Recording
) -> None:
    reply = api.call("GET", READ_PATHS[route].format(board=board))
    assert reply.status == 200, reply.body[:300]
    assert recorded.callers == [None]


@pytest.mark.parametrize("route", sorted(READ_PATHS))
@pytest.mark.parametrize(
    "sub,scopes",
    [("p-1", ""), ("game-server", "leaderboard/server"), ("ops", "leaderboard/admin")],
    ids=["player", "server", "admin"],
)
def test_a_read_with_a_valid_token_knows_who_reads(
    route: str, sub: str, scopes: str, api: Any, board: str, recorded: Recording
) -> None:
    anonymous = api.call("GET", READ_PATHS[route].format(board=board))
    reply = api.call("GET", READ_PATHS[route].format(board=board), token=api.token(sub, scopes))
    assert reply.status == 200, reply.body[:300]
    assert recorded.callers[-1] == Caller(subject=sub, scopes=frozenset(scopes.split()))
    if route != "GET /boards":  # other tests' boards may come and go in between
        assert json.loads(reply.body) == json.loads(anonymous.body)  # nothing hidden yet


@pytest.mark.parametrize("route", sorted(READ_PATHS))
@pytest.mark.parametrize("case", BAD)
def test_a_read_with_a_bad_token_is_401(
    route: str, case: str, api: Any, board: str, recorded: Recording
) -> None:
    token = hostile.bad_tokens(api.SECRET)[case]
    reply = api.call("GET", READ_PATHS[route].format(board=board), token=token)
    assert (reply.status, json.loads(reply.body)) == (401, {"message": "Unauthorized"})
    assert reply.headers["www-authenticate"] == "Bearer"
    assert recorded.callers == [], "refused before the service is asked"


@pytest.mark.parametrize(
    "authorization",
    ["", "Bearer", "bearer {token}", "Basic cDE6cHc=", "Bearer {token},Bearer {token}"],
    ids=["empty", "scheme-alone", "lowercase", "basic", "repeated"],
)
def test_an_authorization_header_that_is_no_bearer_token_is_401(
    authorization: str, api: Any, board: str
) -> None:
    """A client that sends an Authorization header means to be known: anything but a valid
    `Bearer <JWT>` is refused, as on the other routes, rather than read anonymously."""
    value = authorization.format(token=api.token("p-1"))
    reply = api.call("GET", f"/boards/{board}/entries", headers={"authorization": value})
    assert (reply.status, json.loads(reply.body)) == (401, {"message": "Unauthorized"})


def test_the_token_is_checked_before_the_query(api: Any, board: str) -> None:
    """As the authorizer would: a bad token is 401 even where the query is also wrong."""
    token = hostile.bad_tokens(api.SECRET)["expired"]
    reply = api.call("GET", f"/boards/{board}/entries?limit=0", token=token)
    assert reply.status == 401
    assert api.call("GET", f"/boards/{board}/entries?limit=0").status == 400


# --- as in AWS: RS256, with the issuer's keys over HTTPS (here, HTTP on the loopback) ---------


@pytest.fixture
def issuer() -> Iterator[JwksServer]:
    server = JwksServer()
    yield server
    server.close()


@pytest.fixture
def rs256_mode(issuer: JwksServer, api: Any) -> Iterator[Any]:
    """The read function configured as the template configures it in AWS (no JWT_SECRET: RS256
    with the issuer's JWK set), for one test; the local HS256 settings come back after."""
    from leaderboard.api import http

    module = sys.modules[module_name(api.template.functions[READ_FUNCTION])]
    kept = module.tokens
    settings = TokenSettings(issuer=ISSUER, audiences=frozenset({AUDIENCE}), jwks_url=issuer.url)
    module.tokens = http.token_verifier(settings)
    try:
        yield module
    finally:
        module.tokens = kept


def test_in_rs256_mode_the_issuers_tokens_read_and_others_are_401(
    rs256_mode: Any, issuer: JwksServer, api: Any, board: str, recorded: Recording
) -> None:
    key = rsa_key()
    issuer.answer = Answer(keys=[public_jwk(key, "k1")])
    path = f"/boards/{board}/players/p-1"
    token = rs256(key, "k1", sub="ada", aud=..., client_id=AUDIENCE, scope="leaderboard/admin")
    reply = api.call("GET", path, token=token)
    assert reply.status == 200, reply.body[:300]
    assert recorded.callers == [Caller(subject="ada", scopes=frozenset({"leaderboard/admin"}))]
    for bad in [rs256(rsa_key(), "k1"), api.token("p-1"), rs256(key, "k1", exp=1)]:
        assert api.call("GET", path, token=bad).status == 401  # another key, HS256, expired
    assert issuer.requests == 1


def test_in_rs256_mode_an_unreachable_issuer_is_503_and_anonymous_reads_go_on(
    rs256_mode: Any, issuer: JwksServer, api: Any, board: str
) -> None:
    issuer.answer = Answer(status=503)
    path = f"/boards/{board}/players/p-1"
    reply = api.call("GET", path, token=rs256(rsa_key(), "k1"))
    assert reply.status == 503, reply.body[:300]
    assert json.loads(reply.body)["code"] == "unavailable"
    assert int(reply.headers["retry-after"]) >= 1
    assert api.call("GET", path).status == 200
