"""docs/openapi.json is held to the code both ways: a valid OpenAPI 3.1 document naming exactly
the template's routes with their authorizer and scopes, exactly the query parameters the handlers
accept, and served by the local gateway at GET /openapi.json. (Every response the `api` fixture
returns is validated against it as well: tests/support/openapi_contract.py.)"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from jsonschema.exceptions import best_match
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator

from devstack.gateway import HttpGateway, LocalApi
from devstack.runtime import EventLoopThread
from devstack.template import Route, load
from leaderboard.services import boards, league_reads, read_base, watches
from tests.support.openapi_contract import (
    ContractViolation,
    check_response,
    document,
    operation,
    resolve,
    validator,
)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
ROUTES = load().routes
# A valid value for every query parameter the document names (each is sent on its own).
SAMPLE_VALUES = {
    "period": "all-time",
    "region": "EU",
    "limit": "5",
    "offset": "0",
    "around_rank": "1",
    "count": "3",
    "ids": "p-1",
    "kind": "weekly",
    "before": "2026-W47",
    "verdict": "flag",
    "player_id": "p-1",
    "viewer": "p-1",
    "after": "p-0",
    "by": "player",
    "team": "red",
    "status": "open",
    "season": "custom",
}
# Where a route's parameter takes another kind of value than SAMPLE_VALUES's.
ROUTE_SAMPLES = {
    "GET /boards/{board_id}/flags": {"before": "019ab3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"},
}
# Parameters a route cannot do without; sent along with each parameter tried.
REQUIRED_QUERY = {"GET /boards/{board_id}/players": {"ids": "p-1"}}

# What the read service accepts, by route (every other route takes no query parameter).
CODE_PARAMS = {
    "GET /boards/{board_id}/entries": read_base._ENTRIES_PARAMS,
    "GET /boards/{board_id}/players/{player_id}": read_base._PLAYER_PARAMS,
    "GET /boards/{board_id}/players/{player_id}/around": read_base._AROUND_PARAMS,
    "GET /boards/{board_id}/players": read_base._PLAYERS_PARAMS,
    "GET /boards/{board_id}/players/{player_id}/standings": read_base._STANDINGS_PARAMS,
    "GET /boards/{board_id}/players/{player_id}/history": read_base._HISTORY_PARAMS,
    "GET /boards/{board_id}/flags": boards._FLAGS_PARAMS,
    "GET /boards/{board_id}/hidden": boards._HIDDEN_PARAMS,
    "GET /tournaments": read_base._TOURNAMENTS_PARAMS,
    "GET /boards/{board_id}/league": league_reads._LEAGUE_PARAMS,
    "GET /boards/{board_id}/league/players/{player_id}": league_reads._GROUP_PARAMS,
    "GET /boards/{board_id}/league/groups/{group_id}": league_reads._GROUP_PARAMS,
    "DELETE /boards/{board_id}/players/{player_id}/watch": set(watches.UNWATCH_PARAMS),
}


def _operations() -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in document()["paths"].items()
        for method in METHODS
        if method in item
    }


def _parameters(route: Route, where: str) -> dict[str, dict[str, Any]]:
    """The operation's parameters (path-level and its own) located `where`, by name."""
    item = document()["paths"][route.path]
    found = [resolve(p) for p in item.get("parameters", [])]
    found += [resolve(p) for p in operation(route.path, route.method).get("parameters", [])]
    return {p["name"]: p for p in found if p["in"] == where}


def test_the_document_is_a_valid_openapi_3_1_document():
    doc = document()
    assert doc["openapi"] == "3.1.0"
    assert not list(OpenAPIV31SpecValidator(doc).iter_errors())
    validate(doc)


def test_every_template_route_is_documented_and_the_document_names_no_other():
    routes = {(r.method, r.path) for r in ROUTES}
    assert len(routes) == len(ROUTES) >= 11
    assert sorted(routes - _operations()) == [], "template routes missing from docs/openapi.json"
    assert sorted(_operations() - routes) == [], "docs/openapi.json names routes the template lacks"


# The routes whose function checks an optional token itself (no authorizer can be optional).
OPTIONAL_TOKEN_FUNCTIONS = {"ApiReadFunction"}


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.route_key)
def test_security_equals_the_templates_authorizer_and_scopes(route):
    op = operation(route.path, route.method)
    assert "security" not in document(), "security is stated per operation, never inherited"
    if route.authorizer is None and route.function in OPTIONAL_TOKEN_FUNCTIONS:
        assert op["security"] == [{}, {"bearerAuth": []}], f"{route.route_key}: token optional"
        assert "401" in op["responses"], "a token that is sent but not valid is refused"
    elif route.authorizer is None:
        assert op["security"] == [], f"{route.route_key} is public in the template"
    else:
        assert op["security"] == [{"bearerAuth": list(route.scopes)}]
        assert {"401", "403"} <= set(op["responses"]), "the authorizer's refusals are documented"


def test_request_bodies_name_exactly_the_fields_the_code_accepts():
    from leaderboard.domain import boards, submissions

    schemas = document()["components"]["schemas"]
    for name, accepted in [
        ("BoardRequest", set(boards._FIELDS) | {"board_id"}),
        ("Submission", set(submissions._FIELDS)),
        ("BatchItem", set(submissions._FIELDS) | {"idempotency_key"}),
        ("BatchRequest", set(submissions._BATCH_FIELDS)),
    ]:
        assert set(schemas[name]["properties"]) == accepted, name
        assert schemas[name]["additionalProperties"] is False, f"{name}: unknown fields are 400"


@pytest.mark.parametrize(
    "name", sorted(n for n, s in document()["components"]["schemas"].items() if "examples" in s)
)
def test_the_documents_examples_match_their_schemas(name):
    schema = validator(f"#/components/schemas/{name}")
    for example in document()["components"]["schemas"][name]["examples"]:
        error = best_match(schema.iter_errors(example))
        assert error is None, f"{name} example {example}: {error and error.message}"


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.route_key)
def test_path_parameters_are_the_templates(route):
    assert set(_parameters(route, "path")) == set(re.findall(r"\{(\w+)\}", route.path))


@pytest.fixture(scope="module")
def seeded(api, admin_token, server_token, board_id) -> dict[str, str]:
    """A board with a region, teams and one player, so every read can answer 200."""
    body = {"regions": ["EU"], "teams": "sum"}
    put = api.call("PUT", f"/boards/{board_id}", body, token=admin_token)
    assert put.status == 201, put.body
    body = {"player_id": "p-1", "score": 5, "region": "EU", "team_id": "red"}
    scored = api.call("POST", f"/boards/{board_id}/scores", body, token=server_token)
    assert scored.status == 200, scored.body
    # and a league board beside it, for the league's routes
    league = {"tiers": ["bronze", "silver"], "group_size": 5, "promote": 1, "relegate": 1}
    body = {"periods": ["custom"], "schedule": {"cron": "0 0 * * MON"}, "league": league}
    put = api.call("PUT", f"/boards/{board_id}-lg", body, token=admin_token)
    assert put.status == 201, put.body
    body = {"player_id": "p-1", "score": 5}
    scored = api.call("POST", f"/boards/{board_id}-lg/scores", body, token=server_token)
    assert scored.status == 200, scored.body
    return {"board_id": board_id, "player_id": "p-1"}


@pytest.fixture(scope="module")
def board_id() -> str:  # one board for the module (the conftest fixture is per test)
    return f"t-{uuid.uuid4().hex[:16]}"


def _request(route: Route, seeded: dict[str, str], tokens: dict[str, str]) -> dict[str, Any]:
    """A request the route accepts: the seeded ids, a token it allows, a valid body."""
    if "/league" in route.path:  # the league board beside the seeded one
        path = route.path.format(
            board_id=f"{seeded['board_id']}-lg", player_id="p-1", group_id="bronze-1"
        )
    else:
        path = route.path.format(**seeded)
    token = tokens["admin"] if route.authorizer else None
    body = None
    if route.route_key == "PUT /boards/{board_id}":
        body = {"title": "Seeded"}
    elif route.route_key == "POST /boards/{board_id}/scores":
        body = {"player_id": "p-1", "score": 1}
    elif route.route_key == "POST /boards/{board_id}/scores/batch":
        body = {"submissions": [{"player_id": "p-1", "score": 1}]}
    return {"method": route.method, "path": path, "token": token, "body": body}


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.route_key)
def test_the_documented_query_parameters_are_exactly_the_accepted_ones(
    route, api, seeded, admin_token
):
    """Each documented query parameter is accepted on its own; any other (every parameter some
    route takes, and a made-up one) is 400, named in `fields`: the handlers refuse unknown
    parameters rather than ignore them."""
    request = _request(route, seeded, {"admin": admin_token})
    documented = _parameters(route, "query")
    assert set(documented) <= set(SAMPLE_VALUES), "give the new parameter a sample value"
    assert set(documented) == CODE_PARAMS.get(route.route_key, set())
    required = REQUIRED_QUERY.get(route.route_key, {})
    assert {n for n, p in documented.items() if p.get("required")} == set(required)
    samples = SAMPLE_VALUES | ROUTE_SAMPLES.get(route.route_key, {})
    for name in documented:
        sent = required | {name: samples[name]}
        r = api.call(
            request["method"],
            f"{request['path']}?{urlencode(sent)}",
            request["body"],
            # reading as a viewer needs a token (a server's or admin's may name any player)
            token=admin_token if name == "viewer" else request["token"],
        )
        assert r.status < 300, (name, r.status, r.body)
    for name in (set(SAMPLE_VALUES) | {"undocumented"}) - set(documented):
        sent = required | {name: SAMPLE_VALUES.get(name, "1")}
        r = api.call(
            request["method"],
            f"{request['path']}?{urlencode(sent)}",
            request["body"],
            token=request["token"],
        )
        assert r.status == 400 and r.json()["fields"] == [name], (name, r.status, r.body)


@pytest.mark.parametrize(
    "path",
    ['/boards/a"b', "/boards/a`b/entries", "/boards/ok/players/a\\b", "/boards/ok/players/a{b}"],
)
def test_a_path_segment_no_identifier_allows_is_400_not_500(api, path):
    r = api.call("GET", path)
    assert r.status == 400 and r.json()["code"] == "bad_request", (r.status, r.body)


def test_percent_encoded_path_parameters_are_decoded_as_api_gateway_does(
    api, admin_token, server_token, seeded
):
    """encodeURIComponent writes `@` and `:` as %40 and %3A (the demo page does): a valid id
    must still be found, as in AWS, where an HTTP API hands the function the decoded path."""
    board = seeded["board_id"]
    body = {"player_id": "a@b:c", "score": 2}
    assert api.call("POST", f"/boards/{board}/scores", body, token=server_token).status == 200
    encoded_board = "%" + format(ord(board[0]), "02X") + board[1:]
    r = api.call("GET", f"/boards/{encoded_board}/players/a%40b%3Ac")
    assert r.status == 200 and r.json()["player_id"] == "a@b:c", r.body
    r = api.call("GET", f"/boards/{board}/players/a%2Fb")  # decodes to a second segment
    assert r.status == 400 and r.json()["field"] == "player_id", r.body


def test_an_unknown_route_is_the_documented_404(api):
    for method, path in [("GET", "/nope"), ("PATCH", "/boards/x"), ("GET", "/boards/x/")]:
        r = api.call(method, path)
        assert (r.status, r.json()) == (404, {"message": "Not Found"})


def _reply(status: int, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    raw = b"" if body is None else json.dumps(body).encode()
    sent = {"content-type": "application/json"} if body is not None else {}
    return {"status": status, "headers": sent | (headers or {}), "body": raw}


@pytest.mark.parametrize(
    ("method", "path", "reply", "complaint"),
    [
        ("GET", "/boards/{board_id}", _reply(418, {"message": "teapot"}), "not documented"),
        ("GET", "/health", _reply(500, {"message": "x"}), "not documented"),
        ("GET", "/boards", _reply(200, {"boards": [], "extra": 1}), "extra"),
        ("GET", "/boards/{board_id}", _reply(400, {"message": "no code"}), "'code'"),
        (
            "POST",
            "/boards/{board_id}/scores",
            _reply(429, {"message": "m"}, {"retry-after": "1"}),
            "'code' is a required",
        ),
        (
            "POST",
            "/boards/{board_id}/scores",
            _reply(429, {"message": "m", "code": "rate_limited"}),
            "Retry-After",
        ),
        (
            "POST",
            "/boards/{board_id}/scores",
            _reply(503, {"message": "m"}, {"retry-after": "soon"}),
            "integer",
        ),
        ("DELETE", "/boards/{board_id}/players/{player_id}", _reply(204, {}), "without a body"),
        ("GET", "/boards", {"status": 200, "headers": {}, "body": b"{}"}, "content-type"),
        (
            "GET",
            "/boards/{board_id}/entries",
            _reply(200, {"board_id": "a", "period": "all-time", "region": None, "total": 0}),
            "entries",
        ),
        (None, None, _reply(405, {"message": "Method Not Allowed"}), "not documented"),
    ],
)
def test_the_contract_check_refuses_what_the_document_does_not_describe(
    method, path, reply, complaint
):
    with pytest.raises(ContractViolation, match=complaint):
        check_response(method or "GET", path, reply["status"], reply["headers"], reply["body"])


def test_the_contract_check_accepts_what_the_document_describes():
    check_response("DELETE", "/boards/{board_id}/players/{player_id}", 204, {}, b"")
    check_response("GET", None, 404, {"content-type": "application/json"}, b'{"message": "x"}')
    error = {"message": "slow down", "code": "rate_limited"}
    headers = {"Content-Type": "application/json; charset=utf-8", "Retry-After": "3"}
    check_response("POST", "/boards/{board_id}/scores", 429, headers, json.dumps(error).encode())


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[str, int]]:
    """The local gateway on a real socket; /openapi.json never reaches a function."""

    def invoke(function: str, event: dict[str, Any]) -> Any:
        raise AssertionError(f"{function} must not be called")

    async def ainvoke(function: str, event: dict[str, Any]) -> Any:
        invoke(function, event)

    loop = EventLoopThread("test-openapi")
    server = HttpGateway(LocalApi(load(), invoke, "secret", ainvoke=ainvoke))
    host, port = asyncio.run_coroutine_threadsafe(server.start("127.0.0.1", 0), loop.loop).result()
    yield host, port
    asyncio.run_coroutine_threadsafe(server.close(), loop.loop).result(5)
    loop.stop()


def _get(address: tuple[str, int], path: str, host: str | None = None) -> Any:
    connection = http.client.HTTPConnection(*address, timeout=5)
    try:
        headers = {"Host": host} if host is not None else {}
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_the_local_gateway_serves_the_document_at_openapi_json(gateway):
    status, headers, body = _get(gateway, "/openapi.json")
    assert status == 200 and headers["content-type"] == "application/json"
    served = json.loads(body)
    host, port = gateway
    assert served["servers"] == [
        {"url": f"http://{host}:{port}", "description": "This local stack."}
    ]
    assert served | {"servers": None} == document() | {"servers": None}


def test_an_unusable_host_header_leaves_the_servers_relative(gateway):
    status, _, body = _get(gateway, "/openapi.json", host="evil.example/<script>")
    assert status == 200 and json.loads(body)["servers"] == [{"url": "/"}]


def test_an_unknown_path_over_http_is_the_documented_404(gateway):
    status, headers, body = _get(gateway, "/openapi.yaml")
    check_response("GET", None, status, headers, body)
    assert status == 404
