"""Malformed requests: every one gets a 4xx with a `message`, never a 5xx, and changes nothing.

Each case runs against a fresh board (regions EU/NA, all four period kinds, bounds, a
max_increment and a generous rate limit) seeded with a few valid scores. The board's Redis keys
(all but the rate-limit buckets), its catalog entry and its PostgreSQL row are snapshotted
before and after the request and must be identical.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

BOARD_RULES = {
    "title": "Bad input",
    "sort": "desc",
    "mode": "increment",
    "periods": ["all-time", "daily", "weekly", "monthly"],
    "ties": "shared",
    "regions": ["EU", "NA"],
    "min_score": -500,
    "max_score": 500,
    "max_increment": 300,
    "rate_limit_per_minute": 100_000,
}
SEED = [
    {"player_id": "p-1", "score": 250, "region": "EU", "metadata": {"name": "Ada"}},
    {"player_id": "p-2", "score": -250, "region": "NA"},
    {"player_id": "p-3", "score": 200},
]

_NO_BODY = object()


@dataclass(frozen=True)
class Bad:
    """One malformed request. `path` may use {b} (the seeded board) and {missing} (an unknown
    board); `status` is the status the contract fixes (an int, or a tuple of acceptable ones)."""

    method: str
    path: str
    body: Any = _NO_BODY
    raw: bytes | None = None
    token: str | None = "server"  # "server", "admin", "player" (sub p-1) or None
    headers: dict[str, str] = field(default_factory=dict)
    status: int | tuple[int, ...] = 400


def score(
    body: Any = _NO_BODY,
    *,
    raw: bytes | None = None,
    status: Any = 400,
    headers: dict[str, str] | None = None,
    board: str = "{b}",
) -> Bad:
    return Bad("POST", f"/boards/{board}/scores", body, raw, "server", headers or {}, status)


def put_board(
    body: Any = _NO_BODY, *, raw: bytes | None = None, status: Any = 400, board: str = "{b}"
) -> Bad:
    return Bad("PUT", f"/boards/{board}", body, raw, "admin", {}, status)


def get(path: str, status: Any = 400) -> Bad:
    return Bad("GET", path, token=None, status=status)


def delete(path: str, status: Any = 400) -> Bad:
    return Bad("DELETE", path, token="admin", status=status)


def _nested(levels: int) -> bytes:
    return (
        b'{"player_id":"p-1","score":1,"metadata":'
        + b'{"a":' * levels
        + b"1"
        + b"}" * levels
        + b"}"
    )


def _fullwidth(text: str) -> str:
    return text.translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})


_THIS_MONTH = datetime.now(UTC).strftime("%Y-%m")
_FAR_FUTURE_DAY = "9999-12-31"
_INJECT_SQL = "x'%3B%20DROP%20TABLE%20boards%3B--"
_INJECT_LUA = "p1%22%5D)%20redis.call('FLUSHALL')%20--"


CASES = [
    # --- POST /scores: bodies that are not a valid JSON object ---------------------------
    pytest.param(score(raw=b'{"player_id": "p-1", "score": 1,'), id="score-invalid-json"),
    pytest.param(score(raw=b'{"player_id":"p-1","score":NaN}'), id="score-nan-literal"),
    pytest.param(score(raw=b'{"player_id":"p-1","score":Infinity}'), id="score-infinity-literal"),
    pytest.param(score(raw=b'{"player_id":"p-1","score":-Infinity}'), id="score-neg-infinity"),
    pytest.param(score(raw=b'{"player_id":"p-1","score":1e400}'), id="score-1e400-overflows"),
    pytest.param(
        score(
            raw=b'{"player_id":"p-1","score":1,"metadata":{"x":"' + b"a" * (16 * 1024) + b'"}}',
            status=413,
        ),
        id="score-body-over-16KiB",
    ),
    pytest.param(
        score(raw=b'{"player_id":"p-1","score":1,"metadata":{"n":"\xff\xfe"}}'),
        id="score-non-utf8-bytes",
    ),
    pytest.param(
        score(raw=b"\xff\xfe{}"),
        id="score-non-utf8-bom-garbage",
    ),
    pytest.param(score(raw=b'[{"player_id":"p-1","score":1}]'), id="score-json-array-body"),
    pytest.param(score(raw=b'"p-1"'), id="score-json-string-body"),
    pytest.param(score(raw=b"null"), id="score-json-null-body"),
    pytest.param(score(raw=b""), id="score-empty-body"),
    pytest.param(score(raw=b'{"player_id":"p-1","score":1,"score":2}'), id="score-duplicate-keys"),
    pytest.param(score(raw=_nested(10)), id="score-nested-10-levels"),
    pytest.param(score(raw=b"[" * 8000 + b"]" * 8000), id="score-nested-8000-levels"),
    pytest.param(
        score(raw=_nested(700)),
        id="score-nested-700-levels",
    ),
    pytest.param(
        score(raw=b'{"player_id":"p-1","score":' + b"9" * 5000 + b"}"),
        id="score-5000-digit-integer",
    ),
    # --- POST /scores: scores of the wrong type or out of range -------------------------
    pytest.param(score({"player_id": "p-1", "score": True}), id="score-boolean"),
    pytest.param(score({"player_id": "p-1", "score": None}), id="score-null"),
    pytest.param(score({"player_id": "p-1", "score": "100"}), id="score-numeric-string"),
    pytest.param(score({"player_id": "p-1", "score": "NaN"}), id="score-nan-string"),
    pytest.param(score({"player_id": "p-1", "score": "Infinity"}), id="score-infinity-string"),
    pytest.param(score({"player_id": "p-1", "score": [1]}), id="score-array"),
    pytest.param(score({"player_id": "p-1", "score": {"v": 1}}), id="score-object"),
    pytest.param(score({"player_id": "p-1"}), id="score-missing"),
    pytest.param(score({"player_id": "p-1", "score": 2**53}), id="score-2^53"),
    pytest.param(score({"player_id": "p-1", "score": -(2**53)}), id="score-minus-2^53"),
    pytest.param(score({"player_id": "p-1", "score": 1.5e300}), id="score-1.5e300"),
    # --- POST /scores: board rules (422) -------------------------------------------------
    pytest.param(
        score({"player_id": "p-1", "score": 300}, status=422), id="score-result-above-max_score"
    ),
    pytest.param(
        score({"player_id": "p-2", "score": -300}, status=422), id="score-result-below-min_score"
    ),
    pytest.param(
        score({"player_id": "p-3", "score": 301}, status=422),
        id="score-increment-above-max_increment",
    ),
    pytest.param(
        score({"player_id": "p-3", "score": -301}, status=422),
        id="score-negative-increment-above-max_increment",
    ),
    pytest.param(
        score({"player_id": "p-3", "score": 2**53 - 1}, status=422),
        id="score-2^53-1-above-max_increment",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "region": "ASIA"}, status=422),
        id="score-region-not-in-board",
    ),
    pytest.param(
        score(
            {"player_id": "p-1", "score": 300},
            headers={"Idempotency-Key": "k-rejected-1"},
            status=422,
        ),
        id="score-rejected-with-idempotency-key-stores-nothing",
    ),
    # --- POST /scores: metadata ----------------------------------------------------------
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {f"k{i}": i for i in range(17)}}),
        id="metadata-17-keys",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"name": "x" * 257}}),
        id="metadata-257-char-string",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"a": {"b": 1}}}),
        id="metadata-nested-object",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"a": [1, 2]}}),
        id="metadata-nested-array",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"a": None}}), id="metadata-null-value"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": "name=Ada"}), id="metadata-string"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": [{"a": 1}]}), id="metadata-array"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"": "empty key"}}),
        id="metadata-empty-key",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"k" * 65: 1}}),
        id="metadata-65-char-key",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"big": 2**53}}),
        id="metadata-number-2^53",
    ),
    pytest.param(
        score(raw=b'{"player_id":"p-1","score":1,"metadata":{"n":NaN}}'), id="metadata-nan-literal"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "metadata": {"name": "x" * 12000}}),
        id="metadata-huge-string",
    ),
    # --- POST /scores: identifiers, fields, headers --------------------------------------
    pytest.param(score({"player_id": "", "score": 1}), id="player-empty"),
    pytest.param(score({"player_id": "p" * 65, "score": 1}), id="player-65-chars"),
    pytest.param(score({"player_id": "p 1", "score": 1}), id="player-space"),
    pytest.param(score({"player_id": "a/b", "score": 1}), id="player-slash"),
    pytest.param(score({"player_id": "jörg", "score": 1}), id="player-unicode"),
    pytest.param(score({"player_id": "p-1\n", "score": 1}), id="player-trailing-newline"),
    pytest.param(score({"player_id": 17, "score": 1}), id="player-number"),
    pytest.param(score({"player_id": "x' OR '1'='1", "score": 1}), id="player-sql-injection"),
    pytest.param(
        score({"player_id": "p1\"]) redis.call('FLUSHALL') --", "score": 1}),
        id="player-lua-injection",
    ),
    pytest.param(score({"player_id": "p-1", "score": 1, "region": "eu"}), id="region-lowercase"),
    pytest.param(score({"player_id": "p-1", "score": 1, "region": "E"}), id="region-one-letter"),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "region": "EU "}), id="region-trailing-space"
    ),
    pytest.param(score({"player_id": "p-1", "score": 1, "region": ""}), id="region-empty"),
    pytest.param(score({"player_id": "p-1", "score": 1, "region": 44}), id="region-number"),
    pytest.param(
        score({"player_id": "p-1", "score": 1, "region": "EU') --"}), id="region-injection"
    ),
    pytest.param(score({"player_id": "p-1", "score": 1, "rank": 1}), id="score-unknown-field"),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, headers={"Idempotency-Key": "k" * 129}),
        id="idempotency-key-129-chars",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, headers={"Idempotency-Key": "key\x01x"}),
        id="idempotency-key-control",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, headers={"Idempotency-Key": "key\tx"}),
        id="idempotency-key-tab",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, headers={"Idempotency-Key": "clé"}),
        id="idempotency-key-non-ascii",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, headers={"Idempotency-Key": ""}),
        id="idempotency-key-empty",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, board="{missing}", status=404),
        id="score-unknown-board",
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, board="Arena"), id="score-board-uppercase"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, board="b" * 65), id="score-board-65-chars"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, board="-arena"), id="score-board-leading-dash"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, board=_INJECT_SQL), id="score-board-sql-injection"
    ),
    pytest.param(
        score({"player_id": "p-1", "score": 1}, board="a%2Fb"), id="score-board-encoded-slash"
    ),
    # --- PUT /boards/{id} ----------------------------------------------------------------
    pytest.param(put_board({"sort": "up"}), id="board-bad-sort"),
    pytest.param(put_board({"sort": ["desc"]}), id="board-sort-list"),
    pytest.param(put_board({"mode": "max"}), id="board-bad-mode"),
    pytest.param(put_board({"ties": "random"}), id="board-bad-ties"),
    pytest.param(put_board({"periods": ["yearly"]}), id="board-unknown-period-kind"),
    pytest.param(put_board({"periods": []}), id="board-empty-periods"),
    pytest.param(put_board({"periods": "weekly"}), id="board-periods-string"),
    pytest.param(put_board({"periods": ["weekly", "weekly"]}), id="board-periods-repeat"),
    pytest.param(put_board({"periods": [["weekly"]]}), id="board-periods-nested"),
    pytest.param(put_board({"regions": ["eu"]}), id="board-region-lowercase"),
    pytest.param(put_board({"regions": []}), id="board-regions-empty"),
    pytest.param(put_board({"regions": "EU"}), id="board-regions-string"),
    pytest.param(put_board({"regions": ["EU", "EU"]}), id="board-regions-repeat"),
    pytest.param(
        put_board({"regions": [f"R{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(33)]}),
        id="board-33-regions",
    ),
    pytest.param(put_board({"max_entries": 0}), id="board-max_entries-0"),
    pytest.param(put_board({"max_entries": -1}), id="board-max_entries-negative"),
    pytest.param(put_board({"max_entries": "10"}), id="board-max_entries-string"),
    pytest.param(put_board({"max_entries": 1.5}), id="board-max_entries-float"),
    pytest.param(put_board({"max_entries": True}), id="board-max_entries-boolean"),
    pytest.param(
        put_board({"min_score": 10, "max_score": 5}, status=422), id="board-min-above-max"
    ),
    pytest.param(put_board({"min_score": 600}, status=422), id="board-min-above-existing-max"),
    pytest.param(put_board({"min_score": "NaN"}), id="board-min_score-nan-string"),
    pytest.param(put_board(raw=b'{"max_score":Infinity}'), id="board-max_score-infinity"),
    pytest.param(put_board({"max_score": 2**53}), id="board-max_score-2^53"),
    pytest.param(put_board({"max_increment": 0}), id="board-max_increment-0"),
    pytest.param(put_board({"max_increment": -5}), id="board-max_increment-negative"),
    pytest.param(put_board({"rate_limit_per_minute": 0}), id="board-rate-limit-0"),
    pytest.param(put_board({"rate_limit_per_minute": 100_001}), id="board-rate-limit-too-big"),
    pytest.param(put_board({"live_top": 0}), id="board-live-top-0"),
    pytest.param(put_board({"live_top": 101}), id="board-live-top-101"),
    pytest.param(put_board({"live_top": "10"}), id="board-live-top-string"),
    pytest.param(put_board({"live_top": None}), id="board-live-top-null"),
    pytest.param(put_board({"title": "t" * 101}), id="board-title-101-chars"),
    pytest.param(put_board({"title": 7}), id="board-title-number"),
    pytest.param(put_board({"colour": "red"}), id="board-unknown-field"),
    pytest.param(put_board({"board_id": "other-board"}, status=422), id="board-id-mismatch"),
    pytest.param(put_board(raw=b'["desc"]'), id="board-array-body"),
    pytest.param(put_board(raw=b'{"sort": "desc"'), id="board-invalid-json"),
    pytest.param(put_board(raw=b'{"sort":"desc","sort":"asc"}'), id="board-duplicate-keys"),
    pytest.param(put_board(raw=b""), id="board-empty-body"),
    pytest.param(put_board({"title": "x" * (17 * 1024)}, status=413), id="board-body-over-16KiB"),
    pytest.param(put_board({"sort": "asc"}, status=409), id="board-sort-change-with-entries"),
    pytest.param(put_board({"mode": "best"}, status=422), id="board-max_increment-on-best-board"),
    pytest.param(put_board({"title": "x"}, board="Arena"), id="board-put-uppercase-id"),
    pytest.param(put_board({"title": "x"}, board="b" * 65), id="board-put-65-char-id"),
    pytest.param(put_board({"title": "x"}, board="-arena"), id="board-put-leading-dash"),
    pytest.param(put_board({"title": "x"}, board=_INJECT_SQL), id="board-put-sql-injection"),
    # --- GET /entries ----------------------------------------------------------------------
    pytest.param(get("/boards/{b}/entries?limit=0"), id="entries-limit-0"),
    pytest.param(get("/boards/{b}/entries?limit=101"), id="entries-limit-101"),
    pytest.param(get("/boards/{b}/entries?limit=1000"), id="entries-limit-1000"),
    pytest.param(get("/boards/{b}/entries?limit=abc"), id="entries-limit-abc"),
    pytest.param(get("/boards/{b}/entries?limit=1.5"), id="entries-limit-1.5"),
    pytest.param(get("/boards/{b}/entries?limit=-5"), id="entries-limit-negative"),
    pytest.param(get("/boards/{b}/entries?limit="), id="entries-limit-empty"),
    pytest.param(get("/boards/{b}/entries?limit=1e2"), id="entries-limit-exponent"),
    pytest.param(get("/boards/{b}/entries?limit=5&limit=6"), id="entries-limit-twice"),
    pytest.param(get("/boards/{b}/entries?offset=-1"), id="entries-offset-negative"),
    pytest.param(get("/boards/{b}/entries?offset=99999999999"), id="entries-offset-huge"),
    pytest.param(get("/boards/{b}/entries?offset=0x10"), id="entries-offset-hex"),
    pytest.param(get("/boards/{b}/entries?around_rank=0"), id="entries-around_rank-0"),
    pytest.param(get("/boards/{b}/entries?around_rank=-3"), id="entries-around_rank-negative"),
    pytest.param(
        get("/boards/{b}/entries?offset=0&around_rank=2", status=422),
        id="entries-offset-and-around_rank",
    ),
    pytest.param(get("/boards/{b}/entries?period=2026-W54", status=422), id="period-week-54"),
    pytest.param(get("/boards/{b}/entries?period=2026-W00", status=422), id="period-week-00"),
    pytest.param(get("/boards/{b}/entries?period=2026-13", status=422), id="period-month-13"),
    pytest.param(get("/boards/{b}/entries?period=2026-00", status=422), id="period-month-00"),
    pytest.param(get("/boards/{b}/entries?period=2026-02-30", status=422), id="period-feb-30"),
    pytest.param(get("/boards/{b}/entries?period=weekly2"), id="period-weekly2"),
    pytest.param(get("/boards/{b}/entries?period=Weekly"), id="period-capitalised"),
    pytest.param(get("/boards/{b}/entries?period=2026-1-5"), id="period-short-day"),
    pytest.param(get("/boards/{b}/entries?period="), id="period-empty"),
    pytest.param(
        get("/boards/{b}/entries?period=%27%3B%20DROP%20TABLE%20boards%3B--"),
        id="period-sql-injection",
    ),
    pytest.param(
        get("/boards/{b}/entries?period=9999-W52", status=422),
        id="period-week-9999-W52",
    ),
    pytest.param(
        get(f"/boards/{{b}}/entries?period={_FAR_FUTURE_DAY}", status=422),
        id="period-9999-12-31",
    ),
    pytest.param(
        get(f"/boards/{{b}}/entries?period={_fullwidth(_THIS_MONTH)}"),
        id="period-fullwidth-digits",
    ),
    pytest.param(get("/boards/{b}/entries?region=eu"), id="entries-region-lowercase"),
    pytest.param(get("/boards/{b}/entries?region=E%20U"), id="entries-region-space"),
    pytest.param(
        get("/boards/{b}/entries?region=ASIA", status=(404, 422)), id="entries-region-not-in-board"
    ),
    pytest.param(get("/boards/{b}/entries?sort=asc"), id="entries-unknown-param"),
    pytest.param(get("/boards/{b}/entries?count=5"), id="entries-count-param"),
    pytest.param(get("/boards/{missing}/entries", status=404), id="entries-unknown-board"),
    pytest.param(get("/boards/Arena/entries"), id="entries-board-uppercase"),
    pytest.param(get(f"/boards/{'b' * 65}/entries"), id="entries-board-65-chars"),
    pytest.param(get("/boards/-arena/entries"), id="entries-board-leading-dash"),
    pytest.param(get(f"/boards/{_INJECT_SQL}/entries"), id="entries-board-sql-injection"),
    pytest.param(get("/boards/{missing}", status=404), id="board-get-unknown"),
    pytest.param(get("/boards/Arena"), id="board-get-uppercase"),
    # --- GET /players/{p} and /around ------------------------------------------------------
    pytest.param(get("/boards/{b}/players/p%201"), id="player-get-space"),
    pytest.param(get(f"/boards/{{b}}/players/{'p' * 65}"), id="player-get-65-chars"),
    pytest.param(get("/boards/{b}/players/a%2Fb"), id="player-get-encoded-slash"),
    pytest.param(get("/boards/{b}/players/j%C3%B6rg"), id="player-get-unicode"),
    pytest.param(get(f"/boards/{{b}}/players/{_INJECT_LUA}"), id="player-get-lua-injection"),
    pytest.param(get("/boards/{b}/players/nobody", status=404), id="player-get-unknown"),
    pytest.param(get("/boards/{b}/players/p-1?limit=5"), id="player-get-unknown-param"),
    pytest.param(
        get("/boards/{b}/players/p-1?period=2026-02-30", status=422), id="player-get-bad-period"
    ),
    pytest.param(get("/boards/{b}/players/p-1?region=Eu"), id="player-get-bad-region"),
    pytest.param(get("/boards/{missing}/players/p-1", status=404), id="player-get-unknown-board"),
    pytest.param(get("/boards/{b}/players/p-1/around?count=0"), id="around-count-0"),
    pytest.param(get("/boards/{b}/players/p-1/around?count=101"), id="around-count-101"),
    pytest.param(get("/boards/{b}/players/p-1/around?count=ten"), id="around-count-text"),
    pytest.param(get("/boards/{b}/players/p-1/around?offset=2"), id="around-unknown-param"),
    pytest.param(
        get("/boards/{b}/players/p-1/around?period=2026-W54", status=422), id="around-bad-period"
    ),
    pytest.param(get("/boards/{b}/players/nobody/around", status=404), id="around-unknown-player"),
    pytest.param(get("/boards/{b}/players/p%3B1/around"), id="around-bad-player"),
    # --- GET /players?ids=, /standings and /history -----------------------------------------
    pytest.param(get("/boards/{b}/players"), id="players-no-ids"),
    pytest.param(get("/boards/{b}/players?ids="), id="players-ids-empty"),
    pytest.param(get("/boards/{b}/players?ids=p-1,,p-2"), id="players-ids-empty-item"),
    pytest.param(get("/boards/{b}/players?ids=p-1,"), id="players-ids-trailing-comma"),
    pytest.param(get("/boards/{b}/players?ids=p%201"), id="players-ids-space"),
    pytest.param(get(f"/boards/{{b}}/players?ids={'p' * 65}"), id="players-ids-65-chars"),
    pytest.param(get(f"/boards/{{b}}/players?ids={_INJECT_LUA}"), id="players-ids-lua-injection"),
    pytest.param(
        get("/boards/{b}/players?ids=" + ",".join(f"p{i}" for i in range(101))),
        id="players-ids-101-distinct",
    ),
    pytest.param(
        get("/boards/{b}/players?" + "&".join(f"ids=p{i}" for i in range(101))),
        id="players-ids-101-repeated-params",
    ),
    pytest.param(get("/boards/{b}/players?ids=p-1&limit=5"), id="players-unknown-param"),
    pytest.param(
        get("/boards/{b}/players?ids=p-1&period=2026-W54", status=422), id="players-bad-period"
    ),
    pytest.param(get("/boards/{b}/players?ids=p-1&region=eu"), id="players-bad-region"),
    pytest.param(
        get("/boards/{b}/players?ids=p-1&region=ASIA", status=404), id="players-region-not-in-board"
    ),
    pytest.param(get("/boards/{missing}/players?ids=p-1", status=404), id="players-unknown-board"),
    pytest.param(get("/boards/{b}/players/nobody/standings", status=404), id="standings-no-entry"),
    pytest.param(get("/boards/{b}/players/p-1/standings?period=weekly"), id="standings-period"),
    pytest.param(get("/boards/{b}/players/p-1/standings?region=eu"), id="standings-bad-region"),
    pytest.param(
        get("/boards/{b}/players/p-1/standings?region=ASIA", status=404),
        id="standings-region-not-in-board",
    ),
    pytest.param(get("/boards/{b}/players/p%3B1/standings"), id="standings-bad-player"),
    pytest.param(
        get("/boards/{missing}/players/p-1/standings", status=404), id="standings-unknown-board"
    ),
    pytest.param(get("/boards/{b}/players/p-1/history?kind=all-time"), id="history-kind-all-time"),
    pytest.param(get("/boards/{b}/players/p-1/history?kind=Weekly"), id="history-kind-capitals"),
    pytest.param(get("/boards/{b}/players/p-1/history?kind="), id="history-kind-empty"),
    pytest.param(get("/boards/{b}/players/p-1/history?limit=0"), id="history-limit-0"),
    pytest.param(get("/boards/{b}/players/p-1/history?limit=101"), id="history-limit-101"),
    pytest.param(
        get("/boards/{b}/players/p-1/history?before=2026-W54", status=422), id="history-before-w54"
    ),
    pytest.param(
        get("/boards/{b}/players/p-1/history?before=2026-11", status=422),
        id="history-before-other-kind",
    ),
    pytest.param(
        get("/boards/{b}/players/p-1/history?kind=daily&before=2026-W47", status=422),
        id="history-before-week-for-daily",
    ),
    pytest.param(get("/boards/{b}/players/p-1/history?before="), id="history-before-empty"),
    pytest.param(
        get("/boards/{b}/players/p-1/history?before=%27%3B%20DROP%20TABLE%20boards%3B--"),
        id="history-before-sql-injection",
    ),
    pytest.param(get("/boards/{b}/players/p-1/history?region=E1"), id="history-bad-region"),
    pytest.param(get("/boards/{b}/players/p-1/history?offset=10"), id="history-unknown-param"),
    pytest.param(get("/boards/{b}/players/p%201/history"), id="history-bad-player"),
    pytest.param(
        get("/boards/{missing}/players/p-1/history", status=404), id="history-unknown-board"
    ),
    # --- DELETE /boards/{id}/players/{p} (admin) ----------------------------------------------
    pytest.param(delete("/boards/{b}/players/p%201"), id="delete-player-space"),
    pytest.param(delete(f"/boards/{{b}}/players/{'p' * 65}"), id="delete-player-65-chars"),
    pytest.param(delete("/boards/{b}/players/a%2Fb"), id="delete-player-encoded-slash"),
    pytest.param(delete("/boards/{b}/players/p-1'%3B--"), id="delete-player-sql-injection"),
    pytest.param(delete(f"/boards/{{b}}/players/{_INJECT_LUA}"), id="delete-player-lua-injection"),
    pytest.param(delete("/boards/{b}/players/%2A"), id="delete-player-glob-star"),
    pytest.param(delete("/boards/{missing}/players/p-1", status=404), id="delete-unknown-board"),
    pytest.param(delete("/boards/Arena/players/p-1"), id="delete-board-uppercase"),
    pytest.param(delete("/boards/-arena/players/p-1"), id="delete-board-leading-dash"),
]


# --- fixtures and state snapshots ----------------------------------------------------------


def _read_key(client: Any, key: str) -> Any:
    kind = client.type(key)
    if kind == "string":
        return kind, client.get(key)
    if kind == "hash":
        return kind, client.hgetall(key)
    if kind == "zset":
        return kind, client.zrange(key, 0, -1, withscores=True)
    if kind == "set":
        return kind, sorted(client.smembers(key))
    if kind == "list":
        return kind, client.lrange(key, 0, -1)
    return kind, client.dump(key)


def snapshot(client: Any, database_url: str, board_id: str) -> dict[str, Any]:
    """Everything stored for a board, except the rate-limit buckets."""
    rate_prefix = f"lb:{{{board_id}}}:rl:"
    keys = sorted(
        k
        for k in client.scan_iter(match=f"lb:\\{{{board_id}\\}}:*", count=1000)
        if not k.startswith(rate_prefix)
    )
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT config, version, created_at, updated_at FROM boards WHERE board_id = %s",
            (board_id,),
        ).fetchone()
    return {
        "redis": {key: _read_key(client, key) for key in keys},
        "catalog": client.hget("lb:boards", board_id),
        "postgres": row,
    }


@pytest.fixture(scope="module")
def seeded(api, admin_token, server_token) -> str:
    """One board for the whole table: every case is refused, and each checks that its board
    is as it was before it (a case that changed it fails there, whatever the cases after)."""
    board_id = f"t-{uuid.uuid4().hex[:16]}"
    created = api.call("PUT", f"/boards/{board_id}", BOARD_RULES, token=admin_token)
    assert created.status == 201, created.body
    for body in SEED:
        r = api.call("POST", f"/boards/{board_id}/scores", body, token=server_token)
        assert r.status == 200, r.body
    return board_id


def _tokens(api: Any, admin_token: str, server_token: str) -> dict[str | None, str | None]:
    return {None: None, "admin": admin_token, "server": server_token, "player": api.token("p-1")}


# --- the table ---------------------------------------------------------------------------


def test_table_is_large_enough():
    assert len(CASES) >= 45
    assert len({p.id for p in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES)
def test_malformed_request_is_a_4xx_and_changes_nothing(
    case: Bad, api, admin_token, server_token, seeded, redis_client, database_url
):
    missing = f"{seeded}-missing"
    before = snapshot(redis_client, database_url, seeded)
    assert any(":z:all-time" in key for key in before["redis"]), "the board was not seeded"
    assert before["catalog"] is not None and before["postgres"] is not None
    missing_before = snapshot(redis_client, database_url, missing)
    assert missing_before == {"redis": {}, "catalog": None, "postgres": None}

    path = case.path.format(b=seeded, missing=missing)
    token = _tokens(api, admin_token, server_token)[case.token]
    body = None if case.body is _NO_BODY else case.body
    r = api.call(case.method, path, body, token=token, headers=dict(case.headers), raw=case.raw)

    assert 400 <= r.status < 500, (r.status, r.body[:500])
    expected = case.status if isinstance(case.status, tuple) else (case.status,)
    assert r.status in expected, (r.status, r.body[:500])
    reply = json.loads(r.body)
    assert isinstance(reply, dict), reply
    assert isinstance(reply.get("message"), str) and reply["message"].strip(), reply

    assert snapshot(redis_client, database_url, seeded) == before
    assert snapshot(redis_client, database_url, missing) == missing_before


def test_valid_requests_still_work_after_the_table(api, server_token, seeded):
    """The board the table runs against is usable: the rejections were not for other reasons."""
    r = api.call(
        "POST",
        f"/boards/{seeded}/scores",
        {"player_id": "p-1", "score": 250, "region": "EU"},
        token=server_token,
    )
    assert r.status == 200, r.body
    assert r.json()["standings"][0]["score"] == 500
    page = api.call("GET", f"/boards/{seeded}/entries?limit=100&period=weekly").json()
    assert [e["player_id"] for e in page["entries"]] == ["p-1", "p-3", "p-2"]
    assert api.call("GET", f"/boards/{seeded}/entries?limit=1&around_rank=2").status == 200
    assert (
        api.call("GET", f"/boards/{seeded}/players/p-2/around?count=1&region=NA").json()["player"][
            "score"
        ]
        == -250
    )
