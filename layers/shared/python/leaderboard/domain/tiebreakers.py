"""Tie-breakers: up to three integer columns that order entries with equal scores.

Redis orders a sorted set by score, then by member bytes. A board with tie-breakers stores each
entry under a member that starts with a fixed-width key: the score (order-preserving hex of its
IEEE 754 bits), then each column (16 decimal digits, complemented when the column sorts against
the board), then the player. Member order is then exactly (score, columns..., player), with no
float rounding and O(log N) per write and read, and because the score leads the member, member
order agrees with the set's own order: ZLEXCOUNT counts the entries strictly better than a
(score, columns) tuple, which is the shared rank (docs/architecture.md, "Tie-breakers").
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from leaderboard.domain.errors import BadRequest, Unprocessable

MAX_TIEBREAKERS = 3
_MAX_GIVEN = 16  # names a submission may send before it is malformed rather than mismatched
# Every value fits 16 digits once offset, and stays an exact integer in a double (Lua's number).
TIEBREAKER_LIMIT = 999_999_999_999_999
_OFFSET = TIEBREAKER_LIMIT
_SPAN = 2 * TIEBREAKER_LIMIT
COLUMN_DIGITS = 16
SCORE_DIGITS = 16
NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")
SORTS = ("asc", "desc")


@dataclass(frozen=True, slots=True)
class TieBreaker:
    name: str
    sort: str = "asc"

    def to_public(self) -> dict[str, str]:
        return {"name": self.name, "sort": self.sort}


def parse_columns(value: Any) -> tuple[TieBreaker, ...]:
    """The board field: null or [] for none, else 1-3 distinct named columns."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_TIEBREAKERS:
        raise BadRequest(
            f"tiebreakers must be a list of at most {MAX_TIEBREAKERS} columns", field="tiebreakers"
        )
    columns = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"name", "sort"} or "name" not in item:
            raise BadRequest(
                'each tie-breaker is {"name": ..., "sort": "asc"|"desc"}', field="tiebreakers"
            )
        name, sort = item["name"], item.get("sort", "asc")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise BadRequest("tie-breaker names match ^[a-z][a-z0-9_]{0,31}$", field="tiebreakers")
        if sort not in SORTS:
            raise BadRequest("tie-breaker sort must be asc or desc", field="tiebreakers")
        columns.append(TieBreaker(name, sort))
    if len({c.name for c in columns}) != len(columns):  # no schema keyword says it: 422
        raise Unprocessable("tie-breaker names must not repeat", field="tiebreakers")
    return tuple(columns)


def parse_values(value: Any) -> dict[str, int] | None:
    """A submission's `tiebreakers`: names to integers within ±TIEBREAKER_LIMIT (400 if not);
    whether they are the board's columns is checked against the board (422)."""
    if value is None:
        return None
    # The shape is checked here (400); which names a board takes, against the board (422).
    if not isinstance(value, dict) or not 1 <= len(value) <= _MAX_GIVEN:
        raise BadRequest(
            f"tiebreakers must be an object of 1 to {MAX_TIEBREAKERS} integers",
            field="tiebreakers",
        )
    values: dict[str, int] = {}
    for name, item in value.items():
        # JSON has one number type: 7.0 is the integer 7 (as JSON Schema's "integer" says).
        if isinstance(item, float) and item.is_integer() and abs(item) <= TIEBREAKER_LIMIT:
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int):
            raise BadRequest(f"tiebreakers.{name} must be an integer", field="tiebreakers")
        if abs(item) > TIEBREAKER_LIMIT:
            raise BadRequest(
                f"tiebreakers.{name} must be within ±{TIEBREAKER_LIMIT}",
                field="tiebreakers",
            )
        values[name] = item
    return values


def _flipped(column: TieBreaker, board_sort: str) -> bool:
    """A column sorting against the board is stored complemented, so that member order is
    the board's order in every column."""
    return column.sort != board_sort


def tie_key(
    values: Mapping[str, int] | None, columns: tuple[TieBreaker, ...], board_sort: str
) -> str:
    """The columns' part of a member; every column of the board must be given (422)."""
    given = dict(values or {})
    names = [c.name for c in columns]
    if set(given) != set(names):
        if not columns:
            raise Unprocessable("this board has no tie-breakers", field="tiebreakers")
        raise Unprocessable(
            f"tiebreakers must give exactly the board's columns: {', '.join(names)}",
            field="tiebreakers",
        )
    parts = []
    for column in columns:
        stored = given[column.name] + _OFFSET
        if _flipped(column, board_sort):
            stored = _SPAN - stored
        parts.append(f"{stored:0{COLUMN_DIGITS}d}")
    return "".join(parts)


def decode(key: str, columns: tuple[TieBreaker, ...], board_sort: str) -> dict[str, int]:
    """The columns' values from a tie key (the inverse of `tie_key`)."""
    return decode_with_spec(key, parse_spec(script_spec(columns, board_sort)))


def decode_with_spec(key: str, spec: Sequence[tuple[str, int]]) -> dict[str, int]:
    """The same from the scripts' form of the columns ([name, 1 if complemented] each), which
    the read scripts return beside the keys: a read needs no board lookup to decode them."""
    values = {}
    for i, (name, flipped) in enumerate(spec):
        stored = int(key[i * COLUMN_DIGITS : (i + 1) * COLUMN_DIGITS])
        if flipped:
            stored = _SPAN - stored
        values[name] = stored - _OFFSET
    return values


@lru_cache(maxsize=1024)
def parse_spec(text: str) -> tuple[tuple[str, int], ...]:
    """The scripts' form of the columns ("name:flipped,..."), parsed once per distinct text."""
    pairs = (item.split(":") for item in text.split(","))
    return tuple((name, int(flipped)) for name, flipped in pairs)


def score_key(score: float) -> str:
    """The score as 16 hex digits whose byte order is the numbers' order (the submit script
    computes the same in Lua): positive doubles get the sign bit set, negative ones every bit
    flipped; -0 is 0."""
    raw = bytearray(struct.pack(">d", float(score) if score != 0 else 0.0))
    if raw[0] >= 128:
        raw = bytearray(255 - b for b in raw)
    else:
        raw[0] += 128
    return raw.hex()


def score_of_key(key: str) -> float:
    """The score a score key encodes (score_key's inverse): exact, the key being its bits."""
    bits = int(key, 16)
    bits = bits ^ (1 << 63) if bits >> 63 else bits ^ 0xFFFFFFFFFFFFFFFF
    return float(struct.unpack(">d", bits.to_bytes(8, "big"))[0])


def member(score: float, key: str, arrival: str, player_id: str) -> str:
    """A tie-breaker board's member: score key, tie key, the arrival that orders equal tuples
    on ties=first boards ('' on shared ones), '|', the player."""
    return f"{score_key(score)}{key}{arrival}|{player_id}"


def script_spec(columns: tuple[TieBreaker, ...], board_sort: str) -> str:
    """The compact form the Redis scripts read and return: "name:1 if complemented," per
    column; a flat string, so decoding the board's cfg stays as cheap as on other boards."""
    return ",".join(f"{c.name}:{1 if _flipped(c, board_sort) else 0}" for c in columns)
