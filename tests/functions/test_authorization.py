"""Who may call what: no token or a bad one is 401; a player submitting for another player is
403; board configuration and the admin routes need the admin scope (403 otherwise), both at the
gateway (AuthorizationScopes) and in the handler itself (defence in depth)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import jwt
import pytest

from devstack import tokens
from devstack.gateway import build_event

ADMIN_FUNCTION = "ApiAdminFunction"
WRITE_FUNCTION = "ApiWriteFunction"


def _claims(sub: str = "p-1", **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {
        "sub": sub,
        "iss": tokens.issuer(),
        "aud": tokens.audience(),
        "iat": now,
        "exp": now + 600,
        **extra,
    }


def _sign(claims: dict[str, Any], secret: str) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


def _without(claims: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in claims.items() if k != name}


def assert_error(reply: Any, status: int) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body[:300])
    body = json.loads(reply.body)
    assert isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]
    return body


@pytest.fixture
def board(api, admin_token, server_token, board_id) -> str:
    created = api.call("PUT", f"/boards/{board_id}", {"regions": ["EU"]}, token=admin_token)
    assert created.status == 201, created.body
    r = api.call(
        "POST", f"/boards/{board_id}/scores", {"player_id": "p-2", "score": 10}, token=server_token
    )
    assert r.status == 200, r.body
    return board_id


def _bad_authorization(secret: str) -> dict[str, str | None]:
    """Authorization header values that must all be refused with 401 (None = no header)."""
    good = _claims()
    return {
        "no-header": None,
        "bearer-alone": "Bearer",
        "bearer-blank": "Bearer    ",
        "basic-scheme": "Basic cDE6c2VjcmV0",
        "token-without-scheme": _sign(good, secret),
        "bearer-garbage": "Bearer not.a.jwt",
        "other-secret": "Bearer " + _sign(good, secret + "-other"),
        "expired": "Bearer " + _sign(good | {"exp": int(time.time()) - 120}, secret),
        "wrong-audience": "Bearer " + _sign(good | {"aud": "someone-else"}, secret),
        "wrong-issuer": "Bearer " + _sign(good | {"iss": "https://evil.example"}, secret),
        "no-exp": "Bearer " + _sign(_without(good, "exp"), secret),
        "no-sub": "Bearer " + _sign(_without(good, "sub"), secret),
        "not-yet-valid": "Bearer " + _sign(good | {"nbf": int(time.time()) + 3600}, secret),
        "alg-none": "Bearer " + jwt.encode(good, None, algorithm="none"),
        "tampered-scope": "Bearer " + _tamper(_sign(good, secret)),
    }


def _tamper(token: str) -> str:
    """Swap the payload for one claiming the admin scope, keeping the original signature."""
    head, _, sig = token.split(".")
    forged = _claims(scope="leaderboard/admin")
    payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    return f"{head}.{payload}.{sig}"


BAD_AUTH_IDS = list(_bad_authorization("x"))


# --- 401: no token or a bad one --------------------------------------------------------------


@pytest.mark.parametrize("case", BAD_AUTH_IDS)
def test_submit_without_a_valid_token_is_401(case, api, board, redis_client):
    header = _bad_authorization(api.SECRET)[case]
    before = redis_client.zrange(f"lb:{{{board}}}:z:all-time", 0, -1, withscores=True)
    r = api.call(
        "POST",
        f"/boards/{board}/scores",
        {"player_id": "p-1", "score": 5},
        headers={} if header is None else {"Authorization": header},
    )
    assert_error(r, 401)
    assert redis_client.zrange(f"lb:{{{board}}}:z:all-time", 0, -1, withscores=True) == before


@pytest.mark.parametrize("case", ["no-header", "other-secret", "expired", "no-exp"])
@pytest.mark.parametrize(
    "method,path", [("PUT", "/boards/{b}"), ("DELETE", "/boards/{b}/players/p-2")]
)
def test_admin_routes_without_a_valid_token_are_401(case, method, path, api, board):
    header = _bad_authorization(api.SECRET)[case]
    r = api.call(
        method,
        path.format(b=board),
        {"title": "x"} if method == "PUT" else None,
        headers={} if header is None else {"Authorization": header},
    )
    assert_error(r, 401)
    assert api.call("GET", f"/boards/{board}/players/p-2").status == 200


# --- 403: players submit only for themselves -------------------------------------------------


def test_player_submitting_for_another_player_is_403(api, board):
    token = api.token("p-1")
    r = api.call("POST", f"/boards/{board}/scores", {"player_id": "p-2", "score": 5}, token=token)
    assert_error(r, 403)
    assert api.call("GET", f"/boards/{board}/players/p-2").json()["score"] == 10


def test_player_with_an_unrelated_scope_is_still_a_player(api, board):
    token = api.token("p-1", "leaderboard/read profile")
    r = api.call("POST", f"/boards/{board}/scores", {"player_id": "p-2", "score": 5}, token=token)
    assert_error(r, 403)


@pytest.mark.parametrize(
    "body",
    [{"score": 7}, {"player_id": "p-1", "score": 7}],
    ids=["player_id-omitted", "player_id-equal-to-sub"],
)
def test_player_submitting_for_itself_is_200(body, api, board):
    r = api.call("POST", f"/boards/{board}/scores", body, token=api.token("p-1"))
    assert r.status == 200, r.body
    assert r.json()["player_id"] == "p-1"
    assert api.call("GET", f"/boards/{board}/players/p-1").json()["score"] == 7


@pytest.mark.parametrize("player", ["p-1", "p-2", "someone.else@example"])
def test_server_submits_for_any_player(player, api, server_token, board):
    r = api.call(
        "POST", f"/boards/{board}/scores", {"player_id": player, "score": 3}, token=server_token
    )
    assert r.status == 200, r.body
    assert r.json()["player_id"] == player


def test_admin_may_submit_for_any_player(api, admin_token, board):
    r = api.call(
        "POST", f"/boards/{board}/scores", {"player_id": "p-9", "score": 3}, token=admin_token
    )
    assert r.status == 200, r.body


# --- 403: board configuration and the admin routes need the admin scope ----------------------


@pytest.mark.parametrize("who", ["player", "server"])
def test_put_board_without_admin_scope_is_403(who, api, server_token, board, board_id):
    token = api.token("p-1") if who == "player" else server_token
    assert_error(api.call("PUT", f"/boards/{board}", {"title": "hijacked"}, token=token), 403)
    assert api.call("GET", f"/boards/{board}").json()["title"] is None
    fresh = f"{board_id}-new"
    assert_error(api.call("PUT", f"/boards/{fresh}", {"title": "x"}, token=token), 403)
    assert api.call("GET", f"/boards/{fresh}").status == 404


@pytest.mark.parametrize("who", ["player", "server"])
def test_delete_player_without_admin_scope_is_403(who, api, server_token, board):
    token = api.token("p-2") if who == "player" else server_token
    assert_error(api.call("DELETE", f"/boards/{board}/players/p-2", token=token), 403)
    assert api.call("GET", f"/boards/{board}/players/p-2").status == 200


def test_admin_configures_boards_and_deletes_players(api, admin_token, board, board_id):
    fresh = f"{board_id}-new"
    assert api.call("PUT", f"/boards/{fresh}", {"title": "New"}, token=admin_token).status == 201
    assert (
        api.call("PUT", f"/boards/{board}", {"title": "Renamed"}, token=admin_token).status == 200
    )
    r = api.call("DELETE", f"/boards/{board}/players/p-2", token=admin_token)
    assert r.status == 204, r.body
    assert api.call("GET", f"/boards/{board}/players/p-2").status == 404


# --- reads need no token, but a token that is sent must be valid ------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/boards",
        "/boards/{b}",
        "/boards/{b}/entries",
        "/boards/{b}/players/p-2",
        "/boards/{b}/players/p-2/around?count=3",
        "/boards/{b}/players?ids=p-2,p-3",
        "/boards/{b}/players/p-2/standings",
        "/boards/{b}/players/p-2/history",
        "/health",
    ],
)
@pytest.mark.parametrize("header", [None, "Bearer not.a.jwt"], ids=["no-token", "bad-token"])
def test_reads_need_no_token(path, header, api, board):
    """A bad token on a read is 401 (the read function checks a token that is sent:
    tests/functions/test_read_tokens.py); /health, the admin function's, looks at none."""
    r = api.call(
        "GET", path.format(b=board), headers={} if header is None else {"Authorization": header}
    )
    expected = 200 if header is None or path == "/health" else 401
    assert r.status == expected, (r.status, r.body[:300])


# --- defence in depth: the handlers check the claims themselves ------------------------------


def _event(
    api, method: str, path: str, body: Any, claims: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    found = api.template.find_route(method, path)
    assert found is not None, (method, path)
    route, params = found
    raw = b"" if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if raw else {}
    return route.function, build_event(
        route, method, path, "", headers, raw, params, claims, "127.0.0.1"
    )


def _invoke(
    api, method: str, path: str, body: Any, claims: dict[str, Any] | None
) -> dict[str, Any]:
    function, event = _event(api, method, path, body, claims)
    result = api.api.invoke(function, event)
    result["json"] = json.loads(result["body"]) if result.get("body") else None
    return result


def _assert_refused(result: dict[str, Any], status: int) -> None:
    assert result["statusCode"] == status, result
    assert isinstance(result["json"], dict) and result["json"].get("message"), result


NON_ADMIN_CLAIMS = {
    "player": _claims("p-1"),
    "server": _claims("game-server", scope="leaderboard/server"),
    "admin-lookalike": _claims("p-1", scope="leaderboard/admins leaderboard/admin:read"),
}


@pytest.mark.parametrize("who", list(NON_ADMIN_CLAIMS))
def test_admin_handler_refuses_non_admin_claims(who, api, board, board_id):
    claims = NON_ADMIN_CLAIMS[who]
    put = _invoke(api, "PUT", f"/boards/{board}", {"title": "hijacked"}, claims)
    assert _event(api, "PUT", f"/boards/{board}", None, None)[0] == ADMIN_FUNCTION
    _assert_refused(put, 403)
    fresh = _invoke(api, "PUT", f"/boards/{board_id}-new", {"title": "x"}, claims)
    _assert_refused(fresh, 403)
    delete = _invoke(api, "DELETE", f"/boards/{board}/players/p-2", None, claims)
    _assert_refused(delete, 403)
    assert api.call("GET", f"/boards/{board}").json()["title"] is None
    assert api.call("GET", f"/boards/{board_id}-new").status == 404
    assert api.call("GET", f"/boards/{board}/players/p-2").status == 200


@pytest.mark.parametrize(
    "claims",
    [None, {}, _without(_claims(), "sub"), _claims(sub="")],
    ids=["no-authorizer", "empty-claims", "no-sub", "empty-sub"],
)
def test_admin_handler_without_claims_is_401(claims, api, board):
    put = _invoke(api, "PUT", f"/boards/{board}", {"title": "hijacked"}, claims)
    _assert_refused(put, 401)
    delete = _invoke(api, "DELETE", f"/boards/{board}/players/p-2", None, claims)
    _assert_refused(delete, 401)
    assert api.call("GET", f"/boards/{board}").json()["title"] is None
    assert api.call("GET", f"/boards/{board}/players/p-2").status == 200


def test_admin_handler_accepts_admin_claims(api, board):
    claims = _claims("ops", scope="leaderboard/admin")
    put = _invoke(api, "PUT", f"/boards/{board}", {"title": "Renamed"}, claims)
    assert put["statusCode"] == 200, put
    delete = _invoke(api, "DELETE", f"/boards/{board}/players/p-2", None, claims)
    assert delete["statusCode"] == 204, delete
    assert api.call("GET", f"/boards/{board}/players/p-2").status == 404


def test_admin_handler_accepts_admin_scope_from_the_scopes_list(api, board):
    """API Gateway may hand scopes over as a list beside the claims (Cognito access tokens)."""
    function, event = _event(api, "PUT", f"/boards/{board}", {"title": "Listed"}, _claims("ops"))
    event["requestContext"]["authorizer"]["jwt"]["scopes"] = ["leaderboard/admin"]
    assert api.api.invoke(function, event)["statusCode"] == 200


def test_write_handler_enforces_player_rules_itself(api, board):
    function, _ = _event(api, "POST", f"/boards/{board}/scores", None, None)
    assert function == WRITE_FUNCTION
    body = {"player_id": "p-2", "score": 5}
    _assert_refused(_invoke(api, "POST", f"/boards/{board}/scores", body, None), 401)
    _assert_refused(_invoke(api, "POST", f"/boards/{board}/scores", body, _claims("p-1")), 403)
    assert api.call("GET", f"/boards/{board}/players/p-2").json()["score"] == 10
    ok = _invoke(api, "POST", f"/boards/{board}/scores", {"score": 5}, _claims("p-1"))
    assert ok["statusCode"] == 200, ok
