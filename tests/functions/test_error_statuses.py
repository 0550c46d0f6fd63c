"""400 or 422: one rule on every route (docs/API.md, "Errors"), checked against docs/openapi.json.

A table of bad requests walks every operation of the document, each sent through the template's
routes, the authorizer and the real handlers (the `api` fixture, on the session's Valkey and
PostgreSQL). For every case:

- the status is one the operation documents (and the reply matches it: `InProcessApi.call`);
- a 400 is a request the operation's JSON Schema refuses, a 422 one it accepts: the schema is
  the operation's parameters (path, query, headers; a query parameter the document does not
  name is refused, as the handlers refuse it) and its request body, checked with `jsonschema`.
  The strict-JSON rules every body follows (docs/API.md, "Conventions") come before any schema:
  a body that breaks them is no JSON instance at all, refused like invalid JSON.

And every operation that documents a 400 or a 422 has a case in the table that gets it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from tests.support.openapi_contract import BASE, _registry, document, resolve

METHODS = ("get", "put", "post", "delete")
NO_BODY = object()
WINDOW = {"starts_at": "2026-12-05T18:00:00Z", "ends_at": "2026-12-07T18:00:00Z"}
RECURRENCE = {"cron": "0 18 * * *", "timezone": "Europe/Berlin", "duration_seconds": 3600}
CUSTOM = {"periods": ["custom"]}
# The board the reads and writes meet: what each 422 of theirs needs (a region, bounds, an
# increment cap, a hook; no teams, no tie-breakers, no daily periods), and one entry.
PLAIN_RULES = {
    "periods": ["all-time", "weekly"],
    "regions": ["EU"],
    "min_score": -1000,
    "max_score": 50,
    "max_increment": 100,
    "validation_hook": {"target": "no_negative"},
}


@dataclass(frozen=True)
class Case:
    """A request and the status the rule gives it. `path` overrides the path parameters
    (board_id: the plain board, `{new}` an unknown one, `{sharded}` a sharded one; player_id:
    p-1); `query` is sent in order (a name twice is joined with a comma, as API Gateway does)."""

    method: str
    route: str
    status: int
    path: dict[str, str] = field(default_factory=dict)
    query: tuple[tuple[str, str], ...] = ()
    body: Any = NO_BODY
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    token: str | None = "admin"  # "admin", "server", "player" (sub p-1) or None


def q(**params: str) -> tuple[tuple[str, str], ...]:
    return tuple(params.items())


def put_board(status: int, body: Any = NO_BODY, **kw: Any) -> Case:
    return Case("PUT", "/boards/{board_id}", status, {"board_id": "{new}"}, body=body, **kw)


def score(status: int, body: Any = NO_BODY, **kw: Any) -> Case:
    return Case("POST", "/boards/{board_id}/scores", status, body=body, token="server", **kw)


def read(route: str, status: int, query: Any = (), **kw: Any) -> Case:
    return Case("GET", route, status, query=query, **{"token": None, **kw})


def watch(status: int, body: Any = NO_BODY, **kw: Any) -> Case:
    route = "/boards/{board_id}/players/{player_id}/watch"
    return Case("PUT", route, status, body=body, token="player", **kw)


ENTRIES = "/boards/{board_id}/entries"
PLAYERS = "/boards/{board_id}/players"
PLAYER = "/boards/{board_id}/players/{player_id}"
AROUND = "/boards/{board_id}/players/{player_id}/around"
STANDINGS = "/boards/{board_id}/players/{player_id}/standings"
HISTORY = "/boards/{board_id}/players/{player_id}/history"
HIDDEN = "/boards/{board_id}/hidden/{player_id}"
WATCH = "/boards/{board_id}/players/{player_id}/watch"
LEAGUE = "/boards/{board_id}/league"

CASES: dict[str, Case] = {
    # --- routes without parameters or a body -------------------------------------------
    "boards-unknown-param": read("/boards", 400, q(page="2")),
    "health-unknown-param": read("/health", 400, q(verbose="1")),
    "tournaments-bad-status": read("/tournaments", 400, q(status="soon")),
    "tournaments-unknown-param": read("/tournaments", 400, q(page="2")),
    "league-unknown-param": read(LEAGUE, 400, q(x="1"), path={"board_id": "{league}"}),
    "league-bad-season": read(LEAGUE, 400, q(season="weekly"), path={"board_id": "{league}"}),
    "league-player-unknown-param": read(
        f"{LEAGUE}/players/{{player_id}}", 400, q(x="1"), path={"board_id": "{league}"}
    ),
    "league-group-malformed-id": read(
        f"{LEAGUE}/groups/{{group_id}}", 400, path={"board_id": "{league}", "group_id": "Gold-1"}
    ),
    "league-group-unknown-tier": read(
        f"{LEAGUE}/groups/{{group_id}}", 422, path={"board_id": "{league}", "group_id": "gold-1"}
    ),
    "board-get-malformed-id": read("/boards/{board_id}", 400, path={"board_id": "Arena"}),
    "board-get-unknown-param": read("/boards/{board_id}", 400, q(x="1")),
    "periods-unknown-param": read("/boards/{board_id}/periods", 400, q(x="1")),
    "periods-malformed-id": read("/boards/{board_id}/periods", 400, path={"board_id": "-a"}),
    # --- PUT /boards/{board_id}: the request's shape (400) -------------------------------
    "board-invalid-json": put_board(400, raw=b'{"title": '),
    "board-duplicate-keys": put_board(400, raw=b'{"sort": "desc", "sort": "asc"}'),
    "board-nan": put_board(400, raw=b'{"max_score": NaN}'),
    "board-array-body": put_board(400, []),
    "board-no-body": put_board(400),
    "board-unknown-field": put_board(400, {"colour": "red"}),
    "board-unknown-param": put_board(400, {}, query=q(dry_run="1")),
    "board-malformed-path-id": Case(
        "PUT", "/boards/{board_id}", 400, {"board_id": "Arena"}, body={}
    ),
    "board-malformed-body-id": put_board(400, {"board_id": "Not An Id"}),
    "board-title-number": put_board(400, {"title": 7}),
    "board-bad-sort": put_board(400, {"sort": "up"}),
    "board-live_top-101": put_board(400, {"live_top": 101}),
    "board-max_increment-0": put_board(400, {"max_increment": 0}),
    "board-max_score-string": put_board(400, {"min_score": 10, "max_score": "5"}),
    "board-periods-repeat": put_board(400, {"periods": ["weekly", "weekly"]}),
    "board-region-lowercase": put_board(400, {"regions": ["eu"]}),
    "board-4-tiebreakers": put_board(400, {"tiebreakers": [{"name": f"c{i}"} for i in range(4)]}),
    "board-cron-four-fields": put_board(400, {**CUSTOM, "schedule": {"cron": "0 18 * *"}}),
    "board-timezone-shape": put_board(400, {**CUSTOM, "schedule": {"timezone": "../etc/passwd"}}),
    "board-rewards-top-1001": put_board(400, {"rewards": {"top": 1001}}),
    "board-rewards-rank-0": put_board(
        400, {"rewards": {"tiers": [{"name": "a", "ranks": [0, 5]}]}}
    ),
    "board-rewards-11-tiers": put_board(
        400, {"rewards": {"tiers": [{"name": f"t{i}", "ranks": [1, 1]} for i in range(11)]}}
    ),
    "board-rewards-top_percent-0": put_board(
        400, {"rewards": {"tiers": [{"name": "a", "top_percent": 0}]}}
    ),
    "board-rewards-ranks-and-percent": put_board(
        400, {"rewards": {"tiers": [{"name": "a", "ranks": [1, 2], "top_percent": 5}]}}
    ),
    "board-tournament-not-a-timestamp": put_board(
        400, {"tournament": {**WINDOW, "starts_at": "2026-12-05 18:00"}}
    ),
    "board-tournament-max_attempts-0": put_board(
        400, {"tournament": {**WINDOW, "max_attempts": 0}}
    ),
    "board-recurrence-duration-59": put_board(
        400, {"tournament": {"recurrence": {**RECURRENCE, "duration_seconds": 59}}}
    ),
    "board-recurrence-no-cron": put_board(
        400, {"tournament": {"recurrence": {"duration_seconds": 3600}}}
    ),
    "board-one-shot-without-ends_at": put_board(
        400, {"tournament": {"starts_at": WINDOW["starts_at"], "recurrence": None}}
    ),
    "board-hook-malformed-target": put_board(400, {"validation_hook": {"target": "Not A Name"}}),
    "board-hook-timeout-9": put_board(
        400, {"validation_hook": {"target": "no_negative", "timeout_ms": 9}}
    ),
    # shape first: a hook the deployment does not list (422) beside a malformed field
    "board-shape-before-rules": put_board(
        400, {"validation_hook": {"target": "elsewhere"}, "teams": "most"}
    ),
    # --- PUT /boards/{board_id}: rules the schema cannot state (422) ---------------------
    "board-min-above-max": put_board(422, {"min_score": 10, "max_score": 5}),
    "board-id-not-the-paths": put_board(422, {"board_id": "other-board"}),
    "board-max_increment-on-best": put_board(422, {"mode": "best", "max_increment": 5}),
    "board-shards-with-max_entries": put_board(422, {"shards": 4, "max_entries": 100}),
    "board-shards-with-teams": put_board(422, {"shards": 2, "teams": "sum"}),
    "board-custom-without-schedule": put_board(422, CUSTOM),
    "board-schedule-without-custom": put_board(422, {"schedule": {"timezone": "UTC"}}),
    "board-tournament-other-periods": put_board(
        422, {"tournament": WINDOW, "periods": ["all-time", "custom"]}
    ),
    "board-tournament-sharded": put_board(422, {"tournament": WINDOW, "shards": 2}),
    "board-tiebreaker-names-repeat": put_board(
        422, {"tiebreakers": [{"name": "t"}, {"name": "t", "sort": "desc"}]}
    ),
    "board-tier-names-repeat": put_board(
        422,
        {"rewards": {"tiers": [{"name": "a", "ranks": [1, 1]}, {"name": "a", "top_percent": 5}]}},
    ),
    "board-tier-from-above-to": put_board(
        422, {"rewards": {"tiers": [{"name": "a", "ranks": [5, 2]}]}}
    ),
    "board-tournament-ends-first": put_board(
        422, {"tournament": {**WINDOW, "ends_at": WINDOW["starts_at"]}}
    ),
    "board-tournament-367-days": put_board(
        422, {"tournament": {**WINDOW, "ends_at": "2027-12-08T18:00:00Z"}}
    ),
    "board-tournament-no-such-instant": put_board(
        422, {"tournament": {**WINDOW, "starts_at": "2026-02-30T18:00:00Z"}}
    ),
    "board-recurrence-unknown-zone": put_board(
        422, {"tournament": {"recurrence": {**RECURRENCE, "timezone": "Mars/Olympus"}}}
    ),
    "board-recurrence-never-fires": put_board(
        422, {"tournament": {"recurrence": {**RECURRENCE, "cron": "0 0 30 2 *"}}}
    ),
    "board-recurrence-no-window-in-bounds": put_board(
        422,
        {
            "tournament": {
                "recurrence": RECURRENCE,
                "starts_at": "2026-12-05T18:30:00Z",
                "ends_at": "2026-12-06T17:00:00Z",
            }
        },
    ),
    "board-cron-never-fires": put_board(422, {**CUSTOM, "schedule": {"cron": "0 0 30 2 *"}}),
    "board-cron-minute-60": put_board(422, {**CUSTOM, "schedule": {"cron": "60 * * * *"}}),
    "board-unknown-time-zone": put_board(422, {**CUSTOM, "schedule": {"timezone": "Mars/Olympus"}}),
    "board-hook-not-listed": put_board(422, {"validation_hook": {"target": "elsewhere"}}),
    # --- POST /boards/{board_id}/scores --------------------------------------------------
    "score-invalid-json": score(400, raw=b'{"player_id": "p-2", "score": 1,'),
    "score-missing": score(400, {"player_id": "p-2"}),
    "score-string": score(400, {"player_id": "p-2", "score": "100"}),
    "score-2^53": score(400, {"player_id": "p-2", "score": 2**53}),
    "score-unknown-field": score(400, {"player_id": "p-2", "score": 1, "rank": 1}),
    "score-unknown-param": score(400, {"player_id": "p-2", "score": 1}, query=q(x="1")),
    "score-malformed-player": score(400, {"player_id": "a b", "score": 1}),
    "score-malformed-region": score(400, {"player_id": "p-2", "score": 1, "region": "eu"}),
    "score-metadata-17-keys": score(
        400, {"player_id": "p-2", "score": 1, "metadata": {f"k{i}": i for i in range(17)}}
    ),
    "score-tiebreaker-not-integer": score(
        400, {"player_id": "p-2", "score": 1, "tiebreakers": {"t": 1.5}}
    ),
    "score-malformed-team": score(400, {"player_id": "p-2", "score": 1, "team_id": "a b"}),
    "score-idempotency-key-129": score(
        400, {"player_id": "p-2", "score": 1}, headers={"Idempotency-Key": "k" * 129}
    ),
    "score-region-not-the-boards": score(422, {"player_id": "p-2", "score": 1, "region": "NA"}),
    "score-beyond-max_increment": score(422, {"player_id": "p-2", "score": 101}),
    "score-beyond-max_score": score(422, {"player_id": "p-1", "score": 45}),
    "score-tiebreakers-the-board-lacks": score(
        422, {"player_id": "p-2", "score": 1, "tiebreakers": {"t": 1}}
    ),
    "score-team-the-board-lacks": score(422, {"player_id": "p-2", "score": 1, "team_id": "red"}),
    "score-rejected-by-hook": score(422, {"player_id": "p-2", "score": -5}),
    # --- POST /boards/{board_id}/scores/batch (an item's errors are in its 200) -----------
    "batch-empty": Case(
        "POST", "/boards/{board_id}/scores/batch", 400, body={"submissions": []}, token="server"
    ),
    "batch-not-a-list": Case(
        "POST", "/boards/{board_id}/scores/batch", 400, body={"submissions": {}}, token="server"
    ),
    "batch-unknown-field": Case(
        "POST",
        "/boards/{board_id}/scores/batch",
        400,
        body={"submissions": [{"player_id": "p-2", "score": 1}], "dry_run": True},
        token="server",
    ),
    # --- the reads ---------------------------------------------------------------------------
    "entries-limit-0": read(ENTRIES, 400, q(limit="0")),
    "entries-limit-text": read(ENTRIES, 400, q(limit="ten")),
    "entries-limit-twice": read(ENTRIES, 400, (("limit", "5"), ("limit", "6"))),
    "entries-unknown-param": read(ENTRIES, 400, q(sort="asc")),
    "entries-period-shape": read(ENTRIES, 400, q(period="weekly2")),
    "entries-region-lowercase": read(ENTRIES, 400, q(region="eu")),
    "entries-by-clan": read(ENTRIES, 400, q(by="clan")),
    "entries-malformed-team": read(ENTRIES, 400, q(team="a b")),
    "entries-malformed-viewer": read(ENTRIES, 400, q(viewer="a b"), token="server"),
    "entries-offset-and-around_rank": read(ENTRIES, 422, q(offset="0", around_rank="2")),
    "entries-by-team-and-team": read(ENTRIES, 422, q(by="team", team="red")),
    "entries-no-such-day": read(ENTRIES, 422, q(period="2026-02-30")),
    "entries-no-such-week": read(ENTRIES, 422, q(period="2026-W54")),
    "entries-no-such-month": read(ENTRIES, 422, q(period="2026-13")),
    "players-no-ids": read(PLAYERS, 400),
    "players-empty-item": read(PLAYERS, 400, q(ids="p-1,,p-2")),
    "players-101-ids": read(PLAYERS, 400, q(ids=",".join(["p-1"] * 101))),
    "players-unknown-param": read(PLAYERS, 400, q(ids="p-1", limit="5")),
    "players-no-such-day": read(PLAYERS, 422, q(ids="p-1", period="2026-02-30")),
    "players-by-team-and-team": read(PLAYERS, 422, q(ids="p-1", by="team", team="red")),
    "player-malformed-id": read(PLAYER, 400, path={"player_id": "a b"}),
    "player-period-shape": read(PLAYER, 400, q(period="Weekly")),
    "player-no-such-week": read(PLAYER, 422, q(period="2026-W54")),
    "player-by-team-and-team": read(PLAYER, 422, q(by="team", team="red")),
    "around-count-0": read(AROUND, 400, q(count="0")),
    "around-no-such-day": read(AROUND, 422, q(period="2026-02-30")),
    "around-by-team-and-team": read(AROUND, 422, q(by="team", team="red")),
    "standings-region-lowercase": read(STANDINGS, 400, q(region="eu")),
    "standings-unknown-param": read(STANDINGS, 400, q(period="weekly")),
    "history-kind-all-time": read(HISTORY, 400, q(kind="all-time")),
    "history-limit-101": read(HISTORY, 400, q(limit="101")),
    "history-before-shape": read(HISTORY, 400, q(before="2026/11")),
    "history-before-of-another-kind": read(HISTORY, 422, q(before="2026-11")),
    "history-before-week-for-daily": read(HISTORY, 422, q(kind="daily", before="2026-W47")),
    "history-before-no-such-week": read(HISTORY, 422, q(before="2026-W54")),
    # --- admin routes --------------------------------------------------------------------
    "delete-player-malformed": Case("DELETE", PLAYER, 400, {"player_id": "a b"}),
    "delete-player-unknown-param": Case("DELETE", PLAYER, 400, query=q(x="1")),
    "rebuild-unknown-param": Case("POST", "/boards/{board_id}/rebuild", 400, query=q(x="1")),
    "rebuild-malformed-board": Case(
        "POST", "/boards/{board_id}/rebuild", 400, {"board_id": "Arena"}
    ),
    "flags-bad-verdict": Case("GET", "/boards/{board_id}/flags", 400, query=q(verdict="accept")),
    "flags-limit-201": Case("GET", "/boards/{board_id}/flags", 400, query=q(limit="201")),
    "flags-bad-before": Case("GET", "/boards/{board_id}/flags", 400, query=q(before="nope")),
    "flags-malformed-player": Case(
        "GET", "/boards/{board_id}/flags", 400, query=q(player_id="a b")
    ),
    "hide-reason-501": Case("PUT", HIDDEN, 400, body={"reason": "x" * 501}),
    "hide-reason-number": Case("PUT", HIDDEN, 400, body={"reason": 5}),
    "hide-unknown-field": Case("PUT", HIDDEN, 400, body={"why": "x"}),
    "unhide-malformed-player": Case("DELETE", HIDDEN, 400, {"player_id": "a b"}),
    "hidden-limit-0": Case("GET", "/boards/{board_id}/hidden", 400, query=q(limit="0")),
    "hidden-malformed-after": Case("GET", "/boards/{board_id}/hidden", 400, query=q(after="a b")),
    "end-period-unknown-param": Case("POST", "/boards/{board_id}/periods/end", 400, query=q(x="1")),
    # --- tournament sign-ups and player channels ------------------------------------------
    "join-malformed-player": Case(
        "POST", "/boards/{board_id}/join", 400, body={"player_id": "a b"}
    ),
    "join-unknown-field": Case("POST", "/boards/{board_id}/join", 400, body={"team": "red"}),
    "watch-top_n-0": watch(400, {"top_n": 0}),
    "watch-unknown-field": watch(400, {"colour": "red"}),
    "watch-friend-twice": watch(400, {"friends": ["bob", "bob"]}),
    "watch-period-null": watch(400, {"period": None}),
    "watch-unknown-param": watch(400, {}, query=q(x="1")),
    "watch-period-the-board-lacks": watch(422, {"period": "daily"}),
    "watch-region-the-board-lacks": watch(422, {"region": "NA"}),
    "watch-friends-list-the-player": watch(422, {"friends": ["bob", "p-1"]}),
    "watch-sharded-board": watch(422, {}, path={"board_id": "{sharded}"}),
    "unwatch-bad-period": Case("DELETE", WATCH, 400, query=q(period="hourly"), token="player"),
    "unwatch-region-lowercase": Case("DELETE", WATCH, 400, query=q(region="eu"), token="player"),
    "unwatch-unknown-param": Case("DELETE", WATCH, 400, query=q(top_n="3"), token="player"),
    "unwatch-period-the-board-lacks": Case(
        "DELETE", WATCH, 422, query=q(period="daily"), token="player"
    ),
    "unwatch-region-the-board-lacks": Case(
        "DELETE", WATCH, 422, query=q(region="NA"), token="player"
    ),
}


# --- the operation's JSON Schema, and a request as an instance of it -----------------------


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for route, item in document()["paths"].items():
        for method in METHODS:
            if method in item:
                yield method.upper(), route, item[method]


def _anchored(node: Any) -> Any:
    """A copy whose local `$ref`s name the document (they resolve in the contract's registry)."""
    if isinstance(node, dict):
        return {
            k: (BASE + v if k == "$ref" and v.startswith("#") else _anchored(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_anchored(v) for v in node]
    return node


def _parameters(method: str, route: str) -> list[dict[str, Any]]:
    item = document()["paths"][route]
    found = item.get("parameters", []) + item[method.lower()].get("parameters", [])
    return [resolve(p) for p in found]


def request_schema(method: str, route: str) -> dict[str, Any]:
    """The operation's request as one JSON Schema: `path`, `query` (no other parameter: the
    handlers refuse unknown ones, as docs/API.md says) and `header` objects, and `body`."""
    params = _parameters(method, route)

    def located(where: str, closed: bool) -> dict[str, Any]:
        mine = [p for p in params if p["in"] == where]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p["name"].lower(): _anchored(p["schema"]) for p in mine},
            "required": [p["name"].lower() for p in mine if p.get("required")],
        }
        if closed:
            schema["additionalProperties"] = False
        return schema

    properties = {
        "path": located("path", True),
        "query": located("query", True),
        "header": located("header", False),
    }
    required = ["path", "query", "header"]
    body = document()["paths"][route][method.lower()].get("requestBody")
    if body is not None:
        properties["body"] = _anchored(body["content"]["application/json"]["schema"])
        if body.get("required"):
            required.append("body")
    return {"type": "object", "properties": properties, "required": required}


def _integer_parameters(method: str, route: str) -> set[str]:
    return {
        p["name"]
        for p in _parameters(method, route)
        if p["in"] == "query" and resolve(p["schema"]).get("type") == "integer"
    }


class NotStrictJson(ValueError):
    """A body that breaks the strict-JSON rules of docs/API.md, "Conventions"."""


def _strict_json(raw: bytes) -> Any:
    """The body as a JSON instance, by the rules every body follows before any schema: UTF-8,
    no NaN/Infinity, no duplicate key, integer literals of at most 20 digits, nesting of at
    most 8 levels, no U+0000 or unpaired surrogate."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            raise NotStrictJson("duplicate key")
        return dict(items)

    def constant(name: str) -> Any:
        raise NotStrictJson(name)

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > 20:
            raise NotStrictJson("integer literal too long")
        return int(text)

    try:
        value = json.loads(
            raw.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant, parse_int=integer
        )
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise NotStrictJson(str(error)) from None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > 8:
            raise NotStrictJson("nested too deeply")
        texts = [item] if isinstance(item, str) else list(item) if isinstance(item, dict) else []
        if any(re.search("[\x00\ud800-\udfff]", text) for text in texts):
            raise NotStrictJson("U+0000 or an unpaired surrogate")
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else []
        )
        stack.extend((child, depth + 1) for child in children)
    return value


def schema_refusal(case: Case, path: dict[str, str], query: str, body: bytes) -> str | None:
    """Why the operation's schema refuses this request (None: it accepts it)."""
    instance: dict[str, Any] = {"path": path, "query": {}, "header": {}}
    integers = _integer_parameters(case.method, case.route)
    for name, value in parse_qsl(query, keep_blank_values=True):
        joined = f"{instance['query'][name]},{value}" if name in instance["query"] else value
        instance["query"][name] = joined
    for name, value in instance["query"].items():  # form style: an integer is its digits
        if name in integers and re.fullmatch(r"-?[0-9]+", value):
            instance["query"][name] = int(value)
    instance["header"] = {k.lower(): v for k, v in case.headers.items()}
    if body:
        try:
            instance["body"] = _strict_json(body)
        except NotStrictJson as refused:
            return f"the body is not strict JSON: {refused}"
    validator = Draft202012Validator(request_schema(case.method, case.route), registry=_registry())
    error = best_match(validator.iter_errors(instance))
    if error is None:
        return None
    return f"{'/'.join(str(p) for p in error.absolute_path) or '(request)'}: {error.message}"


# --- the table, on real handlers -------------------------------------------------------------


@pytest.fixture(scope="module")
def boards(api, admin_token, server_token) -> dict[str, str]:
    """The boards the table meets: `{b}` plain (one entry, p-1 on EU), `{sharded}`, and an id
    no board has (`{new}`: a PUT refused with 400 or 422 creates nothing)."""
    tag = uuid.uuid4().hex[:12]
    plain, sharded = f"t-err-{tag}", f"t-err-{tag}-sharded"
    league = {"tiers": ["bronze", "silver"], "group_size": 5, "promote": 1, "relegate": 1}
    league_rules = {"periods": ["custom"], "schedule": {"cron": "0 0 * * MON"}, "league": league}
    for board_id, rules in (
        (plain, PLAIN_RULES),
        (sharded, {"shards": 2}),
        (f"{plain}-league", league_rules),
    ):
        r = api.call("PUT", f"/boards/{board_id}", rules, token=admin_token)
        assert r.status == 201, r.body
    entry = {"player_id": "p-1", "score": 10, "region": "EU"}
    r = api.call("POST", f"/boards/{plain}/scores", entry, token=server_token)
    assert r.status == 200, r.body
    return {
        "{b}": plain,
        "{sharded}": sharded,
        "{new}": f"t-err-{tag}-new",
        "{league}": f"{plain}-league",
    }


@pytest.mark.parametrize("name", list(CASES))
def test_each_error_is_documented_and_follows_the_rule(
    name, api, boards, admin_token, server_token
):
    case = CASES[name]
    path = {"board_id": "{b}", "player_id": "p-1"} | case.path
    path = {k: boards.get(v, v) for k, v in path.items() if "{" + k + "}" in case.route}
    url = case.route.format(**{k: quote(v, safe="") for k, v in path.items()})
    query = urlencode(case.query)
    tokens = {"admin": admin_token, "server": server_token, "player": api.token("p-1")}
    body = case.raw
    if body is None:
        body = b"" if case.body is NO_BODY else json.dumps(case.body).encode()
    r = api.call(
        case.method,
        f"{url}?{query}" if query else url,
        token=tokens.get(case.token or ""),
        headers=case.headers,
        raw=body,
    )  # a status or body the document does not describe fails here (openapi_contract.py)
    documented = document()["paths"][case.route][case.method.lower()]["responses"]
    assert str(r.status) in documented, (r.status, r.body[:300])
    assert r.status == case.status, (r.status, r.body[:300])
    refused = schema_refusal(case, path, query, body)
    if r.status == 400:
        assert refused is not None, f"400, but the schema accepts the request: {r.body[:300]!r}"
    else:
        assert refused is None, f"422, but the schema refuses the request ({refused})"


def test_every_documented_400_and_422_has_a_case():
    """A status an operation documents but no case produces is a promise nobody checks."""
    missing = []
    for method, route, op in _operations():
        for status in ("400", "422"):
            if status in op["responses"] and not any(
                c.method == method and c.route == route and str(c.status) == status
                for c in CASES.values()
            ):
                missing.append(f"{method} {route} {status}")
    assert missing == []
    named = {(c.method, c.route) for c in CASES.values()}
    assert named <= {(m, r) for m, r, _ in _operations()}, "a case names no operation"


def test_the_schema_check_tells_the_cases_apart():
    """The instance the rule is checked on: what the schema refuses is refused, for the reason
    the case is about, and nothing else is."""
    route = ENTRIES
    ok = Case("GET", route, 200)
    assert schema_refusal(ok, {"board_id": "arena"}, "limit=5&offset=3", b"") is None
    assert schema_refusal(ok, {"board_id": "arena"}, "limit=5&limit=6", b"")  # "5,6"
    assert schema_refusal(ok, {"board_id": "arena"}, "limit=%2B5", b"")  # "+5": no integer
    assert schema_refusal(ok, {"board_id": "Arena"}, "", b"")
    assert schema_refusal(ok, {"board_id": "arena"}, "colour=red", b"")
    board = Case("PUT", "/boards/{board_id}", 200)
    assert schema_refusal(board, {"board_id": "a"}, "", b'{"title": "x"}') is None
    assert schema_refusal(board, {"board_id": "a"}, "", b"")  # the body is required
    for raw in (b'{"a": 1, "a": 2}', b'{"max_score": NaN}', b'{"title": "\\u0000"}', b"{"):
        assert "strict JSON" in str(schema_refusal(board, {"board_id": "a"}, "", raw)), raw
    key = Case("POST", "/boards/{board_id}/scores", 200, headers={"Idempotency-Key": "k" * 129})
    assert schema_refusal(key, {"board_id": "a"}, "", b'{"score": 1}')
