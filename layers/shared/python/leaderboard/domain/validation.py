"""Strict input checks shared by every route.

JSON from clients is parsed here rather than with a permissive `json.loads`: NaN/Infinity
literals, huge numbers, deep nesting and duplicate keys are refused before any rule runs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from leaderboard.domain.errors import BadRequest, PayloadTooLarge

MAX_BODY_BYTES = 16 * 1024
MAX_BATCH_BODY_BYTES = 1024 * 1024  # 500 submissions of up to ~2 KiB each
MAX_SAFE_INTEGER = 2**53 - 1
MAX_JSON_DEPTH = 8

BOARD_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
PLAYER_ID_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")
REGION_RE = re.compile(r"[A-Z]{2,8}")
IDEMPOTENCY_KEY_RE = re.compile(r"[\x21-\x7e]{1,128}")


def _refuse_constant(name: str) -> Any:
    raise BadRequest(f"{name} is not a valid JSON number")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise BadRequest(f"duplicate key {key!r} in JSON object")
        result[key] = value
    return result


def _parse_int(text: str) -> int:
    # Refuse huge literals before int() spends time on them (they are never valid scores).
    if len(text.lstrip("-")) > 20:
        raise BadRequest("number is too large")
    return int(text)


def _depth(value: Any) -> int:
    """Nesting depth, without recursion (a deep body must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


# What PostgreSQL's text and jsonb cannot hold: U+0000, and a surrogate that JSON's \u escapes
# let through unpaired. Refused in every body, or an accepted write could never be recorded.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _refuse_unstorable(value: Any) -> None:
    """Every key and string of a parsed body, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if _UNSTORABLE.search(key):
                    raise BadRequest("strings must not contain U+0000 or unpaired surrogates")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _UNSTORABLE.search(item):
            raise BadRequest("strings must not contain U+0000 or unpaired surrogates")


def parse_json_object(
    body: str | bytes | None, *, required: bool = True, max_bytes: int = MAX_BODY_BYTES
) -> dict[str, Any]:
    """Parse a request body that must be a JSON object of at most `max_bytes` (16 KiB)."""
    if body is None or body in ("", b""):
        if required:
            raise BadRequest("request body is required (a JSON object)")
        return {}
    raw = body.encode() if isinstance(body, str) else body
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"request body exceeds {max_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("request body is not valid UTF-8") from None
    try:
        value = json.loads(
            text,
            parse_constant=_refuse_constant,
            object_pairs_hook=_refuse_duplicates,
            parse_int=_parse_int,
        )
    except RecursionError:
        raise BadRequest("request body is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"request body is not valid JSON: {exc.msg} at position {exc.pos}"
        ) from None
    except ValueError:
        raise BadRequest("request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BadRequest("request body must be a JSON object")
    if _depth(value) > MAX_JSON_DEPTH:
        raise BadRequest("request body is nested too deeply")
    _refuse_unstorable(value)
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def require_score(value: Any, field: str) -> int | float:
    """A score: a finite JSON number with |x| <= 2^53 - 1 (exact in a double)."""
    if not is_number(value):
        raise BadRequest(f"{field} must be a number", field=field)
    if isinstance(value, float) and not math.isfinite(value):
        raise BadRequest(f"{field} must be finite", field=field)
    if abs(value) > MAX_SAFE_INTEGER:
        raise BadRequest(
            f"{field} must be between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}", field=field
        )
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def require_int(value: Any, field: str, *, minimum: int, maximum: int) -> int:
    """An integer field. JSON has one number type and JSON Schema (docs/openapi.json) counts
    `5.0` as the integer 5, so a client that validated against the document is not refused."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{field} must be an integer", field=field)
    if not minimum <= value <= maximum:
        raise BadRequest(f"{field} must be between {minimum} and {maximum}", field=field)
    return value


def require_board_id(value: Any) -> str:
    if not isinstance(value, str) or not BOARD_ID_RE.fullmatch(value):
        raise BadRequest("board_id must match ^[a-z0-9][a-z0-9_-]{0,63}$", field="board_id")
    return value


def require_player_id(value: Any, field: str = "player_id") -> str:
    """A player id; `field` names where it was (a 400 names the field the client sent)."""
    if not isinstance(value, str) or not PLAYER_ID_RE.fullmatch(value):
        raise BadRequest(f"{field} must match ^[A-Za-z0-9_.:@-]{{1,64}}$", field=field)
    return value


def require_team_id(value: Any, field: str = "team_id") -> str:
    """A team (clan, guild, country) id: the same characters as a player id."""
    if not isinstance(value, str) or not PLAYER_ID_RE.fullmatch(value):
        raise BadRequest(f"{field} must match ^[A-Za-z0-9_.:@-]{{1,64}}$", field=field)
    return value


MAX_PLAYER_IDS = 100


def require_player_ids(raw: str | None) -> list[str]:
    """A comma-separated list of 1 to 100 player ids (API Gateway joins repeated `ids=` with
    commas), each answered once, in the order first given. The limit counts the items sent,
    duplicates too, as the API document's pattern does: past it is 400, whatever repeats."""
    if raw is None or raw == "":
        raise BadRequest("ids must list 1 to 100 comma-separated player ids", field="ids")
    items = raw.split(",", MAX_PLAYER_IDS)
    if len(items) > MAX_PLAYER_IDS:
        raise BadRequest(f"ids lists more than {MAX_PLAYER_IDS} player ids", field="ids")
    for item in items:
        if not PLAYER_ID_RE.fullmatch(item):
            raise BadRequest(
                "each of ids must match ^[A-Za-z0-9_.:@-]{1,64}$ (no empty items)", field="ids"
            )
    return list(dict.fromkeys(items))


def require_region(value: Any) -> str:
    if not isinstance(value, str) or not REGION_RE.fullmatch(value):
        raise BadRequest("region must match ^[A-Z]{2,8}$", field="region")
    return value


def require_idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not IDEMPOTENCY_KEY_RE.fullmatch(value):
        raise BadRequest(
            "Idempotency-Key must be 1-128 printable ASCII characters", field="Idempotency-Key"
        )
    return value


def known_fields(body: Mapping[str, object], allowed: Collection[str], within: str = "") -> None:
    """Unknown body fields are refused, each named in `fields` (a nested object's as
    `within.name`, a list item's as `within[i].name`) and the first in `field`: one rule on
    every route (docs/API.md, "Conventions")."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        names = [f"{within}.{name}" if within else name for name in unknown]
        raise BadRequest(f"unknown field(s): {', '.join(names)}", field=names[0], fields=names)


def known_params(query: Mapping[str, object], allowed: Collection[str]) -> None:
    """Unknown query parameters are refused, named in `fields`: a typo never passes silently."""
    unknown = sorted(set(query) - set(allowed))
    if unknown:
        raise BadRequest(f"unknown query parameter(s): {', '.join(unknown)}", fields=unknown)


def query_int(raw: str | None, field: str, *, default: int, minimum: int, maximum: int) -> int:
    """An integer query parameter; anything but plain decimal digits is refused."""
    if raw is None:
        return default
    text = raw
    if not re.fullmatch(r"-?[0-9]{1,9}", text):
        raise BadRequest(f"{field} must be an integer between {minimum} and {maximum}", field=field)
    return require_int(int(text), field, minimum=minimum, maximum=maximum)


def format_score(value: float | int) -> int | float:
    """Render a stored double the way clients sent it: integral values as JSON integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    return value
